import ModelSyncMacros
import SwiftDiagnostics
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import Testing

/// `@Model` types a model's ids by its key: `typealias ModelID` inside the struct and the
/// `KeyedModel` conformance on the extension.
@Suite("@Model: ModelID")
struct ModelIDExpansionTests {
    /// The source after expanding the library's macros, and the diagnostics' ids.
    private func expanded(_ members: String, in declaration: String = "struct A") -> (text: String, diagnostics: [MessageID]) {
        let context = BasicMacroExpansionContext()
        let text = Parser.parse(source: "@Model\n\(declaration) {\n\(members)\n}\n")
            .expand(macroSpecs: modelSyncMacros, contextGenerator: { _ in context }, indentationWidth: .spaces(4))
            .description
        return (text, context.diagnostics.map(\.diagMessage.diagnosticID))
    }

    @Test(arguments: [
        ("var id: Int", "Int"),
        ("var id: Int?", "Int"),
        ("var id: Optional<Int64>", "Int64"),
        ("var id: Swift.String", "Swift.String"),
        ("var id = UUID()", "Foundation.UUID"),
        ("var id = 0", "Swift.Int"),
        (#"var id = "new""#, "Swift.String"),
        ("var id: Catalog.Code", "Catalog.Code"),
        ("@PrimaryKey var code: UUID\nvar id: Int", "UUID"),
        ("@PrimaryKey var a: Int\n@PrimaryKey var b: String", "ModelSyncCore.PrimaryKey"),
    ])
    func theKeysTypeIsTheModelID(members: String, modelID: String) {
        let (text, diagnostics) = expanded(members)
        #expect(text.contains("    typealias ModelID = \(modelID)\n"), "\(text)")
        #expect(text.contains("extension A: ModelSyncCore.Model, ModelSyncCore.KeyedModel, "))
        #expect(diagnostics.isEmpty)
    }

    @Test func aPublicModelsIDIsPublic() {
        let (text, _) = expanded("public var id: Int", in: "public struct A")
        #expect(text.contains("    public typealias ModelID = Int\n"), "\(text)")
    }

    @Test func aModelWithoutKeyIsNotKeyed() {
        let (text, diagnostics) = expanded("var name: String")
        #expect(!text.contains("ModelID"))
        #expect(!text.contains("KeyedModel"))
        #expect(diagnostics.isEmpty)
    }

    @Test func aKeyOfUnwrittenTypeWarnsAndIsNotKeyed() {
        let (text, diagnostics) = expanded("var id = makeID()")
        #expect(!text.contains("ModelID"))
        #expect(!text.contains("KeyedModel"))
        #expect(diagnostics == [MessageID(domain: "ModelSyncMacros", id: "untypedPrimaryKey")])
        // The JSON codec is generated all the same.
        #expect(text.contains("init(json decoder: inout ModelSyncJSON.JSONObjectDecoder)"))
    }

    @Test func aStructsOwnModelIDIsKept() {
        let (text, diagnostics) = expanded("typealias ModelID = Int\nvar id = makeID()")
        #expect(text.ranges(of: "typealias ModelID").count == 1, "\(text)")
        #expect(text.contains("extension A: ModelSyncCore.Model, ModelSyncCore.KeyedModel, "))
        #expect(diagnostics.isEmpty)
    }
}
