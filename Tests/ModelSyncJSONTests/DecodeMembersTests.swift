import ModelSyncJSON
import Testing

/// A feed page read in place: its changes' members found, the records decoded where they are.
@Suite struct DecodeMembersTests {
    static let page = #"{"changes": [{"record": 1}, {"deleted": true}, {"record": 3, "record": 4}, 5, {"record": {"id": "x"}}], "next": "9"}"#

    /// The `record` node of each element of `changes` (nil where it has none).
    func recordNodes(_ document: JSONDocument) throws -> [JSONDocument.Node?] {
        try #require(document.elements(ofArrayAt: JSONPath([.key("changes")]))).map { document.member("record", of: $0) }
    }

    @Test func findsEachElementsMemberAndDecodesTheOnesAsked() throws {
        let document = try JSONDocument(bytes: Array(Self.page.utf8))
        let nodes = try recordNodes(document)
        #expect(nodes.map { $0 != nil } == [true, false, true, false, true])
        // The last of duplicate keys wins, as when decoding.
        let values = try JSONModelDecoder().decode(Int.self, at: Array(nodes.prefix(4)), in: document)
        #expect(values == [1, nil, 4, nil])
        #expect(try document.value(at: #require(nodes[4]), path: JSONPath([.key("id")])) == "x")
        #expect(try document.value(at: #require(nodes[4]), path: JSONPath([.key("missing")])) == nil)
    }

    /// What a client reads a feed's changes with: the elements, and several members of one found
    /// in one pass (escaped keys compared by their text, the last of duplicates winning).
    @Test func severalMembersOfAnObjectAreFoundInOnePass() throws {
        let document = try JSONDocument(string: #"{"changes": [{"a": 1, "b": null, "\u0063": 3, "a": 4}, 5], "next": "9"}"#)
        let elements = try #require(document.elements(ofArrayAt: JSONPath([.key("changes")])))
        #expect(elements.count == 2)
        let names = JSONMemberNames(["a", "b", "c", "d"])
        let found = try #require(document.members(names, of: elements[0]))
        let values: [JSONValue?] = try found.map { try $0.flatMap { try document.value(at: $0) } }
        #expect(values == [4, JSONValue.null, 3, JSONValue?.none])
        #expect(document.isNull(try #require(found[1])))
        #expect(!document.isNull(try #require(found[0])))
        #expect(document.members(names, of: elements[1]) == nil)
        #expect(try document.value(at: #require(document.member("next", of: .root))) == "9")
        #expect(document.member("next", of: elements[1]) == nil)
        #expect(document.elements(ofArrayAt: JSONPath([.key("next")])) == nil)
    }

    @Test func aBadMemberIsLocatedByItsPath() throws {
        let document = try JSONDocument(bytes: Array(#"{"changes": [{"record": 1}, {"record": "x"}]}"#.utf8))
        let nodes = try recordNodes(document)
        #expect {
            try JSONModelDecoder().decode(Int.self, at: nodes, in: document)
        } throws: { error in
            (error as? JSONError)?.path.description.contains("changes[1]") == true
        }
    }
}
