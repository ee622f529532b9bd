import Foundation
import ModelSync

enum Role: String, ModelEnum {
    case admin, member
}

@Model(jsonKeys: .snakeCase)
struct Author: Equatable {
    var id: Int
    var displayName: String
    var role: Role = .member
}

@Model
struct Article: Equatable {
    @PrimaryKey var id: Int?
    var title: String
    @JSON("body") var text: String
    @JSON("stats.views") var views: Int = 0
    @Transform(.millisecondsSince1970) var publishedAt: Date?
    var tags: [String] = []
    var author: Author?
    @Ignored var isSelected = false
}

/// JSON ⇄ model: keys, transformers, lenient coercion with its report, envelopes and errors.
enum JSONMappingSection {
    static func run() throws {
        section("JSON mapping")

        step("The schema @Model generated for Article", Article.schema)

        let payload = """
            {"data": {
              "id": 1, "title": "Hello, ModelSync", "body": "One model, three stores.",
              "stats": {"views": "1024"}, "publishedAt": 1763721257201, "tags": "swift",
              "author": {"id": "7", "display_name": "Ada", "role": "admin"}, "unknown": [1, 2]
            }}
            """
        step("An API response, wrapped in a \"data\" envelope, with drift in it", payload)

        let (article, report) = try JSONModelDecoder().decodeWithReport(Article.self, from: payload, at: "data")
        step("Decoded leniently (the default)", article)
        step("The decode report: every coercion and default, by path", report)

        let encoder = JSONModelEncoder(options: JSONEncodingOptions(prettyPrinted: true))
        step("Encoded back: declaration order, explicit keys, nested keys rebuilt, ms timestamps",
             try encoder.encodeToString(article))

        do {
            _ = try JSONModelDecoder(mode: .strict).decode(Article.self, from: payload, at: "data")
        } catch let error as JSONError {
            step("Strict mode refuses the same drift, naming the path", error)
        }

        let broken = #"{"data": [{"id": 1, "title": "a", "body": "b"}, {"id": 2, "title": "b", "body": "c", "author": {"id": {}, "display_name": "x"}}]}"#
        do {
            _ = try JSONModelDecoder().decode([Article].self, from: broken, at: "data")
        } catch let error as JSONError {
            step("A wrong shape deep inside a list", error)
        }

        do {
            _ = try JSONModelDecoder().decode(Article.self, from: #"{"id": 1, "title": "unterminated}"#)
        } catch let error as JSONError {
            step("Malformed JSON", error)
        }
    }
}
