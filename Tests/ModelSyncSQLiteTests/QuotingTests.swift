import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A quote followed by a combining mark is one Character that is not a quote to Swift, but SQL
/// and FTS5 read its quote byte: quoting must work on bytes.
@Suite("Quoting by bytes")
struct QuotingTests {
    @Test func aQuoteBeforeACombiningMarkIsDoubled() throws {
        let name = "a\"\u{301}b"
        #expect(Array(quoteIdentifier(name).utf8).filter { $0 == UInt8(ascii: "\"") }.count == 4)
        let db = try TestStorage.memory.open()
        try db.write { db in
            try db.execute("CREATE TABLE \(quoteIdentifier(name)) (\(quoteIdentifier(name)) TEXT)")
            try db.execute("INSERT INTO \(quoteIdentifier(name)) VALUES (?)", [.text(name)])
        }
        #expect(try db.read { try $0.scalar("SELECT \(quoteIdentifier(name)) FROM \(quoteIdentifier(name))") } == .text(name))
    }

    @Model(table: "notes")
    struct Note: SQLModel {
        var id: Int?
        var text: String

        static let search = FullTextIndex<Note>(\.text)
    }

    @Test func fullTextInputCannotCloseItsString() throws {
        let db = try TestStorage.memory.open(models: [Note.self])
        try db.write { try Note.search.create($0) }
        var note = Note(text: "plain words")
        try db.write { try note.insert($0) }
        // Unquoted, `"\u{301} OR plain` would end the string and read as FTS5 syntax.
        let query = FullTextQuery.words("x\"\u{301} OR plain")
        #expect(try db.read { try Note.where(Note.search.matches(query)).fetchCount($0) } == 0)
    }
}
