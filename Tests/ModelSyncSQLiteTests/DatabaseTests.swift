import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("SQLite: connections and databases")
struct DatabaseTests {
    @Test func fileDatabaseUsesWALAndForeignKeys() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("app.sqlite"))
        #expect(try db.read { try $0.scalar("PRAGMA journal_mode") } == .text("wal"))
        #expect(try db.write { try $0.scalar("PRAGMA journal_mode") } == .text("wal"))
        #expect(try db.read { try $0.scalar("PRAGMA foreign_keys") } == .integer(1))
        #expect(FileManager.default.fileExists(atPath: directory.path("app.sqlite")))
    }

    @Test func valuesAreBoundAndIdentifiersQuoted() throws {
        let db = try Database(inMemory: [])
        let table = #"select "odd" table"#
        try db.write { db in
            try db.execute("CREATE TABLE \(quoteIdentifier(table)) (\(quoteIdentifier("order")) TEXT, n INTEGER, r REAL, b BLOB)")
            try db.execute(
                "INSERT INTO \(quoteIdentifier(table)) VALUES (?, ?, ?, ?)",
                [.text("'; DROP TABLE x; --"), .integer(42), .real(1.5), .blob([0, 1, 2])])
            try db.execute("INSERT INTO \(quoteIdentifier(table)) VALUES (?, ?, ?, ?)", ["", .null, 2.0, .blob([])])
        }
        let rows = try db.read { try $0.rows("SELECT * FROM \(quoteIdentifier(table)) ORDER BY rowid") }
        #expect(rows == [[.text("'; DROP TABLE x; --"), .integer(42), .real(1.5), .blob([0, 1, 2])], [.text(""), .null, .real(2), .blob([])]])
    }

    @Test func preparedStatementsAreCached() throws {
        let db = try Database(inMemory: [])
        let handles = try db.read { db in
            try (0..<3).map { _ in try db.withStatement("SELECT ?", [1]) { $0.handle } }
        }
        #expect(Set(handles.map { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer($0))) }).count == 1)
        // A statement in use is not handed out twice.
        let nested = try db.read { db in
            try db.withStatement("SELECT 1") { outer in try db.withStatement("SELECT 1") { $0.handle != outer.handle } }
        }
        #expect(nested)
    }

    @Test func wrongArgumentCountIsAnError() throws {
        let db = try Database(inMemory: [])
        let error = sqliteError { try db.read { _ = try $0.rows("SELECT ?, ?", [1]) } }
        #expect(error?.kind == .misuse)
        #expect(error?.sql == "SELECT ?, ?")
    }

    @Test(arguments: TestStorage.allCases)
    func failedWriteRollsBack(store: TestStorage) throws {
        let db = try store.open()
        try db.write { try $0.execute("CREATE TABLE t (x INTEGER)") }
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try db.write { db in
                try db.execute("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(try db.read { try $0.scalar("SELECT count(*) FROM t") } == .integer(0))
    }

    @Test(arguments: TestStorage.allCases)
    func nestedTransactionsAreSavepoints(store: TestStorage) throws {
        let db = try store.open()
        struct Abort: Error {}
        try db.write { db in
            try db.execute("CREATE TABLE t (x INTEGER)")
            try db.execute("INSERT INTO t VALUES (1)")
            try? db.transaction {
                try db.execute("INSERT INTO t VALUES (2)")
                throw Abort()
            }
            try db.transaction { try db.execute("INSERT INTO t VALUES (3)") }
        }
        #expect(try db.read { try $0.rows("SELECT x FROM t ORDER BY x") } == [[.integer(1)], [.integer(3)]])
    }

    @Test func openHooksRunOnEveryConnection() throws {
        let directory = try TemporaryDirectory()
        let configuration = DatabaseConfiguration(openHooks: [{ try $0.execute("PRAGMA cache_size = -1234") }])
        let db = try Database(path: directory.path("hooks.sqlite"), configuration: configuration)
        #expect(try db.write { try $0.scalar("PRAGMA cache_size") } == .integer(-1234))
        #expect(try db.read { try $0.scalar("PRAGMA cache_size") } == .integer(-1234))
    }

    @Test func severalDatabasesAreIndependent() throws {
        let directory = try TemporaryDirectory()
        let first = try Database(inMemory: [Event.self])
        let second = try Database(inMemory: [Event.self])
        let third = try Database(path: directory.path("third.sqlite"), models: [Event.self])
        try first.write { db in
            var event = Event(name: "first")
            try event.insert(db)
        }
        #expect(try first.read { try Event.count($0) } == 1)
        #expect(try second.read { try Event.count($0) } == 0)
        #expect(try third.read { try Event.count($0) } == 0)
    }

    @Test func asyncReadAndWrite() async throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("async.sqlite"), models: [Event.self])
        let event = try await db.write { db in
            var event = Event(name: "launch")
            try event.insert(db)
            return event
        }
        let found = try await db.read { try Event.find(event.id, $0) }
        #expect(found == event)
    }

    // MARK: - Failures

    @Test func corruptFileIsATypedError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("corrupt.sqlite")
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        let error = sqliteError { _ = try Database(path: path) }
        #expect(error?.code == 26)  // SQLITE_NOTADB
        #expect(error?.message.contains("not a database") == true)
    }

    @Test func readOnlyDatabaseRejectsWrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ro.sqlite")
        let writable = try Database(path: path, models: [Event.self])
        try writable.write { db in
            var event = Event(name: "kept")
            try event.insert(db)
        }
        let readOnly = try Database(path: path, configuration: DatabaseConfiguration(readOnly: true))
        #expect(try readOnly.read { try Event.all($0).map(\.name) } == ["kept"])
        let error = sqliteError {
            try readOnly.write { db in
                var event = Event(name: "rejected")
                try event.insert(db)
            }
        }
        #expect(error?.code == 8)  // SQLITE_READONLY
        #expect(error?.sql?.hasPrefix("INSERT INTO \"Event\"") == true)
    }

    // Root ignores file permissions, so only an unprivileged user can see this.
    @Test(.enabled(if: getuid() != 0, "root ignores file permissions"))
    func readOnlyFileRejectsWrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ro-file.sqlite")
        let db = try Database(path: path, models: [Event.self], configuration: DatabaseConfiguration(walMode: false))
        _ = db
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
        let reopened = try Database(path: path, configuration: DatabaseConfiguration(walMode: false))
        let error = sqliteError { try reopened.write { try $0.execute("INSERT INTO Event (name) VALUES ('x')") } }
        #expect(error?.code == 8)
    }

    @Test func lockedDatabaseIsATypedErrorAfterTheBusyTimeout() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("locked.sqlite")
        let holder = try Database(path: path, models: [Event.self])
        let other = try Database(path: path, configuration: DatabaseConfiguration(busyTimeout: 0.01))
        let error = try holder.write { _ in
            sqliteError { try other.write { try $0.execute("INSERT INTO Event (name) VALUES ('x')") } }
        }
        #expect(error?.code == 5)  // SQLITE_BUSY
    }

    @Test func missingTableNamesTheSQL() throws {
        let db = try Database(inMemory: [], configuration: DatabaseConfiguration(createsTables: false))
        let error = sqliteError { _ = try db.read { try Event.all($0) } }
        #expect(error?.code == 1)
        #expect(error?.message.contains("no such table: Event") == true)
        #expect(error?.sql == #"SELECT "id", "name" FROM "Event""#)
    }

    @Test(arguments: TestStorage.allCases)
    func typeMismatchInStoredDataNamesTheColumn(store: TestStorage) throws {
        let db = try store.open()
        // A table written by something else: its column accepts what the model cannot read.
        try db.write { try $0.execute("CREATE TABLE Event (id INTEGER PRIMARY KEY, name TEXT)") }
        try db.write { try $0.execute("INSERT INTO Event (id, name) VALUES (1, X'00')") }
        let error = sqliteError { _ = try db.read { try Event.all($0) } }
        #expect(error?.kind == .typeMismatch(table: "Event", column: "name"))
        #expect(error?.message == "Event.name: expected String, found BLOB (1 bytes)")
        #expect(error?.sql == #"SELECT "id", "name" FROM "Event""#)

        try db.write { try $0.execute("UPDATE Event SET name = NULL") }
        #expect(sqliteError { _ = try db.read { try Event.find(1, $0) } }?.message == "Event.name: expected String, found NULL")
    }

    @Test func invalidJSONInAJSONColumnIsATypeMismatch() throws {
        let db = try Database(inMemory: [Post.self])
        try db.write { db in
            var post = Post(title: "Hello")
            try post.insert(db)
            try db.execute("UPDATE posts SET tags = '[1, oops'")
        }
        let error = sqliteError { _ = try db.read { try Post.all($0) } }
        #expect(error?.kind == .typeMismatch(table: "posts", column: "tags"))
    }
}
