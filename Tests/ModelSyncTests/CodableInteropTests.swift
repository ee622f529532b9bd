import Foundation
import ModelSync
import ModelSyncTesting
import Testing

/// A `Codable` type that is not a model, used as a field.
struct PostalAddress: Codable, Equatable, CodableField {
    var street: String
    var city: String
    var movedIn: Date?
}

/// A model with every wire rule the codec applies: a key strategy, a dotted key, a
/// transformer, an exclusion, and `Codable` fields.
@Model(jsonKeys: .snakeCase, encodeExcluding: ["secret"], table: "customers")
struct Customer: SQLModel, Equatable {
    var id: Int?
    var displayName: String
    @JSON("contact.email") var email: String
    @Transform(.millisecondsSince1970) var since: Date
    var secret: String = ""
    var address: PostalAddress
    var previous: [PostalAddress] = []
    var billing: PostalAddress?
}

/// A model that brings its own (synthesized) `Codable`: `@Model` leaves it alone.
@Model
struct OwnCodable: SQLModel, Codable, Equatable {
    var id: Int
    @JSON("full_name") var name: String
}

/// A protocol that refines `Codable`, as Vapor's `Content` does.
protocol ContentLike: Codable {}

/// A model that is `Codable` only through a refining protocol.
@Model
struct Refined: SQLModel, ContentLike, Equatable {
    var id: Int
    @JSON("full_name") var name: String
}

/// A model with a hand-written `Codable` conformance, which `@Model` must not duplicate.
@Model
struct HandCoded: SQLModel, Codable, Equatable {
    var id: Int

    init(id: Int) { self.id = id }

    init(from decoder: any Decoder) throws {
        id = try decoder.singleValueContainer().decode(Int.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(id)
    }
}

private let customer = Customer(
    id: 7, displayName: "Ann", email: "ann@example.com", since: Date(timeIntervalSince1970: 1_700_000_000.5),
    secret: "", address: PostalAddress(street: "1 Main St", city: "Springfield", movedIn: Date(timeIntervalSince1970: 1_600_000_000.25)),
    previous: [PostalAddress(street: "2 Side St / Rear", city: "Shelbyville", movedIn: nil)],
    billing: nil
)

@Suite("Codable interop")
struct CodableInteropTests {
    @Test("JSONEncoder writes what the generated codec writes")
    func jsonEncoderMatchesTheCodec() throws {
        let codec = try JSONModelEncoder().encodeToValue(customer)
        let foundation = try JSONValue(parsing: [UInt8](JSONEncoder().encode(customer)))
        #expect(foundation == codec)
        // The model's own rules, not Foundation's: keys, the dotted key, the transformer.
        #expect(codec["display_name"] == "Ann")
        #expect(codec["contact"]?["email"] == "ann@example.com")
        #expect(codec["since"] == .number(JSONNumber(1_700_000_000_500)))
        #expect(codec["secret"] == nil)
        #expect(codec["billing"] == .null)
        // Arrays of models are Codable too.
        let list = try JSONValue(parsing: [UInt8](JSONEncoder().encode([customer, customer])))
        #expect(list == .array([codec, codec]))
    }

    @Test("JSONDecoder reads through the generated codec")
    func jsonDecoderMatchesTheCodec() throws {
        let bytes = try JSONModelEncoder().encodeToData(customer)
        #expect(try JSONDecoder().decode(Customer.self, from: bytes) == customer)
        #expect(try JSONDecoder().decode([Customer].self, from: JSONEncoder().encode([customer])) == [customer])
        // Lenient, as the codec's default: a number in a string, a missing key with a default.
        let drifted = #"{"id": "8", "display_name": "Bo", "contact": {"email": "bo@example.com"}, "since": 0, "address": {"street": "s", "city": "c"}}"#
        let bo = try JSONDecoder().decode(Customer.self, from: Data(drifted.utf8))
        #expect(bo.id == 8 && bo.previous.isEmpty && bo.address.movedIn == nil)
    }

    @Test("a codec error reaches a Decodable caller as a DecodingError with the JSONError inside")
    func decodingErrors() throws {
        let wrong = #"{"id": 1, "display_name": {"first": "Ann"}, "contact": {"email": "a"}, "since": 0, "address": {"street": "s", "city": "c"}}"#
        do {
            _ = try JSONDecoder().decode(Customer.self, from: Data(wrong.utf8))
            Issue.record("decoded a name from an object")
        } catch DecodingError.dataCorrupted(let context) {
            let json = try #require(context.underlyingError as? JSONError)
            #expect(json.path.description == "display_name")
        }
    }

