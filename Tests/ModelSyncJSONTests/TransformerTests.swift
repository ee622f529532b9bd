import Foundation
import ModelSyncJSON
import Testing

@Suite struct TransformerTests {
    @Test func builtInAndUserTransformersRoundTrip() throws {
        let json = #"{"id": 1, "price": "1234", "updatedAt": "2026-11-21T10:34:17.201-06:00", "createdAt": 1700000000, "homepage": "https://example.com/"}"#
        let product = try JSONModelDecoder().decode(Product.self, from: json)
        #expect(product.price == 12.34)
        #expect(product.createdAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(product.homepage.absoluteString == "https://example.com/")
        let expected = try #require(ISO8601.parse("2026-11-21T16:34:17.201Z"))
        #expect(abs(product.updatedAt.timeIntervalSince(expected)) < 1e-6)

        let encoded = try JSONModelEncoder().encodeToString(product)
        #expect(encoded == #"{"id":1,"price":"1234","updatedAt":"2026-11-21T16:34:17.201Z","createdAt":1700000000,"homepage":"https://example.com/"}"#)
        #expect(try JSONModelDecoder().decode(Product.self, from: encoded) == product)
    }

    @Test func millisecondTimestampsEncodeAsIntegers() throws {
        let post = Post(userId: 1, title: "t", text: "b", publishedAt: Date(timeIntervalSince1970: 1_700_000_000.123))
        let json = try JSONModelEncoder().encodeToString(post)
        #expect(json.contains(#""publishedAt":1700000000123"#))
    }

    @Test func transformerFailuresNameThePath() throws {
        let json = #"{"id": 1, "price": "12.x", "updatedAt": "2026-11-21T10:34:17Z", "homepage": "https://e.com"}"#
        let error = try #require(throws: JSONError.self) { try JSONModelDecoder().decode(Product.self, from: json) }
        #expect(error.path.description == "price")
        #expect(error.reason == .invalidValue(#""12.x" is not a number of cents"#))

        let badDate = #"{"id": 1, "price": "1", "updatedAt": "2026-13-01T00:00:00Z", "homepage": "https://e.com"}"#
        let dateError = try #require(throws: JSONError.self) { try JSONModelDecoder().decode(Product.self, from: badDate) }
        #expect(dateError.path.description == "updatedAt")
    }

    @Test func dateStrategiesAtCallAndModelLevel() throws {
        // The model's own strategy (seconds) wins over the call's.
        let account = try JSONModelDecoder(options: JSONDecodingOptions(dateStrategy: .millisecondsSince1970))
            .decode(Account.self, from: #"{"id": 1, "createdAt": 1700000000}"#)
        #expect(account.createdAt == Date(timeIntervalSince1970: 1_700_000_000))

        let dates = try JSONModelDecoder(options: JSONDecodingOptions(dateStrategy: .millisecondsSince1970))
            .decode([Date].self, from: "[1700000000500]")
        #expect(dates == [Date(timeIntervalSince1970: 1_700_000_000.5)])

        let custom = JSONDateStrategy.custom(
            decode: { value in
                guard let days = value.intValue else { throw JSONError(.invalidValue("not a day number")) }
                return Date(timeIntervalSince1970: Double(days) * 86_400)
            },
            encode: { .number(JSONNumber(Int($0.timeIntervalSince1970 / 86_400))) })
        let decoded = try JSONModelDecoder(options: JSONDecodingOptions(dateStrategy: custom)).decode([Date].self, from: "[2]")
        #expect(decoded == [Date(timeIntervalSince1970: 172_800)])
        let encoded = try JSONModelEncoder(options: JSONEncodingOptions(dateStrategy: custom)).encodeToString(decoded)
        #expect(encoded == "[2]")
    }

    @Test func iso8601OutputHasWholeOrFractionalSeconds() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        #expect(try JSONModelEncoder().encodeToString([date]) == #"["2023-11-14T22:13:20Z"]"#)
        let fractional = JSONModelEncoder(options: JSONEncodingOptions(dateStrategy: .iso8601WithFractionalSeconds))
        #expect(try fractional.encodeToString([date]) == #"["2023-11-14T22:13:20.250Z"]"#)
    }
}
