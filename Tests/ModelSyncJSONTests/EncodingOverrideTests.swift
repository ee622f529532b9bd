import Foundation
import ModelSyncJSON
import Testing

/// A model with a plain, a dated, a nested-key, an optional and an excluded property.
@Model(encodeExcluding: ["pin"])
struct Athlete: Equatable {
    var id: Int?
    var name: String
    var age: Int
    var joined: Date
    @JSON("stats.rank") var rank: Int = 0
    var coach: String?
    var pin: String = ""

    /// Not stored: no override can name it.
    var initials: String { String(name.prefix(1)) }
}

@Suite("JSON: per-call encoding overrides")
struct EncodingOverrideTests {
    let athlete = Athlete(name: "Ann", age: 20, joined: Date(timeIntervalSince1970: 1_700_000_000), rank: 3, coach: nil, pin: "1234")
    let youth = JSONEncodingOverride<Athlete>.field(\.age) { $0 <= 20 ? "Youth" : "Adult" }

    @Test func anOverrideChangesOnePropertyForOneCallOnly() throws {
        let encoder = JSONModelEncoder()
        let plain = #"{"id":null,"name":"Ann","age":20,"joined":"2023-11-14T22:13:20Z","coach":null,"stats":{"rank":3}}"#
        #expect(try encoder.encodeToString(athlete) == plain)
        let overridden = try encoder.encode(athlete, overriding: [youth])
        #expect(String(decoding: overridden, as: UTF8.self) == plain.replacingOccurrences(of: #""age":20"#, with: #""age":"Youth""#))
        // The next plain call, and the model, are unchanged.
        #expect(try encoder.encodeToString(athlete) == plain)
        #expect(athlete.age == 20)
        // An empty list is the plain encoding, envelope included.
        #expect(try encoder.encode(athlete, overriding: [], at: "data") == encoder.encode(athlete, at: "data"))
    }

    @Test func transformersDottedKeysAndKeyStrategies() throws {
        var options = JSONEncodingOptions(nilEncoding: .omit)
        options.keyStrategy = .snakeCase
        let encoder = JSONModelEncoder(options: options)
        let value = try encoder.encodeToValue(athlete, overriding: [
            .field(\.joined, using: .millisecondsSince1970),
            .field(\.rank) { "#\($0)" },
            .field(\.coach) { $0 ?? "none" },
        ])
        #expect(value["joined"] == 1_700_000_000_000)
        #expect(value["stats"]?["rank"] == "#3")
        #expect(value["coach"] == "none")
        #expect(value["age"] == 20)
        // An override that gives nil follows the nil policy: left out here.
        let cleared = try encoder.encodeToValue(athlete, overriding: [.field(\.name) { _ in String?.none }])
        #expect(cleared["name"] == nil)
        #expect(cleared["age"] == 20)
    }

    @Test func anExcludedPropertyStaysOut() throws {
        let value = try JSONModelEncoder().encodeToValue(athlete, overriding: [.field(\.pin) { $0 }])
        #expect(value["pin"] == nil)
    }

    @Test func errorsNameTheProperty() throws {
        struct TooYoung: Error {}
        let failing = JSONEncodingOverride<Athlete>.field(\.age) { (age: Int) -> String in throw TooYoung() }
        let error = try #require(throws: JSONError.self) { try JSONModelEncoder().encode(athlete, overriding: [failing]) }
        #expect(error.path.description == "age")
        #expect(error.underlying is TooYoung)

        let computed = JSONEncodingOverride<Athlete>.field(\.initials) { $0 }
        let unknown = try #require(throws: JSONError.self) { try JSONModelEncoder().encodeToValue(athlete, overriding: [computed]) }
        #expect(unknown.description.contains("Athlete has no stored field"))
    }
}