    @Test("a struct that is Codable already keeps its own conformance")
    func ownConformanceWins() throws {
        let own = OwnCodable(id: 1, name: "Ann")
        let synthesized = try JSONValue(parsing: [UInt8](JSONEncoder().encode(own)))
        #expect(synthesized == ["id": 1, "name": "Ann"])                    // Swift's synthesis
        #expect(try JSONModelEncoder().encodeToValue(own) == ["id": 1, "full_name": "Ann"])  // the codec
        #expect(try JSONDecoder().decode(OwnCodable.self, from: JSONEncoder().encode(own)) == own)

        // Codable through a refining protocol (Vapor's `Content`): which conformance wins.
        let refined = Refined(id: 2, name: "Bo")
        #expect(try JSONValue(parsing: [UInt8](JSONEncoder().encode(refined))) == ["id": 2, "full_name": "Bo"])

        let hand = HandCoded(id: 5)
        #expect(try String(decoding: JSONEncoder().encode(hand), as: UTF8.self) == "5")
        #expect(try JSONModelEncoder().encodeToString(hand) == #"{"id":5}"#)
    }

    @Test("a Codable field is a nested object coded by Foundation, and its errors have a path")
    func codableFieldInJSON() throws {
        let json = try JSONModelEncoder().encodeToValue(customer)
        let address = try JSONValue(parsing: [UInt8](JSONEncoder().encode(customer.address)))
        #expect(json["address"] == address)
        #expect(json["previous"] == .array([try JSONValue(parsing: [UInt8](JSONEncoder().encode(customer.previous[0])))]))
        #expect(PostalAddress.fieldType == .custom(name: "PostalAddress"))

        let broken = #"{"id": 1, "display_name": "Ann", "contact": {"email": "a"}, "since": 0, "address": {"street": "s"}}"#
        let error = try #require(throws: JSONError.self) { try JSONModelDecoder().decode(Customer.self, from: broken) }
        #expect(error.path.description == "address")
        #expect(error.underlying is DecodingError)
    }

    @Test("a Codable field is stored in SQLite as JSON text", arguments: TestStorage.allCases)
    func codableFieldInSQLite(store: TestStorage) throws {
        let db = try store.open(models: [Customer.self])
        var saved = customer
        saved.id = nil
        saved.billing = customer.address
        try db.write { try saved.insert($0) }
        let rows = try db.read { db in try db.rows("SELECT typeof(address), address, typeof(billing) FROM customers") }
        let columns = try #require(rows.first)
        #expect(columns[0] == .text("text") && columns[2] == .text("text"))
        guard case .text(let stored) = columns[1] else {
            Issue.record("address column holds \(columns[1])")
            return
        }
        #expect(try JSONDecoder().decode(PostalAddress.self, from: Data(stored.utf8)) == customer.address)
        #expect(try db.read { try Customer.find(saved.id, $0) } == saved)
    }

    @Test("JSONValue read through any Decoder stops at the parser's depth instead of the stack")
    func jsonValueThroughAnEndlessDecoder() {
        #expect(throws: DecodingError.self) { try JSONValue(from: EndlessArrayDecoder(codingPath: [])) }
    }
}

/// A Decoder whose input is an array inside an array, forever: what a hostile or broken
/// Decoder can hand a `Decodable` that recurses.
private struct EndlessArrayDecoder: Decoder {
    struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { "\(intValue ?? 0)" }
        init(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    struct Elements: UnkeyedDecodingContainer {
        let codingPath: [any CodingKey]
        var count: Int? { 1 }
        var isAtEnd: Bool { currentIndex > 0 }
        var currentIndex = 0

        mutating func decodeNil() throws -> Bool { false }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            currentIndex += 1
            return try T(from: EndlessArrayDecoder(codingPath: codingPath + [Index(intValue: 0)]))
        }
        mutating func nestedContainer<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw notAnObject
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            Elements(codingPath: codingPath + [Index(intValue: 0)])
        }
        mutating func superDecoder() throws -> any Decoder { EndlessArrayDecoder(codingPath: codingPath) }
        var notAnObject: DecodingError { .typeMismatch([String: Int].self, .init(codingPath: codingPath, debugDescription: "an array")) }
    }

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw Elements(codingPath: codingPath).notAnObject
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Elements(codingPath: codingPath) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw Elements(codingPath: codingPath).notAnObject
    }
}
