import SwiftDiagnostics
import SwiftParser
import SwiftSyntax

/// The field attributes `@Model` understands. Adding one: a case here, a marker macro
/// in MarkerMacros.swift, and its handling in `analyzeProperty`.
enum FieldAttributeKind: String, CaseIterable {
    case primaryKey = "PrimaryKey"
    case json = "JSON"
    case transform = "Transform"
    case ignored = "Ignored"
    case column = "Column"
}

/// The attributes on a property declaration, sorted into ours and property wrappers.
struct FieldAttributes {
    /// Our attributes in source order.
    var markers: [(kind: FieldAttributeKind, attribute: AttributeSyntax)] = []
    /// Other custom attributes, which on a stored property are property wrappers.
    var wrappers: [AttributeSyntax] = []

    /// Capitalised built-in attributes, which are not property wrappers.
    private static let builtInAttributes: Set<String> = [
        "MainActor", "NSCopying", "NSManaged", "IBOutlet", "IBInspectable", "GKInspectable",
    ]

    init(_ attributes: AttributeListSyntax) {
        for element in attributes {
            guard case .attribute(let attribute) = element else { continue }
            // `@JSON` and `@ModelSync.JSON` may be ours; `@SwiftUI.State` is not.
            let name: String
            let mayBeOurs: Bool
            if let identifier = attribute.attributeName.as(IdentifierTypeSyntax.self) {
                name = identifier.name.text
                mayBeOurs = true
            } else if let member = attribute.attributeName.as(MemberTypeSyntax.self) {
                name = member.name.text
                mayBeOurs = ourModules.contains(member.baseType.trimmedDescription)
            } else {
                continue
            }
            if mayBeOurs, let kind = FieldAttributeKind(rawValue: name) {
                markers.append((kind, attribute))
            } else if name.first?.isUppercase == true, !Self.builtInAttributes.contains(name) {
                // Built-in attributes are lower-case (`@available`); custom ones are types.
                wrappers.append(attribute)
            }
        }
    }

    func first(_ kind: FieldAttributeKind) -> AttributeSyntax? {
        markers.first { $0.kind == kind }?.attribute
    }
}

func isStatic(_ variable: VariableDeclSyntax) -> Bool {
    variable.modifiers.contains {
        $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class)
    }
}

/// A property with a getter (or `get`/`set`/`init` accessors) has no storage of its own;
/// `willSet`/`didSet` observers do not change that.
func isComputed(_ variable: VariableDeclSyntax) -> Bool {
    variable.bindings.contains { binding in
        switch binding.accessorBlock?.accessors {
        case nil:
            false
        case .getter:
            true
        case .accessors(let accessors):
            accessors.contains {
                $0.accessorSpecifier.tokenKind != .keyword(.willSet)
                    && $0.accessorSpecifier.tokenKind != .keyword(.didSet)
            }
        }
    }
}

