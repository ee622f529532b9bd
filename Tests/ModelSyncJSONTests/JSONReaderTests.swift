import Testing
@testable import ModelSyncJSON
import ModelSyncTestingCore

/// A node with Int fields, comparable in expectations.
private struct Node: Equatable, CustomStringConvertible {
    var kind: JSONNodeKind
    var flags: UInt8 = 0
    var start: Int
    var length: Int
    var end: Int

    init(_ kind: JSONNodeKind, flags: UInt8 = 0, start: Int, length: Int, end: Int) {
        (self.kind, self.flags, self.start, self.length, self.end) = (kind, flags, start, length, end)
    }

    init(_ node: JSONNode) {
        self.init(node.kind, flags: node.flags, start: Int(node.start), length: Int(node.length), end: Int(node.end))
    }

    var description: String { "\(kind)(flags: \(flags), start: \(start), length: \(length), end: \(end))" }
}

private func tape(_ text: String) throws -> [Node] {
    try JSONDocument(string: text).nodes.map(Node.init)
}

/// Calls `body` with the tape of `text`.
private func withTape<R>(_ text: String, _ body: (JSONTape) throws -> R) throws -> R {
    try JSONDocument(string: text).withTape(body)
}

/// Calls `body` with the tape of the single-number document `text`.
private func number<R>(_ text: String, _ body: (JSONTape) -> R) throws -> R {
    try withTape(text) { tape in
        #expect(tape[0].kind == .number)
        return body(tape)
    }
}

private func syntax(_ message: String) -> JSONError.Reason { .syntax(message) }

/// A valid document whose every proper prefix is invalid.
private let sampleDocument = #"{"a":[1,-2.5e3,true,false,{"b":"x\u00e9\ud83d\ude00😀\n"}],"c":null,"d":[]}"#

@Suite("JSON reader")
struct JSONReaderTests {
    /// An input that must be rejected, with where and why.
    struct RejectedInput: Sendable, CustomTestStringConvertible {
        var bytes: [UInt8]
        var reason: JSONError.Reason
        var offset: Int
        var line: Int
        var column: Int

        init(_ text: String, _ reason: JSONError.Reason, at offset: Int, line: Int = 1, column: Int? = nil) {
            self.init(Array(text.utf8), reason, at: offset, line: line, column: column)
        }

        init(_ bytes: [UInt8], _ reason: JSONError.Reason, at offset: Int, line: Int = 1, column: Int? = nil) {
            self.bytes = bytes
            self.reason = reason
            self.offset = offset
            self.line = line
            self.column = column ?? offset + 1
        }

        var testDescription: String { String(decoding: bytes, as: UTF8.self).debugDescription }
    }

    // MARK: Valid documents

    @Test func nodeIsSixteenBytes() {
        #expect(MemoryLayout<JSONNode>.size == 16)
        #expect(MemoryLayout<JSONNode>.stride == 16)
    }

