import ModelSyncSQLite
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

    @Model(table: "notes")
    struct Note: SQLModel {
        var id: Int?
        @Column(unique: true) var slug: String
        var text: String

        static let search = FullTextIndex<Note>(\.text)
    }

    /// The writes that can replace or keep a row that clashes on the rowid or on `slug`.
    enum ClashingWrite: CaseIterable, Sendable {
        case insertReplacingSlug, updateReplacingSlug, saveReplacingSlug, insertAllReplacingSlug
        case upsertReplacingSlug, upsertByKey, upsertByUniqueKey, rawInsertOrReplace
        case insertReplacingRowid, insertIgnoringRowid

        func run(_ db: SQLiteConnection) throws {
            var banana = Note(slug: "a", text: "banana")
            switch self {
            case .insertReplacingSlug: try banana.insert(db, onConflict: .replace)
            case .updateReplacingSlug: try Note(id: 2, slug: "a", text: "banana").update(db, onConflict: .replace)
            case .saveReplacingSlug:
                var cherry = Note(id: 2, slug: "a", text: "banana")
                try cherry.save(db, onConflict: .replace)
            case .insertAllReplacingSlug:
                var batch = [Note(slug: "d", text: "date"), banana]
                try Note.insertAll(&batch, db, onConflict: .replace)
            case .upsertReplacingSlug: try banana.upsert(db, onConflict: .replace)
            case .upsertByKey: try Note(id: 1, slug: "a", text: "banana").upsert(db)
            case .upsertByUniqueKey: try banana.upsert(db, uniqueKey: [\.slug])
            case .rawInsertOrReplace: try db.execute("INSERT OR REPLACE INTO notes (slug, text) VALUES ('a', 'banana')")
            case .insertReplacingRowid:
                var replacement = Note(id: 1, slug: "b", text: "banana")
                try replacement.insert(db, onConflict: .replace)
            case .insertIgnoringRowid:
                var ignored = Note(id: 1, slug: "b", text: "banana")
                try ignored.insert(db, onConflict: .ignore)
            }
        }
    }

    /// Issue #38: a row `REPLACE` deleted for a clash on another unique column fired no delete
    /// trigger, so its words stayed in the index, and a later row with its rowid matched them.
    @Test(arguments: ClashingWrite.allCases)
    func theIndexFollowsRowsThatClash(write: ClashingWrite) throws {
        let db = try TestStorage.memory.open(models: [Note.self])
        try db.write { db in
            try Note.search.create(db)
            var apple = Note(id: 1, slug: "a", text: "apple")
            var cherry = Note(id: 2, slug: "c", text: "cherry")
            try apple.insert(db)
            try cherry.insert(db)
            try write.run(db)
        }
        // A replaced row's rowid used again: stale words would match the new row.
        try db.write { db in
            var kiwi = Note(id: 1, slug: "k", text: "kiwi")
            if try Note.find(1, db) == nil { try kiwi.insert(db) }
        }
        try db.write { db in
            // With `rank` 1, FTS5 also checks the index against the model's table.
            try db.execute("INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')")
            try db.execute("INSERT INTO notes_fts(notes_fts, rank) VALUES ('integrity-check', 1)")
        }
        let notes = try db.read { try Note.all($0) }
        for word in ["apple", "banana", "cherry", "date", "kiwi"] {
            let found = try db.read { try Note.where(Note.search.matches(.words(word))).fetchAll($0) }
            #expect(found.compactMap(\.id).sorted() == notes.filter { $0.text == word }.compactMap(\.id).sorted(), "\(word)")
        }
    }

    /// An index made before recursive triggers had a BEFORE INSERT trigger that would now remove
    /// a replaced row's words twice: `create` drops it.
    @Test func createDropsTheTriggerOfEarlierVersions() throws {
        let db = try TestStorage.memory.open(models: [Note.self])
        try db.write { db in
            try Note.search.create(db)
            try db.execute(
                "CREATE TRIGGER notes_fts_bi BEFORE INSERT ON notes WHEN EXISTS (SELECT 1 FROM notes WHERE rowid = new.rowid) BEGIN "
                    + "INSERT INTO notes_fts(notes_fts, rowid, text) SELECT 'delete', rowid, text FROM notes WHERE rowid = new.rowid; END")
            try Note.search.create(db)
            var note = Note(id: 1, slug: "a", text: "apple")
            try note.insert(db)
            var replacement = Note(id: 1, slug: "a", text: "banana")
            try replacement.insert(db, onConflict: .replace)
            try db.execute("INSERT INTO notes_fts(notes_fts, rank) VALUES ('integrity-check', 1)")
        }
        #expect(try db.read { try $0.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'notes_fts_bi'") } == .integer(0))
    }
}
