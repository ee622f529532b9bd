import Foundation
import ModelSyncJSON
import Testing

@Suite struct DecodingTests {
    let decoder = JSONModelDecoder()

    @Test func decodesAModelFromBytesStringDataAndValue() throws {
        let json = #"{"id": 1, "userId": 7, "title": "Hello", "body": "World", "publishedAt": 1700000000123}"#
        let expected = Post(
            id: 1, userId: 7, title: "Hello", text: "World",
            publishedAt: Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(try decoder.decode(Post.self, from: json) == expected)
        #expect(try decoder.decode(Post.self, from: bytes(json)) == expected)
        #expect(try decoder.decode(Post.self, from: Data(json.utf8)) == expected)
        #expect(try decoder.decode(Post.self, from: JSONValue(parsing: json)) == expected)
    }

    @Test func decodesArraysOfModels() throws {
        let json = #"[{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob", "email_address": "bob@example.com", "role": "admin"}]"#
        let users = try decoder.decode([User].self, from: json)
        #expect(users == [
            User(id: 1, name: "Ann"),
            User(id: 2, name: "Bob", emailAddress: "bob@example.com", role: .admin),
        ])
    }

    @Test func ignoresUnknownKeysAndMapsNullToNil() throws {
        let json = #"{"id": null, "userId": 1, "title": "t", "body": "b", "extra": {"deep": [1, 2, {"x": null}]}, "author": null, "publishedAt": null}"#
        let post = try decoder.decode(Post.self, from: json)
        #expect(post.id == nil)
        #expect(post.author == nil)
        #expect(post.publishedAt == nil)
    }

    @Test func missingOptionalIsNilAndMissingDefaultIsTheDeclaredDefault() throws {
        let (post, report) = try decoder.decodeWithReport(Post.self, from: #"{"userId": 1, "title": "t", "body": "b"}"#)
        #expect(post.id == nil)
        #expect(post.tags == [])
        #expect(post.rating == 0)
        // Optionals that are absent are normal; declared defaults are reported.
        #expect(report.entries.map(\.path.description).sorted() == ["rating", "tags"])
        #expect(report.entries.allSatisfy { $0.kind == .defaultForMissingKey })
    }

    @Test func ignoredPropertiesKeepTheirInitialValue() throws {
        let post = try decoder.decode(Post.self, from: #"{"userId": 1, "title": "t", "body": "b", "isSelected": true}"#)
        #expect(post.isSelected == false)
        #expect(Post.schema.field(named: "isSelected") == nil)
    }

    @Test func decodesEverySupportedType() throws {
        let json = """
        {
          "int": -42, "int8": 127, "uint64": 18446744073709551615, "double": 3.25, "float": 0.5,
          "bool": true, "string": "caf\\u00e9 \\ud83d\\ude00 \\"q\\"", "date": "2026-11-21T10:34:17.201265-06:00",
          "url": "https://example.com/a?b=1", "uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
          "data": "AQID", "decimal": 0.1, "role": "guest", "priority": 2, "optional": null,
          "list": [1, 2, 3], "matrix": [[1], [], [2, 3]], "scores": {"a": 1.5, "b": -2},
          "users": [{"id": 1, "name": "Ann"}], "maybeUsers": null
        }
        """
        let value = try decoder.decode(Everything.self, from: json)
        #expect(value.int == -42)
        #expect(value.int8 == 127)
        #expect(value.uint64 == UInt64.max)
        #expect(value.double == 3.25)
        #expect(value.float == 0.5)
        #expect(value.bool)
        #expect(value.string == "café 😀 \"q\"")
        let expectedDate = try #require(ISO8601.parse("2026-11-21T16:34:17.201265Z"))
        #expect(abs(value.date.timeIntervalSince(expectedDate)) < 1e-6)
        #expect(value.url == URL(string: "https://example.com/a?b=1"))
        #expect(value.uuid == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(value.data == Data([1, 2, 3]))
        #expect(value.decimal == Decimal(string: "0.1"))
        #expect(value.role == .guest)
        #expect(value.priority == .high)
        #expect(value.optional == nil)
        #expect(value.list == [1, 2, 3])
        #expect(value.matrix == [[1], [], [2, 3]])
        #expect(value.scores == ["a": 1.5, "b": -2])
        #expect(value.users == [User(id: 1, name: "Ann")])
        #expect(value.maybeUsers == nil)
    }

    @Test func decodesRecursiveModels() throws {
        let json = #"{"name": "root", "children": [{"name": "a", "children": [{"name": "a1"}]}, {"name": "b"}]}"#
        let tree = try decoder.decode(TreeNode.self, from: json)
        #expect(tree == TreeNode(name: "root", children: [
            TreeNode(name: "a", children: [TreeNode(name: "a1")]),
            TreeNode(name: "b"),
        ]))
    }

    @Test func duplicateKeysTakeTheLastValue() throws {
        let user = try decoder.decode(User.self, from: #"{"id": 1, "name": "first", "name": "second"}"#)
        #expect(user.name == "second")
    }

    @Test func keysInAnyOrderAndEscapedKeysMatch() throws {
        let user = try decoder.decode(User.self, from: #"{"is_active": false, "n\u0061me": "Ann", "role": "admin", "id": 3}"#)
        #expect(user == User(id: 3, name: "Ann", role: .admin, isActive: false))
    }
}
