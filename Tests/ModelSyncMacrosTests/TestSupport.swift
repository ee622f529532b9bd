import ModelSyncMacros
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// The macros as the `ModelSyncJSON` module declares them, for a struct that conforms to none of
/// `@Model`'s protocols yet (the compiler passes only the missing ones).
let modelSyncMacros: [String: MacroSpec] = [
    "Model": MacroSpec(
        type: ModelMacro.self,
        conformances: [
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("Model"))),
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("KeyedModel"))),
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("JSONModel"))),
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("Decodable"))),
            TypeSyntax(IdentifierTypeSyntax(name: .identifier("Encodable"))),
        ]
    ),
    "PrimaryKey": MacroSpec(type: PrimaryKeyMacro.self),
    "JSON": MacroSpec(type: JSONKeyMacro.self),
    "Transform": MacroSpec(type: TransformMacro.self),
    "Ignored": MacroSpec(type: IgnoredMacro.self),
    "Column": MacroSpec(type: ColumnMacro.self),
]

/// `assertMacroExpansion` reporting failures to Swift Testing, at the spec that failed
/// (a `DiagnosticSpec`, say) or else at the caller.
func assertExpansion(
    _ source: String,
    expandedSource: String,
    diagnostics: [DiagnosticSpec] = [],
    fixedSource: String? = nil,
    macros: [String: MacroSpec] = modelSyncMacros,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) {
    assertMacroExpansion(
        source,
        expandedSource: expandedSource,
        diagnostics: diagnostics,
        macroSpecs: macros,
        fixedSource: fixedSource,
        indentationWidth: .spaces(4),
        failureHandler: { failure in
            Issue.record(
                Comment(rawValue: failure.message),
                sourceLocation: SourceLocation(
                    fileID: failure.location.fileID,
                    filePath: failure.location.filePath,
                    line: failure.location.line,
                    column: failure.location.column
                )
            )
        },
        fileID: fileID,
        filePath: filePath,
        line: line,
        column: column
    )
}

/// The source with every macro expanded, as text, for tests that look for a few lines.
func expanded(_ source: String) -> String {
    let context = BasicMacroExpansionContext()
    return Parser.parse(source: source)
        .expand(macroSpecs: modelSyncMacros, contextGenerator: { _ in context }, indentationWidth: .spaces(4))
        .description
}
