import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// The `posts` table as an older version of the app created it.
@Model(table: "posts", columns: .snakeCase)
struct PostV1: SQLModel {
    var id: Int?
    var userId: Int
    var title: String
    @Column("post_slug", unique: true) var slug: String
}

/// A newer version with more columns.
@Model(table: "posts", columns: .snakeCase, indexes: [["userId", "title"]])
struct PostV2: SQLModel {
    var id: Int?
    var userId: Int
    var title: String
    @Column("post_slug", unique: true) var slug: String
    @Column(indexed: true) var views: Int = 0
    var subtitle: String?
    @Column(unique: true) var code: String?
    static var autoAlters: Bool { true }
}

/// A newer version that cannot be altered automatically.
@Model(table: "posts", columns: .snakeCase)
struct PostV3: SQLModel {
    var id: Int?
    var userId: Int
    var title: String
    @Column("post_slug", unique: true) var slug: String
    var required: String
    static var autoAlters: Bool { true }
}

/// A newer version whose added column has a default containing " UNIQUE".
@Model(table: "posts", columns: .snakeCase)
struct PostV4: SQLModel {
    var id: Int?
    var userId: Int
    var title: String
    @Column("post_slug", unique: true) var slug: String
    var note: String = "a UNIQUE note"
    static var autoAlters: Bool { true }
}

@Suite("SQLite: tables from models")
struct SchemaTests {
    @Test func createTableFollowsTheSchema() throws {
        let db = try Database(inMemory: [Post.self])
        let columns = try db.read { try $0.columns(of: "posts") }
        #expect(columns.map(\.name) == [
            "id", "user_id", "title", "post_slug", "body", "views", "rating", "is_pinned", "status", "published_at",
            "tags", "attachment", "website", "token", "price", "author",
        ])
        #expect(columns.map(\.type) == [
            "INTEGER", "INTEGER", "TEXT", "TEXT", "TEXT", "INTEGER", "REAL", "INTEGER", "TEXT", "REAL",
            "TEXT", "BLOB", "TEXT", "TEXT", "TEXT", "TEXT",
        ])
        #expect(columns.filter(\.isNotNull).map(\.name) == [
            "user_id", "title", "post_slug", "views", "rating", "is_pinned", "status", "tags", "price",
        ])
        #expect(columns.first { $0.name == "views" }?.defaultSQL == "0")
        #expect(columns.first { $0.name == "status" }?.defaultSQL == "'draft'")
        #expect(columns.first { $0.name == "tags" }?.defaultSQL == "'[]'")
        #expect(columns.filter { $0.primaryKeyPosition > 0 }.map(\.name) == ["id"])
        let indexes = try db.read { try $0.indexes(of: "posts") }
        #expect(Set(indexes).isSuperset(of: ["posts_user_id", "posts_user_id_published_at"]))
        #expect(indexes.contains { $0.hasPrefix("sqlite_autoindex_posts") })  // UNIQUE post_slug
        #expect(Post.sqlTable.createTableSQL().contains(#""id" INTEGER PRIMARY KEY, "user_id" INTEGER NOT NULL"#))
    }

    @Test func createCheckAndDropExplicitly() throws {
        let db = try Database(inMemory: [], configuration: DatabaseConfiguration(createsTables: false))
        try db.write { db in
            #expect(try Post.tableDifferences(db) == ["table 'posts' does not exist"])
            try Post.createTable(db)
            try Post.createTable(db, ifNotExists: true)
            #expect(throws: SQLiteError.self) { try Post.createTable(db) }
            try Post.checkTable(db)
            try Post.dropTable(db)
            #expect(try !db.tableExists("posts"))
            try Post.dropTable(db)
            #expect(throws: SQLiteError.self) { try Post.dropTable(db, ifExists: false) }
        }
    }

    @Test func mismatchWithoutMigrationSaysWhichColumnsDiffer() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("schema.sqlite")
        _ = try Database(path: path, models: [PostV1.self])
        let error = sqliteError { _ = try Database(path: path, models: [Post.self]) }
        guard case .schemaMismatch(let table, let differences)? = error?.kind else {
            Issue.record("expected a schema mismatch, got \(String(describing: error))")
            return
        }
        #expect(table == "posts")
        #expect(differences.first == "missing column 'body' (body: String?)")
        #expect(differences.count == 12)
        #expect(error?.message.hasPrefix("table 'posts' does not match Post: missing column 'body'") == true)

        // A model with fewer fields than the table is a mismatch too.
        let db = try Database(path: path)
        try db.write { try $0.execute("ALTER TABLE posts ADD COLUMN extra TEXT") }
        #expect(try db.read { try PostV1.tableDifferences($0) } == ["column 'extra' is not a field of PostV1"])
    }

    @Test func autoAlterAddsColumnsAndIndexes() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("alter.sqlite")
        let old = try Database(path: path, models: [PostV1.self])
        try old.write { db in
            var post = PostV1(userId: 1, title: "Old", slug: "old")
            try post.insert(db)
        }
        let db = try Database(path: path, models: [PostV2.self])
        let stored = try #require(try db.read { try PostV2.find(1, $0) })
        #expect(stored.views == 0)
        #expect(stored.subtitle == nil)
        let indexes = try db.read { try $0.indexes(of: "posts") }
        #expect(Set(indexes).isSuperset(of: ["posts_views", "posts_user_id_title", "posts_code_unique"]))
        try db.write { db in
            var post = PostV2(userId: 2, title: "New", slug: "new", code: "c")
            try post.insert(db)
            var clash = PostV2(userId: 3, title: "Clash", slug: "clash", code: "c")
            #expect(sqliteError { try clash.insert(db) }?.isConstraintViolation == true)
        }
        // Opening again changes nothing.
        _ = try Database(path: path, models: [PostV2.self])
    }

    @Test func autoAlterKeepsADefaultThatContainsUnique() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("default.sqlite")
        let old = try Database(path: path, models: [PostV1.self])
        try old.write { db in
            var post = PostV1(userId: 1, title: "Old", slug: "old")
            try post.insert(db)
        }
        let db = try Database(path: path, models: [PostV4.self])
        let columns = try db.read { try $0.columns(of: "posts") }
        #expect(columns.first { $0.name == "note" }?.defaultSQL == "'a UNIQUE note'")
        #expect(try db.read { try PostV4.find(1, $0) }?.note == "a UNIQUE note")
        // The column is not unique: two rows may share the default.
        try db.write { db in
            var post = PostV4(userId: 2, title: "New", slug: "new")
            try post.insert(db)
        }
        #expect(try db.read { try $0.rows("SELECT note FROM posts ORDER BY id") } == [[.text("a UNIQUE note")], [.text("a UNIQUE note")]])
    }

    @Test func autoAlterRefusesWhatNeedsAMigration() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("refuse.sqlite")
        _ = try Database(path: path, models: [PostV1.self])
        let error = sqliteError { _ = try Database(path: path, models: [PostV3.self]) }
        #expect(error?.kind == .schemaMismatch(
            table: "posts", differences: ["missing column 'required' is NOT NULL without a constant default"]))
    }

    @Test func tablesAreCreatedOnFirstWrite() throws {
        let db = try Database(inMemory: [])
        try db.write { db in
            var event = Event(name: "lazy")
            try event.insert(db)
        }
        #expect(try db.read { try Event.count($0) } == 1)
    }
}
