import Foundation
import ModelSyncJSON
import Testing

struct CauseFailure: Error, Equatable {
    var input: String
}

/// Rejects every value in both directions, with an error of the user's own type.
struct RejectingTransformer: JSONTransformer {
    func decode(_ json: String) throws -> String { throw CauseFailure(input: json) }
    func encode(_ value: String) throws -> String { throw CauseFailure(input: value) }
}

@Model
struct CauseTagged: Equatable {
    var id: Int
    @Transform(RejectingTransformer()) var label: String
}

@Model
struct CauseShouting: Equatable {
    var name: String
    func didEncode(_ json: inout JSONValue) throws { throw CauseFailure(input: name) }
}

/// Errors thrown by user code keep their cause: callers can match the
/// original error, and the description stays readable.
@Suite struct ErrorCauseTests {
    @Test func aDidDecodeErrorIsKeptAsTheUnderlyingError() throws {
        let error = try #require(throws: JSONError.self) {
            try JSONModelDecoder().decode([Person].self, from: #"[{"name": ""}]"#)
        }
        #expect(error.reason == .userError("emptyName"))
        #expect(error.underlying as? PersonError == .emptyName)
        #expect(error.description == "at [0]: emptyName")
    }

    @Test func aTransformerErrorIsKeptOnDecodeAndEncode() throws {
        let decodeError = try #require(throws: JSONError.self) {
            try JSONModelDecoder().decode(CauseTagged.self, from: #"{"id": 1, "label": "x"}"#)
        }
        #expect(decodeError.underlying as? CauseFailure == CauseFailure(input: "x"))
        #expect(decodeError.path.description == "label")

        let encodeError = try #require(throws: JSONError.self) {
            try JSONModelEncoder().encode(CauseTagged(id: 1, label: "y"))
        }
        #expect(encodeError.underlying as? CauseFailure == CauseFailure(input: "y"))
        #expect(encodeError.path.description == "label")
    }

    @Test func aDidEncodeErrorIsKept() throws {
        let error = try #require(throws: JSONError.self) { try JSONModelEncoder().encode(CauseShouting(name: "z")) }
        #expect(error.underlying as? CauseFailure == CauseFailure(input: "z"))
    }

    @Test func aCustomDateStrategyErrorIsKept() throws {
        let strategy = JSONDateStrategy.custom(
            decode: { _ in throw CauseFailure(input: "decode") },
            encode: { _ in throw CauseFailure(input: "encode") })
        let decodeError = try #require(throws: JSONError.self) {
            try JSONModelDecoder(options: JSONDecodingOptions(dateStrategy: strategy)).decode([Date].self, from: "[1]")
        }
        #expect(decodeError.underlying as? CauseFailure == CauseFailure(input: "decode"))
        let encodeError = try #require(throws: JSONError.self) {
            try JSONModelEncoder(options: JSONEncodingOptions(dateStrategy: strategy)).encode([Date()])
        }
        #expect(encodeError.underlying as? CauseFailure == CauseFailure(input: "encode"))
    }

    @Test func aJSONErrorFromUserCodeIsNotWrapped() throws {
        let error = JSONError(wrapping: JSONError(.invalidValue("bad")))
        #expect(error.reason == .invalidValue("bad"))
        #expect(error.underlying == nil)
    }
}