    @Test func tapeOfEveryKind() throws {
        let nodes = try tape(#"{"a":[1,-2.5e3,true,false,null],"b":{},"c":"x\ny","d":[]}"#)
        let expected = [
            Node(.object, start: 0, length: 4, end: 14),
            Node(.string, start: 2, length: 1, end: 2),
            Node(.array, start: 5, length: 5, end: 8),
            Node(.number, start: 6, length: 1, end: 4),
            Node(.number, flags: JSONNode.isFloat | JSONNode.isNegative, start: 8, length: 6, end: 5),
            Node(.true, start: 15, length: 4, end: 6),
            Node(.false, start: 20, length: 5, end: 7),
            Node(.null, start: 26, length: 4, end: 8),
            Node(.string, start: 33, length: 1, end: 9),
            Node(.object, start: 36, length: 0, end: 10),
            Node(.string, start: 40, length: 1, end: 11),
            Node(.string, flags: JSONNode.hasEscapes, start: 44, length: 4, end: 12),
            Node(.string, start: 51, length: 1, end: 13),
            Node(.array, start: 54, length: 0, end: 14),
        ]
        #expect(nodes == expected)
    }

    @Test func scalarRoots() throws {
        #expect(try tape("1") == [Node(.number, start: 0, length: 1, end: 1)])
        #expect(try tape("-0.5") == [Node(.number, flags: JSONNode.isFloat | JSONNode.isNegative, start: 0, length: 4, end: 1)])
        #expect(try tape("1E5") == [Node(.number, flags: JSONNode.isFloat, start: 0, length: 3, end: 1)])
        #expect(try tape(#" "ab" "#) == [Node(.string, start: 2, length: 2, end: 1)])
        #expect(try tape("\t\r\n true \n") == [Node(.true, start: 4, length: 4, end: 1)])
        #expect(try tape("null") == [Node(.null, start: 0, length: 4, end: 1)])
        #expect(try tape(#""""#) == [Node(.string, start: 1, length: 0, end: 1)])
    }

    @Test func byteOrderMarkIsSkipped() throws {
        let document = try JSONDocument(bytes: [0xEF, 0xBB, 0xBF] + Array("[1]".utf8))
        #expect(document.nodes.map(Node.init) == [Node(.array, start: 3, length: 1, end: 2), Node(.number, start: 4, length: 1, end: 2)])
    }

    @Test func whitespaceDoesNotChangeStructure() throws {
        let compact = try tape(#"[[[],{"k":[1,{}]}],"s",{"a":{"b":[true]}}]"#)
        let spaced = try tape(" [ [ [ ] , { \"k\" :\n[ 1 ,\r\n{ } ] } ] ,\t\"s\" , { \"a\" : { \"b\" : [ true ] } } ] ")
        let shape = { (nodes: [Node]) in nodes.map { [Int($0.kind.rawValue), Int($0.flags), $0.length, $0.end] } }
        #expect(shape(compact) == shape(spaced))
        #expect(compact.count == 15)
    }

    @Test func walkingChildrenWithEnd() throws {
        let keys = try withTape(#"{"a":[1,[2,3],{"x":4}],"b":{"c":{"d":null}},"e":"f"}"#) { tape -> [String] in
            var keys: [String] = []
            var i = 1
            for _ in 0..<Int(tape[0].length) {
                keys.append(try tape.string(i))
                i = Int(tape[i + 1].end)  // skip the value's subtree
            }
            #expect(i == tape.nodes.count)
            return keys
        }
        #expect(keys == ["a", "b", "e"])
    }

    @Test func largeDocumentGrowsTheTape() throws {
        // Dense enough ("1,") to outgrow the initial estimate several times.
        let text = "[" + Array(repeating: "1", count: 200_000).joined(separator: ",") + "]"
        let nodes = try JSONDocument(string: text).nodes
        #expect(nodes.count == 200_001)
        #expect(nodes[0].length == 200_000)
        #expect(nodes[0].end == 200_001)
        #expect(nodes[200_000].start == UInt32(text.utf8.count - 2))

        let objects = "[" + Array(repeating: #"{"k":[]}"#, count: 50_000).joined(separator: ",") + "]"
        let objectNodes = try JSONDocument(string: objects).nodes
        #expect(objectNodes.count == 150_001)
        #expect(objectNodes[150_000].kind == .array)
        #expect(objectNodes[149_998].end == 150_001)
    }

    // MARK: Invalid documents

    static let rejected: [RejectedInput] = [
        // Empty and truncated input.
        RejectedInput("", syntax("unexpected end of input"), at: 0),
        RejectedInput("  \n ", syntax("unexpected end of input"), at: 4, line: 2, column: 2),
        RejectedInput([0xEF, 0xBB, 0xBF], syntax("unexpected end of input"), at: 3),
        RejectedInput("[", syntax("unexpected end of input"), at: 1),
        RejectedInput("[1", syntax("unexpected end of input"), at: 2),
        RejectedInput("[1,", syntax("unexpected end of input"), at: 3),
        RejectedInput("{", syntax("unexpected end of input"), at: 1),
        RejectedInput(#"{"a""#, syntax("unexpected end of input"), at: 4),
        RejectedInput(#"{"a":"#, syntax("unexpected end of input"), at: 5),
        RejectedInput(#""abc"#, syntax("unterminated string"), at: 0),
        RejectedInput(#"["abcdefghijkl"#, syntax("unterminated string"), at: 1),
        RejectedInput(#""\"#, syntax("unterminated string"), at: 0),
        RejectedInput(#""\u12"#, syntax("unterminated string"), at: 0),
        // Literals.
        RejectedInput("tru", syntax("invalid literal, expected 'true'"), at: 0),
        RejectedInput("nul", syntax("invalid literal, expected 'null'"), at: 0),
        RejectedInput("[nul]", syntax("invalid literal, expected 'null'"), at: 1),
        RejectedInput("falsy", syntax("invalid literal, expected 'false'"), at: 0),
        RejectedInput("True", syntax("unexpected 'T', expected a value"), at: 0),
        RejectedInput("truex", syntax("unexpected 'x' after the root value"), at: 4),
        RejectedInput("NaN", syntax("unexpected 'N', expected a value"), at: 0),
        // Numbers.
        RejectedInput("01", syntax("leading zeros are not allowed"), at: 1),
        RejectedInput("-01", syntax("leading zeros are not allowed"), at: 2),
        RejectedInput("[00]", syntax("leading zeros are not allowed"), at: 2),
        RejectedInput("-", syntax("expected a digit"), at: 1),
        RejectedInput("-a", syntax("expected a digit"), at: 1),
        RejectedInput("[-]", syntax("expected a digit"), at: 2),
        RejectedInput("1.", syntax("expected a digit after '.'"), at: 2),
        RejectedInput("1.e5", syntax("expected a digit after '.'"), at: 2),
        RejectedInput(".5", syntax("unexpected '.', expected a value"), at: 0),
        RejectedInput("+1", syntax("unexpected '+', expected a value"), at: 0),
        RejectedInput("1e", syntax("expected a digit in the exponent"), at: 2),
        RejectedInput("1E+", syntax("expected a digit in the exponent"), at: 3),
        RejectedInput("[1e-]", syntax("expected a digit in the exponent"), at: 4),
        RejectedInput("0x10", syntax("unexpected 'x' after the root value"), at: 1),
        RejectedInput("1.5.2", syntax("unexpected '.' after the root value"), at: 3),
        // Structure.
        RejectedInput("[1,]", syntax("trailing comma before ']'"), at: 3),
        RejectedInput("[1, \n]", syntax("trailing comma before ']'"), at: 5, line: 2, column: 1),
        RejectedInput(#"{"a":1,}"#, syntax("trailing comma before '}'"), at: 7),
        RejectedInput("[,1]", syntax("unexpected ',', expected a value"), at: 1),
        RejectedInput(#"{"a":]"#, syntax("unexpected ']', expected a value"), at: 5),
        RejectedInput("{a:1}", syntax("expected a string key, found 'a'"), at: 1),
        RejectedInput("{'a':1}", syntax("expected a string key, found '''"), at: 1),
        RejectedInput("['a']", syntax("unexpected ''', expected a value"), at: 1),
        RejectedInput(#"{"a" 1}"#, syntax("expected ':' after object key"), at: 5),
        RejectedInput(#"{"a":1 "b":2}"#, syntax("expected ',' or '}' after object member"), at: 7),
        RejectedInput(#"{"a":1]"#, syntax("expected ',' or '}' after object member"), at: 6),
        RejectedInput("[1 2]", syntax("expected ',' or ']' after array element"), at: 3),
        RejectedInput("[1}", syntax("expected ',' or ']' after array element"), at: 2),
        RejectedInput("[1]]", syntax("unexpected ']' after the root value"), at: 3),
        RejectedInput("1 2", syntax("unexpected '2' after the root value"), at: 2),
        RejectedInput("{} {}", syntax("unexpected '{' after the root value"), at: 3),
        RejectedInput("[1,\n  x]", syntax("unexpected 'x', expected a value"), at: 6, line: 2, column: 3),
        RejectedInput("{\n  \"a\": tru\n}", syntax("invalid literal, expected 'true'"), at: 9, line: 2, column: 8),
        RejectedInput([0x00], syntax("unexpected byte 0x00, expected a value"), at: 0),
        RejectedInput([0xFF], syntax("unexpected byte 0xFF, expected a value"), at: 0),
        RejectedInput([0x5B, 0x0C, 0x5D], syntax("unexpected byte 0x0C, expected a value"), at: 1),
        // Strings.
        RejectedInput(#""\x""#, syntax(#"invalid escape sequence '\x'"#), at: 1),
        RejectedInput(#""abc\'""#, syntax(#"invalid escape sequence '\''"#), at: 4),
        RejectedInput(#""\u12G4""#, syntax(#"invalid \u escape, expected four hex digits"#), at: 1),
        RejectedInput(#""\U0041""#, syntax(#"invalid escape sequence '\U'"#), at: 1),
        RejectedInput("\"a\u{01}b\"", syntax("control character byte 0x01 in string, it must be escaped"), at: 2),
        RejectedInput("\"\t\"", syntax("control character byte 0x09 in string, it must be escaped"), at: 1),
        RejectedInput("\"0123456789\nabc\"", syntax("control character byte 0x0A in string, it must be escaped"), at: 11),
        // Invalid UTF-8 in strings.
        RejectedInput([0x22, 0xFF, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xC0, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xC1, 0xBF, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xE0, 0x80, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xF0, 0x80, 0x80, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xED, 0xBF, 0xBF, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xE2, 0x82, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xE2, 0x82], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xF0, 0x9F, 0x98], .invalidUTF8, at: 1),
        RejectedInput([0x22, 0xC3, 0x41, 0x22], .invalidUTF8, at: 1),
        RejectedInput([0x22] + Array("abcdefghi".utf8) + [0xE2, 0x28, 0xA1, 0x22], .invalidUTF8, at: 10),
        RejectedInput([0x5B, 0x0A, 0x22, 0xFE, 0x22, 0x5D], .invalidUTF8, at: 3, line: 2, column: 2),
    ]

    @Test(arguments: rejected)
    func rejects(_ input: RejectedInput) throws {
        let error = try #require(throws: JSONError.self) { try JSONDocument(bytes: input.bytes) }
        #expect(error.reason == input.reason)
        #expect(error.offset == input.offset)
        #expect(error.line == input.line)
        #expect(error.column == input.column)
        #expect(error.path.isEmpty)
    }

    @Test func acceptsEveryKindOfValidUTF8() throws {
        let sequences: [[UInt8]] = [
            [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
            [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
        ]
        for sequence in sequences {
            // Alone and inside a string long enough for the eight-byte scan.
            for bytes in [[0x22] + sequence + [0x22], [0x22] + Array("abcdefgh".utf8) + sequence + Array("ijklmnop".utf8) + [0x22]] {
                let value = try JSONDocument(bytes: bytes).withTape { try $0.string(0) }
                #expect(Array(value.utf8) == Array(bytes.dropFirst().dropLast()))
            }
        }
    }

    @Test func everyTruncationIsRejected() throws {
        let bytes = Array(sampleDocument.utf8)
        _ = try JSONDocument(bytes: bytes)
        for length in 0..<bytes.count {
            let error = try #require(throws: JSONError.self) { try JSONDocument(bytes: Array(bytes[..<length])) }
            switch error.reason {
            case .syntax, .invalidUTF8: break
            default: Issue.record("unexpected reason \(error.reason) for a truncation at \(length)")
            }
            #expect((0...length).contains(error.offset ?? -1))
        }
    }

    // MARK: Depth

    @Test func depthLimit() throws {
        let nested = { (depth: Int) in Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth) }
        #expect(try JSONDocument(bytes: nested(512)).nodes.count == 512)
        let error = try #require(throws: JSONError.self) { try JSONDocument(bytes: nested(513)) }
        #expect(error.reason == .tooDeep(limit: 512))
        #expect(error.offset == 512)

        let objects = { (depth: Int) in String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth) }
        #expect(try JSONDocument(string: objects(512)).nodes.count == 1025)
        #expect(throws: JSONError(.tooDeep(limit: 512), offset: 512 * 5)) { try JSONDocument(string: objects(513)) }

        // An empty container counts as a level too.
        #expect(throws: JSONError(.tooDeep(limit: 1), offset: 1)) { try JSONDocument(string: "[[]]", maxDepth: 1) }
        #expect(throws: JSONError(.tooDeep(limit: 0), offset: 0)) { try JSONDocument(string: "[]", maxDepth: 0) }
        #expect(try JSONDocument(string: "7", maxDepth: 0).nodes.count == 1)
        #expect(throws: JSONError(.tooDeep(limit: 0), offset: 0)) { try JSONDocument(string: "{}", maxDepth: -3) }
    }

    @Test func hostileNestingThrowsInsteadOfCrashing() throws {
        let deep = Array(repeating: UInt8(ascii: "["), count: 100_000)
        #expect(throws: JSONError(.tooDeep(limit: 512), offset: 512)) { try JSONDocument(bytes: deep) }
        // With the limit raised, the parser itself handles any depth: it does not recurse.
        let valid = deep + Array(repeating: UInt8(ascii: "]"), count: 100_000)
        let document = try JSONDocument(bytes: valid, maxDepth: 1_000_000)
        #expect(document.nodes.count == 100_000)
        #expect(document.nodes[99_999].end == 100_000)
        #expect(throws: JSONError(.syntax("unexpected end of input"), offset: 100_000)) {
            try JSONDocument(bytes: deep, maxDepth: 1_000_000)
        }
    }

    // MARK: Numbers

    @Test func int64Values() throws {
        let cases: [(String, Int64?)] = [
            ("0", 0), ("-0", 0), ("7", 7), ("-42", -42), ("1234567890123456789", 1_234_567_890_123_456_789),
            ("9223372036854775807", .max), ("-9223372036854775808", .min),
            ("9223372036854775808", nil), ("-9223372036854775809", nil), ("18446744073709551616", nil),
            ("123456789012345678901234567890", nil), ("1.0", nil), ("1e2", nil), ("-0.0", nil),
        ]
        for (text, expected) in cases {
            #expect(try number(text) { $0.int64(0) } == expected, "\(text)")
        }
    }

    @Test func uint64Values() throws {
        let cases: [(String, UInt64?)] = [
            ("0", 0), ("-0", 0), ("18446744073709551615", .max), ("9223372036854775808", 9_223_372_036_854_775_808),
            ("18446744073709551616", nil), ("99999999999999999999", nil), ("-1", nil), ("1.5", nil), ("1E0", nil),
        ]
        for (text, expected) in cases {
            #expect(try number(text) { $0.uint64(0) } == expected, "\(text)")
        }
    }

    @Test func doubleValues() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("1", 1), ("-1.5", -1.5), ("0.1", 0.1), ("1E2", 100), ("1e+2", 100), ("1e-2", 0.01),
            ("2.5E-3", 0.0025), ("0.000123", 0.000123), ("123e30", 123e30), ("9007199254740993", 9_007_199_254_740_992),
            ("1e22", 1e22), ("1e23", 1e23), ("4.9e-324", .leastNonzeroMagnitude), ("2.2250738585072014e-308", 2.2250738585072014e-308),
            ("1.7976931348623157e308", .greatestFiniteMagnitude), ("0.30000000000000004", 0.30000000000000004),
            ("123456789012345678901234567890", 1.2345678901234568e29), ("1e400", .infinity), ("-1e400", -.infinity),
            ("1e-400", 0), ("0e999999999999999999", 0), ("100000000000000000000000e-23", 1),
            ("0.0000000000000000000000000000001", 1e-31), ("1.00000000000000000000000000001", 1),
        ]
        for (text, expected) in cases {
            #expect(try number(text) { $0.double(0) } == expected, "\(text)")
        }
        #expect(try number("-0") { $0.double(0) }.sign == .minus)
        #expect(try number("-0.0e5") { $0.double(0) }.sign == .minus)
    }

    @Test func doublesAreCorrectlyRounded() throws {
        var generator = SeededGenerator(seed: 7)
        // Shortest representations of random bit patterns must read back exactly.
        var texts: [String] = []
        for _ in 0..<3000 {
            let value = Double(bitPattern: generator.next())
            if value.isFinite { texts.append(value.description) }
        }
        // Random decimal text: 1 to 25 digits, fraction and exponent, compared with the standard library.
        for _ in 0..<3000 {
            let digits = (0..<Int.random(in: 1...25, using: &generator)).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
            let point = Int.random(in: 0...digits.count, using: &generator)
            var text = (Bool.random(using: &generator) ? "-" : "") + (point == 0 ? "0" : String(digits.prefix(point)).replacingLeadingZeros)
            if point < digits.count { text += "." + digits.dropFirst(point) }
            if Bool.random(using: &generator) { text += "e\(Int.random(in: -330...330, using: &generator))" }
            texts.append(text)
        }
        let document = "[" + texts.joined(separator: ",") + "]"
        try withTape(document) { tape in
            for (index, text) in texts.enumerated() {
                let expected = try #require(Double(text))
                #expect(tape.double(index + 1) == expected, "\(text)")
            }
        }
    }

    @Test func numbersOutsideDocuments() {
        func int(_ text: String) -> Int64? {
            Array(text.utf8).withUnsafeBufferPointer { JSONTape.parseInt64($0) }
        }
        func double(_ text: String) -> Double? {
            Array(text.utf8).withUnsafeBufferPointer { JSONTape.parseDouble($0) }
        }
        #expect(int("49") == 49)
        #expect(int("-9223372036854775808") == .min)
        #expect(int("9223372036854775808") == nil)
        for text in ["", "-", " 49", "49 ", "+1", "01", "1.0", "1e2", "0x1", "4_9", "١٢"] {
            #expect(int(text) == nil, "\(text)")
        }
        #expect(double("49") == 49)
        #expect(double("-1.5e3") == -1500)
        #expect(double("1e400") == .infinity)
        for text in ["", "-", ".5", "1.", "1e", " 1", "1 ", "NaN", "Infinity", "-inf", "0x1p3", "1,5", "01.5"] {
            #expect(double(text) == nil, "\(text)")
        }
        #expect(JSONNumberParsing.parseInt64(UnsafeBufferPointer(start: nil, count: 0)) == nil)
    }

    @Test func rawTextIsExactlyAsWritten() throws {
        let text = #"{"n": -12.50E+03, "s": "a\"b", "a": [1, "]", {"x": "}"}], "t": true}"#
        try withTape(text) { tape in
            #expect(tape.rawText(0) == text)
            #expect(tape.rawText(2) == "-12.50E+03")
            #expect(tape.rawText(4) == #""a\"b""#)
            #expect(tape.rawText(6) == #"[1, "]", {"x": "}"}]"#)
            #expect(tape.rawText(9) == #"{"x": "}"}"#)
            #expect(tape.rawText(13) == "true")
        }
    }

    // MARK: Strings

    @Test func stringsWithEscapes() throws {
        let cases: [(String, String)] = [
            (#""plain""#, "plain"),
            (#""a\"b\\c\/d\b\f\n\r\t""#, "a\"b\\c/d\u{08}\u{0C}\n\r\t"),
            (#""\u0041\u00e9\u4E2D\ud83d\ude00\uD83D\uDE00""#, "Aé中😀😀"),
            (#""\u0000x""#, "\u{0}x"),
            (#""😀 Zürich 東京""#, "😀 Zürich 東京"),
            (#""long text before the escape\n and after it, long enough for the fast scan""#, "long text before the escape\n and after it, long enough for the fast scan"),
            (#""\\\\""#, "\\\\"),
            (#""\uFFFF\u0800\u07FF\u0080\u007F""#, "\u{FFFF}\u{800}\u{7FF}\u{80}\u{7F}"),
        ]
        for (json, expected) in cases {
            try withTape(json) { tape throws in
                #expect(try tape.string(0) == expected)
                #expect((tape[0].flags & JSONNode.hasEscapes != 0) == json.contains("\\"))
            }
        }
    }

    @Test(arguments: [
        (#"["ok", "\ud800"]"#, 8, "\\ud800"), (#""\udc00""#, 1, "\\udc00"), (#""x\ud800\u0041""#, 2, "\\ud800"),
        (#""\ud800x""#, 1, "\\ud800"), (#""\uDBFF\uDBFF""#, 1, "\\uDBFF"),
    ])
    func loneSurrogateEscapesAreInvalidValues(json: String, offset: Int, escape: String) throws {
        try withTape(json) { tape in
            let node = tape.nodes.count - 1
            let error = try #require(throws: JSONError.self) { try tape.string(node) }
            #expect(error.reason == .invalidValue("lone surrogate \(escape) in string"))
            #expect(error.offset == offset)
            #expect(error.node == node)
            #expect(!Array("\u{FFFD}".utf8).withUnsafeBufferPointer { tape.keyEquals(node, $0) })
        }
        #expect(throws: JSONError.self) { try JSONValue(parsing: json) }
    }

    @Test func keyEquality() throws {
        let json = #"{"id": 1, "a\/b": 2, "\u0061b": 3, "caf\u00e9": 4, "a_rather_long_key_name": 5, "": 6, "\ud800": 7}"#
        try withTape(json) { tape in
            func equals(_ node: Int, _ key: String) -> Bool {
                Array(key.utf8).withUnsafeBufferPointer { tape.keyEquals(node, $0) }
            }
            #expect(equals(1, "id"))
            #expect(!equals(1, "i"))
            #expect(!equals(1, "idx"))
            #expect(!equals(1, "ID"))
            #expect(equals(3, "a/b"))
            #expect(!equals(3, #"a\/b"#))
            #expect(equals(5, "ab"))
            #expect(!equals(5, "ac"))
            #expect(!equals(5, "abc"))
            #expect(equals(7, "café"))
            #expect(equals(9, "a_rather_long_key_name"))
            #expect(!equals(9, "a_rather_long_key_namE"))
            #expect(!equals(9, "b_rather_long_key_name"))
            #expect(equals(11, ""))
            #expect(!equals(11, "x"))
            #expect(!equals(13, "\u{FFFD}"))
        }
    }

    @Test func descriptions() throws {
        let long = String(repeating: "x", count: 45)
        let json = #"["abc", 12.5, true, false, null, [], {}, "\#(long)", "a\nb"]"#
        try withTape(json) { tape in
            #expect(tape.describe(0) == "array")
            #expect(tape.describe(1) == #"string "abc""#)
            #expect(tape.describe(2) == "number 12.5")
            #expect(tape.describe(3) == "true")
            #expect(tape.describe(4) == "false")
            #expect(tape.describe(5) == "null")
            #expect(tape.describe(6) == "array")
            #expect(tape.describe(7) == "object")
            #expect(tape.describe(8) == "string \"\(String(repeating: "x", count: 40))…\"")
            #expect(tape.describe(9) == "string \"a\nb\"")
        }
    }

    @Test func locations() throws {
        try withTape("[1,\n2,\r\n  3]") { tape in
            #expect(tape.location(of: 0) == (1, 1))
            #expect(tape.location(of: 3) == (1, 4))
            #expect(tape.location(of: 4) == (2, 1))
            #expect(tape.location(of: 10) == (3, 3))
        }
    }

    @Test func errorDescriptionMentionsThePlace() throws {
        let error = try #require(throws: JSONError.self) { try JSONDocument(string: "[1,\n  x]") }
        #expect(error.description == "malformed JSON: unexpected 'x', expected a value (line 2, column 3)")
    }
}

extension String {
    /// The digits without leading zeros ("0" if all are zeros), as JSON requires.
    fileprivate var replacingLeadingZeros: String {
        let trimmed = drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }
}
