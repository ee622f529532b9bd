import Foundation
import Logging
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A swift-log handler that keeps every record, for tests that read what was logged.
final class RecordingLogHandler: LogHandler, @unchecked Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let records = Locked<[Record]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level

    init(level: Logger.Level = .trace) { logLevel = level }

    var logged: [Record] { records.current }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        records.withLock { $0.append(Record(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:])) }
    }

    /// A logger writing to this handler.
    var logger: Logger { Logger(label: "modelsync.test") { _ in self } }
}

private struct Refusal: Error, Equatable {
    var reason: String
}

/// The SQL function of the tests: lowercase, words joined by dashes.
private let slugify = SQLiteScalarFunction("slugify", argumentCount: 1, deterministic: true) { arguments in
    guard case .text(let text) = arguments[0] else { return .null }
    return .text(text.lowercased().split(separator: " ").joined(separator: "-"))
}

@Suite("SQLite: statement tracing")
struct StatementTracingTests {
    @Test(arguments: TestStorage.allCases)
    func everyStatementIsTracedWithItsArgumentsAndDuration(store: TestStorage) throws {
        let handler = RecordingLogHandler()
        let db = try store.open(models: [Post.self], configuration: DatabaseConfiguration(logger: handler.logger))
        var post = Post(userId: 42, title: "It's traced")
        try db.write { try post.insert($0) }
        let found = try db.read { try Post.where(\.userId == 42).fetchAll($0) }
        #expect(found.map(\.title) == ["It's traced"])

        let records = handler.logged
        #expect(!records.isEmpty && records.allSatisfy { $0.level == .trace })
        let insert = records.first { $0.message.hasPrefix("INSERT INTO \"posts\"") }
        #expect(insert?.message.contains("'It''s traced'") == true, "arguments written in: \(insert?.message ?? "none")")
        let select = records.first { $0.message.hasPrefix("SELECT") && $0.message.contains("\"user_id\" = 42") }
        #expect(select != nil, "\(records.map(\.message))")
        #expect(records.contains { $0.message == "COMMIT" })
        for record in [insert, select].compactMap(\.self) {
            guard case .string(let nanoseconds) = record.metadata["sqlite.duration_ns"], let value = Int64(nanoseconds) else {
                Issue.record("no duration in \(record.metadata)")
                continue
            }
            #expect(value >= 0)
            #expect(record.metadata["sqlite.duration"].map { "\($0)".hasSuffix("s") } == true)
        }
    }

    @Test func nothingIsLoggedAboveTraceLevel() throws {
        let handler = RecordingLogHandler(level: .debug)
        let db = try Database(inMemory: [Post.self], configuration: DatabaseConfiguration(logger: handler.logger))
        var post = Post(title: "Quiet")
        try db.write { try post.insert($0) }
        #expect(try db.read { try Post.count($0) } == 1)
        #expect(handler.logged.isEmpty)
        // The handler's level is read at each statement: lowering it starts the tracing.
        handler.logLevel = .trace
        #expect(try db.read { try Post.count($0) } == 1)
        #expect(handler.logged.contains { $0.message.contains("count(*)") })
    }

    @Test func longTextAndBlobsAreCutInTheLog() throws {
        let handler = RecordingLogHandler()
        let db = try Database(inMemory: [Post.self], configuration: DatabaseConfiguration(logger: handler.logger))
        var post = Post(title: String(repeating: "é", count: 5000))
        post.attachment = Data(repeating: 0xAB, count: 100_000)
        post.body = "short 'quoted' \"text\""
        try db.write { try post.insert($0) }
        let insert = try #require(handler.logged.first { $0.message.hasPrefix("INSERT") })
        #expect(insert.message.utf8.count < 2000)
        #expect(insert.message.contains("…(10000 bytes)'"))       // the title: 5000 two-byte characters
        #expect(insert.message.contains("…(200000 bytes)'"))      // the blob, as hex digits
        #expect(insert.message.contains("'short ''quoted'' \"text\"'"))
        #expect(try db.read { try Post.find(post.id ?? 0, $0) }?.attachment?.count == 100_000)
    }
}

@Suite("SQLite: custom SQL functions")
struct ScalarFunctionTests {
    @Test(arguments: TestStorage.allCases)
    func aFunctionIsCalledFromRawSQLAndFromAQuery(store: TestStorage) throws {
        let db = try store.open(models: [Post.self], configuration: DatabaseConfiguration(functions: [slugify]))
        var rows = [Post(title: "Hello World", slug: "a"), Post(title: "Other Post", slug: "b")]
        try db.write { try Post.saveAll(&rows, $0) }

        #expect(try db.read { try $0.scalar("SELECT slugify(?)", ["Swift On SQLite"]) } == .text("swift-on-sqlite"))
        #expect(try db.write { try $0.scalar("SELECT SLUGIFY(NULL)") } == .null)
        let matching = try db.read { try Post.where(sql: "slugify(title) = ?", ["hello-world"]).fetchAll($0) }
        #expect(matching.map(\.title) == ["Hello World"])
        let slugs = try db.read {
            try Post.order(\.id).select { _ in SQLExpression<Post, String>.sql("slugify(\"title\")") }.fetchAll($0)
        }
        #expect(slugs == ["hello-world", "other-post"])
    }

