import Foundation
import ModelSync
import Testing

/// A model keyed by text, for ids that Swift calls equal but whose bytes differ.
@Model
struct Slugged: SQLModel, Equatable {
    var id: String
    var title: String
}

/// Issue 13, item 15: identity-map keys compare by UTF-8 bytes.
@Suite struct IdentityKeyBytesTests {
    @Test func canonicallyEquivalentTextKeysAreTwoIdentities() {
        let composed = PrimaryKey(.text("caf\u{E9}")), decomposed = PrimaryKey(.text("cafe\u{301}"))
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(PrimaryKey(.text("caf\u{E9}")) == composed)
        #expect(PrimaryKey(.integer(1)) != PrimaryKey(.text("1")))
    }

    /// `PrimaryKey`'s `==` and `hash(into:)` are written out (a single-field key skips the
    /// array of the others): keys of different lengths, or differing in a later component,
    /// stay apart, and equal keys hash alike.
    @Test func compositeKeysCompareEveryComponent() {
        let keys = [PrimaryKey(3), PrimaryKey(3, 7), PrimaryKey(3, 8), PrimaryKey(3, 7, 1), PrimaryKey("3", 7)]
        for (i, left) in keys.enumerated() {
            for (j, right) in keys.enumerated() {
                #expect((left == right) == (i == j), "\(left) vs \(right)")
            }
        }
        #expect(Set(keys + [PrimaryKey(3, 7), PrimaryKey(3)]).count == keys.count)
        #expect(PrimaryKey(3, 7).hashValue == PrimaryKey(.integer(3), .integer(7)).hashValue)
        #expect(PrimaryKey(.text("caf\u{E9}"), 1) != PrimaryKey(.text("cafe\u{301}"), 1))
    }

    @Test func theMapKeepsOneModelPerSpelling() {
        let map = IdentityMap()
        _ = map.store(Slugged(id: "caf\u{E9}", title: "precomposed"))
        _ = map.store(Slugged(id: "cafe\u{301}", title: "decomposed"))
        #expect(map.value(Slugged.self, id: "caf\u{E9}")?.title == "precomposed")
        #expect(map.value(Slugged.self, id: "cafe\u{301}")?.title == "decomposed")
    }
}
