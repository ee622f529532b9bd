import Foundation
import Metrics
import ModelSyncCore
import ModelSyncProtocol
import ModelSyncSQLite
import ModelSyncServer

/// What one write transaction carries from job to job: the sequence and horizon (saved at the
/// commit), whether the data changed, and the changes the streams get once it is committed.
struct WriteState: Sendable {
    var sequence: Int
    var horizon: Int
    let now: Date
    /// Whether records or resources changed (`modified` moves on).
    var changed = false
    /// The committed changes, in sequence order, for the change streams.
    var changes: [SyncChange] = []
    /// Whether the data was replaced: the streams end.
    var replaced = false

    /// The next sequence value: the version of a record written, or a tombstone's.
    mutating func next() -> Int {
        sequence += 1
        changed = true
        return sequence
    }
}

/// The one writer of a SQLite backend, with group commit: writes that arrive while a group
/// commits queue up, and the next group commits them together in one transaction (one sync),
/// each in a savepoint of its own, so that one that fails changes nothing and the others go on.
/// A write is answered once its group is committed; should the commit fail, every write of the
/// group fails.
///
/// The actor only keeps the queue: the transaction runs on the database's writer connection,
/// on a thread of its own, and the actor takes new writes meanwhile. The change streams get a
/// group's changes after its commit, before the next group starts: in sequence order.
actor SQLiteWriter {
    /// A write: it runs in the group's transaction, and throws to leave nothing behind.
    typealias Job = @Sendable (SQLiteConnection, inout WriteState) throws -> Void

    private struct Waiter {
        let job: Job
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// The most writes one transaction commits.
    static let largestGroup = 256

    private let database: Database
    private let publish: @Sendable (WriteState) -> Void
    private var waiting: [Waiter] = []
    private var draining: Task<Void, Never>?
    /// How many writes wait for a group (a gauge), and how many each group commits (a recorder).
    private let queueLength = Gauge(label: "modelsync_sqlite_writer_queue")
    private let groupSize = Recorder(label: "modelsync_sqlite_writer_group_size")
    /// How many writes wait for a group (for tests).
    var waitingCount: Int { waiting.count }
    /// How many groups were committed, and the largest (for tests).
    private(set) var groupsCommitted = 0
    private(set) var largestGroupCommitted = 0

    init(database: Database, publish: @escaping @Sendable (WriteState) -> Void) {
        self.database = database
        self.publish = publish
    }

    /// Runs `body` in the next group's transaction, and returns its result once committed.
    func submit<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection, inout WriteState) throws -> T) async throws -> T {
        let result = Locked<T?>(nil)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            waiting.append(Waiter(job: { connection, state in
                let value = try body(connection, &state)
                result.withLock { $0 = value }
            }, continuation: continuation))
            queueLength.record(waiting.count)
            if draining == nil { draining = Task { await drain() } }
        }
        guard let value = result.current else { throw APIError(status: 500, message: "SQLite: a write got no answer") }
        return value
    }

    /// Commits groups while writes wait.
    private func drain() async {
        while !waiting.isEmpty {
            let group = Array(waiting.prefix(Self.largestGroup))
            waiting.removeFirst(group.count)
            queueLength.record(waiting.count)
            groupSize.record(group.count)
            let jobs = group.map(\.job)
            do {
                let (state, failures) = try await database.write { connection in try Self.commit(jobs, connection) }
                let errors = failures.errors
                groupsCommitted += 1
                largestGroupCommitted = max(largestGroupCommitted, group.count)
                publish(state)
                for (waiter, failure) in zip(group, errors) {
                    if let failure { waiter.continuation.resume(throwing: failure) } else { waiter.continuation.resume() }
                }
            } catch {
                for waiter in group { waiter.continuation.resume(throwing: SQLiteBackend.requestError(error)) }
            }
        }
        draining = nil
    }

    /// The jobs in one transaction (the caller's), each in a savepoint; the state to commit and
    /// each job's failure.
    private static func commit(_ jobs: [Job], _ connection: SQLiteConnection) throws -> (WriteState, Failures) {
        guard let row = try connection.rows("SELECT sequence, horizon, modified FROM \(SQLiteSchema.state)").first else {
            throw APIError(status: 500, message: "SQLite: the state row is missing")
        }
        var state = WriteState(sequence: Int(row[0].integerValue ?? 0), horizon: Int(row[1].integerValue ?? 0), now: Date())
        var failures: [(any Error)?] = []
        for job in jobs {
            let before = state
            try connection.execute("SAVEPOINT modelsync_job")
            do {
                try job(connection, &state)
                try connection.execute("RELEASE modelsync_job")
                failures.append(nil)
            } catch {
                state = before
                try connection.execute("ROLLBACK TO modelsync_job")
                try connection.execute("RELEASE modelsync_job")
                failures.append(error)
            }
        }
        if state.changed {
            // Second precision, as `Last-Modified`: a write must still move it forward.
            let now = Int64(state.now.timeIntervalSince1970.rounded(.down))
            try connection.execute(
                "UPDATE \(SQLiteSchema.state) SET sequence = ?, horizon = ?, modified = max(?, modified + 1)",
                [.integer(Int64(state.sequence)), .integer(Int64(state.horizon)), .integer(now)])
        }
        return (state, Failures(errors: failures))
    }

    /// Each job's failure, from the writer's thread to the actor (errors are not `Sendable`; each
    /// is handed once, to its own waiter).
    private struct Failures: @unchecked Sendable {
        let errors: [(any Error)?]
    }

    /// Waits for the groups under way: the server is stopping.
    func finish() async {
        await draining?.value
    }
}

/// The open change streams (`/_changes/stream`): each gets every committed change (the routes
/// filter by collection), or ends when the data is replaced or the server stops.
final class ChangeStreams: Sendable {
    private struct Streams {
        var continuations: [Int: AsyncStream<SyncChange>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }

    private let streams = Locked(Streams())

    func subscribe() -> (id: Int, changes: AsyncStream<SyncChange>) {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncChange.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = streams.withLock { streams in
            defer { streams.nextID += 1 }
            if streams.finished { continuation.finish() } else { streams.continuations[streams.nextID] = continuation }
            return streams.nextID
        }
        return (id, stream)
    }

    func unsubscribe(_ id: Int) {
        streams.withLock { $0.continuations.removeValue(forKey: id) }?.finish()
    }

    /// Hands a committed group's changes to every stream; a replacement of the data ends them
    /// (their clients, reconnecting with a cursor past the data, are told to read everything again).
    func publish(_ state: WriteState) {
        let continuations = streams.withLock { streams in
            defer { if state.replaced { streams.continuations.removeAll() } }
            return Array(streams.continuations.values)
        }
        for continuation in continuations {
            for change in state.changes { continuation.yield(change) }
            if state.replaced { continuation.finish() }
        }
    }

    /// Ends every stream, and any opened later: the server is stopping.
    func finish() {
        let continuations = streams.withLock { streams in
            streams.finished = true
            defer { streams.continuations.removeAll() }
            return Array(streams.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
