import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Model(table: "journal_entries", columns: .snakeCase)
struct JournalEntry: SQLModel, Equatable {
    var id: Int?
    var text: String
    var createdAt: Date?
    var updatedAt: Date?
    var deletedAt: Date?
}

extension JournalEntry: TimestampedModel, SoftDeletableModel {}

/// A clock the test moves by hand: every write reads it through the configuration.
private final class TestClock: Sendable {
    private let current = Locked(Date(timeIntervalSince1970: 1_000))
    var now: Date { current.current }
    func advance() { current.withLock { $0 += 60 } }
}

private func openJournal(_ store: TestStorage, clock: TestClock) throws -> Database {
    var configuration = DatabaseConfiguration()
    configuration.now = { clock.now }
    return try store.open(models: [JournalEntry.self], configuration: configuration)
}

@Suite("SQLite: timestamps and soft deletes")
struct TimestampAndSoftDeleteTests {
    @Test(arguments: TestStorage.allCases)
    func insertFillsBothTimestampsAndWritesMoveUpdatedAt(store: TestStorage) throws {
        let clock = TestClock()
        let db = try openJournal(store, clock: clock)
        let created = clock.now
        var entry = JournalEntry(text: "First")
        try db.write { try entry.insert($0) }
        #expect(entry.createdAt == created && entry.updatedAt == created)
        #expect(try db.read { try JournalEntry.find(entry.id ?? 0, $0) } == entry)

        clock.advance()
        entry.text = "Saved"
        try db.write { try entry.save($0) }
        #expect(entry.createdAt == created && entry.updatedAt == clock.now)

        clock.advance()
        entry.text = "Updated"
        try db.write { try entry.update($0) }                    // written; `update` does not mutate
        #expect(try db.read { try JournalEntry.find(entry.id ?? 0, $0) }?.updatedAt == clock.now)

        clock.advance()
        entry.text = "Only text"
        try db.write { try entry.update($0, only: [\.text]) }    // updatedAt is written with the listed columns
        let stored = try #require(try db.read { try JournalEntry.find(entry.id ?? 0, $0) })
        #expect(stored.text == "Only text" && stored.createdAt == created && stored.updatedAt == clock.now)

        // A creation time given by the caller is kept; upserts store values as given.
        let past = Date(timeIntervalSince1970: 5)
        var imported = JournalEntry(text: "Imported", createdAt: past)
        try db.write { try imported.insert($0) }
        #expect(imported.createdAt == past && imported.updatedAt == clock.now)
        let asGiven = JournalEntry(id: 50, text: "From the server", createdAt: past, updatedAt: past)
        try db.write { try asGiven.upsert($0) }
        #expect(try db.read { try JournalEntry.find(50, $0) } == asGiven)

        clock.advance()
        var batch = [JournalEntry(text: "A"), JournalEntry(text: "B")]
        _ = try db.write { try JournalEntry.insertAll(&batch, $0) }
        #expect(batch.allSatisfy { $0.createdAt == clock.now && $0.updatedAt == clock.now })
    }

    @Test(arguments: TestStorage.allCases)
    func deletedRowsAreLeftOutUnlessAskedFor(store: TestStorage) throws {
        let clock = TestClock()
        let db = try openJournal(store, clock: clock)
        var entries = ["A", "B", "C"].map { JournalEntry(text: $0) }
        try db.write { try JournalEntry.saveAll(&entries, $0) }

        clock.advance()
        #expect(try db.write { try entries[1].delete($0) })
        #expect(try db.write { try entries[1].delete($0) } == false)   // already deleted
        #expect(try db.read { try JournalEntry.all($0) }.map(\.text) == ["A", "C"])
        #expect(try db.read { try JournalEntry.count($0) } == 2)
        #expect(try db.read { try JournalEntry.find(entries[1].id ?? 0, $0) } == nil)
        #expect(try db.read { try JournalEntry.where(\.text == "B").exists($0) } == false)
        #expect(try db.read { try JournalEntry.all().withDeleted().fetchCount($0) } == 3)
        let deleted = try db.read { try JournalEntry.all().onlyDeleted().fetchAll($0) }
        #expect(deleted.map(\.text) == ["B"])
        #expect(deleted.first?.deletedAt == clock.now && deleted.first?.updatedAt == clock.now)
        #expect(deleted.first?.isDeleted == true)
        #expect(try JournalEntry.where(\.text == "B").sql.hasSuffix(#"WHERE "deleted_at" IS NULL AND "text" = ?"#))

        // Restoring brings it back.
        var restored = try #require(deleted.first)
        #expect(try db.write { try restored.restore($0) })
        #expect(restored.deletedAt == nil && !restored.isDeleted)
        #expect(try db.read { try JournalEntry.all($0) }.map(\.text) == ["A", "B", "C"])
        #expect(try db.write { try restored.restore($0) } == false)

        // forceDelete removes the row.
        #expect(try db.write { try restored.forceDelete($0) })
        #expect(try db.read { try JournalEntry.all().withDeleted().fetchCount($0) } == 2)
    }

