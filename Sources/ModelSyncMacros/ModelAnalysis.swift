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
    /// Explicit `@Column` names seen so far, to report duplicates at the second use.
    var explicitColumns: [String: (property: String, node: Syntax)] = [:]
    /// The `inDatabase: true` arguments of `@Transform`, for the warning on a model without
    /// `SQLModel`.
    var columnTransformArguments: [LabeledExprSyntax] = []

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
        let storesInSQLite = declaresSQLModel(structDecl)
        let relations = storesInSQLite ? declaredRelations(structDecl) : []
        checkSQLOptions(arguments, attribute: attribute, modelName: modelName, storesInSQLite: storesInSQLite)
        let declaresModelID = declaresMember(named: "ModelID", in: structDecl)
        let idType = modelIDType(declaresModelID: declaresModelID, at: attribute)

        return ModelDescription(
            name: modelName,
            accessModifier: accessModifier(of: structDecl),
            jsonKeys: arguments.jsonKeys?.trimmedDescription,
            dates: arguments.dates?.trimmedDescription,
            table: arguments.table,
            columns: arguments.columns?.trimmedDescription,
            withoutRowID: arguments.withoutRowID,
            indexes: arguments.indexes.map { $0.map(\.name) },
            unique: arguments.unique.map { $0.map(\.name) },
            fields: fields,
            hooks: JSONHook.allCases.filter(hooks.contains),
            storesInSQLite: storesInSQLite,
            relations: relations,
            cachesRelations: storesInSQLite && relations != [] && !declaresCoding(structDecl),
            modelIDType: declaresModelID ? nil : idType,
            isKeyed: idType != nil || (declaresModelID && !keyFields.isEmpty)
        )
    }

    /// The fields of the primary key, as the schema decides them: the marked ones, else `id`.
    private var keyFields: [FieldDescription] {
        let marked = fields.filter(\.isPrimaryKey)
        return marked.isEmpty ? fields.filter { $0.name == "id" } : marked
    }

    /// The id type of a model with a primary key; a warning when one key field's type cannot
    /// be read (the struct may still declare `ModelID` itself).
    private mutating func modelIDType(declaresModelID: Bool, at attribute: AttributeSyntax) -> String? {
        let keys = keyFields
        guard keys.count == 1 else { return keys.isEmpty ? nil : "ModelSyncCore.PrimaryKey" }
        if keys[0].idType == nil, !declaresModelID {
            diagnose(.untypedPrimaryKey(property: keys[0].name), at: attribute)
        }
        return keys[0].idType
    }

    /// Whether the struct declares a type or type alias named `name`.
    private func declaresMember(named name: String, in structDecl: StructDeclSyntax) -> Bool {
        structDecl.memberBlock.members.contains { member in
            let decl = member.decl
            let declared = decl.as(TypeAliasDeclSyntax.self)?.name ?? decl.as(StructDeclSyntax.self)?.name
                ?? decl.as(EnumDeclSyntax.self)?.name ?? decl.as(ClassDeclSyntax.self)?.name
            return declared.map(unescapedName) == name
        }
    }

    /// Whether the inheritance clause names `Codable`, `Decodable` or `Encodable`.
    private func declaresCoding(_ structDecl: StructDeclSyntax) -> Bool {
        inheritedNames(structDecl).contains { ["Codable", "Decodable", "Encodable"].contains($0.name) }
    }

    /// The protocols the struct's inheritance clause names (the parts of an `A & B` too), each
    /// with the module that qualifies it, if any.
    private func inheritedNames(_ structDecl: StructDeclSyntax) -> [(name: String, module: String?)] {
        let types = structDecl.inheritanceClause?.inheritedTypes.flatMap { inherited in
            inherited.type.as(CompositionTypeSyntax.self)?.elements.map(\.type) ?? [inherited.type]
        } ?? []
        return types.compactMap { type in
            if let identifier = type.as(IdentifierTypeSyntax.self) { return (identifier.name.text, nil) }
            if let member = type.as(MemberTypeSyntax.self) { return (member.name.text, member.baseType.trimmedDescription) }
            return nil
        }
    }

    /// The functions of ModelSyncSQLite that declare a relation.
    static let relationBuilders: Set<String> = [
        "belongsTo", "hasMany", "hasOne", "belongsToMany", "morphTo", "morphMany", "morphOne", "morphToMany", "morphedByMany",
    ]

    /// The static properties initialised by a relation builder, or nil when the struct declares
    /// `relations` itself (its list is then the one that counts).
    private func declaredRelations(_ structDecl: StructDeclSyntax) -> [String]? {
        var names: [String] = []
        for member in structDecl.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self), isStatic(variable) else { continue }
            for binding in variable.bindings {
                guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
                if pattern.identifier.text == "relations" { return nil }
                if let call = binding.initializer?.value.as(FunctionCallExprSyntax.self), Self.isRelationBuilder(call.calledExpression) {
                    names.append(pattern.identifier.text)
                }
            }
        }
        return names
    }

    /// `belongsTo(…)` or `Self.belongsTo(…)`.
    private static func isRelationBuilder(_ callee: ExprSyntax) -> Bool {
        if let reference = callee.as(DeclReferenceExprSyntax.self) {
            return relationBuilders.contains(reference.baseName.text)
        }
        if let access = callee.as(MemberAccessExprSyntax.self), access.base?.trimmedDescription == "Self" {
            return relationBuilders.contains(access.declName.baseName.text)
        }
        return false
    }

    /// The protocols whose conformance asks for the SQL row codec: ``SQLModel`` and the
    /// library's protocols that refine it. The macro cannot add that conformance itself (its
    /// module, ModelSyncJSON, does not know SQLite), so it reads the struct's declaration.
    static let sqlProtocols: Set<String> = ["SQLModel", "TimestampedModel", "SoftDeletableModel", "SyncedModel"]

    /// Whether the struct's inheritance clause names one of `sqlProtocols` (bare, or qualified
    /// by a module of ours).
    private func declaresSQLModel(_ structDecl: StructDeclSyntax) -> Bool {
        inheritedNames(structDecl).contains { inherited in
            Self.sqlProtocols.contains(inherited.name) && inherited.module.map(ourModules.contains) ?? true
        }
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
        var table: String?
        var columns: ExprSyntax?
        var withoutRowID = false
        var withoutRowIDArgument: ExprSyntax?
        var indexes: [[ExcludedName]] = []
        var unique: [[ExcludedName]] = []
        /// The SQLite-only arguments given, for the warning on a model without `SQLModel`.
        var sqlOnlyArguments: [(label: String, node: LabeledExprSyntax)] = []
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
            if let label = argument.label?.text, Self.sqlOnlyLabels.contains(label) {
                result.sqlOnlyArguments.append((label, argument))
            }
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
            case "table":
                result.table = tableName(argument.expression)
            case "columns":
                result.columns = argument.expression
            case "withoutRowID":
                result.withoutRowID = boolLiteral(argument.expression, argument: "withoutRowID")
                result.withoutRowIDArgument = argument.expression
            case "indexes", "unique":
                let label = argument.label?.text ?? ""
                let groups = nameGroups(argument.expression, argument: label)
                if label == "indexes" { result.indexes = groups } else { result.unique = groups }
            default:
                break
            }
        }
        return result
    }

    /// The arguments that describe the SQLite table only.
    private static let sqlOnlyLabels: Set<String> = ["table", "columns", "withoutRowID", "indexes", "unique"]

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

    /// `table: nil` means the same as leaving it out.
    private mutating func tableName(_ expression: ExprSyntax) -> String? {
        if expression.is(NilLiteralExprSyntax.self) { return nil }
        guard let literal = expression.as(StringLiteralExprSyntax.self), let name = literal.representedLiteralValue else {
            diagnose(.tableNameNotLiteral, at: expression)
            return nil
        }
        guard !name.isEmpty else {
            diagnose(.emptyTableName, at: expression)
            return nil
        }
        return name
    }

    /// `true` or `false`, written as a literal so the macro can see it; false after a diagnostic.
    mutating func boolLiteral(_ expression: ExprSyntax, argument: String) -> Bool {
        guard let literal = expression.as(BooleanLiteralExprSyntax.self) else {
            diagnose(.boolArgumentNotLiteral(argument: argument), at: expression)
            return false
        }
        return literal.literal.tokenKind == .keyword(.true)
    }

    /// `[["a", "b"], ["c"]]` for `indexes:` and `unique:`.
    private mutating func nameGroups(_ expression: ExprSyntax, argument: String) -> [[ExcludedName]] {
        guard let array = expression.as(ArrayExprSyntax.self) else {
            diagnose(.nameGroupsNotLiteral(argument: argument), at: expression)
            return []
        }
        return array.elements.compactMap { element in
            guard let group = element.expression.as(ArrayExprSyntax.self) else {
                diagnose(.nameGroupsNotLiteral(argument: argument), at: element.expression)
                return nil
            }
            return group.elements.compactMap { name in
                guard let literal = name.expression.as(StringLiteralExprSyntax.self),
                    let value = literal.representedLiteralValue
                else {
                    diagnose(.nameGroupsNotLiteral(argument: argument), at: name.expression)
                    return nil
                }
                return ExcludedName(name: value, literal: literal)
            }
        }
    }

    /// Index and unique groups name stored properties; a `withoutRowID` table has a primary
    /// key; `autoincrement` marks the only key column of a rowid table.
    private mutating func checkSQLOptions(
        _ arguments: ModelArguments,
        attribute: AttributeSyntax,
        modelName: String,
        storesInSQLite: Bool
    ) {
        if !storesInSQLite {
            // Probably a forgotten conformance: say where the option would count.
            for argument in arguments.sqlOnlyArguments {
                diagnose(.sqlOptionWithoutSQLModel(argument: argument.label, model: modelName), at: argument.node)
            }
            for argument in columnTransformArguments {
                diagnose(.sqlOptionWithoutSQLModel(argument: "inDatabase", model: modelName), at: argument)
            }
        }
        let fieldNames = Set(fields.map(\.name))
        for (label, groups) in [("indexes", arguments.indexes), ("unique", arguments.unique)] {
            for name in groups.joined() where !fieldNames.contains(name.name) {
                diagnose(.unknownColumnProperty(name: name.name, argument: label, model: modelName), at: name.literal)
            }
        }
        let hasPrimaryKey = fields.contains(where: \.isPrimaryKey) || fieldNames.contains("id")
        if arguments.withoutRowID, !hasPrimaryKey, let node = arguments.withoutRowIDArgument {
            diagnose(.withoutRowIDNeedsPrimaryKey, at: node)
        }
        if fields.contains(where: \.isAutoincrement) {
            if fields.filter(\.isPrimaryKey).count > 1 {
                diagnose(.autoincrementNeedsSingleKey, at: attribute)
            } else if arguments.withoutRowID, let node = arguments.withoutRowIDArgument {
                diagnose(.autoincrementWithoutRowID, at: node)
            }
        }
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
