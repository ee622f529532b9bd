import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// `people` as migrations shape it over time.
@Model(table: "people")
struct Person: SQLModel, Equatable {
    var id: Int?
    var name: String
    var email: String?
}

@Model(table: "people")
struct PersonWithTypedAge: SQLModel, Equatable {
    var id: Int?
    var name: String
    var age: Int = 0
}

@Model(table: "people")
struct PersonWithHandle: SQLModel, Equatable {
    var id: Int?
    var name: String
    @Column(unique: true) var handle: String?
}

/// A thread-safe list of what hooks saw.
final class Journal: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String] = []
    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
}

@Suite("SQLite: migrations")
struct MigrationTests {
    private func baseMigrations() -> Migrator {
        var migrations = Migrator()
        migrations.registerSQL("1-create-people", "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        migrations.register("2-add-email") { db in try db.addColumn(\Person.email, of: Person.self) }
        return migrations
    }

    @Test(arguments: TestStorage.allCases)
    func migrationsRunOnceInOrderAndAreRecordedInTheDatabase(store: TestStorage) throws {
        let db = try store.open()
        let migrations = baseMigrations()
        try migrations.migrate(db)
        try migrations.migrate(db)  // nothing pending
        #expect(try db.read { try migrations.appliedMigrations($0) } == ["1-create-people", "2-add-email"])
        try db.write { db in
            var person = Person(name: "Ada", email: "ada@example.com")
            try person.insert(db)
        }
        #expect(try db.read { try Person.all($0).map(\.email) } == ["ada@example.com"])
    }

    @Test func addingAUniqueColumnKeepsItUnique() throws {
        let db = try TestStorage.file.open()
        var migrations = Migrator()
        migrations.registerSQL("1-create-people", "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        migrations.register("2-add-handle") { db in try db.addColumn(\PersonWithHandle.handle, of: PersonWithHandle.self) }
        try migrations.migrate(db)
        try db.write { db in
            var ada = PersonWithHandle(name: "Ada", handle: "ada")
            try ada.insert(db)
        }
        #expect(sqliteError {
            try db.write { db in
                var copy = PersonWithHandle(name: "Copy", handle: "ada")
                try copy.insert(db)
            }
        } != nil)
        #expect(try db.read { try PersonWithHandle.all($0).map(\.handle) } == ["ada"])
    }