extension ModelAnalyzer {
    mutating func analyzeProperty(_ decl: VariableDeclSyntax) {
        let attributes = FieldAttributes(decl.attributes)
        let isStaticProperty = isStatic(decl)
        if isStaticProperty || isComputed(decl) {
            for (kind, attribute) in attributes.markers {
                let message: ModelDiagnostic =
                    switch (kind, isStaticProperty) {
                    case (.ignored, true): .ignoredOnStaticProperty
                    case (.ignored, false): .ignoredOnComputedProperty
                    case (_, true): .attributeOnStaticProperty(attribute: kind.rawValue)
                    case (_, false): .attributeOnComputedProperty(attribute: kind.rawValue)
                    }
                diagnose(
                    message,
                    at: attribute,
                    fixIt: .removeAttribute(kind.rawValue),
                    changes: [.replace(oldNode: Syntax(decl), newNode: Syntax(decl.removing(attribute)))]
                )
            }
            return
        }

        if attributes.first(.ignored) != nil {
            for (index, binding) in decl.bindings.enumerated() where !hasInitialValue(binding, at: index, in: decl) {
                diagnose(.ignoredNeedsDefault(property: propertyName(binding)), at: binding.pattern)
            }
            ignoredNames.formUnion(decl.bindings.map(propertyName))
            return
        }

        // Declaration-wide problems: report once and skip the bindings.
        if let lazy = decl.modifiers.first(where: { $0.name.tokenKind == .keyword(.lazy) }) {
            diagnose(
                .lazyProperty,
                at: lazy,
                fixIt: .addIgnored,
                changes: [.replace(oldNode: Syntax(decl), newNode: Syntax(decl.addingIgnored()))]
            )
            return
        }
        if !attributes.wrappers.isEmpty {
            for wrapper in attributes.wrappers {
                diagnose(.propertyWrapper, at: wrapper)
            }
            return
        }

        let jsonAttribute = attributes.first(.json)
        let jsonKey = jsonAttribute.flatMap { explicitJSONKey(from: $0) }
        let columnAttribute = attributes.first(.column)
        let column = columnAttribute.map { columnArguments(from: $0) } ?? ColumnArguments()
        let primaryKey = attributes.first(.primaryKey)
        let isAutoincrement = primaryKey.map { boolArgument("autoincrement", of: $0) } ?? false
        let indentation = lineIndentation(of: decl)
        let transformAttribute = attributes.first(.transform)
        let transformer = transformAttribute
            .flatMap { firstArgument(of: $0) }
            .map { SourceSnippet($0, declarationIndentation: indentation) }
        let transformsColumn = transformAttribute.map { boolArgument("inDatabase", of: $0) } ?? false
        if transformsColumn, let transformAttribute, let argument = labeledArgument("inDatabase", of: transformAttribute) {
            columnTransformArguments.append(argument)
        }

        for (index, binding) in decl.bindings.enumerated() {
            guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier else {
                diagnose(.unsupportedPattern, at: binding.pattern)
                continue
            }
            let name = unescapedName(identifier)
            guard isStorableType(of: binding, at: index, in: decl, name: name) else { continue }

            let decodes = !decodeExcluded.contains(name)
            let initializer = binding.initializer?.value
            if !decodes, !hasInitialValue(binding, at: index, in: decl) {
                diagnose(.decodeExcludedNeedsDefault(property: name), at: binding.pattern)
            }
            // A `let` with a value can never be assigned again, so the decoder could not set it.
            if decodes, initializer != nil, decl.bindingSpecifier.tokenKind == .keyword(.let) {
                diagnose(
                    .letWithInitialValue(property: name),
                    at: decl.bindingSpecifier,
                    fixIt: .replaceLetWithVar,
                    changes: [
                        .replace(
                            oldNode: Syntax(decl.bindingSpecifier),
                            newNode: Syntax(decl.bindingSpecifier.with(\.tokenKind, .keyword(.var)))
                        )
                    ]
                )
            }
            if let jsonKey, let jsonAttribute {
                checkDuplicate(jsonKey: jsonKey, property: name, attribute: jsonAttribute)
            }
            if let columnName = column.name, let columnAttribute {
                checkDuplicate(column: columnName, property: name, attribute: columnAttribute)
            }
            if isAutoincrement, let type = declaredType(of: binding, at: index, in: decl), !isIntegerType(type) {
                diagnose(.autoincrementNeedsInteger(type: type.trimmedDescription, property: name), at: type)
            }

            fields.append(
                FieldDescription(
                    name: name,
                    identifier: identifier.text,
                    jsonKey: jsonKey,
                    column: column.name,
                    isPrimaryKey: primaryKey != nil,
                    isAutoincrement: isAutoincrement,
                    isUnique: column.isUnique,
                    isIndexed: column.isIndexed,
                    transformer: transformer,
                    transformsColumn: transformsColumn,
                    defaultValue: initializer.map { SourceSnippet($0, declarationIndentation: indentation) },
                    decodes: decodes,
                    encodes: !encodeExcluded.contains(name),
                    isAssignable: initializer == nil || decl.bindingSpecifier.tokenKind != .keyword(.let),
                    idType: idTypeName(declaredType(of: binding, at: index, in: decl), initializer: initializer)
                )
            )
        }
    }

    /// The type an id of this property has: the written type without its optional (a struct's
    /// members see the same names as its properties, so the spelling resolves as written),
    /// else the type of an integer or string literal or of `UUID()`.
    private func idTypeName(_ type: TypeSyntax?, initializer: ExprSyntax?) -> String? {
        if let type {
            if let optional = type.as(OptionalTypeSyntax.self) { return optional.wrappedType.trimmedDescription }
            if let generic = type.as(IdentifierTypeSyntax.self), generic.name.text == "Optional",
                let arguments = generic.genericArgumentClause?.arguments, arguments.count == 1, let wrapped = arguments.first
            {
                return wrapped.argument.trimmedDescription
            }
            return type.trimmedDescription
        }
        guard let initializer else { return nil }
        if initializer.is(IntegerLiteralExprSyntax.self) { return "Swift.Int" }
        if initializer.is(StringLiteralExprSyntax.self) { return "Swift.String" }
        if let call = initializer.as(FunctionCallExprSyntax.self), call.arguments.isEmpty,
            ["UUID", "Foundation.UUID"].contains(call.calledExpression.trimmedDescription)
        {
            return "Foundation.UUID"
        }
        return nil
    }

