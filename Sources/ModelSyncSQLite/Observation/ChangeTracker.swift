import CSQLite
import Foundation

/// Collects, on the writer connection, the tables each transaction changes, and keeps those of
/// committed transactions until the ``Database`` takes them to notify its observations.
///
/// Sources of changes: SQLite's update hook (rows of rowid tables, including those changed by
/// triggers and foreign-key actions) and the tables each executed statement writes, as its
/// authorizer recorded them (covers `WITHOUT ROWID` tables and `DELETE` without `WHERE`, which
/// the update hook does not report). The commit hook moves the open transaction's tables to the
/// committed set; the rollback hook and a rolled-back savepoint discard theirs.
///
/// The hooks run on the writer's thread, inside SQLite: they only update these sets and never
/// touch the database. Every member is used under the writer's lock.
final class ChangeTracker {
    /// Tables changed by the open transaction (or the running autocommit statement).
    private(set) var pending: Set<String> = []
    /// Tables changed by transactions committed since the last ``takeCommitted()``.
    private var committed: Set<String> = []
    /// Bumped whenever `pending` is emptied or restored, so that a statement whose tables are
    /// already pending is not added again on every step of a loop (see ``recordWrites(of:)``).
    private var generation = 0
    /// The last table the update hook reported, as SQLite's C string, to skip converting the
    /// name for every row of a bulk write.
    private var lastUpdatedTable: [CChar] = []
    private var lastUpdatedTableIsPending = false

    /// Installs the update, commit and rollback hooks on `handle`. The connection owns the
    /// tracker, so it outlives every callback.
    func install(on handle: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_update_hook(handle, updateHook, context)
        sqlite3_commit_hook(handle, commitHook, context)
        sqlite3_rollback_hook(handle, rollbackHook, context)
    }

    /// Removes the hooks ``install(on:)`` set, before the tracker goes away.
    static func uninstall(from handle: OpaquePointer) {
        sqlite3_update_hook(handle, nil, nil)
        sqlite3_commit_hook(handle, nil, nil)
        sqlite3_rollback_hook(handle, nil, nil)
    }

    /// Records that a statement about to run writes its tables.
    @inline(__always)
    func recordWrites(of statement: SQLStatement) {
        guard !statement.writtenTables.isEmpty, statement.recordedGeneration != generation else { return }
        pending.formUnion(statement.writtenTables)
        statement.recordedGeneration = generation
    }

    /// Records that `table` is written by the statement being run.
    func recordWrite(to table: String) {
        pending.insert(table)
    }

    /// Called after each statement: outside a transaction, what is still pending was never
    /// committed (an autocommit statement that failed), so it is dropped.
    @inline(__always)
    func statementEnded(inTransaction: @autoclosure () -> Bool) {
        if !pending.isEmpty, !inTransaction() { didRollBack() }
    }

    /// Puts back the pending tables as they were when a savepoint began (it was rolled back).
    func restorePending(_ snapshot: Set<String>) {
        pending = snapshot
        forgetPending()
    }

    /// The tables of the transactions committed since the last call; empties the set.
    func takeCommitted() -> Set<String> {
        guard !committed.isEmpty else { return [] }
        defer { committed.removeAll() }
        return committed
    }

    fileprivate func rowChanged(in table: UnsafePointer<CChar>) {
        if lastUpdatedTableIsPending, strcmp(table, lastUpdatedTable) == 0 { return }
        lastUpdatedTable = Array(UnsafeBufferPointer(start: table, count: strlen(table) + 1))
        pending.insert(tableName(table))
        lastUpdatedTableIsPending = true
    }

    fileprivate func didCommit() {
        // A COMMIT that fails after this hook leaves these tables counted as committed: the
        // observers then fetch once more and, finding equal results, deliver nothing.
        committed.formUnion(pending)
        pending.removeAll(keepingCapacity: true)
        forgetPending()
    }

    func didRollBack() {
        pending.removeAll(keepingCapacity: true)
        forgetPending()
    }

    private func forgetPending() {
        generation &+= 1
        lastUpdatedTableIsPending = false
    }
}

private func updateHook(
    _ context: UnsafeMutableRawPointer?, _ operation: Int32,
    _ database: UnsafePointer<CChar>?, _ table: UnsafePointer<CChar>?, _ rowID: sqlite3_int64
) {
    guard let context, let table else { return }
    Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue().rowChanged(in: table)
}

private func commitHook(_ context: UnsafeMutableRawPointer?) -> Int32 {
    if let context { Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue().didCommit() }
    return 0  // let the commit proceed
}

private func rollbackHook(_ context: UnsafeMutableRawPointer?) {
    if let context { Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue().didRollBack() }
}