    @Test func theRecordTravelsWithTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("migrated.sqlite")
        _ = try Database(path: path, models: [Person.self], migrations: baseMigrations())
        var later = baseMigrations()
        later.registerSQL("3-index-names", "CREATE INDEX people_name ON people (name)")
        let db = try Database(path: path, models: [Person.self], migrations: later)
        #expect(try db.read { try later.appliedMigrations($0) } == ["1-create-people", "2-add-email", "3-index-names"])
        #expect(try db.read { try $0.indexes(of: "people") } == ["people_name"])
    }

    @Test(arguments: TestStorage.allCases)
    func aFailingMigrationRollsBackAndLeavesTheVersion(store: TestStorage) throws {
        let db = try store.open()
        var migrations = baseMigrations()
        migrations.register("3-broken") { db in
            try db.execute("ALTER TABLE people ADD COLUMN nickname TEXT")
            try db.execute("INSERT INTO nowhere VALUES (1)")
        }
        migrations.registerSQL("4-never-runs", "CREATE TABLE never (x)")
        let error = sqliteError { try migrations.migrate(db) }
        #expect(error?.kind == .migrationFailed(id: "3-broken"))
        #expect(error?.sql == "INSERT INTO nowhere VALUES (1)")
        #expect(error?.message.contains("no such table: nowhere") == true)
        #expect(try db.read { try migrations.appliedMigrations($0) } == ["1-create-people", "2-add-email"])
        #expect(try db.read { try $0.columns(of: "people").map(\.name) } == ["id", "name", "email"])
        #expect(try db.read { try $0.tableExists("never") } == false)
    }

    @Test func unknownMigrationsInTheFileAreAnError() throws {
        let db = try Database(inMemory: [])
        try baseMigrations().migrate(db)
        var older = Migrator()
        older.registerSQL("1-create-people", "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        #expect(sqliteError { try older.migrate(db) }?.kind == .unknownMigrations(ids: ["2-add-email"]))
        var duplicated = baseMigrations()
        duplicated.registerSQL("2-add-email", "SELECT 1")
        #expect(sqliteError { try duplicated.migrate(db) }?.kind == .misuse)
    }

    /// ModelSync's own migrators record ids under `modelsync:` in the same table: an app's
    /// migrator neither counts them as unknown nor lists them, and may not register such ids;
    /// ModelSync's see only their own part of the record.
    @Test func modelSyncsOwnMigrationsAndTheAppsShareTheRecord() throws {
        let db = try Database(inMemory: [])
        var own = Migrator(reservedPart: "part")
        own.registerSQL("modelsync:part/1-create", "CREATE TABLE modelsync_part (id INTEGER PRIMARY KEY)")
        try own.migrate(db)
        let app = baseMigrations()
        try app.migrate(db)
        try own.migrate(db)
        try app.migrate(db)
        #expect(try db.read { try app.appliedMigrations($0) } == ["1-create-people", "2-add-email"])
        #expect(try db.read { try own.appliedMigrations($0) } == ["modelsync:part/1-create"])
        #expect(try db.read { try $0.rows("SELECT id FROM modelsync_migrations ORDER BY rowid").compactMap { $0[0].textValue } }
            == ["modelsync:part/1-create", "1-create-people", "2-add-email"])

        // Each still finds what it does not know among its own ids.
        var olderApp = Migrator()
        olderApp.registerSQL("1-create-people", "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        #expect(sqliteError { try olderApp.migrate(db) }?.kind == .unknownMigrations(ids: ["2-add-email"]))
        let olderOwn = Migrator(reservedPart: "part")
        #expect(sqliteError { try olderOwn.migrate(db) }?.kind == .unknownMigrations(ids: ["modelsync:part/1-create"]))
        // Another part of ModelSync does not see this one's ids.
        try Migrator(reservedPart: "other").migrate(db)

        // The reserved prefix is ModelSync's alone, and a part's ids stay in the part.
        var reserved = Migrator()
        reserved.registerSQL("modelsync:mine", "SELECT 1")
        #expect(sqliteError { try reserved.migrate(db) }?.kind == .misuse)
        var stray = Migrator(reservedPart: "part")
        stray.registerSQL("2-outside", "SELECT 1")
        #expect(sqliteError { try stray.migrate(db) }?.kind == .misuse)
    }

    @Test func hooksAndSetupOfABrandNewDatabase() throws {
        let journal = Journal()
        var migrations = baseMigrations()
        migrations.beforeMigrating = { _ in journal.append("before") }
        migrations.afterMigrating = { db in journal.append("after \(try Migrator().appliedMigrations(db).count)") }
        let fresh = try Database(inMemory: [], migrations: migrations)
        _ = fresh
        #expect(journal.all == ["before", "after 2"])

        var withSetup = migrations
        withSetup.setUpNewDatabase = { db in
            journal.append("setup")
            try Person.createTable(db)
        }
        let created = try Database(inMemory: [Person.self], migrations: withSetup)
        #expect(journal.all == ["before", "after 2", "setup"])
        #expect(try created.read { try withSetup.appliedMigrations($0) } == ["1-create-people", "2-add-email"])
    }

    @Test func renameAndDropColumns() throws {
        let db = try Database(inMemory: [])
        var migrations = baseMigrations()
        migrations.register("3-rename") { db in try db.renameColumn("email", to: "mail", in: "people") }
        migrations.register("4-add") { db in try db.addColumn("score", to: "people", type: "INTEGER", notNull: true, default: 0) }
        migrations.register("5-drop") { db in try db.dropColumn("mail", from: "people") }
        try migrations.migrate(db)
        let columns = try db.read { try $0.columns(of: "people") }
        #expect(columns.map(\.name) == ["id", "name", "score"])
        #expect(columns.last?.defaultSQL == "0")
    }

    @Test func rebuildTableChangesTypesAndKeepsDataAndIndexes() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("rebuild.sqlite"))
        var migrations = Migrator()
        migrations.registerSQL(
            "1-legacy",
            """
            CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, age TEXT, obsolete TEXT);
            CREATE INDEX people_name ON people (name);
            CREATE INDEX people_obsolete ON people (obsolete);
            INSERT INTO people (name, age, obsolete) VALUES ('Ada', '36', 'x'), ('Alan', NULL, 'y');
            """)
        migrations.register("2-rebuild") { db in
            try db.rebuildTable(PersonWithTypedAge.self, mapping: ["age": "coalesce(CAST(age AS INTEGER), 0)"])
        }
        try migrations.migrate(db)
        let people = try db.read { try PersonWithTypedAge.all($0, order: "id") }
        #expect(people == [PersonWithTypedAge(id: 1, name: "Ada", age: 36), PersonWithTypedAge(id: 2, name: "Alan", age: 0)])
        #expect(try db.read { try $0.indexes(of: "people") } == ["people_name"])
        try db.read { try PersonWithTypedAge.checkTable($0) }
    }
}
