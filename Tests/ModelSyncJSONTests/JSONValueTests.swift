import Testing
@testable import ModelSyncJSON

@Suite("JSONValue")
struct JSONValueTests {
    private let sample: JSONValue = [
        "name": "Ada",
        "age": 36,
        "score": 2.5,
        "admin": true,
        "manager": nil,
        "tags": ["a", "b"],
        "address": ["city": "London", "lines": ["1 Main St"]],
    ]

    @Test func literalsAndDescription() {
        #expect(sample.description == #"{"name":"Ada","age":36,"score":2.5,"admin":true,"manager":null,"tags":["a","b"],"address":{"city":"London","lines":["1 Main St"]}}"#)
        #expect(JSONValue(floatLiteral: 1.0).description == "1")
        #expect(JSONValue(floatLiteral: .infinity) == .null)
        let string: JSONValue = "say \"hi\"\n"
        #expect(string.description == #""say \"hi\"\n""#)
        #expect(JSONValue.array([]).description == "[]")
        #expect(JSONValue.object([:]).description == "{}")
        #expect(String(decoding: sample.jsonBytes(), as: UTF8.self) == sample.description)
    }

    @Test func writingIntoAWriter() {
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "["))
        JSONValue.bool(false).write(to: &writer)
        writer.writeByte(UInt8(ascii: ","))
        (["k": [1, nil]] as JSONValue).write(to: &writer)
        writer.writeByte(UInt8(ascii: "]"))
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"[false,{"k":[1,null]}]"#)
    }

    @Test func accessors() throws {
        #expect(sample["name"]?.stringValue == "Ada")
        #expect(sample["age"]?.intValue == 36)
        #expect(sample["age"]?.doubleValue == 36)
        #expect(sample["score"]?.doubleValue == 2.5)
        #expect(sample["score"]?.intValue == nil)
        #expect(sample["admin"]?.boolValue == true)
        #expect(sample["manager"]?.isNull == true)
        #expect(sample["tags"]?.arrayValue == ["a", "b"])
        #expect(sample["address"]?.objectValue?.keys == ["city", "lines"])
        #expect(sample["missing"] == nil)
        #expect(sample["name"]?.intValue == nil)
        #expect(sample["name"]?.boolValue == nil)
        #expect(sample["name"]?.doubleValue == nil)
        #expect(sample["name"]?.arrayValue == nil)
        #expect(sample["name"]?.objectValue == nil)
        #expect(sample["name"]?.isNull == false)
        #expect(sample["age"]?.stringValue == nil)
        #expect(JSONValue.number(try #require(JSONNumber(text: "7.0"))).intValue == 7)
        #expect(JSONValue.number(try #require(JSONNumber(text: "1e30"))).intValue == nil)
    }

    @Test func subscripts() {
        let tags = sample["tags"]
        #expect(tags?[0] == "a")
        #expect(tags?[1] == "b")
        #expect(tags?[2] == nil)
        #expect(tags?[-1] == nil)
        #expect(sample[0] == nil)
        #expect(tags?["a"] == nil)
        #expect(JSONValue.string("x")["a"] == nil)
    }

    @Test func settingKeys() {
        var value = sample
        value["name"] = "Grace"
        value["new"] = [1]
        value["manager"] = nil
        #expect(value["name"] == "Grace")
        #expect(value.objectValue?.keys == ["name", "age", "score", "admin", "tags", "address", "new"])

        var empty = JSONValue.null
        empty["a"] = nil
        #expect(empty == .null)
        empty["a"] = 1
        #expect(empty == ["a": 1])

        var array: JSONValue = [1, 2]
        array["a"] = 1
        #expect(array == [1, 2])
        var scalar: JSONValue = "text"
        scalar["a"] = 1
        #expect(scalar == "text")
    }

    @Test func paths() throws {
        #expect(sample[JSONPath(parsing: "address.city")] == "London")
        #expect(sample[JSONPath(parsing: "address.lines[0]")] == "1 Main St")
        #expect(sample[JSONPath(parsing: "tags[1]")] == "b")
        #expect(sample[JSONPath(parsing: "tags[2]")] == nil)
        #expect(sample[JSONPath(parsing: "name.first")] == nil)
        #expect(sample[JSONPath(parsing: "nothing.here")] == nil)
        #expect(sample[JSONPath()] == sample)
        #expect(sample[JSONPath([.key("address"), .key("lines"), .index(0)])] == "1 Main St")
    }

    @Test func settingPaths() throws {
        var value = sample
        value[JSONPath(parsing: "address.city")] = "Paris"
        value[JSONPath(parsing: "a.b.c")] = 1
        value[JSONPath(parsing: "tags[0]")] = "z"
        value[JSONPath(parsing: "address.lines[0]")] = ["nested": true]
        #expect(value[JSONPath(parsing: "address.city")] == "Paris")
        #expect(value["a"] == ["b": ["c": 1]])
        #expect(value["tags"] == ["z", "b"])
        #expect(value[JSONPath(parsing: "address.lines[0].nested")] == true)
        #expect(sample["address"]?["city"] == "London", "the original is a separate value")

        // Impossible assignments change nothing.
        let before = value
        value[JSONPath(parsing: "tags[5]")] = 1
        value[JSONPath(parsing: "name.first")] = "A"
        value[JSONPath(parsing: "tags.x")] = 1
        value[JSONPath(parsing: "missing[0]")] = 1
        value[JSONPath(parsing: "missing.deeper")] = nil
        value[JSONPath(parsing: "tags[9]")] = nil
        #expect(value == before)
        #expect(value["missing"] == nil)

        // nil removes members and elements.
        value[JSONPath(parsing: "a.b.c")] = nil
        #expect(value["a"] == ["b": [:]])
        value[JSONPath(parsing: "tags[0]")] = nil
        #expect(value["tags"] == ["b"])
        value[JSONPath(parsing: "a")] = nil
        #expect(value["a"] == nil)

        // The empty path is the whole value.
        value[JSONPath()] = 5
        #expect(value == 5)
        value[JSONPath()] = nil
        #expect(value == .null)
        value[JSONPath(parsing: "x[0]")] = 1
        #expect(value == .null)
    }

    @Test func parsing() throws {
        let text = #"{"name":"Ada","big":12345678901234567890123,"exact":0.10000000000000000000001,"list":[1,-2.5e-3,true,false,null,{}],"nested":{"a":[[]]}}"#
        let value = try JSONValue(parsing: text)
        #expect(value["name"] == "Ada")
        #expect(value[JSONPath(parsing: "list[1]")]?.doubleValue == -0.0025)
        #expect(value.objectValue?.keys == ["name", "big", "exact", "list", "nested"])
        // Compact input comes back byte for byte: number text and key order are kept.
        #expect(value.description == text)
        #expect(try JSONValue(parsing: value.jsonBytes()) == value)
        #expect(try JSONValue(parsing: Array(text.utf8), maxDepth: 4) == value)
        #expect(throws: JSONError(.tooDeep(limit: 3), offset: 131)) { try JSONValue(parsing: text, maxDepth: 3) }
        #expect(throws: JSONError.self) { try JSONValue(parsing: "[1,]") }
        #expect(try JSONValue(parsing: " 7 ") == 7)
        #expect(try JSONValue(parsing: #""\u00e9""#) == "é")
    }

    @Test func parsingDuplicateKeysKeepsTheLastValueInTheFirstPosition() throws {
        let value = try JSONValue(parsing: #"{"a":1,"b":2,"a":3}"#)
        #expect(value.objectValue?.keys == ["a", "b"])
        #expect(value["a"] == 3)
        #expect(value.description == #"{"a":3,"b":2}"#)
    }

    @Test func deepValues() throws {
        let depth = 500
        let text = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
        let value = try JSONValue(parsing: text)
        var inner = value
        for _ in 0..<depth - 1 { inner = inner[0] ?? .null }
        #expect(inner == [1])
        #expect(value.description == text)
    }

    // MARK: JSONNumber

    @Test func numberEquality() throws {
        let one = ["1", "1.0", "1e0", "10e-1", "0.1e1", "1.000", "100e-2"].compactMap(JSONNumber.init(text:))
        #expect(one.count == 7)
        for number in one {
            #expect(number == JSONNumber(1))
            #expect(number.hashValue == JSONNumber(1).hashValue)
            #expect(number.int64Value == 1)
        }
        let zero = ["0", "-0", "0.0", "-0e5", "0e-7"].compactMap(JSONNumber.init(text:))
        #expect(zero.count == 5)
        for number in zero {
            #expect(number == 0)
            #expect(number.hashValue == JSONNumber(0).hashValue)
        }
        #expect(JSONNumber(text: "12345678901234567890") != JSONNumber(text: "12345678901234567891"))
        #expect(JSONNumber(text: "0.1") != JSONNumber(text: "0.10000000000000001"))
        #expect(JSONNumber(text: "-1") != JSONNumber(1))
        #expect(JSONNumber(text: "1e2") == JSONNumber(100))
        #expect(JSONNumber(text: "1e2") != JSONNumber(text: "1e3"))
        #expect(JSONNumber(text: "120") == JSONNumber(text: "1.2e2"))
        #expect(Set([JSONValue(integerLiteral: 1), JSONValue(floatLiteral: 1.0), 2]).count == 2)
    }

    @Test func numberValues() throws {
        #expect(JSONNumber(42).text == "42")
        #expect(JSONNumber(Int64.min).text == "-9223372036854775808")
        #expect(JSONNumber(UInt64.max).text == "18446744073709551615")
        #expect(JSONNumber(exactly: 0.1)?.text == "0.1")
        #expect(JSONNumber(exactly: 3.0)?.text == "3")
        #expect(JSONNumber(exactly: -0.0)?.text == "-0")
        #expect(JSONNumber(exactly: .nan) == nil)
        #expect(JSONNumber(exactly: .infinity) == nil)
        #expect(JSONNumber(exactly: -.infinity) == nil)
        for text in ["", "+1", "01", ".5", "1.", "1e", " 1", "1 ", "NaN", "0x10", "--1", "1e+"] {
            #expect(JSONNumber(text: text) == nil, "\(text)")
        }
        let cases: [(String, Int64?, Double)] = [
            ("-9223372036854775808", .min, -9.223372036854775808e18), ("9223372036854775808", nil, 9.223372036854775808e18),
            ("1.5", nil, 1.5), ("1e2", 100, 100), ("-1E+2", -100, -100), ("1e-2", nil, 0.01), ("92233720368547758.07e2", .max, 9.223372036854775807e18),
            ("9.3e18", nil, 9.3e18), ("-9.223372036854775808e18", .min, -9.223372036854775808e18), ("1e19", nil, 1e19),
            ("123.4560e3", 123_456, 123_456), ("0.5e1", 5, 5), ("1e999999999999999999999", nil, .infinity),
        ]
        for (text, int, double) in cases {
            let number = try #require(JSONNumber(text: text))
            #expect(number.int64Value == int, "\(text)")
            #expect(number.doubleValue == double, "\(text)")
            #expect(number.description == text)
        }
    }

    // MARK: JSONObject

    @Test func objectOrderAndEquality() {
        var object: JSONObject = ["b": 1, "a": 2]
        object["c"] = 3
        object["b"] = 4
        #expect(object.keys == ["b", "a", "c"])
        #expect(object.values == [4, 2, 3])
        #expect(object.map(\.key) == ["b", "a", "c"])
        #expect(object.count == 3)
        #expect(!object.isEmpty)
        #expect(object.removeValue(forKey: "a") == 2)
        #expect(object.removeValue(forKey: "a") == nil)
        object["c"] = nil
        #expect(object.keys == ["b"])

        let first: JSONObject = ["x": 1, "y": [true]]
        let second: JSONObject = ["y": [true], "x": 1.0]
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(first != ["x": 1, "y": [false]])
        #expect(first != ["x": 1])
        #expect(first != ["x": 1, "z": [true]])
        #expect(JSONObject([("k", 1), ("k", 2)]) == ["k": 2])
        #expect(JSONObject().isEmpty)
        #expect(first.description == #"{"x":1,"y":[true]}"#)
    }

    @Test func largeObjects() {
        var object = JSONObject()
        for i in 0..<200 { object["key\(i)"] = JSONValue(integerLiteral: i) }
        #expect(object.count == 200)
        #expect(object["key150"] == 150)
        #expect(object["key200"] == nil)
        // Removing shifts positions; lookups must stay right.
        #expect(object.removeValue(forKey: "key10") == 10)
        #expect(object["key11"] == 11)
        #expect(object["key199"] == 199)
        object["key10"] = "back"
        #expect(object.keys.last == "key10")
        #expect(object["key10"] == "back")
        object["key11"] = "changed"
        #expect(object.keys[10] == "key11")
        // Shrinking below the threshold (16) drops the index; growing past it builds it again.
        for i in 12..<200 { object["key\(i)"] = nil }
        #expect(object.count == 12)
        #expect(object["key5"] == 5)
        #expect(object["key10"] == "back")
        #expect(object["key11"] == "changed")
        #expect(object["key12"] == nil)
        for i in 0..<20 { object["more\(i)"] = true }
        #expect(object.count == 32)
        #expect(object["more19"] == true)
        #expect(object["key5"] == 5)
        #expect(object.keys.firstIndex(of: "more0") == 12)

        var reversed = JSONObject()
        for (key, value) in object.reversed() { reversed[key] = value }
        #expect(reversed == object)
        #expect(reversed.hashValue == object.hashValue)
    }

    @Test func roundTrips() throws {
        let texts = [
            #"[]"#, #"{}"#, #""""#, "0", "-0", "true", "null", #"[1,"two",{"three":[3.0,-3e-3]},null,false]"#,
            #"{"emoji":"😀","escaped":"\"\\\/\b\f\n\r\t\u0001","unicode":"\u00e9\u4e2d\ud83d\ude00"}"#,
            #"{"big":123456789012345678901234567890,"tiny":1e-400,"huge":1E400}"#,
        ]
        for text in texts {
            let value = try JSONValue(parsing: text)
            let again = try JSONValue(parsing: value.jsonBytes())
            #expect(again == value, "\(text)")
            #expect(try JSONValue(parsing: JSONWriter.prettyPrinted(value.jsonBytes())) == value)
        }
    }
}
