import ModelSync
import ModelSyncTesting
import Testing

@Suite("Full-text search (FTS5)")
struct FullTextSearchTests {
    @Model(table: "articles")
    struct Article: SQLModel, Equatable {
        var id: Int?
        var title: String
        var body: String
        var views: Int = 0

        static let search = FullTextIndex<Article>(\.title, \.body)
    }

    /// Titles of the matches, best first.
    private func hits(_ query: FullTextQuery, _ db: Database) throws -> [String] {
        try db.read { try Article.where(Article.search.matches(query)).order(Article.search.rank(query), .asc(\.id)).fetchAll($0) }.map(\.title)
    }

    @Test(arguments: TestStorage.allCases)
    func theIndexFollowsEveryWrite(store: TestStorage) throws {
        let db = try store.open(models: [Article.self])
        var existing = Article(title: "Before the index", body: "rows already there are indexed too")
        try db.write { try existing.insert($0) }
        try db.write { try Article.search.create($0) }
        #expect(try hits(.words("already"), db) == ["Before the index"])

        var swift = Article(title: "Swift and SQLite", body: "A model layer")
        var dessert = Article(title: "Dessert", body: "Crème brûlée, sans sqlite")
        try db.write { db in
            try swift.insert(db)
            try dessert.insert(db)
        }
        #expect(Set(try hits(.words("sqlite"), db)) == ["Swift and SQLite", "Dessert"])
        #expect(try hits(.words("creme brulee"), db) == ["Dessert"])  // diacritics removed
        #expect(try hits(.words("model SQLITE"), db) == ["Swift and SQLite"])  // every word, any case

        swift.title = "Renamed"
        try db.write { try swift.update($0) }
        #expect(try hits(.words("swift"), db) == [])
        #expect(try hits(.words("renamed"), db) == ["Renamed"])
        try db.write { _ = try dessert.delete($0) }
        #expect(try hits(.words("brulee"), db) == [])
        try db.write { try $0.execute("INSERT INTO articles (title, body, views) VALUES ('Raw', 'written by hand', 0)") }
        #expect(try hits(.words("hand"), db) == ["Raw"])
        #expect(try hits(.prefix("writ"), db) == ["Raw"])
        #expect(try hits(.phrase("by hand"), db) == ["Raw"])
        #expect(try hits(.phrase("hand by"), db) == [])
    }

    @Test func userInputIsNeverSyntax() throws {
        let db = try TestStorage.memory.open(models: [Article.self])
        try db.write { try Article.search.create($0) }
        var article = Article(title: "Quotes", body: #"she said "AND" twice"#)
        try db.write { try article.insert($0) }
        for input in [#""AND( OR *"#, "NEAR(", "title:x", "\0", "-", #"""""#, "é\u{301}"] {
            _ = try hits(.words(input), db)
            _ = try hits(.phrase(input), db)
            _ = try hits(.prefix(input), db)
        }
        #expect(try hits(.words(#""AND""#), db) == ["Quotes"])
        // FTS5 syntax as written: an error in it is a typed error, not a trap.
        #expect(throws: SQLiteError.self) { try hits(.raw("AND ("), db) }
        #expect(try hits(.raw("said NOT twice"), db) == [])
    }

    @Test func bestMatchesComeFirst() throws {
        let db = try TestStorage.memory.open(models: [Article.self])
        try db.write { try Article.search.create($0) }
        var once = Article(title: "Once", body: "swift, among many other words that are not the word we look for at all")
        var often = Article(title: "Often", body: "swift swift swift")
        try db.write { db in
            try once.insert(db)
            try often.insert(db)
        }
        #expect(try hits(.words("swift"), db) == ["Often", "Once"])
    }

    @Test func aReplacedRowLeavesNoWordsBehind() throws {
        let db = try TestStorage.memory.open(models: [Article.self])
        try db.write { try Article.search.create($0) }
        var first = Article(id: 1, title: "Old", body: "obsolete words")
        try db.write { try first.insert($0) }
        var replacement = Article(id: 1, title: "New", body: "fresh words")
        try db.write { _ = try replacement.insert($0, onConflict: .replace) }
        #expect(try hits(.words("obsolete"), db) == [])
        #expect(try hits(.words("fresh"), db) == ["New"])
        try db.write { try Article.search.drop($0) }
        #expect(throws: SQLiteError.self) { try hits(.words("fresh"), db) }
    }
}
