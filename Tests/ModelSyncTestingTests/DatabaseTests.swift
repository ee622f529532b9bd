import Foundation
import ModelSync
import ModelSyncTesting
import Testing

let sharedMemory = SharedTestDatabase(.memory, models: [User.self]) { db in
    _ = try users.set(\.name, "Seed").create(in: db)
}

@Suite("Testing: test databases")
struct TestDatabaseTests {
    static func migrations() -> Migrator {
        var migrations = Migrator()
        migrations.registerSQL("1-create-notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
        migrations.registerSQL("2-index-notes", "CREATE INDEX notes_text ON notes (text)")
        return migrations
    }

    @Test(arguments: TestStorage.allCases)
    func aTestDatabaseHasItsSchemaAndMigrations(storage: TestStorage) throws {
        let db = try storage.open(models: [User.self], migrations: Self.migrations())
        #expect(try db.read { try $0.tableExists("users") && $0.tableExists("notes") })
        #expect(try db.read { try Self.migrations().appliedMigrations($0) } == ["1-create-notes", "2-index-notes"])
        #expect(db.path == nil || storage == .file)
    }

    @Test func aFileDatabaseIsRemovedWithItsDirectory() throws {
        var directory: String?
        try withTestDatabase(.file, models: [User.self]) { db in
            let path = try #require(db.path)
            _ = try users.create(in: db)
            _ = try db.read { try User.all($0) }  // opens a reader too
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        }
        let removed = try #require(directory)
        #expect(!FileManager.default.fileExists(atPath: removed))
    }

    @Test(.testDatabase(.file, models: [User.self]))
    func theTraitHandsTheTestADatabase() throws {
        let db = try #require(TestScope.database)
        _ = try users.create(2, in: db)
        #expect(try db.read { try User.count($0) } == 2)
    }

    @Test func noDatabaseOutsideATrait() {
        #expect(TestScope.database == nil)
    }
}

/// Each test writes into the shared database and checks that it sees only the seed and its
/// own rows: if rollback or turn-taking failed, one of them would see another's rows.
@Suite("Testing: shared database with rollback", .serialized)
struct RollbackTests {
    static let sharedFile = SharedTestDatabase(.file, models: [User.self]) { db in
        _ = try users.set(\.name, "Seed").create(in: db)
    }

    @Test(arguments: 1...6)
    func eachTestSeesTheSeedAndItsOwnWritesOnly(rows: Int) async throws {
        for shared in [sharedMemory, Self.sharedFile] {
            try await shared.withRollback { db in
                _ = try users.create(rows, in: db)
                // A nested write that fails rolls back to its savepoint only.
                #expect(throws: SQLiteError.self) {
                    try db.write { connection in
                        let user = try users.create(on: connection)
                        _ = try users.set(\.email, user.email).create(on: connection)
                    }
                }
                let names = try { try db.read { try User.all($0).map(\.name) } }()
                #expect(names.count == rows + 1)
                #expect(names.first == "Seed")
                let async = try await db.read { try User.count($0) }
                #expect(async == rows + 1)
            }
            #expect(try userCount(shared.database()) == 1)
        }
    }

    @Test func aThrowingTestIsRolledBackToo() async throws {
        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            try await Self.sharedFile.withRollback { db in
                _ = try users.create(3, in: db)
                throw Failure()
            }
        }
        #expect(try userCount(Self.sharedFile.database()) == 1)
        // The file's reader pool is used again, and sees the committed state.
        #expect(try await Self.sharedFile.database().read { try $0.scalar("PRAGMA query_only") } == .integer(1))
    }

    @Test func tablesCreatedInsideAScopeAreCreatedAgainInTheNext() async throws {
        // No models up front: saving a user creates its table, inside the scope.
        let shared = SharedTestDatabase(.file)
        for _ in 1...2 {
            try await shared.withRollback { db in
                _ = try users.create(in: db)
                #expect(try userCount(db) == 1)
            }
        }
        #expect(try await shared.database().read { try $0.tableExists("users") } == false)
    }

    @Test(.rollback(sharedMemory))
    func theRollbackTraitScopesTheTest() throws {
        let db = try #require(TestScope.database)
        _ = try users.create(4, in: db)
        #expect(try db.read { try User.count($0) } == 5)
    }
}

/// On a suite, the trait scopes every test case: each one starts with an empty database.
@Suite("Testing: a database trait on a suite", .testDatabase(.file, models: [User.self]))
struct SuiteTraitTests {
    @Test(arguments: 1...3)
    func everyTestCaseGetsItsOwnDatabase(rows: Int) throws {
        let db = try #require(TestScope.database)
        #expect(try userCount(db) == 0)
        _ = try users.create(rows, in: db)
        #expect(try userCount(db) == rows)
    }
}
