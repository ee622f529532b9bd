import CSQLite

/// Records, while SQLite compiles a statement, which tables it reads and which it writes, through
/// the connection's authorizer (`sqlite3_set_authorizer`). Each ``SQLStatement`` keeps the
/// result, so a cached statement is analysed once: observations learn the tables a fetch reads
/// from the statements it runs, and the writer learns the tables a statement changes even where
/// SQLite's update hook is silent (`WITHOUT ROWID` tables, `DELETE` without `WHERE`).
///
/// The authorizer also runs for the statements of triggers and views, so their tables count too.
final class TableAccessRecorder {
    /// Tables read by the statement being compiled (lowercased: SQLite names are
    /// case-insensitive).
    private(set) var reads: Set<String> = []
    /// Tables written (inserted into, updated, deleted from, altered, dropped).
    private(set) var writes: Set<String> = []
    /// Whether the statement changes the schema: the checks of tables a rollback undoes
    /// must be forgotten only then.
    private(set) var changesSchema = false
    /// While set (during `sqlite3_exec`, which compiles and runs each statement in turn), writes
    /// also go straight to the tracker of the transaction they run in.
    var liveTracker: ChangeTracker?

    /// Installs the recorder as `handle`'s authorizer. The connection owns the recorder, so it
    /// outlives every callback.
    func install(on handle: OpaquePointer) {
        sqlite3_set_authorizer(handle, authorize, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Forgets what the previous statement touched; call before compiling the next one.
    func reset() {
        reads.removeAll(keepingCapacity: true)
        writes.removeAll(keepingCapacity: true)
        changesSchema = false
    }

    fileprivate func record(_ action: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?) {
        switch action {
        case SQLITE_CREATE_INDEX...SQLITE_CREATE_VIEW, SQLITE_DROP_INDEX...SQLITE_DROP_VIEW,
            SQLITE_CREATE_VTABLE, SQLITE_DROP_VTABLE:
            changesSchema = true
        default:
            break
        }
        switch action {
        case SQLITE_READ:
            // An empty column name means the table is read without a column (`count(*)`).
            if let first { reads.insert(tableName(first)) }
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE, SQLITE_DROP_TABLE:
            if let first { wrote(tableName(first)) }
        case SQLITE_ALTER_TABLE:
            changesSchema = true
            // The first argument is the schema (`main`), the second the table.
            if let second { wrote(tableName(second)) }
        default:
            break
        }
    }

    private func wrote(_ table: String) {
        writes.insert(table)
        liveTracker?.recordWrite(to: table)
    }
}

/// A table name as observation compares them: lowercased, since SQLite matches names without
/// regard to case.
func tableName(_ cString: UnsafePointer<CChar>) -> String {
    String(cString: cString).lowercased()
}

/// The authorizer callback: records and allows everything.
private func authorize(
    _ context: UnsafeMutableRawPointer?, _ action: Int32,
    _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?,
    _ database: UnsafePointer<CChar>?, _ trigger: UnsafePointer<CChar>?
) -> Int32 {
    if let context {
        Unmanaged<TableAccessRecorder>.fromOpaque(context).takeUnretainedValue().record(action, first, second)
    }
    return SQLITE_OK
}
