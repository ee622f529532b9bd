import ModelSyncJSON
import Testing

/// One pass over an array, decoding a member of the elements asked for.
@Suite struct DecodeMembersTests {
    @Test func decodesTheWantedElementsMembersInOrder() throws {
        let document = try JSONDocument(bytes: Array(#"{"changes": [{"record": 1}, {"deleted": true}, {"record": 3}, 5, {"record": 4}]}"#.utf8))
        let values = try JSONModelDecoder().decodeMembers(
            Int.self, named: "record", ofArrayAt: JSONPath([.key("changes")]), in: document, where: { $0 != 4 })
        #expect(values == [1, nil, 3, nil, nil])
    }

    @Test func aBadMemberIsLocatedByItsPath() throws {
        let document = try JSONDocument(bytes: Array(#"{"changes": [{"record": 1}, {"record": "x"}]}"#.utf8))
        #expect {
            try JSONModelDecoder().decodeMembers(Int.self, named: "record", ofArrayAt: JSONPath([.key("changes")]), in: document, where: { _ in true })
        } throws: { error in
            (error as? JSONError)?.path.description.contains("changes[1]") == true || "\(error)".contains("changes[1]")
        }
        // Not an array where one is named: an error, not a trap.
        #expect(throws: JSONError.self) {
            try JSONModelDecoder().decodeMembers(Int.self, named: "record", ofArrayAt: JSONPath([.key("missing")]), in: document, where: { _ in true })
        }
    }
}
