import SwiftSyntax
import SwiftSyntaxMacros

// The field attributes only carry information for `@Model`, which reads them from the
// struct's syntax. They are macros (expanding to nothing) so that their names resolve
// and the compiler type-checks their arguments; misuse is diagnosed by `@Model`, which
// sees the whole struct.

/// `@PrimaryKey` / `@PrimaryKey(autoincrement: true)`: marks a field as (part of) the primary key.
public struct PrimaryKeyMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@JSON("key")`: the JSON key (a dotted path reaches into nested objects).
public struct JSONKeyMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Transform(transformer)`: converts the field's value to and from JSON.
public struct TransformMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Ignored`: the property is not part of the model (needs a default value).
public struct IgnoredMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `@Column("name", unique:, indexed:)`: the SQL column's name and constraints.
public struct ColumnMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