    private func propertyName(_ binding: PatternBindingSyntax) -> String {
        binding.pattern.as(IdentifierPatternSyntax.self).map { unescapedName($0.identifier) }
            ?? binding.pattern.trimmedDescription
    }

    // MARK: - Types

    /// In `var a, b: Int` the annotation on `b` also types `a`.
    private func declaredType(
        of binding: PatternBindingSyntax,
        at index: Int,
        in decl: VariableDeclSyntax
    ) -> TypeSyntax? {
        if let type = binding.typeAnnotation?.type { return type }
        guard binding.initializer == nil else { return nil }
        return decl.bindings.dropFirst(index + 1).lazy.compactMap { $0.typeAnnotation?.type }.first
    }

    /// Whether the property has a value without the generated init assigning one: an
    /// initializer, or the implicit `nil` of a `var` whose type is written `T?`.
    private func hasInitialValue(_ binding: PatternBindingSyntax, at index: Int, in decl: VariableDeclSyntax) -> Bool {
        if binding.initializer != nil { return true }
        guard decl.bindingSpecifier.tokenKind == .keyword(.var),
            let type = declaredType(of: binding, at: index, in: decl)
        else { return false }
        return type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
    }

    /// Whether the written type can be stored; `false` after a diagnostic. Without an
    /// annotation there is nothing to check: generated code never spells a property's type
    /// (it goes through `\Self.name`, so the compiler takes the type from the declaration,
    /// resolved in the struct's scope), so `var createdAt = Date()` needs no annotation.
    private mutating func isStorableType(
        of binding: PatternBindingSyntax,
        at index: Int,
        in decl: VariableDeclSyntax,
        name: String
    ) -> Bool {
        guard let type = declaredType(of: binding, at: index, in: decl) else { return true }
        if let iuo = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            let optional = OptionalTypeSyntax(
                leadingTrivia: iuo.leadingTrivia,
                wrappedType: iuo.wrappedType,
                questionMark: .postfixQuestionMarkToken(),
                trailingTrivia: iuo.trailingTrivia
            )
            diagnose(
                .implicitlyUnwrappedOptional(
                    type: iuo.trimmedDescription,
                    property: name,
                    replacement: optional.trimmedDescription
                ),
                at: iuo,
                fixIt: .useOptional(from: iuo.trimmedDescription, to: optional.trimmedDescription),
                changes: [.replace(oldNode: Syntax(iuo), newNode: Syntax(optional))]
            )
            return false
        }
        let finder = UnstorableTypeFinder(viewMode: .sourceAccurate)
        finder.walk(type)
        if finder.found {
            diagnose(.unsupportedType(type: type.trimmedDescription, property: name), at: type)
            return false
        }
        return true
    }

    // MARK: - Attribute arguments

    /// `Int`, `Int64`, `UInt8?`, …: the types an autoincrementing key can have.
    private func isIntegerType(_ type: TypeSyntax) -> Bool {
        let base = type.as(OptionalTypeSyntax.self)?.wrappedType ?? type
        let name = base.trimmedDescription
        let unqualified = name.hasPrefix("Swift.") ? String(name.dropFirst(6)) : name
        return ["Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64"].contains(unqualified)
    }

    /// The arguments of `@Column(_:unique:indexed:)`.
    struct ColumnArguments {
        var name: String?
        var isUnique = false
        var isIndexed = false
    }

    private mutating func columnArguments(from attribute: AttributeSyntax) -> ColumnArguments {
        var result = ColumnArguments()
        guard case .argumentList(let arguments) = attribute.arguments else { return result }
        for argument in arguments {
            switch argument.label?.text {
            case nil:
                if argument.expression.is(NilLiteralExprSyntax.self) { continue }
                guard let literal = argument.expression.as(StringLiteralExprSyntax.self),
                    let name = literal.representedLiteralValue
                else {
                    diagnose(.columnNameNotLiteral, at: argument.expression)
                    continue
                }
                if name.isEmpty {
                    diagnose(.emptyColumnName, at: argument.expression)
                } else {
                    result.name = name
                }
            case "unique": result.isUnique = boolLiteral(argument.expression, argument: "unique")
            case "indexed": result.isIndexed = boolLiteral(argument.expression, argument: "indexed")
            default: break
            }
        }
        return result
    }

    /// The value of a labelled `Bool` argument of an attribute; false when absent.
    private mutating func boolArgument(_ label: String, of attribute: AttributeSyntax) -> Bool {
        guard let argument = labeledArgument(label, of: attribute) else { return false }
        return boolLiteral(argument.expression, argument: label)
    }

    private func labeledArgument(_ label: String, of attribute: AttributeSyntax) -> LabeledExprSyntax? {
        guard case .argumentList(let arguments) = attribute.arguments else { return nil }
        return arguments.first { $0.label?.text == label }
    }

    private func firstArgument(of attribute: AttributeSyntax) -> ExprSyntax? {
        guard case .argumentList(let arguments) = attribute.arguments else { return nil }
        return arguments.first?.expression
    }

    /// The key of `@JSON("...")`, or `nil` after a diagnostic.
    private mutating func explicitJSONKey(from attribute: AttributeSyntax) -> String? {
        guard let argument = firstArgument(of: attribute) else { return nil }
        guard let literal = argument.as(StringLiteralExprSyntax.self), let key = literal.representedLiteralValue else {
            diagnose(.jsonKeyNotLiteral, at: argument)
            return nil
        }
        guard !key.isEmpty else {
            diagnose(.emptyJSONKey, at: argument)
            return nil
        }
        return key
    }

    private mutating func checkDuplicate(jsonKey: String, property: String, attribute: AttributeSyntax) {
        checkDuplicate(
            jsonKey, property: property, attribute: attribute, seen: \.explicitJSONKeys,
            message: .duplicateJSONKey(key: jsonKey), note: ModelNote.jsonKeyFirstUsed)
    }

    private mutating func checkDuplicate(column: String, property: String, attribute: AttributeSyntax) {
        checkDuplicate(
            column, property: property, attribute: attribute, seen: \.explicitColumns,
            message: .duplicateColumnName(column: column), note: ModelNote.columnFirstUsed)
    }

    /// Reports the second explicit use of a name (at the attribute's argument), with a note at
    /// the first.
    private mutating func checkDuplicate(
        _ name: String,
        property: String,
        attribute: AttributeSyntax,
        seen: WritableKeyPath<ModelAnalyzer, [String: (property: String, node: Syntax)]>,
        message: ModelDiagnostic,
        note: (String) -> ModelNote
    ) {
        let node = firstArgument(of: attribute).map(Syntax.init) ?? Syntax(attribute)
        if let first = self[keyPath: seen][name] {
            diagnose(message, at: node, notes: [Note(node: first.node, message: note(first.property))])
        } else {
            self[keyPath: seen][name] = (property, node)
        }
    }
}

