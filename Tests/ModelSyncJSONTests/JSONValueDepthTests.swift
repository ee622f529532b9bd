import Testing
@testable import ModelSyncJSON

/// Values nested far deeper than the stack allows for recursion, and strings
/// that Swift calls equal but whose bytes differ.
@Suite("JSONValue depth and identity")
struct JSONValueDepthTests {
    static let depth = 10_000

    /// `depth` arrays (or single-member objects) inside each other around `leaf`.
    static func nested(objects: Bool, leaf: JSONValue = 1) -> JSONValue {
        var value = leaf
        for _ in 0..<depth {
            value = objects ? .object(["k": value]) : .array([value])
        }
        return value
    }

    @Test(arguments: [false, true])
    func aDeepValueWritesReadsComparesAndHashes(objects: Bool) throws {
        let value = Self.nested(objects: objects)
        let bytes = value.jsonBytes()
        let perLevel = objects ? #"{"k":}"#.utf8.count : 2
        #expect(bytes.count == Self.depth * perLevel + 1)
        #expect(value.description.utf8.count == bytes.count)

        let parsed = try JSONValue(parsing: bytes, maxDepth: Self.depth + 1)
        #expect(parsed == value)
        #expect(parsed.hashValue == value.hashValue)
        #expect(Self.nested(objects: objects, leaf: 2) != value)

        let document: JSONValue = ["deep": value]
        #expect(try JSONModelDecoder(options: JSONDecodingOptions(maxDepth: Self.depth + 2)).decode(JSONValue.self, from: document.jsonBytes()) == document)
    }

    @Test func equalButDifferentStringsAreDifferentKeysAndValues() throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(JSONValue.string(composed) != JSONValue.string(decomposed))

        var object = JSONObject()
        object[composed] = 1
        object[decomposed] = 2
        #expect(object.count == 2)
        #expect(object[composed] == 1)
        #expect(object[decomposed] == 2)

        // Beyond 16 members lookups go through a hash index, which must keep them apart too.
        for i in 0..<20 { object["k\(i)"] = .number(JSONNumber(i)) }
        object[decomposed] = 3
        #expect(object.count == 22)
        #expect(object[composed] == 1)

        let parsed = try JSONValue(parsing: #"{"\#(composed)": 1, "\#(decomposed)": 2}"#)
        #expect(parsed.objectValue?.count == 2)
        #expect(parsed.description == #"{"\#(composed)":1,"\#(decomposed)":2}"#)
    }
}
