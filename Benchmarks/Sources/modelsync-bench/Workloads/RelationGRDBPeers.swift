import Foundation
import GRDB

// GRDB 7 peers of the relation workloads, apart from ModelSync for the same reason as
// `SQLiteGRDBPeers.swift` (both name types `Database`, `Row`, `Column`).

enum GRDBRelationPeers {
    /// `Author.including(all: Author.books)` with Codable records (`grdb_codable`) and with
    /// records decoded by hand from the row and its prefetched rows (`grdb_rows`), each over
    /// its own file filled with `authors` and `books`.
    static func eagerLoad(
        authors: [Library.Author], books: [Library.Book], schema: String, directory: URL
    ) throws -> (contenders: [Contender], verify: () throws -> [([Library.Author], [[Library.Book]])]) {
        let codable = try GRDBPeers.queue(directory, "grdb_codable", schema)
        let manual = try GRDBPeers.queue(directory, "grdb_rows", schema)
        for queue in [codable, manual] {
            try queue.write { db in
                for author in authors {
                    try db.execute(sql: "INSERT INTO authors (id, name, country) VALUES (?, ?, ?)", arguments: [author.id, author.name, author.country])
                }
                for book in books {
                    try db.execute(
                        sql: "INSERT INTO books (id, authorId, title, pages, price) VALUES (?, ?, ?, ?, ?)",
                        arguments: [book.id, book.authorId, book.title, book.pages, book.price])
                }
            }
        }
        let fetchCodable = {
            try codable.read { try GRDBAuthorWithBooks.fetchAll($0, GRDBAuthor.including(all: GRDBAuthor.books)) }
        }
        let fetchManual = {
            try manual.read { try GRDBAuthorWithBooksManual.fetchAll($0, GRDBAuthorManual.including(all: GRDBAuthorManual.books)) }
        }
        return (
            [
                Contender(name: "grdb_codable") { try fetchCodable().reduce(0) { $0 + 1 + $1.books.count } },
                Contender(name: "grdb_rows") { try fetchManual().reduce(0) { $0 + 1 + $1.books.count } },
            ],
            {
                [
                    try fetchCodable().reduce(into: ([], [])) { result, info in
                        result.0.append(Library.Author(id: info.author.id, name: info.author.name, country: info.author.country))
                        result.1.append(info.books.map { Library.Book(id: $0.id, authorId: $0.authorId, title: $0.title, pages: $0.pages, price: $0.price) })
                    },
                    try fetchManual().reduce(into: ([], [])) { result, info in
                        result.0.append(info.author)
                        result.1.append(info.books)
                    },
                ]
            }
        )
    }
}

private struct GRDBAuthor: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "authors"
    static let books = hasMany(GRDBBook.self)
    var id: Int, name: String, country: String
}

private struct GRDBBook: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "books"
    var id: Int, authorId: Int, title: String, pages: Int, price: Double
}

/// GRDB's documented shape for `including(all:)`: the base record and its children by key.
private struct GRDBAuthorWithBooks: Decodable, FetchableRecord {
    var author: GRDBAuthor
    var books: [GRDBBook]
}

private struct GRDBAuthorManual: FetchableRecord, TableRecord {
    static let databaseTableName = "authors"
    static let books = hasMany(GRDBBookManual.self)
    var author: Library.Author

    init(row: GRDB.Row) {
        author = Library.Author(id: row[0], name: row[1], country: row[2])
    }
}

private struct GRDBBookManual: FetchableRecord, TableRecord {
    static let databaseTableName = "books"
    var book: Library.Book

    init(row: GRDB.Row) {
        book = Library.Book(id: row[0], authorId: row[1], title: row[2], pages: row[3], price: row[4])
    }
}

private struct GRDBAuthorWithBooksManual: FetchableRecord {
    var author: Library.Author
    var books: [Library.Book]

    init(row: GRDB.Row) {
        author = GRDBAuthorManual(row: row).author
        books = (row.prefetchedRows["books"] ?? []).map { GRDBBookManual(row: $0).book }
    }
}
