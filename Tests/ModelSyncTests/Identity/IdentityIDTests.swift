import Foundation
import ModelSync
import Testing

@Suite("Identity-map ids, read as the key field's type")
struct IdentityIDTests {
    @Model
    struct IntKeyed: Equatable {
        var id: Int
        var name: String
    }

    @Model
    struct TextKeyed: Equatable {
        var id: String
        var name: String
    }

    @Model
    struct UUIDKeyed: Equatable {
        var id: UUID
        var name: String
    }

    @Test func anIdWrittenEitherWayNamesOneIdentity() {
        let map = IdentityMap()
        map.store(IntKeyed(id: 7, name: "seven"))
        #expect(map.value(IntKeyed.self, id: 7)?.name == "seven")
        #expect(map.value(IntKeyed.self, id: "7")?.name == "seven")
        #expect(map.value(IntKeyed.self, id: Int8(7))?.name == "seven")
        #expect(map.value(IntKeyed.self, id: "seven") == nil)

        map.store(TextKeyed(id: "7", name: "text"))
        #expect(map.value(TextKeyed.self, id: 7)?.name == "text")
        #expect(map.value(TextKeyed.self, id: "7")?.name == "text")

        let uuid = UUID()
        map.store(UUIDKeyed(id: uuid, name: "u"))
        #expect(map.value(UUIDKeyed.self, id: uuid.uuidString.lowercased())?.name == "u")

        #expect(map.remove(IntKeyed.self, id: "7")?.name == "seven")
        #expect(map.value(IntKeyed.self, id: 7) == nil)
    }
}