    @Test(arguments: TestStorage.allCases)
    func bulkWritesActOnTheRowsTheQueryReads(store: TestStorage) throws {
        let clock = TestClock()
        let db = try openJournal(store, clock: clock)
        var entries = ["A", "B", "C"].map { JournalEntry(text: $0) }
        try db.write { try JournalEntry.saveAll(&entries, $0) }
        let firstDeletion = clock.now
        try db.write { _ = try entries[0].delete($0) }
        // Live rows only, unless widened.
        #expect(try db.write { try JournalEntry.all().updateAll($0, .set(\.text, to: "live")) } == 2)

        // deleteAll soft-deletes the live rows the query reads, in one statement, stamping both
        // times; a row deleted before keeps its deletion time, even through withDeleted().
        clock.advance()
        #expect(try db.write { try JournalEntry.deleteAll($0) } == 2)
        #expect(try db.read { try JournalEntry.all().fetchCount($0) } == 0)
        let kept = try db.read { try JournalEntry.all().withDeleted().order(\.id).fetchAll($0) }
        #expect(kept.map(\.text) == ["A", "live", "live"])
        #expect(kept.map(\.deletedAt) == [firstDeletion, clock.now, clock.now])
        #expect(kept.map(\.updatedAt) == [firstDeletion, clock.now, clock.now])
        #expect(try db.write { try JournalEntry.all().withDeleted().deleteAll($0) } == 0)

        // forceDeleteAll removes rows, within the query's scope.
        #expect(try db.write { try JournalEntry.where(\.text == "A").forceDeleteAll($0) } == 0)
        #expect(try db.write { try JournalEntry.where(\.text == "A").withDeleted().forceDeleteAll($0) } == 1)
        #expect(try db.write { try JournalEntry.all().onlyDeleted().forceDeleteAll($0) } == 2)
        #expect(try db.read { try JournalEntry.all().withDeleted().fetchCount($0) } == 0)
    }

    /// The scope and the query's own condition are one `AND` chain, whatever the condition's
    /// form (the scope is written before it without building the chain), and a query run again
    /// through the connection's shape cache binds the same values.
    @Test(arguments: TestStorage.allCases)
    func theScopeAndTheConditionReadAsOneChain(store: TestStorage) throws {
        let clock = TestClock()
        let db = try openJournal(store, clock: clock)
        var entries = ["A", "B", "C"].map { JournalEntry(text: $0) }
        try db.write { try JournalEntry.saveAll(&entries, $0) }
        _ = try db.write { try entries[1].delete($0) }
        let cases: [(SQLQuery<JournalEntry, JournalEntry>, String, [String])] = [
            (JournalEntry.where(\.text == "A"), #"WHERE "deleted_at" IS NULL AND "text" = ?"#, ["A"]),
            (JournalEntry.where { $0.text == "A" || $0.text == "B" }, #"WHERE "deleted_at" IS NULL AND ("text" = ? OR "text" = ?)"#, ["A"]),
            (JournalEntry.where { $0.text != "A" && $0.id > 0 }, #"WHERE "deleted_at" IS NULL AND "text" <> ? AND "id" > ?"#, ["C"]),
            (JournalEntry.where(.always), #"WHERE "deleted_at" IS NULL"#, ["A", "C"]),
            (JournalEntry.where(.never), #"WHERE "deleted_at" IS NULL AND 0"#, []),
            (JournalEntry.all(), #"WHERE "deleted_at" IS NULL"#, ["A", "C"]),
        ]
        for (query, condition, _) in cases {
            #expect(try query.sql.hasSuffix(" FROM \"journal_entries\" " + condition))
        }
        try db.read { db throws in
            for _ in 0..<2 {
                for (query, _, texts) in cases {
                    #expect(try query.order(\.id).fetchAll(db).map(\.text) == texts)
                    #expect(try query.order(\.id).fetchOne(db)?.text == texts.first)
                }
            }
        }
    }
}
