import Foundation
import ModelSyncSQLite
import ModelSyncCore
import ModelSyncTesting
import Testing

private struct Rollback: Error {}

/// A task executor with a fixed number of threads: a cooperative pool as small as a 2-core
/// machine's, so that the tasks starve it the same way on any machine.
private final class FixedThreadsExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Locked<[UnownedJob]>([])
    /// Signalled once per job, and once per thread to stop it.
    private let available = DispatchSemaphore(value: 0)
    private let threads: Int

    init(threads: Int) {
        self.threads = threads
        for _ in 0..<threads {
            Thread { [self] in
                while true {
                    available.wait()
                    guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
            }.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    /// Ends the threads once the jobs are done (threads stuck in a deadlock never end).
    func stop() {
        for _ in 0..<threads { available.signal() }
    }
}

// The synchronous API, called from inside the tasks: outside async code its overloads win, and
// they block the task's thread while they wait for a connection.
private func blockingWrite<T>(_ db: Database, _ body: (SQLiteConnection) throws -> T) throws -> T {
    try db.write(body)
}

private func blockingRead<T>(_ db: Database, _ body: (SQLiteConnection) throws -> T) throws -> T {
    try db.read(body)
}

private func insertRow(_ task: Int, _ connection: SQLiteConnection) throws {
    var counter = Counter(task: task, value: 0)
    try counter.insert(connection)
}

private func incrementLatest(_ task: Int, _ connection: SQLiteConnection) throws {
    try connection.execute(
        "UPDATE Counter SET value = value + 1 WHERE id = (SELECT max(id) FROM Counter WHERE task = ?)",
        [.integer(Int64(task))])
}

private enum WorkerEvent {
    /// A body holds the writer.
    case holding
    /// A task is about to block its thread on the writer.
    case blocking
    case finished(created: Int, increments: Int)
    case failed(any Error)
    case stalled
}

/// Yields `.stalled` when `progress` has not moved for 120 s: a deadlocked test fails instead of
/// hanging. It runs on the global pool, which the workers' blocking calls never occupy.
private func watchdog(_ progress: Locked<Int>, _ sink: AsyncStream<WorkerEvent>.Continuation) -> Task<Void, any Error> {
    Task {
        var last = progress.current
        var quietChecks = 0
        while quietChecks < 12 {
            try await Task.sleep(for: .seconds(10))
            let now = progress.current
            quietChecks = now == last ? quietChecks + 1 : 0
            last = now
        }
        sink.yield(.stalled)
    }
}

@Suite("SQLite: async and blocking callers on a starved cooperative pool")
struct StarvedPoolTests {
    /// Issue #38: an async write's connection was released only once its task resumed, which
    /// needs a thread of the pool; synchronous callers blocked waiting for that connection could
    /// occupy them all, and nothing moved again. Eight tasks share two threads here, each mixing
    /// async calls with blocking ones; every write must land exactly once.
    @Test("8 tasks on 2 threads mixing async and blocking reads and writes")
    func asyncAndBlockingCallersShareTwoThreads() async throws {
        let tasks = 8
        let operations = StressMode.count(200, stress: 1_000)
        let directory = try TemporaryDirectory()
        let db = try Database(
            path: directory.path("starved.sqlite"), models: [Counter.self],
            configuration: DatabaseConfiguration(maximumReaders: 4))
        let executor = FixedThreadsExecutor(threads: 2)
        let progress = Locked(0)
        let done = Locked(false)
        defer {
            done.withLock { $0 = true }
            executor.stop()
        }
        // In stress mode, threads that compete for the cores make the interleavings vary more.
        for _ in 0..<StressMode.count(0, stress: 3) {
            Thread { while !done.current {} }.start()
        }

        let (events, sink) = AsyncStream<WorkerEvent>.makeStream()
        for task in 0..<tasks {
            Task(executorPreference: executor) {
                do {
                    let counts = try await Self.work(task: task, operations: operations, db: db, progress: progress)
                    sink.yield(.finished(created: counts.created, increments: counts.increments))
                } catch {
                    sink.yield(.failed(error))
                }
            }
        }
        let stalls = watchdog(progress, sink)
        defer { stalls.cancel() }

        var created = 0
        var increments = 0
        var finished = 0
        for await event in events {
            switch event {
            case .finished(let rows, let added):
                created += rows
                increments += added
                finished += 1
            case .failed(let error):
                Issue.record(error)
                finished += 1
            case .stalled:
                Issue.record("no operation completed for 120 s after \(progress.current): the workers are deadlocked")
                return
            case .holding, .blocking:
                break
            }
            if finished == tasks { break }
        }
        #expect(created == tasks * Self.rowsPerTask(operations))
        #expect(try await db.read { try Counter.count($0) } == created)
        #expect(try await db.read { try $0.scalar("SELECT sum(value) FROM Counter") } == .integer(Int64(increments)))
    }

    /// The deadlock of issue #38, made certain: a task's write holds the writer until two
    /// tasks occupy both threads and block on it. Its connection must come back without a
    /// thread of the pool, or no task ever runs again.
    @Test("a write returns its connection while blocked callers hold every thread")
    func aWriteReturnsItsConnectionWithoutAThread() async throws {
        let db = try Database(inMemory: [Counter.self])
        let executor = FixedThreadsExecutor(threads: 2)
        defer { executor.stop() }
        let gate = DispatchSemaphore(value: 0)
        let progress = Locked(0)
        let (events, sink) = AsyncStream<WorkerEvent>.makeStream()
        let report = { @Sendable (event: WorkerEvent) in
            progress.withLock { $0 += 1 }
            sink.yield(event)
        }
        Task(executorPreference: executor) {
            do {
                try await db.write { db in
                    report(.holding)
                    gate.wait()
                    try insertRow(0, db)
                }
                report(.finished(created: 1, increments: 0))
            } catch {
                report(.failed(error))
            }
        }
        let stalls = watchdog(progress, sink)
        defer { stalls.cancel() }

        var blocking = 0
        var finished = 0
        for await event in events {
            switch event {
            case .holding:
                // Both threads run a task that blocks on the writer the body holds.
                for task in 1...2 {
                    Task(executorPreference: executor) {
                        report(.blocking)
                        do {
                            try blockingWrite(db) { try insertRow(task, $0) }
                            report(.finished(created: 1, increments: 0))
                        } catch {
                            report(.failed(error))
                        }
                    }
                }
            case .blocking:
                blocking += 1
                if blocking == 2 { gate.signal() }
            case .finished:
                finished += 1
            case .failed(let error):
                Issue.record(error)
                finished += 1
            case .stalled:
                Issue.record("no task ran for 120 s: the blocked callers wait for a connection that a task without a thread holds")
                return
            }
            if finished == 3 { break }
        }
        #expect(try await db.read { try Counter.count($0) } == 3)
    }

    private static let kinds = 7

    /// How many rows one task's operations create: 1 per insert, 5 per batch, 1 per savepoint.
    static func rowsPerTask(_ operations: Int) -> Int {
        (0..<operations).reduce(0) { total, operation in
            switch operation % kinds {
            case 0, 3: total + 1
            case 2: total + 5
            default: total
            }
        }
    }

    /// One task's operations, in turn async and blocking; returns the rows it created and the
    /// increments it made, after checking its reads against them.
    private static func work(task: Int, operations: Int, db: Database, progress: Locked<Int>) async throws -> (created: Int, increments: Int) {
        let mine: [SQLValue] = [.integer(Int64(task))]
        var created = 0
        var increments = 0
        for operation in 0..<operations {
            switch operation % kinds {
            case 0:
                try await db.write { try insertRow(task, $0) }
                created += 1
            case 1:
                try blockingWrite(db) { try incrementLatest(task, $0) }
                increments += 1
            case 2:
                try await db.write { db in
                    for _ in 0..<5 { try insertRow(task, db) }
                }
                created += 5
            case 3:
                // A savepoint that commits and one that rolls back, in one blocking write.
                try blockingWrite(db) { outer in
                    try insertRow(task, outer)
                    try blockingWrite(db) { try incrementLatest(task, $0) }
                    #expect(throws: Rollback.self) {
                        try blockingWrite(db) { inner in
                            try insertRow(task, inner)
                            throw Rollback()
                        }
                    }
                }
                created += 1
                increments += 1
            case 4:
                // A whole transaction rolled back.
                await #expect(throws: Rollback.self) {
                    try await db.write { db in
                        try insertRow(task, db)
                        throw Rollback()
                    }
                }
            case 5:
                let count = try await db.read { try Counter.count($0, where: "task = ?", mine) }
                #expect(count == created)
            default:
                let sum = try blockingRead(db) { try $0.scalar("SELECT sum(value) FROM Counter WHERE task = ?", mine) }
                #expect(sum == .integer(Int64(increments)))
            }
            progress.withLock { $0 += 1 }
        }
        return (created, increments)
    }
}
