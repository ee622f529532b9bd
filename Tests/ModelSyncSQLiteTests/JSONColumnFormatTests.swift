import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A nested model whose wire mapping differs from its stored form in every way the wire has:
/// a renamed key, an excluded field, a transformer and dates.
@Model(encodeExcluding: ["secret"])
struct StoredNote: SQLModel, Equatable {
    @JSON("note_title") var title: String
    var createdAt: Date
    var secret: String = ""
    @Transform(.millisecondsSince1970) var seenAt: Date
}

@Model(table: "stored_threads")
struct StoredThread: SQLModel, Equatable {
    var id: Int
    var stamps: [Date]
    var note: StoredNote
}

/// Arrays, dictionaries and nested models stored as JSON text use the database's own format,
/// not the REST codec's, and rows written in the old format still read.
@Suite("SQLite: JSON column format")
struct JSONColumnFormatTests {
    static let fractional = Date(timeIntervalSince1970: 1_700_000_000.123456)

    @Test(arguments: TestStorage.allCases)
    func fractionsExcludedFieldsAndRenamedKeysSurviveStorage(store: TestStorage) throws {
        let db = try store.open(models: [StoredThread.self])
        let note = StoredNote(title: "t", createdAt: Self.fractional, secret: "s3cret", seenAt: Self.fractional)
        var thread = StoredThread(id: 1, stamps: [Self.fractional, Date(timeIntervalSince1970: -0.5)], note: note)
        try db.write { try thread.insert($0) }
        #expect(try db.read { try StoredThread.find(1, $0) } == thread)

        // Property names as keys, every field, dates as seconds since 1970 (as date columns are).
        let stored = try db.read { try $0.rows("SELECT note FROM stored_threads") }
        guard case .text(let text)? = stored.first?.first else {
            Issue.record("note is not stored as text: \(stored)")
            return
        }
        let json = try JSONValue(parsing: text)
        #expect(json["title"] == "t")
        #expect(json["secret"] == "s3cret")
        #expect(json["createdAt"]?.doubleValue == Self.fractional.timeIntervalSince1970)
        #expect(json["note_title"] == nil)
    }

    @Test(arguments: TestStorage.allCases)
    func rowsWrittenInTheOldWireFormatStillRead(store: TestStorage) throws {
        let db = try store.open(models: [StoredThread.self])
        // What the previous version stored: the REST codec's output, as written by
        // `JSONModelEncoder()`, and the same text spelled out.
        let note = StoredNote(title: "old", createdAt: Date(timeIntervalSince1970: 1_700_000_000), seenAt: Date(timeIntervalSince1970: 1_700_000_000))
        let wireNote = try JSONModelEncoder().encodeToString(note)
        #expect(wireNote == #"{"note_title":"old","createdAt":"2023-11-14T22:13:20Z","seenAt":1700000000000}"#)
        let wireStamps = try JSONModelEncoder().encodeToString([Date(timeIntervalSince1970: 1_700_000_000)])
        #expect(wireStamps == #"["2023-11-14T22:13:20Z"]"#)
        try db.write { try $0.execute("INSERT INTO stored_threads (id, stamps, note) VALUES (1, ?, ?)", [.text(wireStamps), .text(wireNote)]) }

        let read = try #require(try db.read { try StoredThread.find(1, $0) })
        #expect(read == StoredThread(id: 1, stamps: [Date(timeIntervalSince1970: 1_700_000_000)], note: note))

        // Saving it again rewrites it in the storage format, which reads back the same.
        var rewritten = read
        try db.write { try rewritten.save($0) }
        let text = try db.read { try $0.rows("SELECT note FROM stored_threads") }
        #expect(text == [[.text(#"{"title":"old","createdAt":1700000000,"secret":"","seenAt":1700000000}"#)]])
        #expect(try db.read { try StoredThread.find(1, $0) } == read)
    }

    @Test func theStorageProfileIsStrictAndExact() throws {
        let note = StoredNote(title: "t", createdAt: Self.fractional, secret: "x", seenAt: Self.fractional)
        let text = try JSONModelEncoder(options: .storage).encode(note)
        #expect(try JSONModelDecoder(options: .storage).decode(StoredNote.self, from: text) == note)
        // A missing key is an error, not a default: that is what sends old rows to the wire rules.
        #expect(throws: JSONError.self) {
            try JSONModelDecoder(options: .storage).decode(StoredNote.self, from: #"{"title":"t","createdAt":0,"seenAt":0}"#)
        }
    }
}
