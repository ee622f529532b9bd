import Foundation
import ModelSync
import Testing

// The README's examples, verbatim where they are code, so that they cannot rot.
enum Readme {
    enum Role: String, ModelEnum { case admin, member }

    @Model(jsonKeys: .snakeCase)
    struct User {
        @PrimaryKey var id: Int
        var displayName: String                       // JSON key "display_name"
        var role: Role = .member                      // default when the key is missing
    }

    @Model
    struct Post {
        var id: Int?                                  // `id` is the primary key by convention
        var userId: Int
        @JSON("body") var text: String                // JSON key differs from the property
        @JSON("stats.views") var views: Int = 0       // reaches into a nested object
        @Transform(.millisecondsSince1970) var publishedAt: Date?
        var author: User?                             // nested models and arrays of them
        @Ignored var isSelected = false               // never encoded or decoded
    }
}

@Suite struct ReadmeExamplesTests {
    typealias Post = Readme.Post

    @Test func jsonSection() throws {
        let json = #"{"data": {"id": "1", "userId": 7, "body": "Hi", "stats": {"views": 12}}}"#

        // Lenient by default: "1" becomes 1, and the report says so.
        let (post, report) = try JSONModelDecoder().decodeWithReport(Post.self, from: json, at: "data")
        #expect(report.description == #"data.id: coerced string "1" to Int"#)

        // Strict mode accepts only the declared shapes.
        let strict = JSONModelDecoder(mode: .strict)
        #expect(throws: JSONError.self) { try strict.decode(Post.self, from: json, at: "data") }

        // Encoding: declaration order, stable bytes; nil as null or omitted.
        let bytes = try JSONModelEncoder(options: JSONEncodingOptions(nilEncoding: .omit)).encode(post)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"id":1,"userId":7,"body":"Hi","stats":{"views":12}}"#)
        #expect(Readme.User.schema.primaryKey == ["id"])
        #expect(Post.schema.primaryKey == ["id"])
    }
}