    @Test func everyReaderConnectionHasTheFunctionsEvenThoseOpenedLater() throws {
        let readers = 3
        let directory = try TemporaryDirectory(prefix: "functions")
        defer { directory.remove() }
        let db = try Database(
            path: directory.path("db.sqlite"), configuration: DatabaseConfiguration(maximumReaders: readers, functions: [slugify]))
        // Each read waits inside its body until all have started, so each holds a reader of its
        // own: the pool opens them one by one, after the database.
        let arrived = NSCondition()
        let count = Locked(0)
        let results = Locked<[SQLValue?]>([])
        // Threads of their own: `concurrentPerform` runs no more bodies at once than there are cores.
        let finished = DispatchGroup()
        for index in 0..<readers {
            finished.enter()
            Thread {
                let value = Result {
                    try db.read { connection in
                        arrived.withLock {
                            count.withLock { $0 += 1 }
                            arrived.broadcast()
                            while count.current < readers { arrived.wait() }
                        }
                        return try connection.scalar("SELECT slugify(?)", [.text("Reader \(index)")])
                    }
                }
                results.withLock { $0.append(try? value.get()) }
                finished.leave()
            }.start()
        }
        finished.wait()
        #expect(Set(results.current) == Set((0..<readers).map { SQLValue.text("reader-\($0)") }))
        #expect(try db.write { try $0.scalar("SELECT slugify('On The Writer')") } == .text("on-the-writer"))
    }

    @Test(arguments: TestStorage.allCases)
    func aThrowingFunctionFailsItsStatementWithATypedError(store: TestStorage) throws {
        let refuse = SQLiteScalarFunction("refuse", argumentCount: 1) { arguments in
            if arguments[0] == .text("no") { throw Refusal(reason: "not this one") }
            return arguments[0]
        }
        let db = try store.open(models: [Post.self], configuration: DatabaseConfiguration(functions: [refuse]))
        var post = Post(title: "Kept")
        try db.write { try post.insert($0) }

        let error = sqliteError {
            try db.write { db in
                try db.execute("UPDATE posts SET title = 'Changed'")
                try db.execute("UPDATE posts SET body = refuse(?)", ["no"])
            }
        }
        #expect(error?.kind == .functionFailed(name: "refuse"))
        #expect(error?.underlyingError as? Refusal == Refusal(reason: "not this one"))
        #expect(error?.message.contains("not this one") == true)
        #expect(error?.sql == "UPDATE posts SET body = refuse(?)")
        // The transaction was rolled back, and the next statements run as usual.
        #expect(try db.read { try Post.all($0) }.map(\.title) == ["Kept"])
        #expect(try db.read { try $0.scalar("SELECT refuse('yes')") } == .text("yes"))
        // A plain SQL error afterwards is not blamed on the function.
        let plain = sqliteError { try db.read { _ = try $0.scalar("SELECT nothing FROM posts") } }
        #expect(plain?.kind == .sqlite)
        // In a script too.
        let scripted = sqliteError { try db.write { try $0.executeScript("SELECT refuse('no'); SELECT 1") } }
        #expect(scripted?.kind == .functionFailed(name: "refuse"))
    }

    @Test func variadicFunctionsAndEveryValueType() throws {
        let describe = SQLiteScalarFunction("describe") { arguments in
            .text(arguments.map(\.description).joined(separator: " | "))
        }
        let echo = SQLiteScalarFunction("echo", argumentCount: 1) { $0[0] }
        let db = try Database(inMemory: [], configuration: DatabaseConfiguration(functions: [describe, echo]))
        try db.read { db throws in
            #expect(try db.scalar("SELECT describe()") == .text(""))
            #expect(try db.scalar("SELECT describe(1, 2.5, 'a''b', x'00ff', NULL)") == .text("INTEGER 1 | REAL 2.5 | TEXT 'a''b' | BLOB (2 bytes) | NULL"))
            let values: [SQLValue] = [.integer(-7), .real(0.25), .text(""), .text("naïve\u{0}nul"), .blob([]), .blob([1, 0, 2]), .null]
            for value in values {
                #expect(try db.scalar("SELECT echo(?)", [value]) == value)
            }
            // A fixed argument count is checked by SQLite.
            let wrongCount = sqliteError { _ = try db.scalar("SELECT echo(1, 2)") }
            #expect(wrongCount?.message.contains("wrong number of arguments") == true)
        }
    }

    @Test func onlyDeterministicFunctionsMayIndex() throws {
        let random = SQLiteScalarFunction("unstable", argumentCount: 1) { $0[0] }
        let db = try Database(inMemory: [Post.self], configuration: DatabaseConfiguration(functions: [slugify, random]))
        try db.write { try $0.execute("CREATE INDEX posts_slugified ON posts (slugify(title))") }
        let refused = sqliteError { try db.write { try $0.execute("CREATE INDEX posts_unstable ON posts (unstable(title))") } }
        #expect(refused?.message.contains("non-deterministic") == true)
    }

    @Test func aFunctionCanBeAddedToOneConnection() throws {
        let db = try Database(inMemory: [])
        try db.write { db in
            #expect(sqliteError { _ = try db.scalar("SELECT slugify('A B')") }?.message.contains("no such function") == true)
            try db.add(function: slugify)
            #expect(try db.scalar("SELECT slugify('A B')") == .text("a-b"))
            let tooMany = SQLiteScalarFunction("many", argumentCount: 200) { _ in .null }
            #expect(sqliteError { try db.add(function: tooMany) }?.kind == .misuse)
        }
    }
}
