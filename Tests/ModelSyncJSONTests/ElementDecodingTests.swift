import Foundation
import Testing
@testable import ModelSyncJSON

/// A root array decodes element by element (`JSONElementReader`): the same values, reports and
/// errors as from a tape of the whole document, for well-formed and hostile input.
@Suite("Root arrays element by element")
struct ElementDecodingTests {
    @Test func wellFormedArrays() throws {
        let decoder = JSONModelDecoder()
        #expect(try decoder.decode([Int].self, from: "[]") == [])
        #expect(try decoder.decode([Int].self, from: " \n[ \t]\r\n") == [])
        #expect(try decoder.decode([Int].self, from: "[1, -2 ,3]") == [1, -2, 3])
        #expect(try decoder.decode([[Int]].self, from: "[[1], [], [2, 3]]") == [[1], [], [2, 3]])
        #expect(try decoder.decode([[String: Int]].self, from: #"[{"a": 1}, {}]"#) == [["a": 1], [:]])
        #expect(try decoder.decode([Int?].self, from: Data("[null, 4]".utf8)) == [nil, 4])
        #expect(try decoder.decode([String].self, from: [0xEF, 0xBB, 0xBF] + Array(#"["é"]"#.utf8)) == ["é"])
        for text in ["[]", "[1,2,3]", "[[1],[2,[3]]]", " [ 1 , 2 ] ", "\u{FEFF}[1]", #"[{"a":[1,{"b":null}]},"x\n\u00e9"]"#] {
            expectSameDecoding([AnyJSON].self, Array(text.utf8))
        }
    }

    @Test func malformedArraysThrowTheWholeDocumentsError() {
        let inputs = [
            "[", "[1", "[1,", "[1,]", "[,1]", "[1 2]", "[1]]", "[1] x", "[1]\0", "[tru]", "[nul", "[01]", "[-]",
            "[\"a\0\"]", "[1,\0]", "\0[1]", "[\"\\uD800\"]", "[\"abc", "[{\"a\" 1}]", "[{\"a\":1,}]", "[1.]", "[1e]",
            "[9223372036854775807, 9223372036854775808]", "[-9223372036854775809]", "[1e400]",
            "[\"\u{FF}\"]", "[1, [2, [3, ]]]",
        ]
        for text in inputs {
            let bytes = Array(text.utf8)
            expectSameDecoding([AnyJSON].self, bytes)
            expectSameDecoding([Int].self, bytes, options: JSONDecodingOptions(mode: .strict))
            expectSameDecoding([Int].self, bytes)
            expectSameDecoding([Double].self, bytes)
        }
        // Invalid UTF-8 and NUL bytes anywhere, as raw bytes.
        expectSameDecoding([String].self, [UInt8(ascii: "["), UInt8(ascii: "\""), 0xC0, 0x80, UInt8(ascii: "\""), UInt8(ascii: "]")])
        expectSameDecoding([Int].self, [UInt8(ascii: "["), 0x00, UInt8(ascii: "]")])
    }

    @Test func numbersAtTheLimitsOfInt() throws {
        let decoder = JSONModelDecoder(mode: .strict)
        #expect(try decoder.decode([Int].self, from: "[9223372036854775807, -9223372036854775808]") == [Int.max, Int.min])
        #expect(throws: JSONError.self) { try decoder.decode([Int].self, from: "[1, 9223372036854775808]") }
        do {
            _ = try decoder.decode([Int].self, from: "[1, 9223372036854775808]")
        } catch let error as JSONError {
            #expect(error.path == JSONPath([.index(1)]))
        } catch {
            Issue.record("not a JSONError: \(error)")
        }
    }

    /// A decoding error in an early element loses to a syntax error further on, as when the
    /// whole document is parsed first.
    @Test func aLaterSyntaxErrorWins() {
        let decoder = JSONModelDecoder(mode: .strict)
        #expect(throws: JSONError(.syntax("trailing comma before ']'"), offset: 9)) {
            try decoder.decode([Int].self, from: #"["x", 1, ]"#)
        }
        let error = #expect(throws: JSONError.self) { try decoder.decode([Int].self, from: #"[1, "x", 3]"#) }
        #expect(error?.path == JSONPath([.index(1)]))
        guard case .typeMismatch = error?.reason else {
            Issue.record("expected a type mismatch, got \(String(describing: error))")
            return
        }
    }