/// Finds parts of a type that have no JSON or database representation.
private final class UnstorableTypeFinder: SyntaxVisitor {
    private(set) var found = false

    override func visit(_ node: FunctionTypeSyntax) -> SyntaxVisitorContinueKind {
        found = true
        return .skipChildren
    }

    override func visit(_ node: TupleTypeSyntax) -> SyntaxVisitorContinueKind {
        // `(Int)` is just a parenthesised type.
        if node.elements.count != 1 || node.elements.first?.firstName != nil {
            found = true
            return .skipChildren
        }
        return .visitChildren
    }

    override func visit(_ node: SomeOrAnyTypeSyntax) -> SyntaxVisitorContinueKind {
        found = true
        return .skipChildren
    }

    override func visit(_ node: CompositionTypeSyntax) -> SyntaxVisitorContinueKind {
        found = true
        return .skipChildren
    }

    override func visit(_ node: MetatypeTypeSyntax) -> SyntaxVisitorContinueKind {
        found = true
        return .skipChildren
    }

    override func visit(_ node: PackExpansionTypeSyntax) -> SyntaxVisitorContinueKind {
        found = true
        return .skipChildren
    }

    override func visit(_ node: IdentifierTypeSyntax) -> SyntaxVisitorContinueKind {
        if ["Any", "AnyObject", "Void"].contains(node.name.text) {
            found = true
            return .skipChildren
        }
        return .visitChildren
    }
}

// MARK: - Fix-it edits

extension VariableDeclSyntax {
    /// The declaration without `attribute`, keeping the line's indentation.
    func removing(_ attribute: AttributeSyntax) -> VariableDeclSyntax {
        let wasFirst = attributes.first?.as(AttributeSyntax.self)?.id == attribute.id
        var result = self
        result.attributes = attributes.filter { $0.as(AttributeSyntax.self)?.id != attribute.id }
        if wasFirst {
            result.leadingTrivia = attribute.leadingTrivia
        }
        return result
    }

    /// The declaration with `@Ignored ` in front of its modifiers.
    func addingIgnored() -> VariableDeclSyntax {
        let indentation = leadingTrivia
        var result = self
        result.leadingTrivia = []
        let ignored = AttributeSyntax(
            attributeName: IdentifierTypeSyntax(name: .identifier("Ignored")),
            trailingTrivia: .space
        )
        result.attributes.append(.attribute(ignored))
        result.leadingTrivia = indentation
        return result
    }
}
