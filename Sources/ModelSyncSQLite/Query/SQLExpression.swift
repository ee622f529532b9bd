import ModelSyncCore

/// A SQL expression over the columns of `Root`'s table whose result has the Swift type
/// `Value`: a column (from a key path), a bound value, an operation on others, an aggregate,
/// or raw SQL.
///
/// The type is what keeps queries honest: `\.userId == 1` compiles only when `userId` is an
/// integer, and a query selecting `\.title` yields `String`s. Build expressions with the
/// operators on key paths (`\.views > 10`), or inside a closure that hands you the columns
/// (`Post.where { $0.title.hasPrefix("a") && $0.views > 10 }`).
public struct SQLExpression<Root: SQLModel, Value>: Sendable {
    @usableFromInline let node: SQLNode
    /// Set when the expression is a column that holds its transformer's representation
    /// (`@Transform(…, inDatabase: true)`): operands bind through the transformer.
    @usableFromInline let transformed: TransformedColumn?

    @usableFromInline
    init(node: SQLNode, transformed: TransformedColumn? = nil) {
        self.node = node
        self.transformed = transformed
    }

    /// The column of `keyPath`. A key path that names no column (an `@Ignored` property)
    /// makes the query fail with ``SQLiteError/Kind/unknownColumn(table:column:)``.
    @inlinable
    public init(_ keyPath: KeyPath<Root, Value>) {
        // Inlinable (see the comparison operators): one key-path lookup, not generic.
        let column = Root.sqlTable.queryColumn(keyPath)
        self.init(node: column.node, transformed: column.transformed)
    }

    /// The column of `keyPath` in `table`, found with one key-path lookup.
    private init(_ keyPath: AnyKeyPath, of table: SQLTable) {
        let column = table.queryColumn(keyPath)
        self.init(node: column.node, transformed: column.transformed)
    }

    /// The node, for an operation that computes on the column's values (arithmetic, patterns,
    /// aggregates); a failure when the column holds its transformer's representation, which
    /// the operation would take for the property's values.
    func plainNode(_ operation: @autoclosure () -> String) -> SQLNode {
        transformed?.failure(operation()) ?? node
    }

    /// The other side of a comparison with this expression: its node, or a failure when the
    /// two store values differently (one holds a transformer's representation, the other not).
    func comparableNode(_ other: SQLNode, transformed otherTransformed: TransformedColumn?) -> SQLNode {
        switch (transformed, otherTransformed) {
        case (nil, nil): return other
        case (let column?, _):
            return column.storesAlike(otherTransformed) ? other : column.failure("comparing it with an expression stored another way, or assigning one to it,")
        case (nil, let column?):
            return column.failure("comparing it with an expression stored another way, or assigning one to it,")
        }
    }

    /// Raw SQL with its own bound arguments, typed as `Value` (the type is yours to get
    /// right): `SQLExpression<Post, Int>.sql("length(\"title\") + ?", [1])`.
    public static func sql(_ sql: String, _ arguments: [SQLValue] = []) -> Self {
        Self(node: .raw(SQLFragment(sql, arguments)))
    }

    /// The column of another model's table, for correlated subqueries:
    /// `Comment.where { $0.postId == .outer(\Post.id) }` inside a `Post` query.
    public static func outer<Other: SQLModel>(_ keyPath: KeyPath<Other, Value>) -> Self {
        Self(keyPath, of: Other.sqlTable)
    }

    /// The column of another model's table whose type is the optional of this one (an
    /// optional primary key compared with a foreign key).
    public static func outer<Other: SQLModel>(_ keyPath: KeyPath<Other, Value?>) -> Self {
        Self(keyPath, of: Other.sqlTable)
    }

    /// The column of another model's table whose type is the wrapped type of this optional
    /// one (a foreign key compared with an optional primary key).
    public static func outer<Other: SQLModel, Wrapped>(_ keyPath: KeyPath<Other, Wrapped>) -> Self where Value == Wrapped? {
        Self(keyPath, of: Other.sqlTable)
    }

    /// `x IS NULL`.
    public var isNull: SQLCondition<Root> { SQLCondition(node: .postfix(node, "IS NULL")) }
    /// `x IS NOT NULL`.
    public var isNotNull: SQLCondition<Root> { SQLCondition(node: .postfix(node, "IS NOT NULL")) }

    /// `x COLLATE name`: compare and sort with a collation, e.g. case-insensitively with
    /// `.nocase` (`$0.title.collating(.nocase) == "hello"`).
    public func collating(_ collation: SQLCollation) -> Self {
        Self(node: .postfix(node, "COLLATE " + collation.sql), transformed: transformed)
    }

    /// Ascending order on this expression.
    public var asc: SQLOrdering<Root> { asc(nulls: nil) }
    /// Descending order on this expression.
    public var desc: SQLOrdering<Root> { desc(nulls: nil) }

    /// Ascending order, with `NULL`s first or last (SQLite's default: first).
    public func asc(nulls: SQLNullsOrder?) -> SQLOrdering<Root> {
        SQLOrdering(term: SQLOrderingTerm(node: node, descending: false, nulls: nulls))
    }

