import SwiftDiagnostics
import SwiftParser
import SwiftSyntax

/// Reads a `@Model` struct and its arguments into a `ModelDescription`, collecting
/// diagnostics on the way. Analysis continues after an error so that users see all
/// problems at once; the macro emits nothing if any error was found.
struct ModelAnalyzer {
    private(set) var diagnostics: [Diagnostic] = []

    var hasErrors: Bool {
        diagnostics.contains { $0.diagMessage.severity == .error }
    }

    // State shared with the property analysis (see PropertyAnalysis.swift).
    var decodeExcluded: Set<String> = []
    var encodeExcluded: Set<String> = []
    var fields: [FieldDescription] = []
    var ignoredNames: Set<String> = []
    /// Explicit `@JSON` keys seen so far, to report duplicates at the second use.
    var explicitJSONKeys: [String: (property: String, node: Syntax)] = [:]

    /// Returns `nil` if the declaration is not a struct; the description may still be
    /// incomplete when `hasErrors` is true.
    mutating func analyze(attribute: AttributeSyntax, declaration: some DeclGroupSyntax) -> ModelDescription? {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            diagnose(.notAStruct, at: attribute)
            return nil
        }
        if let generics = structDecl.genericParameterClause {
            diagnose(.genericType, at: generics)
        }
        let arguments = parseArguments(of: attribute)
        decodeExcluded = Set(arguments.decodeExcluding.map(\.name))
        encodeExcluded = Set(arguments.encodeExcluding.map(\.name))

        var hooks: Set<JSONHook> = []
        for member in structDecl.memberBlock.members {
            if let variable = member.decl.as(VariableDeclSyntax.self) {
                analyzeProperty(variable)
            } else if let function = member.decl.as(FunctionDeclSyntax.self), let hook = detectHook(function) {
                hooks.insert(hook)
            } else if let ifConfig = member.decl.as(IfConfigDeclSyntax.self), containsField(ifConfig) {
                diagnose(.propertyInIfConfig, at: ifConfig.clauses.first?.poundKeyword ?? ifConfig.poundEndif)
            }
        }

        let modelName = unescapedName(structDecl.name)
        checkExcludedNames(arguments.decodeExcluding, argument: "decodeExcluding", modelName: modelName)
        checkExcludedNames(arguments.encodeExcluding, argument: "encodeExcluding", modelName: modelName)

        return ModelDescription(
            name: modelName,
            accessModifier: accessModifier(of: structDecl),
            jsonKeys: arguments.jsonKeys?.trimmedDescription,
            dates: arguments.dates?.trimmedDescription,
            fields: fields,
            hooks: JSONHook.allCases.filter(hooks.contains)
        )
    }

    mutating func diagnose(
        _ message: ModelDiagnostic,
        at node: some SyntaxProtocol,
        notes: [Note] = [],
        fixIt: ModelFixIt? = nil,
        changes: [FixIt.Change] = []
    ) {
        let fixIts = fixIt.map { [FixIt(message: $0, changes: changes)] } ?? []
        diagnostics.append(Diagnostic(node: node, message: message, notes: notes, fixIts: fixIts))
    }

    // MARK: - @Model arguments

    /// The arguments of `@Model(...)`; all are optional.
    private struct ModelArguments {
        var jsonKeys: ExprSyntax?
        var dates: ExprSyntax?
        var decodeExcluding: [ExcludedName] = []
        var encodeExcluding: [ExcludedName] = []
    }

    /// A property name listed in `decodeExcluding:` or `encodeExcluding:`.
    private struct ExcludedName {
        var name: String
        var literal: StringLiteralExprSyntax
    }

    private mutating func parseArguments(of attribute: AttributeSyntax) -> ModelArguments {
        var result = ModelArguments()
        guard case .argumentList(let list) = attribute.arguments else { return result }
        for argument in list {
            // The compiler has already checked labels and types against the declaration.
            switch argument.label?.text {
            case "jsonKeys":
                result.jsonKeys = argument.expression
            case "dates":
                // `dates: nil` means the same as leaving it out.
                if !argument.expression.is(NilLiteralExprSyntax.self) {
                    result.dates = argument.expression
                }
            case "decodeExcluding":
                result.decodeExcluding = excludedNames(argument.expression, argument: "decodeExcluding")
            case "encodeExcluding":
                result.encodeExcluding = excludedNames(argument.expression, argument: "encodeExcluding")
            default:
                break
            }
        }
        return result
    }

    /// The names must be visible to the macro, so only literals are accepted.
    private mutating func excludedNames(_ expression: ExprSyntax, argument: String) -> [ExcludedName] {
        guard let array = expression.as(ArrayExprSyntax.self) else {
            diagnose(.excludedListNotLiteral(argument: argument), at: expression)
            return []
        }
        var names: [ExcludedName] = []
        for element in array.elements {
            guard let literal = element.expression.as(StringLiteralExprSyntax.self),
                let name = literal.representedLiteralValue
            else {
                diagnose(.excludedListNotLiteral(argument: argument), at: element.expression)
                continue
            }
            names.append(ExcludedName(name: name, literal: literal))
        }
        return names
    }

    private mutating func checkExcludedNames(_ names: [ExcludedName], argument: String, modelName: String) {
        let fieldNames = Set(fields.map(\.name))
        for excluded in names where !fieldNames.contains(excluded.name) {
            if ignoredNames.contains(excluded.name) {
                diagnose(.ignoredExcludedName(name: excluded.name, argument: argument), at: excluded.literal)
            } else {
                diagnose(.unknownExcludedName(name: excluded.name, model: modelName), at: excluded.literal)
            }
        }
    }

    // MARK: - Struct members

    private func accessModifier(of structDecl: StructDeclSyntax) -> String? {
        for modifier in structDecl.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public"
            case .keyword(.package): return "package"
            default: continue
            }
        }
        return nil
    }

    /// A hook is recognised by name; one with the wrong static-ness would silently never
    /// be called, so it gets a warning.
    private mutating func detectHook(_ function: FunctionDeclSyntax) -> JSONHook? {
        guard let hook = JSONHook(rawValue: function.name.text) else { return nil }
        let isStatic = function.modifiers.contains {
            $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class)
        }
        guard isStatic == hook.isStatic else {
            let message: ModelDiagnostic =
                hook.isStatic
                ? .hookShouldBeStatic(hook: hook.rawValue) : .hookShouldNotBeStatic(hook: hook.rawValue)
            diagnose(message, at: function.name)
            return nil
        }
        return hook
    }

    /// Whether a `#if` block declares something that would have to be a field: its
    /// presence depends on build settings the macro cannot see.
    private func containsField(_ ifConfig: IfConfigDeclSyntax) -> Bool {
        ifConfig.clauses.contains { clause in
            guard case .decls(let members) = clause.elements else { return false }
            return members.contains { member in
                if let nested = member.decl.as(IfConfigDeclSyntax.self) {
                    return containsField(nested)
                }
                guard let variable = member.decl.as(VariableDeclSyntax.self) else { return false }
                return !isStatic(variable) && !isComputed(variable)
                    && FieldAttributes(variable.attributes).first(.ignored) == nil
            }
        }
    }
}
