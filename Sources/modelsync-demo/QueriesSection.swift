import Foundation
import ModelSync

/// The query builder: typed conditions, orderings, selections, aggregates and bulk writes,
/// each printed with its SQL, its arguments and what it returned.
enum QueriesSection {
    static func run() throws {
        section("Queries")

        let db = try Database(inMemory: [Note.self])
        var notes = [
            Note(authorId: 1, title: "Swift on Linux", slug: "swift-linux", pinned: true, tags: ["swift"]),
            Note(authorId: 1, title: "SQLite tips", slug: "sqlite-tips"),
            Note(authorId: 2, title: "swift packages", slug: "swift-packages", tags: ["swift", "spm"]),
            Note(authorId: 2, title: "It's 50% off; -- really", slug: "sale"),
            Note(authorId: 3, title: "Notes", slug: "notes"),
        ]
        try db.write { try Note.saveAll(&notes, $0) }

        try show("Key-path operators, ordering and a limit", Note.where(\.authorId == 1).order(.desc(\.id)).limit(10), db) { $0.title }
        try show(
            "Nested AND / OR, a case-insensitive prefix",
            Note.where { $0.title.hasPrefix("swift", ignoringCase: true) && ($0.authorId == 2 || $0.pinned == true) }.order(\.id), db
        ) { $0.title }
        try show("A value with quotes, % and -- is bound, and matched exactly", Note.where(\.title == "It's 50% off; -- really"), db) { $0.slug }
        try show("IN a subquery", Note.where { $0.authorId.in(Note.where(\.pinned == true).select(\.authorId)) }.order(\.id), db) { $0.title }
        try show("Chosen columns, read as typed tuples", Note.order(.desc(\.title)).select(\.id, \.title).limit(2), db) { "\($0.0 ?? 0): \($0.1)" }
        try show(
            "GROUP BY with HAVING and aggregates",
            Note.all().select { ($0.authorId, $0.rowCount(), $0.id.max()) }.group(by: \.authorId).having { $0.rowCount() > 1 }, db
        ) { "author \($0.0): \($0.1) notes, last id \($0.2 ?? 0)" }

        let update = Note.where { $0.title.contains("swift", ignoringCase: true) }
        let assignment = SQLAssignment<Note>.set(\.pinned, to: true)
        let changed = try db.write { try update.updateAll($0, assignment) }
        step("Bulk update by condition\n\(try update.renderedUpdate(assignment))", "\(changed) rows changed")

        let unknown = Note.where(sql: "colour = ?", ["red"])
        do {
            _ = try db.read { try unknown.fetchAll($0) }
        } catch let error as SQLiteError {
            step("A column the table lacks is a typed error", "\(error.kind)")
        }
    }

    /// Prints the query's SQL and arguments, then what it fetched.
    private static func show<Element>(
        _ title: String, _ query: SQLQuery<Note, Element>, _ db: Database, _ describe: (Element) -> String
    ) throws {
        let rows = try db.read { try query.fetchAll($0) }
        step("\(title)\n\(try query.rendered())", rows.map(describe).joined(separator: "\n"))
    }
}
