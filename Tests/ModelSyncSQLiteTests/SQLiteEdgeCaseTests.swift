import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

// Edge cases of the SQLite layer: clashing names, busy timeouts, a cursor outliving its database,
// text compared by bytes, qualified columns, result codes, errors that keep their cause.

/// Two models of the same name in different namespaces: both default to the table `Clash`.
enum ClashingNamespaceA {
    @Model struct Clash: SQLModel, Equatable {
        var id: Int?
        var title: String
    }
}

enum ClashingNamespaceB {
    @Model struct Clash: SQLModel, Equatable {
        var id: Int?
        var score: Int
    }
}

/// A model whose column is the precomposed "café" (U+00E9).
@Model(table: "accents")
struct Accent: SQLModel {
    var id: Int?
    @Column("café") var label: String
}

/// Two tables whose names Swift calls equal but whose bytes differ: "\u{E9}" and "e\u{301}".
@Model(table: "\u{E9}")
struct PrecomposedTable: SQLModel {
    var id: Int?
    var ref: Int
}

@Model(table: "e\u{301}")
struct DecomposedTable: SQLModel {
    var id: Int?
    var ref: Int
}

@Suite("SQLite: edge cases of configuration, names, text and errors")
struct SQLiteEdgeCaseTests {
    // MARK: Configuration and connection lifetime

    /// A busy timeout is seconds as a `Double`; SQLite takes an `Int32` of milliseconds. Values
    /// beyond it or infinite open the database at the longest wait, negative ones and NaN at
    /// none, instead of trapping.
    @Test(arguments: [
        (2.5, 2500), (Double.infinity, Int(Int32.max)), (1e300, Int(Int32.max)), (Double(Int32.max), Int(Int32.max)),
        (-.infinity, 0), (-5, 0), (.nan, 0),
    ])
    func anyBusyTimeoutOpens(seconds: Double, milliseconds: Int) throws {
        let db = try Database(inMemory: [Post.self], configuration: DatabaseConfiguration(busyTimeout: seconds))
        #expect(try db.read { try $0.scalar("PRAGMA busy_timeout")?.integerValue } == Int64(milliseconds))
    }

    /// A cursor kept past its database keeps the connection's handle open until the cursor goes.
    /// Closing it then rolls back the transaction still open on it, which must call nothing of
    /// the connection, long gone: its rollback hook did, a use after free that crashed two runs
    /// in three once the memory was reused (so twenty rounds), and always under
    /// `--sanitize=address`.
    @Test func aCursorOutlivingItsDatabaseCallsNothingOfIt() throws {
        for _ in 0..<20 {
            let closed = Locked(false)
            var cursor = try Self.cursorOutlivingItsDatabase(closed)
            try #require(closed.current, "the database outlived its scope: nothing to test")
            #expect(cursor != nil)
            cursor = nil  // finalizes the last statement: the handle closes and rolls back
        }
    }

    /// A cursor over the posts, on the writer of a database that is gone, in the transaction
    /// left open on it.
    private static func cursorOutlivingItsDatabase(_ closed: Locked<Bool>) throws -> SQLCursor<Post>? {
        let db = try Database(inMemory: [Post.self])
        db.onDeinit { closed.withLock { $0 = true } }
        db.trackChanges()  // the change hooks, as an observation installs them
        try db.beginRollbackScope()
        try db.write { db in
            var post = Post(title: "First")
            try post.insert(db)
        }
        return try db.read { try Post.all().fetchCursor($0) }
    }

    // MARK: 16 — NUL in contains / hasPrefix / hasSuffix

    @Test(arguments: TestStorage.allCases)
    func textMatchingIsExactWithNULInValuesAndPatterns(store: TestStorage) throws {
        let db = try store.open(models: [Item.self])
        let notes = ["a\u{0}b", "ab", "\u{0}", "b", "A\u{0}B", "xa\u{0}"]
        try db.write { db in
            for note in notes {
                var item = Item(note, note: note)
                try item.insert(db)
            }
        }
        func matching(_ condition: (SQLExpression<Item, String?>) -> SQLCondition<Item>) throws -> [String] {
            try db.read { try Item.where { condition($0.note) }.fetchAll($0).compactMap(\.note) }
        }
        // A NUL in the pattern is a character, not the end of the pattern.
        #expect(try matching { $0.contains("\u{0}") } == ["a\u{0}b", "\u{0}", "A\u{0}B", "xa\u{0}"])
        #expect(try matching { $0.hasPrefix("a\u{0}") } == ["a\u{0}b"])
        #expect(try matching { $0.hasSuffix("\u{0}") } == ["\u{0}", "xa\u{0}"])
        #expect(try matching { $0.hasSuffix("a\u{0}b") } == ["a\u{0}b"])
        // A NUL in the value does not hide what follows it.
        #expect(try matching { $0.contains("b") } == ["a\u{0}b", "ab", "b"])
        #expect(try matching { $0.hasSuffix("b") } == ["a\u{0}b", "ab", "b"])
        // Ignoring case: ASCII letters fold, the NUL still counts.
        #expect(try matching { $0.contains("a\u{0}b", ignoringCase: true) } == ["a\u{0}b", "A\u{0}B"])
        #expect(try matching { $0.hasPrefix("A\u{0}", ignoringCase: true) } == ["a\u{0}b", "A\u{0}B"])
        #expect(try matching { $0.hasSuffix("\u{0}B", ignoringCase: true) } == ["a\u{0}b", "A\u{0}B"])
        // Longer than the value, and the empty text.
        #expect(try matching { $0.hasSuffix("zza\u{0}b") } == [])
        #expect(try matching { $0.hasPrefix("") }.count == notes.count)
        #expect(try matching { $0.hasSuffix("") }.count == notes.count)
        #expect(try matching { $0.contains("") }.count == notes.count)
    }