    @Test func reportsAndDroppedElementsHaveTheirPaths() throws {
        let lenient = JSONModelDecoder()
        let (values, report) = try lenient.decodeWithReport([[Int]].self, from: #"[[1], ["2"], 3]"#)
        #expect(values == [[1], [2], [3]])
        #expect(report.entries.map(\.path) == [JSONPath([.index(1), .index(0)]), JSONPath([.index(2)])])
        expectSameDecoding([[Int]].self, Array(#"[[1], ["2"], 3, [true, "x"]]"#.utf8))

        let dropping = JSONModelDecoder(options: JSONDecodingOptions(mode: .strict, dropsInvalidElements: true))
        let (kept, dropped) = try dropping.decodeWithReport([Int].self, from: #"[1, "x", 3, null]"#)
        #expect(kept == [1, 3])
        #expect(dropped.entries.map(\.path) == [JSONPath([.index(1)]), JSONPath([.index(3)])])
        expectSameDecoding([Int].self, Array(#"[1, "x", 3, null]"#.utf8), options: JSONDecodingOptions(mode: .strict, dropsInvalidElements: true))
    }

    @Test func hostileNestingHitsTheDepthLimit() {
        let deep = Array(repeating: UInt8(ascii: "["), count: 100_000)
        #expect(throws: JSONError(.tooDeep(limit: 512), offset: 512)) { try JSONModelDecoder().decode([AnyJSON].self, from: deep) }
        expectSameDecoding([AnyJSON].self, deep)
        for depth in [-1, 0, 1, 2, 3] {
            let options = JSONDecodingOptions(maxDepth: depth)
            for text in ["[]", "[1]", "[[1]]", "[[]]", "[{}]", "[{\"a\":[1]}]"] {
                expectSameDecoding([AnyJSON].self, Array(text.utf8), options: options)
            }
        }
    }

    /// Every prefix of a document is either the whole document or truncated: a typed error,
    /// never a trap, and the same as the whole-document parse gives.
    @Test func truncatedDocuments() {
        let text = #"[{"id": 1, "name": "Zoë \"Z\"", "tags": ["a", "b"], "score": 1.5e3, "ok": true}, null, -0.5, "\ud83d\ude00"]"#
        let bytes = Array(text.utf8)
        for end in 0..<bytes.count {
            expectSameDecoding([AnyJSON].self, Array(bytes[..<end]))
        }
    }

    /// The result is reserved once, from the average size of the elements read: a uniform
    /// array gets a capacity within a fifth of its count (the prediction's margin is an
    /// eighth), not the next power of two, 16384 here (whose doubling copies and freed buffers
    /// cost a large array's decode).
    @Test func aUniformArrayIsReservedCloseToItsCount() throws {
        var options = JSONDecodingOptions()
        options.elementByElementMinimumBytes = 0
        let count = 10_000
        let text = "[" + repeatElement(#"{"id": 123456, "name": "xyz"}"#, count: count).joined(separator: ",") + "]"
        let values = try JSONModelDecoder(options: options).decode([AnyJSON].self, from: text)
        #expect(values.count == count)
        #expect(values.capacity <= count + count / 5)
    }

    /// A tiny first element before a large one does not size the result by itself: the
    /// prediction (one slot per two bytes of input here) is capped so that the reservation never
    /// takes more memory than the input still unread.
    @Test func aTinyFirstElementDoesNotSizeTheArray() throws {
        var options = JSONDecodingOptions()
        options.elementByElementMinimumBytes = 0
        let text = #"[0, ""# + String(repeating: "x", count: 1 << 16) + #""]"#
        let values = try JSONModelDecoder(options: options).decode([AnyJSON].self, from: text)
        #expect(values.count == 2)
        #expect(values.capacity * MemoryLayout<AnyJSON>.stride <= text.utf8.count + 64 * MemoryLayout<AnyJSON>.stride)
    }

}
