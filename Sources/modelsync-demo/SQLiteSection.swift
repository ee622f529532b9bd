import Foundation
import ModelSync

@Model(table: "notes", columns: .snakeCase)
struct Note: SQLModel, Equatable {
    @PrimaryKey(autoincrement: true) var id: Int?
    @Column(indexed: true) var authorId: Int
    var title: String
    @Column(unique: true) var slug: String
    var pinned: Bool = false
    var tags: [String] = []
    var createdAt: Date = Date(timeIntervalSince1970: 1_763_721_257)
}

/// The same table, one release later: a `views` column, added by a migration.
@Model(table: "notes", columns: .snakeCase)
struct NoteV2: SQLModel, Equatable {
    @PrimaryKey(autoincrement: true) var id: Int?
    @Column(indexed: true) var authorId: Int
    var title: String
    @Column(unique: true) var slug: String
    var pinned: Bool = false
    var tags: [String] = []
    var createdAt: Date = Date(timeIntervalSince1970: 1_763_721_257)
    var views: Int = 0
}

/// SQLite: a database file, ActiveRecord operations, an atomic batch and a migration.
enum SQLiteSection {
    static func run() throws {
        section("SQLite persistence")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("demo.sqlite").path

        let db = try Database(path: path, models: [Note.self])
        step("The table @Model described for Note", Note.sqlTable.createTableSQL())

        var first = Note(authorId: 1, title: "Hello, SQLite", slug: "hello", tags: ["intro"])
        var second = Note(authorId: 2, title: "Second note", slug: "second")
        try db.write { db in
            try first.insert(db)
            try second.save(db)
        }
        step("Inserted two notes: SQLite assigned their ids", "first.id = \(first.id ?? 0), second.id = \(second.id ?? 0)")

        first.pinned = true
        first.title = "Hello again, SQLite"
        try db.write { try first.update($0) }
        let found = try db.read { try Note.find(first.id, $0) }
        step("Updated and found again by primary key", found.map { "\($0.title) (pinned: \($0.pinned), tags: \($0.tags))" } ?? "nil")

        try db.write { _ = try second.delete($0) }
        step("Deleted the second note", "count = \(try db.read { try Note.count($0) })")

        var batch = (1...3).map { Note(authorId: 3, title: "Batch \($0)", slug: "batch-\($0)") }
        batch.append(Note(authorId: 3, title: "Clashing slug", slug: "hello"))
        do {
            try db.write { try Note.saveAll(&batch, $0) }
        } catch let error as SQLiteError {
            step(
                "A batch of 4 with a duplicate slug in row \(error.batchIndex ?? -1) writes nothing",
                "\(error.message)\ncount = \(try db.read { try Note.count($0) })")
        }
        batch.removeLast()
        try db.write { try Note.saveAll(&batch, $0) }
        step("The batch without it is saved in one transaction", "ids = \(batch.compactMap(\.id))")

        var migrations = Migrator()
        migrations.register("1-add-views") { db in try db.addColumn(\NoteV2.views, of: NoteV2.self) }
        migrations.registerSQL("2-count-views", "UPDATE notes SET views = length(title)")
        let migrated = try Database(path: path, models: [NoteV2.self], migrations: migrations)
        let notes = try migrated.read { try NoteV2.all($0, where: "author_id = ?", [3], order: "id") }
        step(
            "Migrated the file: recorded \(try migrated.read { try migrations.appliedMigrations($0) })",
            notes.map { "\($0.title): \($0.views) views" }.joined(separator: "\n"))
    }
}