    /// Descending order, with `NULL`s first or last (SQLite's default: last).
    public func desc(nulls: SQLNullsOrder?) -> SQLOrdering<Root> {
        SQLOrdering(term: SQLOrderingTerm(node: node, descending: true, nulls: nulls))
    }
}

/// A boolean expression: what `where` and `having` take. `&&`, `||` and `!` combine
/// conditions; nested groups get the parentheses they need.
public typealias SQLCondition<Root: SQLModel> = SQLExpression<Root, Bool>

extension SQLExpression where Value: SQLColumnEncodable {
    /// A bound value as an expression.
    public static func value(_ value: Value) -> Self {
        Self(node: .bound(value))
    }
}

extension SQLExpression where Value == Bool {
    /// The node as a condition: a `Bool` column that holds its transformer's representation
    /// is true where it stores what `true` becomes.
    @inlinable
    var conditionNode: SQLNode {
        guard let transformed else { return node }
        return transformed.condition(node)
    }

    /// A condition that every row meets (`1`).
    public static var always: Self { Self(node: .chain("AND", [])) }
    /// A condition that no row meets (`0`).
    public static var never: Self { Self(node: .chain("OR", [])) }

    /// All of `conditions` (`a AND b AND …`); true when empty.
    public static func all(_ conditions: [Self]) -> Self {
        Self(node: conditions.reduce(SQLNode.chain("AND", [])) { .chain("AND", $0, $1.conditionNode) })
    }

    /// Any of `conditions` (`a OR b OR …`); false when empty.
    public static func any(_ conditions: [Self]) -> Self {
        Self(node: conditions.reduce(SQLNode.chain("OR", [])) { .chain("OR", $0, $1.conditionNode) })
    }

    /// `EXISTS (subquery)`: whether the subquery has a row. Correlate it with the outer
    /// query through ``SQLExpression/outer(_:)-(KeyPath<Other,Value>)``.
    public static func exists<Other, Element>(_ subquery: SQLQuery<Other, Element>) -> Self {
        Self(node: .exists(subquery.statement))
    }
}

/// A collation: how text is compared and sorted.
public struct SQLCollation: Sendable, Hashable {
    let sql: String

    /// A collation registered on the connection, by name.
    public init(_ name: String) {
        self.sql = quoteIdentifier(name)
    }

    private init(builtIn name: String) {
        self.sql = name
    }

    /// Byte by byte (SQLite's default).
    public static let binary = SQLCollation(builtIn: "BINARY")
    /// Ignoring the case of ASCII letters.
    public static let nocase = SQLCollation(builtIn: "NOCASE")
    /// Ignoring trailing spaces.
    public static let rtrim = SQLCollation(builtIn: "RTRIM")
}

/// Where `NULL`s go in an ordering.
public enum SQLNullsOrder: Sendable, Hashable {
    /// Before every value.
    case first
    /// After every value.
    case last
}

/// One term of an `ORDER BY`: an expression and a direction. Make one from a key path
/// (`.desc(\.publishedAt, nulls: .last)`) or from an expression (`$0.title.collating(.nocase).asc`).
public struct SQLOrdering<Root: SQLModel>: Sendable {
    let term: SQLOrderingTerm

    init(term: SQLOrderingTerm) {
        self.term = term
    }

    /// Ascending order on the column of `keyPath`.
    public static func asc<V>(_ keyPath: KeyPath<Root, V>, nulls: SQLNullsOrder? = nil) -> Self {
        SQLExpression(keyPath).asc(nulls: nulls)
    }

    /// Descending order on the column of `keyPath`.
    public static func desc<V>(_ keyPath: KeyPath<Root, V>, nulls: SQLNullsOrder? = nil) -> Self {
        SQLExpression(keyPath).desc(nulls: nulls)
    }

    /// Raw SQL after `ORDER BY` (one or more terms), with its own arguments.
    public static func sql(_ sql: String, _ arguments: [SQLValue] = []) -> Self {
        Self(term: SQLOrderingTerm(node: .raw(SQLFragment(sql, arguments)), descending: false, nulls: nil))
    }

    /// The ordering of a key path: its column ascending.
    init(_ keyPath: AnyKeyPath, of table: SQLTable) {
        self.term = SQLOrderingTerm(node: table.columnNode(keyPath), descending: false, nulls: nil)
    }
}

/// The columns of `Root`, handed to the closures of the query builder:
/// `Post.where { $0.title.hasPrefix("Swift") }`. Each property of the model is an
/// ``SQLExpression`` of its column.
@dynamicMemberLookup
public struct SQLQueryColumns<Root: SQLModel>: Sendable {
    init() {}

    /// The column of the model's property.
    public subscript<V>(dynamicMember keyPath: KeyPath<Root, V>) -> SQLExpression<Root, V> {
        SQLExpression(keyPath)
    }

    /// `count(*)`: the number of rows (in a group, with `group(by:)`).
    public func rowCount() -> SQLExpression<Root, Int> {
        SQLExpression(node: .function("count", [.keyword("*")], distinct: false))
    }
}
