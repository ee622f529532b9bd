import Testing
@testable import ModelSyncJSON
import ModelSyncTestingCore

private func text(_ write: (inout JSONWriter) throws -> Void) rethrows -> String {
    var writer = JSONWriter(capacity: 0)
    try write(&writer)
    return String(decoding: writer.bytes, as: UTF8.self)
}

@Suite("JSON writer")
struct JSONWriterTests {
    @Test func literalsAndRawBytes() {
        #expect(text { $0.writeNull() } == "null")
        #expect(text { $0.writeBool(true) } == "true")
        #expect(text { $0.writeBool(false) } == "false")
        #expect(text { $0.writeByte(UInt8(ascii: "[")); $0.writeRaw(Array("1,2".utf8)); $0.writeByte(UInt8(ascii: "]")) } == "[1,2]")
        #expect(text { writer in Array("abc".utf8).withUnsafeBufferPointer { writer.writeRaw($0) } } == "abc")
        #expect(JSONWriter().bytes.isEmpty)
        #expect(JSONWriter(capacity: 4096).bytes.capacity >= 4096)
    }

    @Test func integers() {
        let values: [Int] = [0, 1, 9, 10, -1, -9, -10, 99, 100, 123_456_789, .max, .min, .max - 1, .min + 1]
        for value in values {
            #expect(text { $0.writeInteger(value) } == String(value))
            #expect(text { $0.writeInteger(Int64(value)) } == String(value))
        }
        #expect(text { $0.writeInteger(UInt64.max) } == "18446744073709551615")
        #expect(text { $0.writeInteger(Int8.min) } == "-128")
        #expect(text { $0.writeInteger(Int16(-300)) } == "-300")
        #expect(text { $0.writeInteger(UInt8.max) } == "255")
        #expect(text { $0.writeInteger(Int32.min) } == "-2147483648")
        #expect(text { $0.writeInteger(UInt32.max) } == "4294967295")
        #expect(text { $0.writeInteger(UInt(7)) } == "7")
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            #expect(text { $0.writeInteger(Int128.min) } == "-170141183460469231731687303715884105728")
            #expect(text { $0.writeInteger(Int128.max) } == "170141183460469231731687303715884105727")
            #expect(text { $0.writeInteger(UInt128.max) } == "340282366920938463463374607431768211455")
            #expect(text { $0.writeInteger(Int128(-5)) } == "-5")
            #expect(text { $0.writeInteger(UInt128(0)) } == "0")
        }
        var random = SeededGenerator(seed: 1)
        for _ in 0..<1000 {
            let value = Int64(bitPattern: random.next()) >> Int64.random(in: 0...63, using: &random)
            #expect(text { $0.writeInteger(value) } == String(value))
        }
    }

    @Test func doubles() throws {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "-0"), (1, "1"), (-1, "-1"), (100, "100"), (1.5, "1.5"), (0.1, "0.1"), (-2.25, "-2.25"),
            (1e-5, "1e-05"), (1e16, "1e+16"), (1e15, "1000000000000000"), (123.456e300, "1.23456e+302"),
            (.leastNonzeroMagnitude, "5e-324"), (.greatestFiniteMagnitude, "1.7976931348623157e+308"), (0.30000000000000004, "0.30000000000000004"),
        ]
        for (value, expected) in cases {
            #expect(try text { try $0.writeDouble(value) } == expected)
        }
        for value in [Double.infinity, -.infinity, .nan, .signalingNaN] {
            let error = try #require(throws: JSONError.self) { try text { try $0.writeDouble(value) } }
            guard case .invalidValue(let message) = error.reason else {
                Issue.record("unexpected \(error.reason)")
                continue
            }
            #expect(message.hasPrefix("cannot encode non-finite number"))
        }
    }

    @Test func doublesReadBackExactly() throws {
        var random = SeededGenerator(seed: 2)
        var values: [Double] = [-0.0, 1e-300, 9_007_199_254_740_992, 9_007_199_254_740_994]
        for _ in 0..<2000 {
            let value = Double(bitPattern: random.next())
            if value.isFinite { values.append(value) }
            values.append(Double(Int64.random(in: -1_000_000...1_000_000, using: &random)) / 64)
        }
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            try writer.writeDouble(value)
        }
        writer.writeByte(UInt8(ascii: "]"))
        try JSONDocument(bytes: writer.bytes).withTape { tape in
            for (index, value) in values.enumerated() {
                let read = tape.double(index + 1)
                #expect(read == value && read.sign == value.sign, "\(value) read as \(read)")
            }
        }
    }

    @Test func stringEscaping() {
        #expect(text { $0.writeString("") } == #""""#)
        #expect(text { $0.writeString("plain text") } == #""plain text""#)
        #expect(text { $0.writeString("a\"b\\c/d") } == #""a\"b\\c/d""#)
        #expect(text { $0.writeString("\n\r\t\u{08}\u{0C}") } == #""\n\r\t\b\f""#)
        #expect(text { $0.writeString("\u{0}\u{1}\u{1F}\u{7F}") } == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(text { $0.writeString("Zürich 東京 😀 \u{2028}") } == "\"Zürich 東京 😀 \u{2028}\"")
        #expect(text { $0.writeString("a long string without anything to escape in it") } == #""a long string without anything to escape in it""#)
        #expect(text { $0.writeString("12345678\"12345678\\") } == #""12345678\"12345678\\""#)
    }

    @Test func stringsReadBackExactly() throws {
        var strings = [String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }), "\"\\\"\\", "tail\u{1F}"]
        var random = SeededGenerator(seed: 3)
        let alphabet: [Unicode.Scalar] = ["a", "Z", " ", "\"", "\\", "/", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "中", "😀", "\u{FFFF}", "\u{10FFFF}"]
        for _ in 0..<500 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                scalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &random)])
            }
            strings.append(String(scalars))
        }
        for string in strings {
            var writer = JSONWriter()
            writer.writeString(string)
            let read = try JSONDocument(bytes: writer.bytes).withTape { try $0.string(0) }
            #expect(Array(read.unicodeScalars) == Array(string.unicodeScalars))
        }
    }

    @Test func escapedKeys() throws {
        #expect(JSONWriter.escapedKey("id") == Array(#""id":"#.utf8))
        #expect(JSONWriter.escapedKey("") == Array(#""":"#.utf8))
        #expect(JSONWriter.escapedKey("a\"b\n") == Array(#""a\"b\n":"#.utf8))
        // A key written this way is found by keyEquals on the unescaped key.
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "{"))
        writer.writeRaw(JSONWriter.escapedKey("say \"hi\""))
        writer.writeInteger(1)
        writer.writeByte(UInt8(ascii: "}"))
        let found = try JSONDocument(bytes: writer.bytes).withTape { tape in
            Array("say \"hi\"".utf8).withUnsafeBufferPointer { tape.keyEquals(1, $0) }
        }
        #expect(found)
    }

    @Test func prettyPrinting() {
        let compact = #"{"a":1,"b":[true,null,"x,:{}[]\"y"],"c":{},"d":[],"e":{"f":[[]]}}"#
        let expected = """
            {
              "a": 1,
              "b": [
                true,
                null,
                "x,:{}[]\\"y"
              ],
              "c": {},
              "d": [],
              "e": {
                "f": [
                  []
                ]
              }
            }
            """
        let pretty = JSONWriter.prettyPrinted(Array(compact.utf8))
        #expect(String(decoding: pretty, as: UTF8.self) == expected)
        // Reformatting formatted text changes nothing, and whitespace inside empty containers goes.
        #expect(JSONWriter.prettyPrinted(pretty) == pretty)
        #expect(String(decoding: JSONWriter.prettyPrinted(Array("[ ]".utf8)), as: UTF8.self) == "[]")
        #expect(String(decoding: JSONWriter.prettyPrinted(Array("{ \n}".utf8)), as: UTF8.self) == "{}")
        #expect(String(decoding: JSONWriter.prettyPrinted(Array(#""a b""#.utf8)), as: UTF8.self) == #""a b""#)
        #expect(String(decoding: JSONWriter.prettyPrinted(Array("[1,[2]]".utf8), indent: 4), as: UTF8.self) == "[\n    1,\n    [\n        2\n    ]\n]")
        #expect(String(decoding: JSONWriter.prettyPrinted(Array("[1]".utf8), indent: 0), as: UTF8.self) == "[\n1\n]")
        #expect(JSONWriter.prettyPrinted([]).isEmpty)
    }

    @Test func prettyPrintingSurvivesInvalidInput() {
        for input in ["]]]", "\"abc", "\"ab\\", "{{{", "[,:"] {
            _ = JSONWriter.prettyPrinted(Array(input.utf8))
        }
    }

    @Test func prettyTextParsesToTheSameValue() throws {
        let compact = #"{"a":[1,2.5e3,{"b":"c\u00e9\n"}],"d":{"e":[]},"f":""}"#
        let pretty = JSONWriter.prettyPrinted(Array(compact.utf8), indent: 3)
        #expect(try JSONValue(parsing: pretty) == JSONValue(parsing: compact))
    }
}