    // MARK: 15 — names and values by bytes

    @Test func textValuesAreDistinctByBytes() {
        let composed = SQLValue.text("caf\u{E9}"), decomposed = SQLValue.text("cafe\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(composed == .text("caf\u{E9}"))
    }

    @Test func aCorrelatedColumnOfAnotherTableSpelledAlikeIsQualified() throws {
        let query = PrecomposedTable.where(.exists(DecomposedTable.where { $0.ref == .outer(\PrecomposedTable.id) }))
        // The outer column must name its table: unqualified, SQLite would read the inner one's.
        #expect(try query.sql.contains("\"ref\" = \"\u{E9}\".\"id\""))
        // Set up with sqlite3_exec: the connection's statement cache (keyed by String, fixed
        // separately) would take the second table's statements for the first's.
        let db = try TestStorage.memory.open()
        try db.write { db in
            try db.executeScript(
                """
                CREATE TABLE "\u{E9}" (id INTEGER PRIMARY KEY, ref INTEGER NOT NULL);
                CREATE TABLE "e\u{301}" (id INTEGER PRIMARY KEY, ref INTEGER NOT NULL);
                INSERT INTO "\u{E9}" VALUES (5, 0);
                INSERT INTO "e\u{301}" VALUES (1, 1);
                """)
        }
        // The inner row refers to no outer row; read unqualified, "ref" = "id" would match it.
        #expect(try db.read { try query.fetchCount($0) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func aColumnSpelledWithOtherBytesIsNotTheModelsColumn(store: TestStorage) throws {
        let db = try store.open()
        // "cafe" + U+0301 looks like the model's "café" and is equal as a Swift String, but
        // SQLite sees another column: the check must say so instead of failing on first insert.
        try db.write { try $0.execute("CREATE TABLE accents (id INTEGER PRIMARY KEY, \"cafe\u{301}\" TEXT NOT NULL)") }
        let differences = try db.read { try Accent.tableDifferences($0) }
        #expect(differences.contains { $0.hasPrefix("missing column 'caf\u{E9}'") })
        #expect(differences.contains { $0 == "column 'cafe\u{301}' is not a field of Accent" })
    }

    // MARK: 18 — same-named types in different namespaces

    @Test(arguments: TestStorage.allCases)
    func sameNamedTypesDoNotShareADefaultTable(store: TestStorage) throws {
        // The default table of a type whose name clashes with no other stays its name.
        #expect(ClashingNamespaceA.Clash.schema.table == "Clash")
        let db = try store.open(models: [ClashingNamespaceA.Clash.self])
        var first = ClashingNamespaceA.Clash(title: "kept")
        try db.write { try first.insert($0) }
        let error = sqliteError {
            try db.write { db in
                var other = ClashingNamespaceB.Clash(score: 7)
                try other.insert(db)
            }
        }
        #expect(error?.kind == .tableNameClash(table: "Clash", types: [String(reflecting: ClashingNamespaceA.Clash.self), String(reflecting: ClashingNamespaceB.Clash.self)]))
        #expect(try db.read { try ClashingNamespaceA.Clash.all($0) } == [first])
        // Opening a database with both is refused too.
        #expect(throws: SQLiteError.self) { try store.open(models: [ClashingNamespaceA.Clash.self, ClashingNamespaceB.Clash.self]) }
    }

    // MARK: 20 — named result codes, migration causes

    @Test func resultCodesHaveNames() throws {
        let db = try TestStorage.memory.open(models: [Post.self])
        try db.write { db in
            var post = Post(userId: 1, title: "a", slug: "same")
            try post.insert(db)
        }
        let error = sqliteError {
            try db.write { db in
                var post = Post(userId: 1, title: "b", slug: "same")
                try post.insert(db)
            }
        }
        #expect(error?.resultCode == .constraint)
        #expect(error?.extendedResultCode == .constraintUnique)
        #expect(error?.extendedResultCode.primary == .constraint)
        #expect(SQLiteResultCode.constraintUnique.description == "SQLITE_CONSTRAINT_UNIQUE")
        #expect(SQLiteResultCode(rawValue: 5).description == "SQLITE_BUSY" && SQLiteResultCode.busy == .init(rawValue: 5))
        #expect(SQLiteResultCode(rawValue: 9999).description == "9999")
    }

    struct MigrationBodyFailure: Error, Equatable {
        let reason: String
    }

    @Test func aMigrationErrorKeepsWhatTheMigrationThrew() throws {
        let db = try TestStorage.memory.open()
        var migrations = Migrator()
        migrations.register("1-fails") { _ in throw MigrationBodyFailure(reason: "no disk") }
        migrations.register("2-sql") { try $0.execute("INSERT INTO nowhere VALUES (1)") }
        let error = sqliteError { try migrations.migrate(db) }
        #expect(error?.kind == .migrationFailed(id: "1-fails"))
        #expect(error?.underlyingError as? MigrationBodyFailure == MigrationBodyFailure(reason: "no disk"))

        var sqlMigrations = Migrator()
        sqlMigrations.register("1-sql") { try $0.execute("INSERT INTO nowhere VALUES (1)") }
        let sqlError = sqliteError { try sqlMigrations.migrate(db) }
        let cause = sqlError?.underlyingError as? SQLiteError
        #expect(cause?.kind == .sqlite && cause?.resultCode == .error)
        #expect(cause?.sql == "INSERT INTO nowhere VALUES (1)")
    }
}
