import Foundation
@testable import ModelSync
import ModelSyncTesting
import Testing

/// The sync layer's bookkeeping as models, made by its own migrations beside the app's.
@Suite struct BookkeepingTests {
    /// Deferred foreign keys hold for the rest of the transaction and end with it; a second
    /// call in the same transaction leaves the pragma alone (setting it expires every prepared
    /// statement of the connection).
    @Test func deferringForeignKeysLastsOneTransaction() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-bookkeeping")
        defer { directory.remove() }
        let database = try Database(path: directory.path("defer.sqlite"), models: [SyncNote.self])
        let (before, during) = try await database.write { db in
            let before = try db.scalar("PRAGMA defer_foreign_keys")
            try SyncBookkeeping.deferForeignKeys(db)
            try SyncBookkeeping.deferForeignKeys(db)
            return (before, try db.scalar("PRAGMA defer_foreign_keys"))
        }
        #expect(before == .integer(0))
        #expect(during == .integer(1))
        #expect(try await database.write { db in try db.scalar("PRAGMA defer_foreign_keys") } == .integer(0))
    }

    /// A server nobody listens on: these stores never push.
    static let offline = RemoteStore(baseURL: URL(string: "http://127.0.0.1:9")!)

    /// The app's migrations of its own.
    static func appMigrations(through last: Int) -> Migrator {
        var migrations = Migrator()
        migrations.register("1-create-notes") { db in try SyncNote.createTable(db) }
        if last >= 2 { migrations.registerSQL("2-index-titles", #"CREATE INDEX notes_title ON "SyncNote" (title)"#) }
        return migrations
    }

    /// An app with migrations of its own and a `SyncStore` on one file, opened again and again
    /// (and by a later app release with one more migration): neither migrator takes the other's
    /// record for unknown migrations, and each runs its steps once.
    @Test func anAppsMigrationsAndTheSyncStoresShareOneFile() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-bookkeeping")
        defer { directory.remove() }
        let path = directory.path("app.sqlite")
        for round in 1...4 {
            let migrations = Self.appMigrations(through: round < 3 ? 1 : 2)
            let database = try Database(path: path, models: [SyncNote.self], migrations: migrations)
            let sync = SyncStore(remote: Self.offline, database: database, models: [SyncNote.self])
            var note = SyncNote(id: nil, title: "note \(round)")
            try await sync.save(&note)
            #expect(note.id == -round)
            #expect(try await sync.pendingCount() == round)
            let recorded = try await database.read { db throws in
                try db.rows("SELECT id FROM modelsync_migrations ORDER BY rowid").compactMap { $0[0].textValue }
            }
            #expect(recorded == ["1-create-notes", "modelsync:sync/1-outbox-format-1", "modelsync:sync/2-subscriptions"] + (round < 3 ? [] : ["2-index-titles"]))
            #expect(try await database.read { db in try migrations.appliedMigrations(db) } == migrations.ids)
            // The app's migrator, run again on the open file, finds nothing to do.
            try migrations.migrate(database)
        }
        // An app's migrator still refuses a file from a later app release…
        #expect(throws: SQLiteError.self) { try Database(path: path, models: [SyncNote.self], migrations: Self.appMigrations(through: 1)) }
        // …and may not take the sync layer's ids.
        var clashing = Self.appMigrations(through: 2)
        clashing.registerSQL("modelsync:sync/2-mine", "SELECT 1")
        #expect(throws: SQLiteError.self) { try Database(path: path, models: [SyncNote.self], migrations: clashing) }
    }

    /// The models match the tables the migrations make, from nothing and from the raw SQL of the
    /// releases before (which `OutboxUpgradeTests` writes).
    @Test func theModelsMatchTheTablesTheMigrationsMake() async throws {
        for release in [nil, OutboxUpgradeTests.releasedOutbox] {
            let database = try Database(inMemory: [])
            if let release { try await database.write { db in try db.executeScript(release) } }
            try SyncBookkeeping.migrator.migrate(database)
            try await database.read { db throws in
                #expect(try OutboxRecord.tableDifferences(db) == [])
                #expect(try RowVersion.tableDifferences(db) == [])
                #expect(try PullCursor.tableDifferences(db) == [])
                #expect(try KeyRewrite.tableDifferences(db) == [])
                #expect(try SyncCounter.tableDifferences(db) == [])
            }
        }
    }

    /// What the models store is what the releases before stored: JSON text keys that the raw
    /// statements of those releases (and the simulation's triggers) find.
    @Test func entriesAreStoredAsTheReleasesBeforeStoredThem() async throws {
        let database = try Database(inMemory: [])
        try SyncBookkeeping.migrator.migrate(database)
        try await database.write { db throws in
            var entry = OutboxRecord.queued(
                model: "SyncNote", localKey: .string("local-1"), operation: .create, body: ["title": "a"], changedFields: ["title"],
                baseValues: nil, temporaryKey: true)
            try entry.insert(db, validate: false)
            #expect(entry.sequence == 1)
            try SyncBookkeeping.setVersion(#""7""#, model: "SyncNote", .number(JSONNumber(3)), db)
            let row = try db.rows("SELECT local_key, body, changed_fields, base_values, temporary_key, state, sent FROM modelsync_outbox")
            #expect(row == [[.text(#""local-1""#), .text(#"{"title":"a"}"#), .text(#"["title"]"#), .null, .integer(1), .text("pending"), .integer(0)]])
            #expect(try db.rows("SELECT key, version FROM modelsync_row_versions") == [[.text("3"), .text(#""7""#)]])
            #expect(try SyncBookkeeping.entries(model: "SyncNote", .string("local-1"), db).map(\.sequence) == [1])
            #expect(try SyncBookkeeping.version(model: "SyncNote", .number(JSONNumber(3)), db) == #""7""#)
            #expect(try SyncBookkeeping.versions(model: "SyncNote", keys: [.number(JSONNumber(3)), .number(JSONNumber(4))], db) == ["3": #""7""#])
        }
    }
}
