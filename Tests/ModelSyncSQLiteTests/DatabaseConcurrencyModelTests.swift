import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A query that never ends on its own: only an interrupt stops it.
private let endlessQuery = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

private struct Failure: Error {}

@Sendable private func insert(_ task: Int, _ connection: SQLiteConnection) throws {
    var counter = Counter(task: task, value: 0)
    try counter.insert(connection)
}

@MainActor private final class ReceivedValues {
    var values: [Int] = []
}

/// Runs `body(index)` on `count` threads of their own (synchronous callers, as an app's
/// background threads would be) and returns once all have finished; false when the waiting
/// task was cancelled first (by a test's time limit: a deadlock).
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async -> Bool {
    let (finished, continuation) = AsyncStream<Void>.makeStream()
    for index in 0..<count {
        Thread {
            body(index)
            continuation.yield()
        }.start()
    }
    var done = 0
    for await _ in finished {
        done += 1
        if done == count { return true }
    }
    return false
}

/// Waits until `body` signals, without blocking a thread of the cooperative pool.
private func waitOnBackgroundThread(_ semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            semaphore.wait()
            continuation.resume()
        }
    }
}

/// The nestings through the synchronous API (its overloads win outside async code).
private func nestSynchronously(_ db: Database) throws {
    try db.write { outer in
        try insert(1, outer)
        // read in write: the writer's connection, uncommitted rows included.
        #expect(try db.read { try Counter.count($0) } == 1)
        // read in read in write.
        #expect(try db.read { _ in try db.read { try Counter.count($0) } } == 1)
        // write in write: a savepoint, rolled back alone.
        #expect(throws: Failure.self) {
            try db.write { inner in
                try insert(2, inner)
                throw Failure()
            }
        }
        // write in read in write: part of the outer write.
        try db.read { _ in try db.write { try insert(3, $0) } }
        try db.writeWithoutTransaction { try insert(4, $0) }
    }
    #expect(try db.read { try Counter.all($0).map(\.task).sorted() } == [1, 3, 4])
    // write in read: a typed error at once, and nothing written.
    let error = sqliteError { try db.read { _ in try db.write { try insert(5, $0) } } }
    #expect(error?.kind == .writeInsideRead)
    #expect(try db.read { _ in try db.read { try Counter.count($0) } } == 3)
}

@Suite("SQLite: concurrency model (async access, cancellation, nesting, statement cache)")
struct DatabaseConcurrencyModelTests {
    // MARK: - Cancellation

    @Test("cancelling a long read interrupts it and leaves the database usable",
          .timeLimit(.minutes(5)), arguments: TestStorage.allCases)
    func cancellingALongReadInterruptsIt(storage: TestStorage) async throws {
        let db = try storage.open(models: [Counter.self])
        let (started, signal) = AsyncStream<Void>.makeStream()
        let reading = Task {
            try await db.read { db in
                signal.yield()
                return try db.scalar(endlessQuery)
            }
        }
        var events = started.makeAsyncIterator()
        await events.next()
        reading.cancel()
        await #expect(throws: CancellationError.self) { try await reading.value }
        #expect(try await db.read { try $0.scalar("SELECT 42") } == .integer(42))
        try await db.write { db in
            var counter = Counter(task: 1, value: 1)
            try counter.insert(db)
        }
        #expect(try await db.read { try Counter.count($0) } == 1)
    }

    @Test("cancelling a long write interrupts it and rolls it back",
          .timeLimit(.minutes(5)), arguments: TestStorage.allCases)
    func cancellingALongWriteRollsItBack(storage: TestStorage) async throws {
        let db = try storage.open(models: [Counter.self])
        let (started, signal) = AsyncStream<Void>.makeStream()
        let writing = Task {
            try await db.write { db in
                var counter = Counter(task: 1, value: 1)
                try counter.insert(db)
                signal.yield()
                _ = try db.scalar(endlessQuery)
            }
        }
        var events = started.makeAsyncIterator()
        await events.next()
        writing.cancel()
        await #expect(throws: CancellationError.self) { try await writing.value }
        #expect(try await db.read { try Counter.count($0) } == 0)
        try await db.write { db in
            var counter = Counter(task: 2, value: 1)
            try counter.insert(db)
        }
        #expect(try await db.read { try Counter.count($0) } == 1)
    }

