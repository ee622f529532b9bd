import Foundation
import ModelSync

/// Authors and their books: the parents and children of the eager-loading workload.
enum Library {
    @Model(table: "authors")
    struct Author: SQLModel, Equatable {
        var id: Int
        var name: String
        var country: String

        static let books = hasMany(Book.self)
    }

    @Model(table: "books")
    struct Book: SQLModel, Equatable {
        var id: Int
        @Column(indexed: true) var authorId: Int
        var title: String
        var pages: Int
        var price: Double

        static let relations: [any ModelRelation<Book>] = [belongsTo(Author.self, onDelete: .cascade)]
    }
}

/// Eager loading: every author, then the books of all of them with one more query
/// (`Author.books.load(for: authors, db)`), against GRDB 7.10.0's `including(all:)` with
/// Codable records and with hand-written records (see `RelationGRDBPeers.swift`). Each
/// contender reads its own database file holding the same rows, with the same schema (the
/// books' foreign key and its index) and settings (WAL, `synchronous = NORMAL`).
enum RelationWorkloads {
    static let eagerLoad = Workload(
        name: "sqlite_eager_load_has_many",
        summary: "fetch N parents and their 10 children each (one query per relation); peers: grdb_codable, grdb_rows (including(all:))",
        unit: .rowsPerSecond, sizes: [WorkloadSize(1_000, quick: true), WorkloadSize(10_000)]
    ) { size in
        let countries = ["NG", "JP", "PE", "DE"]
        let authors = (0..<size.count).map { (n: Int) -> Library.Author in
            Library.Author(id: n + 1, name: "Author \(n)", country: countries[n % 4])
        }
        // Book n belongs to author n % count + 1: an author's books are spread over the table.
        let books = (0..<size.count * 10).map { (n: Int) -> Library.Book in
            let price = Double(n % 5_000) / 100
            return Library.Book(id: n + 1, authorId: n % size.count + 1, title: "Book \(n)", pages: 100 + n % 400, price: price)
        }
        let files = try Files()
        let db = try Database(path: files.ours, models: [Library.Author.self, Library.Book.self])
        try db.write { db in
            for var author in authors { try author.insert(db) }
            for var book in books { try book.insert(db) }
        }
        let load = {
            try db.read { db in
                let authors = try Library.Author.all(db)
                return (authors, try Library.Author.books.load(for: authors, db))
            }
        }
        let ours = Contender.ours {
            _ = files
            let (authors, books) = try load()
            return authors.count + books.reduce(0) { $0 + $1.count }
        }
        let schema = try [Library.Author.createTableSQL(), Library.Book.createTableSQL()] + Library.Book.sqlTable.indexes.map(\.sql)
        let grdb = try GRDBRelationPeers.eagerLoad(authors: authors, books: books, schema: schema.joined(separator: "; "), directory: files.directory)

        var expected: [Int: [Library.Book]] = [:]
        for book in books { expected[book.authorId, default: []].append(book) }
        let expectedBooks = authors.flatMap { expected[$0.id] ?? [] }
        return PreparedWorkload(ours: ours, peers: grdb.contenders) {
            let (loaded, children) = try load()
            var results = [(Contender.oursName, loaded, children)]
            for (index, (parents, children)) in try grdb.verify().enumerated() {
                results.append((grdb.contenders[index].name, parents, children))
            }
            for (name, parents, children) in results {
                try expectEqual(parents, authors, "sqlite_eager_load_has_many \(name) parents")
                // Children in id order: neither side promises an order without ORDER BY.
                try expectEqual(children.flatMap { $0.sorted { $0.id < $1.id } }, expectedBooks, "sqlite_eager_load_has_many \(name) children")
            }
        }
    }

    static let all = [eagerLoad]
}
