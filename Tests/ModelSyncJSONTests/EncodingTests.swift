import Foundation
import ModelSyncJSON
import Testing

@Suite struct EncodingTests {
    @Test func fieldsComeInDeclarationOrderAndNilAsNull() throws {
        let post = Post(id: nil, userId: 1, title: "T", text: "B", tags: ["a"], rating: 4.5)
        let json = try JSONModelEncoder().encodeToString(post)
        #expect(json == #"{"id":null,"userId":1,"title":"T","body":"B","publishedAt":null,"tags":["a"],"author":null,"rating":4.5}"#)
    }

    @Test func nilCanBeOmitted() throws {
        let encoder = JSONModelEncoder(options: JSONEncodingOptions(nilEncoding: .omit))
        let json = try encoder.encodeToString(Post(userId: 1, title: "T", text: "B"))
        #expect(json == #"{"userId":1,"title":"T","body":"B","tags":[],"rating":0}"#)
    }

    @Test func roundTripsEverySupportedType() throws {
        let value = Everything(
            int: Int.min, int8: -128, uint64: UInt64.max, double: 0.1, float: 1.5, bool: false,
            string: "line\nbreak \"quoted\" \\ tab\t \u{1} é 😀", date: Date(timeIntervalSince1970: 1_000_000),
            url: try #require(URL(string: "https://example.com/path?q=1&r=%20")), uuid: UUID(),
            data: Data([0, 255, 7]), decimal: try #require(Decimal(string: "12345678901234567890.123")),
            role: .admin, priority: .low, optional: "x", list: [], matrix: [[1, 2], []],
            scores: ["z": 1, "a": 2.5], users: [User(id: 1, name: "Ann", emailAddress: nil)], maybeUsers: [])
        let bytes = try JSONModelEncoder().encode(value)
        let decoded = try JSONModelDecoder(mode: .strict).decode(Everything.self, from: bytes)
        #expect(decoded == value)
        // Stable: encoding again gives the same bytes, and dictionary keys are sorted.
        #expect(try JSONModelEncoder().encode(decoded) == bytes)
        #expect(text(bytes).contains(#""scores":{"a":2.5,"z":1}"#))
        #expect(text(bytes).contains(#""uuid":""# + value.uuid.uuidString.lowercased()))
    }

    @Test func prettyPrinting() throws {
        let encoder = JSONModelEncoder(options: JSONEncodingOptions(prettyPrinted: true))
        let json = try encoder.encodeToString(User(id: 1, name: "Ann"))
        #expect(json == """
        {
          "id": 1,
          "name": "Ann",
          "email_address": null,
          "role": "member",
          "is_active": true
        }
        """)
    }

    @Test func nonFiniteNumbersAreErrorsWithAPath() throws {
        let error = try #require(throws: JSONError.self) {
            try JSONModelEncoder().encode([Post(userId: 1, title: "t", text: "b"), Post(userId: 1, title: "t", text: "b", rating: .nan)])
        }
        #expect(error.path.description == "[1].rating")
    }

    @Test func encodesToAJSONValue() throws {
        let value = try JSONModelEncoder().encodeToValue(User(id: 1, name: "Ann"))
        #expect(value["name"] == "Ann")
        #expect(value["id"]?.intValue == 1)
    }
}

@Suite struct SchemaTests {
    @Test func describesEveryField() throws {
        let schema = Post.schema
        #expect(schema.name == "Post")
        #expect(schema.fields.map(\.name) == ["id", "userId", "title", "text", "publishedAt", "tags", "author", "rating"])
        #expect(schema.primaryKey == ["id"])
        let text = try #require(schema.field(named: "text"))
        #expect(text.jsonKey == "body")
        #expect(text.hasExplicitJSONKey)
        #expect(text.type == .string)
        let published = try #require(schema.field(named: "publishedAt"))
        #expect(published.type == .optional(.date))
        #expect(published.transformer == ".millisecondsSince1970")
        let tags = try #require(schema.field(named: "tags"))
        #expect(tags.type == .array(.string))
        #expect(tags.defaultValue?.source == "[]")
        #expect(tags.defaultValue?.value() as? [String] == [])
        let author = try #require(schema.field(named: "author"))
        guard case .optional(.model(let reference)) = author.type else {
            Issue.record("author should be an optional model, is \(author.type)")
            return
        }
        #expect(reference.schema.name == "User")
        #expect(schema.field(for: \Post.title)?.name == "title")
        #expect(schema.field(for: \User.name) == nil)
    }

    @Test func keyStrategiesCompositeKeysAndKinds() throws {
        #expect(User.schema.field(named: "emailAddress")?.jsonKey == "email_address")
        #expect(User.schema.field(named: "role")?.type == .enumeration(name: "Role", rawType: .string))
        #expect(Comment.schema.primaryKey == ["postId", "index"])
        #expect(Comment.schema.field(named: "authorName")?.jsonKey == "author.name")
        #expect(Everything.schema.field(named: "int8")?.type == .integer(bitWidth: 8, isSigned: true))
        #expect(Everything.schema.field(named: "scores")?.type == .dictionary(.double))
        #expect(Everything.schema.primaryKey == [])
        #expect(TreeNode.schema.field(named: "children")?.type.description == "[TreeNode]")
    }
}
