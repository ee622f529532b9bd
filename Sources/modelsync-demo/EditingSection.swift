import Foundation
import ModelSync

extension Article: Validatable {
    static let validator = Validator<Article> {
        Validate(\.title, .required("Give the article a title"), .length(...60))
        Validate(\.tags, .length(...3, "At most three tags"))
        Validate("Only published articles have views", fields: \.views, \.publishedAt) { article in
            article.views == 0 || article.publishedAt != nil
        }
    }
}

/// Editing in a draft: dirty fields, validation, undo, and a PATCH body of the changes only.
enum EditingSection {
    static func run() throws {
        section("Validation and drafts")

        let loaded = Article(id: 1, title: "Hello, ModelSync", text: "One model, three stores.", tags: ["swift"])
        var draft = Draft(editing: loaded)
        step("A draft of a loaded article starts clean", draft.state)

        draft.title = ""
        draft.views = 12
        step("After two edits it is \(draft.state); the changes, from the last clean values",
             draft.changes.map(\.description).joined(separator: "\n"))

        draft.validate()
        step("Validating finds every broken rule, by field (state: \(draft.state))",
             draft.validationError.map { String(describing: $0) } ?? "valid")
        step("The errors of the title field", draft.errors(for: \.title))

        draft.undo()
        step("Undo returns to the last clean values (state: \(draft.state))", "title: \(draft.title), views: \(draft.views)")

        draft.title = "Hello again"
        step("One valid edit; the PATCH body holds only that field", String(decoding: try draft.patchBody(), as: UTF8.self))

        let saved = try draft.commit()
        step("Committing validates and hands back the model (state: \(draft.state))", saved.title)
        step("The loaded value was never touched", loaded.title)
    }
}
