import Foundation
import ModelSyncJSON
import Testing

@Suite struct KeyMappingTests {
    @Test func snakeCaseStrategyMapsBothWays() throws {
        let user = User(id: 1, name: "Ann", emailAddress: "a@b.c", role: .admin, isActive: false)
        let json = try JSONModelEncoder().encodeToString(user)
        #expect(json == #"{"id":1,"name":"Ann","email_address":"a@b.c","role":"admin","is_active":false}"#)
        #expect(try JSONModelDecoder().decode(User.self, from: json) == user)
    }

    @Test func keyStrategyConversions() {
        #expect(KeyStrategy.snakeCase.key(for: "publishedAt") == "published_at")
        #expect(KeyStrategy.snakeCase.key(for: "userID") == "user_id")
        #expect(KeyStrategy.snakeCase.key(for: "htmlURL") == "html_url")
        #expect(KeyStrategy.snakeCase.key(for: "URLString") == "url_string")
        #expect(KeyStrategy.snakeCase.key(for: "id") == "id")
        #expect(KeyStrategy.snakeCase.key(for: "address2Line") == "address2_line")
        #expect(KeyStrategy.kebabCase.key(for: "publishedAt") == "published-at")
        #expect(KeyStrategy.pascalCase.key(for: "publishedAt") == "PublishedAt")
        #expect(KeyStrategy.custom { "x_" + $0 }.key(for: "id") == "x_id")
    }

    @Test func callLevelStrategyOverridesTheModelsButNotExplicitKeys() throws {
        let options = JSONDecodingOptions(keyStrategy: .custom { $0.uppercased() })
        let post = try JSONModelDecoder(options: options).decode(
            Post.self, from: #"{"USERID": 4, "TITLE": "t", "body": "b"}"#)
        #expect(post.userId == 4)
        #expect(post.text == "b")

        let encoder = JSONModelEncoder(options: JSONEncodingOptions(keyStrategy: .snakeCase))
        let json = try encoder.encodeToString(Post(userId: 4, title: "t", text: "b"))
        #expect(json.contains(#""user_id":4"#))
        #expect(json.contains(#""body":"b""#))
    }

    @Test func dottedKeysReachIntoNestedObjects() throws {
        let json = #"{"postId": 1, "index": 2, "author": {"name": "Ann", "email": "a@x.io"}, "meta": {"stats": {"likes": 5}}, "text": "hi"}"#
        let comment = try JSONModelDecoder().decode(Comment.self, from: json)
        #expect(comment == Comment(postId: 1, index: 2, authorName: "Ann", authorEmail: "a@x.io", likes: 5, text: "hi"))

        let encoded = try JSONModelEncoder().encodeToString(comment)
        #expect(encoded == #"{"postId":1,"index":2,"text":"hi","author":{"name":"Ann","email":"a@x.io"},"meta":{"stats":{"likes":5}}}"#)
        #expect(try JSONModelDecoder().decode(Comment.self, from: encoded) == comment)
    }

    @Test func missingNestedObjectsTakeDefaultsOrFail() throws {
        let lenient = try JSONModelDecoder().decode(
            Comment.self, from: #"{"postId": 1, "index": 2, "author": {"name": "Ann"}, "text": "hi"}"#)
        #expect(lenient.likes == 0)
        #expect(lenient.authorEmail == nil)

        let error = try #require(throws: JSONError.self) {
            try JSONModelDecoder(mode: .strict).decode(Comment.self, from: #"{"postId": 1, "index": 2, "author": {}, "text": "hi"}"#)
        }
        #expect(error.reason == .missingKey("author.name"))
        #expect(error.path.description == "author.name")
    }
}
