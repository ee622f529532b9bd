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

    @Test func theMapKeepsOneModelPerSpelling() {
        let map = IdentityMap()
        _ = map.store(Slugged(id: "caf\u{E9}", title: "precomposed"))
        _ = map.store(Slugged(id: "cafe\u{301}", title: "decomposed"))
        #expect(map.value(Slugged.self, id: "caf\u{E9}")?.title == "precomposed")
        #expect(map.value(Slugged.self, id: "cafe\u{301}")?.title == "decomposed")
    }
}
