import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: adds one extension with the schema, the JSON codec, the SQL row codec (when the
/// struct declares `SQLModel`) and `Codable` over the JSON codec (when the struct is not
/// `Codable` already), and
/// to the struct itself one static member per property initializer (see `defaultMemberDecls`).
///
/// analysis (ModelAnalysis.swift, PropertyAnalysis.swift) → `ModelDescription`
/// → emitters (Emitters.swift) → source text, parsed into the returned extension.
public struct ModelMacro: ExtensionMacro, MemberMacro {
    /// The emitters lay the code out themselves; BasicFormat would break the
    /// `FieldDefault { ... }` closures over several lines.
    public static var formatMode: FormatMode { .disabled }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        var analyzer = ModelAnalyzer()
        let model = analyzer.analyze(attribute: node, declaration: declaration)
        for diagnostic in analyzer.diagnostics {
            context.diagnose(diagnostic)
        }
        // On errors, emit nothing: generated code built from a broken model would only
        // add follow-on compiler errors to ours.
        guard let model, !analyzer.hasErrors else { return [] }

        var members = [schemaDecl(model), jsonLayoutDecl(model)]
        if let hooks = jsonHooksDecl(model) {
            members.append(hooks)
        }
        members.append(jsonDecoderInitDecl(model))
        members.append(jsonEncodeDecl(model))
        if model.storesInSQLite {
            members.append(sqlTableDecl(model))
            members.append(rowDecoderInitDecl(model))
            members.append(rowBindDecl(model))
            if let relations = relationsDecl(model) {
                members.append(relations)
            }
            if let cache = relationCacheDecl(model) {
                members.append(cache)
            }
        }
        // The compiler asks for `Decodable` / `Encodable` only when the struct does not conform
        // yet: a conformance the user wrote (or had synthesized) is left alone.
        let requested = Set(protocols.map(protocolName))
        if requested.contains("Decodable") {
            members.append(codableDecoderInitDecl(model))
        }
        if requested.contains("Encodable") {
            members.append(codableEncodeDecl(model))
        }

        let source = extensionSource(
            extendedType: type.trimmedDescription,
            conformances: conformances(protocols.filter { model.isKeyed || protocolName($0) != "KeyedModel" }),
            members: members
        )
        guard let extensionDecl = DeclSyntax("\(raw: source)").as(ExtensionDeclSyntax.self) else {
            // Only an emitter bug gets here; say so rather than silently emitting nothing.
            throw MacroExpansionErrorMessage("@Model generated code that does not parse:\n\(source)")
        }
        return [extensionDecl]
    }

    /// The members that hold the property initializers. Diagnostics come from the extension
    /// role alone, so each is reported once.
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        var analyzer = ModelAnalyzer()
        guard let model = analyzer.analyze(attribute: node, declaration: declaration), !analyzer.hasErrors else {
            return []
        }
        let members = [modelIDDecl(model)].compactMap { $0 } + defaultMemberDecls(model) + [relationCacheMemberDecl(model)].compactMap { $0 }
        return members.map { DeclSyntax("\(raw: $0)") }
    }

    /// The compiler passes only the protocols the type does not conform to yet (the
    /// spelling may or may not be module-qualified); qualify them so a user type named
    /// `Model` cannot shadow ours.
    private static func conformances(_ protocols: [TypeSyntax]) -> [String] {
        protocols.map { type in
            let name = protocolName(type)
            return "\(declaringModule[name] ?? "ModelSyncJSON").\(name)"
        }
    }

    /// The module of each protocol among the macro's conformances.
    private static let declaringModule = ["Decodable": "Swift", "Encodable": "Swift", "Model": "ModelSyncCore", "KeyedModel": "ModelSyncCore"]

    /// `Model` for `Model` and `ModelSync.Model`.
    private static func protocolName(_ type: TypeSyntax) -> String {
        type.as(MemberTypeSyntax.self)?.name.text ?? type.trimmedDescription
    }
}
