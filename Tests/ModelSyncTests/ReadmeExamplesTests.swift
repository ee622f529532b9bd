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

extension Readme.Post: Validatable {
    static let validator = Validator<Readme.Post> {
        Validate(\.text, .required("Write something"), .length(...280))
        Validate(\.userId, .range(1...))
        Validate("Only published posts have views", fields: \.views, \.publishedAt) { post in
            post.views == 0 || post.publishedAt != nil
        }
    }
}

@Suite struct ReadmeValidationExamplesTests {
    @Test func validationAndDraftsSection() throws {
        var post = Readme.Post(id: 1, userId: 7, text: "Hi")

        var draft = Draft(editing: post)                 // .clean: a copy of `post` to edit
        #expect(draft.state == .clean)
        draft.text = ""                                  // .dirty; draft.changedFields == ["text"]
        #expect(draft.state == .dirty)
        #expect(draft.changedFields == ["text"])
        let valid = draft.validate()                     // false: .invalid
        let errors = draft.errors(for: \.text)           // ["Write something"]
        #expect(!valid)
        #expect(draft.state == .invalid)
        #expect(errors == ["Write something"])
        draft.undo()                                     // .clean, with the loaded values
        #expect(draft.state == .clean)
        #expect(draft.text == "Hi")
        draft.text = "Edited"
        let patch = try draft.patchBody()                // {"body":"Edited"}: the changed fields only
        #expect(String(decoding: patch, as: UTF8.self) == #"{"body":"Edited"}"#)
        #expect(post.text == "Hi")
        post = try draft.commit()                        // valid: .clean; `post` changes only here
        #expect(post.text == "Edited")
        #expect(draft.state == .clean)

        post.views = 3
        let error = #expect(throws: ValidationError.self) { try post.validated() }
        #expect(error?["views"] == ["Only published posts have views"])
        #expect(error?[\Readme.Post.publishedAt] == ["Only published posts have views"])
        #expect(String(decoding: try JSONModelEncoder().encode(post, fields: ["text"]), as: UTF8.self) == #"{"body":"Edited"}"#)
    }
}
