import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("Async code: the ActiveRecord and query calls with a Database")
struct AsyncModelAccessTests {
    @Model(table: "entries")
    struct Entry: SQLModel, Equatable {
        var id: Int?
        var title: String
    }

    /// What does not compile through `db.write { }` in async code (a captured model mutated in
    /// a `@Sendable` closure) reads here as in sync code.
    @Test(arguments: TestStorage.allCases)
    func modelsAndQueriesThroughTheDatabase(store: TestStorage) async throws {
        let db = try store.open(models: [Entry.self])
        var entry = Entry(title: "first")
        try await entry.insert(db)
        let id = try #require(entry.id)
        entry.title = "edited"
        try await entry.save(db)
        #expect(try await Entry.find(id, db) == entry)

        var second = Entry(title: "second")
        try await second.save(db)  // no id: an insert
        #expect(second.id != nil && second.id != id)
        second.title = "second, edited"
        try await second.update(db)

        #expect(try await Entry.order(.desc(\.id)).fetchAll(db) == [second, entry])
        #expect(try await Entry.where(\.title == "edited").fetchOne(db) == entry)
        #expect(try await Entry.all().fetchCount(db) == 2)
        #expect(try await entry.delete(db))
        #expect(try await Entry.where(\.id == id).exists(db) == false)
        #expect(try await entry.delete(db) == false)
        // A closure-based read sees what these calls wrote.
        #expect(try await db.read { try Entry.all($0) } == [second])
    }

    @Test func aRefusedInsertLeavesTheModelAsItWas() async throws {
        let db = try TestStorage.memory.open(models: [Entry.self])
        var entry = Entry(id: 1, title: "one")
        try await entry.insert(db)
        var clash = Entry(id: 1, title: "clash")
        await #expect(throws: SQLiteError.self) { try await clash.insert(db) }
        #expect(clash == Entry(id: 1, title: "clash"))
        #expect(try await Entry.find(1, db) == entry)
    }
}
