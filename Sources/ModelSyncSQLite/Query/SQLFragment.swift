import ModelSyncCore

/// A piece of SQL text with the values bound to its `?` parameters, in order.
///
/// It is both what a query renders to (``SQLQuery/rendered()``) and how raw SQL enters the
/// typed API where it runs out (``SQLExpression/sql(_:_:)``, ``SQLQuery/where(sql:_:)``).
/// Write plain `?` parameters in raw fragments, never numbered ones (`?1`): the fragment is
/// spliced into a larger statement whose parameters are counted in order.
public struct SQLFragment: Sendable, Hashable, CustomStringConvertible {
    /// The SQL text.
    public var sql: String
    /// The values of its parameters, in order.
    public var arguments: [SQLValue]

    /// Creates a fragment; `arguments` are bound to the `?` in `sql`, in order.
    public init(_ sql: String, _ arguments: [SQLValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// The SQL, then its arguments after `--`.
    public var description: String {
        arguments.isEmpty ? sql : "\(sql) -- \(arguments.map(\.description).joined(separator: ", "))"
    }
}
