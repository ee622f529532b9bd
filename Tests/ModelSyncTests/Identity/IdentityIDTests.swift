import Foundation
import ModelSync
import Testing

@Suite("Identity-map ids, typed by the model's key")
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
        var id = UUID()
        var name: String
    }

    @Model
    struct AssignedLater: Equatable {
        @PrimaryKey var code: Optional<Int64>
        var name: String
    }

    @Model
    struct Membership: Equatable {
        @PrimaryKey var groupID: Int
        @PrimaryKey var userID: String
    }

    @Model
    struct Keyless {
        var name: String
    }

    enum Catalog {
        typealias Code = String
        // `Code` resolves inside the struct (where the macro declares ModelID), not from an
        // extension at file scope, which would not see `Catalog`'s members.
        @Model
        struct Entry: Equatable {
            var id: Code
            var title: String
        }
    }

    /// Whether `M` is keyed, seen without a static constraint.
    static func isKeyed<M: Model>(_ type: M.Type) -> Bool { type is any KeyedModel.Type }

    @Test func eachModelIDIsItsKeysOwnType() {
        #expect(IntKeyed.ModelID.self == Int.self)
        #expect(TextKeyed.ModelID.self == String.self)
        #expect(UUIDKeyed.ModelID.self == UUID.self)
        #expect(AssignedLater.ModelID.self == Int64.self)
        #expect(Membership.ModelID.self == PrimaryKey.self)
        #expect(Catalog.Entry.ModelID.self == String.self)
        #expect(!Self.isKeyed(Keyless.self))
    }

    @Test func lookupsTakeTheTypedID() {
        let map = IdentityMap()
        map.store(IntKeyed(id: 7, name: "seven"))
        map.store(TextKeyed(id: "7", name: "text"))
        map.store(AssignedLater(code: 9, name: "nine"))
        map.store(Membership(groupID: 3, userID: "ann"))
        map.store(Catalog.Entry(id: "a/b", title: "slash"))
        #expect(map.value(IntKeyed.self, id: 7)?.name == "seven")
        #expect(map.value(TextKeyed.self, id: "7")?.name == "text")
        #expect(map.value(AssignedLater.self, id: 9)?.name == "nine")
        #expect(map.value(Membership.self, id: PrimaryKey(3, "ann")) != nil)
        #expect(map.value(Membership.self, id: PrimaryKey(3, "bob")) == nil)
        #expect(map.value(Catalog.Entry.self, id: "a/b")?.title == "slash")
        #expect(map.remove(IntKeyed.self, id: 7)?.name == "seven")
        #expect(map.value(IntKeyed.self, id: 7) == nil)
    }

    @Test func aKeyBuiltFromAnyValueIsReadAsTheKeyFieldsType() throws {
        let map = IdentityMap()
        map.store(IntKeyed(id: 7, name: "seven"))
        map.store(TextKeyed(id: "7", name: "text"))
        let uuidKeyed = UUIDKeyed(name: "u")
        map.store(uuidKeyed)
        // Ids that arrive untyped (from a URL, a JSON payload) go through PrimaryKey(_:of:).
        let intKey = try #require(PrimaryKey("7", of: IntKeyed.self))
        #expect(map.value(IntKeyed.self, key: intKey)?.name == "seven")
        let textKey = try #require(PrimaryKey(7, of: TextKeyed.self))
        #expect(map.value(TextKeyed.self, key: textKey)?.name == "text")
        let uuidKey = try #require(PrimaryKey(uuidKeyed.id.uuidString.lowercased(), of: UUIDKeyed.self))
        #expect(map.value(UUIDKeyed.self, key: uuidKey)?.name == "u")
        let wrong = try #require(PrimaryKey("seven", of: IntKeyed.self))
        #expect(map.value(IntKeyed.self, key: wrong) == nil)
        #expect(map.remove(IntKeyed.self, key: intKey)?.name == "seven")
        #expect(map.value(IntKeyed.self, id: 7) == nil)
    }
}
