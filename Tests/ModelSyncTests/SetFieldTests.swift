import ModelSync
import Testing

@Suite("Set fields")
struct SetFieldTests {
    @Model
    struct Tagged: SQLModel, Equatable {
        var id: Int?
        var tags: Set<String>
        var scores: Set<Int> = []
    }

    @Test func jsonIsAnArraySortedByItsText() throws {
        let value = Tagged(id: 1, tags: ["b", "a", "c"], scores: [30, 4, 200])
        // Equal sets write equal JSON, whatever their iteration order.
        #expect(try JSONModelEncoder().encodeToString(value) == #"{"id":1,"tags":["a","b","c"],"scores":[200,30,4]}"#)
        let decoded = try JSONModelDecoder().decode(Tagged.self, from: #"{"id":1,"tags":["x","x","y"]}"#)
        #expect(decoded == Tagged(id: 1, tags: ["x", "y"]))  // duplicates merge; a missing set is its default
        // Strict mode refuses what lenient mode (the default) converts, as for arrays.
        let strict = JSONModelDecoder(mode: .strict)
        #expect(throws: JSONError.self) { try strict.decode(Tagged.self, from: #"{"id":1,"tags":[1]}"#) }
        #expect(throws: JSONError.self) { try strict.decode(Tagged.self, from: #"{"id":1,"tags":"a"}"#) }
        #expect(try JSONModelDecoder().decode(Tagged.self, from: #"{"id":1,"tags":"a"}"#).tags == ["a"])
    }

    @Test func storedInSQLiteAsJSONText() throws {
        let db = try Database(inMemory: [Tagged.self])
        var value = Tagged(tags: ["swift", "sqlite"], scores: [2, 1])
        try db.write { try value.insert($0) }
        #expect(try db.read { try Tagged.find(value.id, $0) } == value)
        let stored = try db.read { try $0.scalar("SELECT tags FROM Tagged") }
        #expect(stored == .text(#"["sqlite","swift"]"#))
    }
}