    @Test("a cancelled waiter leaves the writer's queue at once", .timeLimit(.minutes(5)))
    func aCancelledWaiterLeavesTheQueue() async throws {
        let db = try TestStorage.file.open()
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread {
            try? db.write { _ in
                holding.signal()
                release.wait()
            }
        }.start()
        await waitOnBackgroundThread(holding)
        let waiter = Task { try await db.write { try $0.execute("CREATE TABLE never(x)") } }
        while db.writerWaiterCount == 0 { await Task.yield() }
        waiter.cancel()
        // The writer is still held: the waiter returns because it left the queue.
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(db.writerWaiterCount == 0)
        release.signal()
        #expect(try await db.read { try $0.tableExists("never") } == false)
        try await db.write { try $0.execute("CREATE TABLE after(x)") }
    }

    // MARK: - Many tasks

    @Test("1,000 concurrent tasks on a pool of 2 readers finish", .timeLimit(.minutes(5)))
    func aThousandTasksOnTwoReaders() async throws {
        let directory = try TemporaryDirectory()
        let db = try Database(
            path: directory.path("many.sqlite"), models: [Counter.self],
            configuration: DatabaseConfiguration(maximumReaders: 2))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<1_000 {
                group.addTask {
                    if task % 10 == 0 {
                        try await db.write { db in
                            var counter = Counter(task: task, value: 1)
                            try counter.insert(db)
                        }
                    } else {
                        _ = try await db.read { try Counter.count($0) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await db.read { try Counter.count($0) } == 100)
    }

    // MARK: - Nesting

    @Test("every nesting of read and write works or throws a typed error",
          .timeLimit(.minutes(5)), arguments: TestStorage.allCases)
    func everyNesting(storage: TestStorage) async throws {
        let db = try storage.open(models: [Counter.self])
        try nestSynchronously(db)
        // The same from the async API's bodies.
        try await db.write { db2 in
            try insert(6, db2)
            #expect(try db.read { try Counter.count($0) } == 4)
            try db.write { try insert(7, $0) }
        }
        await #expect(throws: SQLiteError.self) {
            try await db.read { _ in try db.write { try insert(8, $0) } }
        }
        #expect(try await db.read { try Counter.count($0) } == 5)
    }

    /// Issue 13 item 14: nested reads and writes on 8 threads with 2 readers deadlocked.
    @Test("nested reads and writes on many threads and tasks never deadlock", .timeLimit(.minutes(5)))
    func nestingUnderContention() async throws {
        let directory = try TemporaryDirectory()
        let db = try Database(
            path: directory.path("nesting.sqlite"), models: [Counter.self],
            configuration: DatabaseConfiguration(maximumReaders: 2))
        let rounds = StressMode.isOn ? 500 : 50
        async let threads = onThreads(8) { thread in
            for round in 0..<rounds {
                do {
                    try db.write { outer in
                        var counter = Counter(task: thread, value: round)
                        try counter.insert(outer)
                        _ = try db.read { try Counter.count($0) }
                        try db.write { _ = try $0.scalar("SELECT 1") }
                    }
                    _ = try db.read { _ in try db.read { try Counter.count($0) } }
                    _ = try? db.read { _ in try db.write { _ in } }
                } catch {
                    Issue.record("thread \(thread): \(error)")
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<rounds {
                        try await db.write { outer in
                            var counter = Counter(task: 100 + task, value: round)
                            try counter.insert(outer)
                            _ = try db.read { try Counter.count($0) }
                        }
                        _ = try await db.read { _ in try db.read { try Counter.count($0) } }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await threads)
        #expect(try await db.read { try Counter.count($0) } == 16 * rounds)
    }

    // MARK: - Statement cache

    /// Issue 13 item 15: `'café'` and `'cafe\u{301}'` are equal Swift strings but different
    /// SQL; the cache keyed by `String` ran the first statement for the second.
    @Test("statements are cached by the bytes of their SQL", arguments: TestStorage.allCases)
    func statementsAreCachedByBytes(storage: TestStorage) throws {
        let db = try storage.open()
        let composed = "INSERT INTO words VALUES ('caf\u{E9}')"
        let decomposed = "INSERT INTO words VALUES ('cafe\u{301}')"
        #expect(composed == decomposed)
        try db.write { db in
            try db.execute("CREATE TABLE words(w TEXT)")
            try db.execute(composed)
            try db.execute(decomposed)
            #expect(try db.rows("SELECT hex(w) FROM words ORDER BY rowid") == [[.text("636166C3A9")], [.text("63616665CC81")]])
        }
    }

    @Test("the statement cache is bounded")
    func theStatementCacheIsBounded() throws {
        var configuration = DatabaseConfiguration()
        configuration.statementCacheSize = 4
        let db = try TestStorage.memory.open(configuration: configuration)
        let (values, cached) = try db.write { db in
            (try (0..<50).map { try db.scalar("SELECT \($0)") }, db.cachedStatementCount)
        }
        #expect(values == (0..<50).map { SQLValue.integer(Int64($0)) })
        #expect(cached <= 4)
    }

    @Test("an IN list binds as one parameter, whatever its length", arguments: TestStorage.allCases)
    func inListsShareOneStatement(storage: TestStorage) throws {
        let db = try storage.open(models: [Item.self])
        try db.write { db in
            for var item in sampleItems { try item.insert(db) }
        }
        #expect(try Item.where { $0.id.in([1, 2]) }.sql == Item.where { $0.id.in((1...500).map { Optional($0) }) }.sql)
        try db.read { db in
            _ = try Item.where { $0.id.in([1, 2]) }.fetchAll(db)
            let cached = db.cachedStatementCount
            for length in 2...40 {
                let ids = (1...length).map { Optional($0) }
                #expect(try Item.where { $0.id.in(ids) }.fetchCount(db) == min(length, sampleItems.count))
                #expect(try Item.where { $0.id.notIn(ids) }.fetchCount(db) == max(0, sampleItems.count - length))
            }
            _ = try Item.where { $0.name.in(["apple", "date"]) }.fetchAll(db)
            // One statement each for the counts of IN, NOT IN and the name list.
            #expect(db.cachedStatementCount <= cached + 3)
            #expect(try Item.where { $0.name.in(["apple", "date", "caf\u{E9}"]) }.fetchAll(db).map(\.name) == ["apple", "date"])
        }
    }

    // MARK: - Schema checks

    @Test("a rollback keeps the table checks unless it undid a schema change", arguments: TestStorage.allCases)
    func schemaChecksSurviveRollbacks(storage: TestStorage) throws {
        let db = try storage.open(models: [Counter.self])
        try db.write { db in
            var counter = Counter(task: 1, value: 1)
            try counter.insert(db)
            let checked = db.checkedTableCount
            #expect(checked > 0)
            #expect(throws: Failure.self) {
                try db.transaction {
                    var counter = Counter(task: 2, value: 1)
                    try counter.insert(db)
                    throw Failure()
                }
            }
            #expect(db.checkedTableCount == checked)
            #expect(throws: Failure.self) {
                try db.transaction {
                    try db.execute("CREATE TABLE scratch(x)")
                    throw Failure()
                }
            }
            #expect(db.checkedTableCount == 0)
            // The model checked last is forgotten too: its next write checks its table again.
            var again = Counter(task: 3, value: 1)
            try again.insert(db)
            #expect(db.checkedTableCount == checked)
        }
    }

    // MARK: - Observation for UI code

    @Test("an immediate observation returns its first value from the start", arguments: TestStorage.allCases)
    func immediateObservation(storage: TestStorage) async throws {
        let db = try storage.open(models: [Counter.self])
        try await db.write { db in
            var counter = Counter(task: 1, value: 1)
            try counter.insert(db)
        }
        let observation = db.observe { try Counter.count($0) }.immediate()
        #expect(observation.fetchesImmediately)
        var iterator = observation.makeAsyncIterator()
        #expect(try await iterator.next() == 1)
        try await db.write { db in
            var counter = Counter(task: 2, value: 1)
            try counter.insert(db)
        }
        #expect(try await iterator.next() == 2)
    }

    @MainActor
    @Test("main-actor delivery hands the first value over before returning")
    func mainActorDelivery() async throws {
        let db = try TestStorage.file.open(models: [Counter.self])
        let received = ReceivedValues()
        let (changes, signal) = AsyncStream<Void>.makeStream()
        let task = db.observe { try Counter.count($0) }.immediate().startOnMainActor { value in
            MainActor.assertIsolated()
            received.values.append(value)
            signal.yield()
        }
        defer { task.cancel() }
        #expect(received.values == [0])
        try await db.write { db in
            var counter = Counter(task: 1, value: 1)
            try counter.insert(db)
        }
        for await _ in changes where received.values.last == 1 { break }
        #expect(received.values == [0, 1])
    }
}
