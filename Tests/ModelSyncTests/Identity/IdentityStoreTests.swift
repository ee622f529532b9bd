import Foundation
import ModelSync
import Testing

/// A value without a key, nested in a keyed model.
@Model
struct Dimensions: Equatable {
    var width: Int = 0
    var height: Int = 0
}

@Model
struct Painting: Equatable {
    var id: Int
    var title: String
    var size: Dimensions
}

/// The map's storage: one column of values per model type, one use order across all of them.
@Suite struct IdentityStoreTests {
    @Test func equalKeysOfTwoTypesStayApart() {
        let map = IdentityMap()
        map.store(Author(id: 1, name: "Ann"))
        map.store(Checkin(id: 1, at: Date(timeIntervalSince1970: 10)))
        map.store(Author(id: 1, name: "Bea"))
        #expect(map.count == 2)
        #expect(map.value(Author.self, id: 1)?.name == "Bea")
        #expect(map.value(Checkin.self, id: 1)?.at == Date(timeIntervalSince1970: 10))
        #expect(map.anyValue(Checkin.self, key: PrimaryKey(1)) is Checkin)
        #expect(map.value(Checkin.self, key: PrimaryKey(1)) != nil)
        #expect(map.remove(Checkin.self, id: 1) != nil)
        #expect(map.value(Author.self, id: 1)?.name == "Bea")
        #expect(map.count == 1)
    }

    @Test func evictionFollowsUseAcrossTypes() {
        let map = IdentityMap(capacity: 3)
        map.store(Author(id: 1, name: "A"))
        map.store(Checkin(id: 1, at: Date(timeIntervalSince1970: 1)))
        map.store(Author(id: 2, name: "B"))
        _ = map.value(Author.self, id: 1)                            // the checkin is now the oldest
        map.store(Checkin(id: 2, at: Date(timeIntervalSince1970: 2)))
        #expect(map.count == 3)
        #expect(map.value(Checkin.self, id: 1) == nil)
        let order = map.values.map { value -> String in
            switch value {
            case let author as Author: "author \(author.id)"
            case let checkin as Checkin: "checkin \(checkin.id)"
            default: "other"
            }
        }
        #expect(order == ["author 2", "author 1", "checkin 2"])
        // Replacing a value makes it the newest too: author 2 is no longer the next evicted.
        map.store(Author(id: 2, name: "B2"))
        map.store(Author(id: 3, name: "C"))
        #expect(map.value(Author.self, id: 1) == nil)
        #expect(map.value(Author.self, id: 2)?.name == "B2")
    }

    @Test func freedRowsAreReusedAndGrowingKeepsEveryValue() {
        let map = IdentityMap(capacity: 1_000)
        for id in 1...40 { map.store(Author(id: id, name: "a\(id)")) }
        for id in stride(from: 2, through: 40, by: 2) { #expect(map.remove(Author.self, id: id)?.name == "a\(id)") }
        for id in 101...140 { map.store(Author(id: id, name: "a\(id)")) }
        #expect(map.count == 60)
        let expected = Array(stride(from: 1, through: 39, by: 2)) + Array(101...140)
        #expect((map.values as? [Author])?.map(\.id) == expected)
        #expect(expected.allSatisfy { map.value(Author.self, id: $0)?.name == "a\($0)" })
        map.removeAll()
        #expect(map.count == 0)
        map.store(Author(id: 1, name: "again"))
        #expect(map.value(Author.self, id: 1)?.name == "again")
    }

    @Test func aNestedModelWithoutAKeyIsNotStoredAndMergesNothingOfItsOwn() throws {
        let map = IdentityMap()
        _ = try decoder(map).decode([Painting].self, from: #"[{"id":1,"title":"A","size":{"width":3,"height":4}}]"#)
        #expect(map.count == 1)
        #expect(map.values.count == 1)
        // The painting merges (its size kept whole); the size, without a key, has no base.
        #expect(try decoder(map).decode(Painting.self, from: #"{"id":1,"title":"B"}"#).size == Dimensions(width: 3, height: 4))
        let merged = try decoder(map).decode(Painting.self, from: #"{"id":1,"size":{"width":5}}"#)
        #expect(merged == Painting(id: 1, title: "B", size: Dimensions(width: 5, height: 0)))
        #expect(map.value(Painting.self, id: 1) == merged)
        #expect(map.count == 1)
    }
}
