import ModelSyncCore

// The operators of the query builder, on expressions and on key paths of models. Values
// bind through `SQLColumnEncodable`, exactly as the row encoder stores them (through the
// transformer, for a column that holds its transformer's representation); comparing with
// nil is `IS NULL` / `IS NOT NULL`, since `= NULL` matches nothing.

// MARK: - Comparison

extension SQLExpression where Value: SQLColumnEncodable {
    // The comparisons with a value are inlinable, as the key-path forms below, so that a query
    // built per call (`Post.where(\.id == key)`) is specialized in the caller's module:
    // called generically, they would look up the metadata of the expression's type each time.

    /// `x = value`; `x IS NULL` when the value is nil.
    @inlinable public static func == (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("=", rhs) }
    /// `x <> value`; `x IS NOT NULL` when the value is nil.
    @inlinable public static func != (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("<>", rhs) }
    /// `x < value`.
    @inlinable public static func < (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("<", rhs) }
    /// `x <= value`.
    @inlinable public static func <= (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("<=", rhs) }
    /// `x > value`.
    @inlinable public static func > (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare(">", rhs) }
    /// `x >= value`.
    @inlinable public static func >= (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare(">=", rhs) }

    /// `x = y` between two expressions (`$0.updatedAt == $0.createdAt`).
    public static func == (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.compare("=", rhs) }
    /// `x <> y`.
    public static func != (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.compare("<>", rhs) }
    /// `x < y`.
    public static func < (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.compare("<", rhs) }
    /// `x <= y`.
    public static func <= (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.compare("<=", rhs) }
    /// `x > y`.
    public static func > (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.compare(">", rhs) }
    /// `x >= y`.
    public static func >= (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.compare(">=", rhs) }

    /// `x BETWEEN low AND high` (both ends included).
    public func between(_ low: Value, and high: Value) -> SQLCondition<Root> {
        SQLCondition(node: .between(node, operand(low), operand(high), negated: false))
    }

    /// `x NOT BETWEEN low AND high`.
    public func notBetween(_ low: Value, and high: Value) -> SQLCondition<Root> {
        SQLCondition(node: .between(node, operand(low), operand(high), negated: true))
    }

    /// `x IN (a, b, …)`. An empty list matches nothing. A nil in the list matches the
    /// rows where `x` is NULL: `(x IN (a, …) OR x IS NULL)`.
    public func `in`(_ values: some Sequence<Value>) -> SQLCondition<Root> {
        inList(values, negated: false)
    }

    /// `x NOT IN (a, b, …)`. An empty list matches every row. A nil in the list excludes
    /// the rows where `x` is NULL: `(x NOT IN (a, …) AND x IS NOT NULL)`.
    public func notIn(_ values: some Sequence<Value>) -> SQLCondition<Root> {
        inList(values, negated: true)
    }

    /// A NULL inside `IN (…)` never compares equal, and inside `NOT IN (…)` makes every
    /// comparison unknown, so nils become a separate `IS [NOT] NULL` test.
    private func inList(_ values: some Sequence<Value>, negated: Bool) -> SQLCondition<Root> {
        var list: [SQLNode] = []
        var hasNil = false
        for value in values {
            let bound = operand(value)
            if case .value(.null) = bound { hasNil = true } else { list.append(bound) }
        }
        let membership = SQLNode.inList(node, list, negated: negated)
        guard hasNil else { return SQLCondition(node: membership) }
        let nullTest = SQLNode.postfix(node, negated ? "IS NOT NULL" : "IS NULL")
        if list.isEmpty { return SQLCondition(node: nullTest) }
        return SQLCondition(node: .chain(negated ? "AND" : "OR", [membership, nullTest]))
    }

    /// A value as the column stores it: through its transformer, if it has one.
    func operand(_ value: Value) -> SQLNode {
        transformed?.bound(value) ?? .bound(value)
    }

    /// `x op y` between two expressions, refused when they store values differently.
    private func compare(_ op: String, _ other: Self) -> SQLCondition<Root> {
        // A prepared query's parameter binds as the other side stores values, and an optional
        // one compares with `IS` / `IS NOT`, so that nil finds NULLs as `== nil` does.
        switch (node, other.node) {
        case (_, .parameter(let index, nil)):
            return binary(parameterOperator(op), .parameter(index, transformed: transformed))
        case (.parameter(let index, nil), _):
            return SQLCondition(node: .binary(.parameter(index, transformed: other.transformed), parameterOperator(op), other.node))
        default:
            return binary(op, comparableNode(other.node, transformed: other.transformed))
        }
    }

    private func parameterOperator(_ op: String) -> String {
        guard isOptionalType(Value.self) else { return op }
        switch op {
        case "=": return "IS"
        case "<>": return "IS NOT"
        default: return op
        }
    }

    @inlinable
    func compare(_ op: String, _ value: Value) -> SQLCondition<Root> {
        SQLCondition(node: .comparison(node, op, value, transformed: transformed) { try value.sqlValue() })
    }
}

extension SQLExpression {
    /// `x IN (SELECT …)`: the subquery selects one column of this type.
    public func `in`<Other>(_ subquery: SQLQuery<Other, Value>) -> SQLCondition<Root> {
        SQLCondition(node: .inSubquery(plainNode("IN (SELECT …)"), subquery.statement, negated: false))
    }

    /// `x NOT IN (SELECT …)`.
    public func notIn<Other>(_ subquery: SQLQuery<Other, Value>) -> SQLCondition<Root> {
        SQLCondition(node: .inSubquery(plainNode("NOT IN (SELECT …)"), subquery.statement, negated: true))
    }

    /// `x IN (SELECT …)` for an optional column and a subquery of its wrapped type.
    public func `in`<Other, Wrapped>(_ subquery: SQLQuery<Other, Wrapped>) -> SQLCondition<Root> where Value == Wrapped? {
        SQLCondition(node: .inSubquery(plainNode("IN (SELECT …)"), subquery.statement, negated: false))
    }

    /// `x NOT IN (SELECT …)` for an optional column and a subquery of its wrapped type.
    public func notIn<Other, Wrapped>(_ subquery: SQLQuery<Other, Wrapped>) -> SQLCondition<Root> where Value == Wrapped? {
        SQLCondition(node: .inSubquery(plainNode("NOT IN (SELECT …)"), subquery.statement, negated: true))
    }

    func binary<Result>(_ op: String, _ right: SQLNode) -> SQLExpression<Root, Result> {
        SQLExpression<Root, Result>(node: .operation(node, op, right))
    }

    /// `x op y` computed on the column's values: refused on a column that holds its
    /// transformer's representation.
    func arithmetic(_ op: String, _ right: SQLNode) -> Self {
        Self(node: .operation(plainNode(op), op, right))
    }
}

// MARK: - Logic

extension SQLExpression where Value == Bool {
    /// Both conditions.
    public static func && (lhs: Self, rhs: Self) -> Self { Self(node: .chain("AND", lhs.conditionNode, rhs.conditionNode)) }
    /// Either condition.
    public static func || (lhs: Self, rhs: Self) -> Self { Self(node: .chain("OR", lhs.conditionNode, rhs.conditionNode)) }
    /// The negation: `NOT (x)`.
    public static prefix func ! (condition: Self) -> Self { Self(node: .prefix("NOT ", condition.conditionNode)) }
}

// MARK: - Text

/// The column types that hold text (`String` and `String?`): they get the pattern helpers.
public protocol SQLTextValue: SQLColumnEncodable {}
extension String: SQLTextValue {}
extension Optional: SQLTextValue where Wrapped: SQLTextValue {}

extension SQLExpression where Value: SQLTextValue {
    /// `x LIKE pattern [ESCAPE escape]`: `%` matches any run of characters, `_` one
    /// character, and `escape` makes the next `%`, `_` or itself literal. SQLite's `LIKE`
    /// ignores the case of ASCII letters.
    public func like(_ pattern: String, escape: Character? = nil) -> SQLCondition<Root> {
        SQLCondition(node: .pattern(plainNode("LIKE"), "LIKE", .bound(pattern), escape: escape.map { .bound(String($0)) }))
    }

    /// `x GLOB pattern`: `*` matches any run, `?` one character, `[…]` a set; case-sensitive.
    public func glob(_ pattern: String) -> SQLCondition<Root> {
        SQLCondition(node: .pattern(plainNode("GLOB"), "GLOB", .bound(pattern), escape: nil))
    }

    /// Whether the text starts with `prefix`, compared byte for byte (no wildcards; a NUL is
    /// a character like any other). Case-sensitive unless `ignoringCase` (ASCII letters, as
    /// `LIKE` and SQLite's `lower()` fold them). Unlike `glob("prefix*")`, it does not use an
    /// index on the column.
    public func hasPrefix(_ prefix: String, ignoringCase: Bool = false) -> SQLCondition<Root> {
        let (value, text) = bytes(prefix, ignoringCase: ignoringCase)
        let head = SQLNode.function("substr", [value, .keyword("1"), Self.length(text)], distinct: false)
        return SQLCondition(node: .binary(Self.part(head, of: value), "=", text))
    }

    /// Whether the text ends with `suffix`, compared byte for byte (see ``hasPrefix(_:ignoringCase:)``).
    public func hasSuffix(_ suffix: String, ignoringCase: Bool = false) -> SQLCondition<Root> {
        let (value, text) = bytes(suffix, ignoringCase: ignoringCase)
        // For a suffix longer than the value the start is 0 or negative, and substr returns
        // fewer bytes than the suffix has.
        let start = SQLNode.binary(.binary(Self.length(value), "-", Self.length(text)), "+", .keyword("1"))
        return SQLCondition(node: .binary(Self.part(.function("substr", [value, start], distinct: false), of: value), "=", text))
    }

    /// Whether the text contains `text`, compared byte for byte (see ``hasPrefix(_:ignoringCase:)``).
    public func contains(_ text: String, ignoringCase: Bool = false) -> SQLCondition<Root> {
        let (value, needle) = bytes(text, ignoringCase: ignoringCase)
        return SQLCondition(node: .binary(.function("instr", [value, needle], distinct: false), ">", .keyword("0")))
    }

    /// Whether the text is `length` characters (Unicode scalars, as SQLite counts them) long
    /// and starts with `prefix`: `hasPrefix("22", length: 4)`. Matches nothing when `length`
    /// is shorter than the prefix. The length is checked with `GLOB`, which stops at a NUL, so
    /// text holding a NUL never matches.
    public func hasPrefix(_ prefix: String, length: Int, ignoringCase: Bool = false) -> SQLCondition<Root> {
        fixedWidth(length, text: prefix, hasPrefix(prefix, ignoringCase: ignoringCase))
    }

    /// Whether the text is `length` characters long and ends with `suffix` (see
    /// ``hasPrefix(_:length:ignoringCase:)``).
    public func hasSuffix(_ suffix: String, length: Int, ignoringCase: Bool = false) -> SQLCondition<Root> {
        fixedWidth(length, text: suffix, hasSuffix(suffix, ignoringCase: ignoringCase))
    }

    private func fixedWidth(_ length: Int, text: String, _ match: SQLCondition<Root>) -> SQLCondition<Root> {
        guard length >= text.unicodeScalars.count else { return .never }
        return glob(String(repeating: "?", count: length)) && match
    }

    /// The operand and `text` as bytes, both lowercased first when ignoring case.
    private func bytes(_ text: String, ignoringCase: Bool) -> (value: SQLNode, text: SQLNode) {
        let lower = { (node: SQLNode) in ignoringCase ? SQLNode.function("lower", [node], distinct: false) : node }
        return (.bytes(lower(plainNode("a text comparison"))), .bytes(lower(.bound(text))))
    }

    private static func length(_ node: SQLNode) -> SQLNode { .function("length", [node], distinct: false) }

    /// `ifnull(substring, value)`: SQLite's `substr` of an empty blob is NULL, not an empty
    /// blob, so the empty text would have no prefix or suffix, not even the empty one. A NULL
    /// value stays NULL.
    private static func part(_ substring: SQLNode, of value: SQLNode) -> SQLNode {
        .function("ifnull", [substring, value], distinct: false)
    }
}

// MARK: - Arithmetic and bits

extension SQLExpression where Value: SQLColumnEncodable & Numeric {
    /// `x + y`.
    public static func + (lhs: Self, rhs: Value) -> Self { lhs.arithmetic("+", .bound(rhs)) }
    /// `x - y`.
    public static func - (lhs: Self, rhs: Value) -> Self { lhs.arithmetic("-", .bound(rhs)) }
    /// `x * y`.
    public static func * (lhs: Self, rhs: Value) -> Self { lhs.arithmetic("*", .bound(rhs)) }
    /// `x + y` between expressions.
    public static func + (lhs: Self, rhs: Self) -> Self { lhs.arithmetic("+", rhs.plainNode("+")) }
    /// `x - y` between expressions.
    public static func - (lhs: Self, rhs: Self) -> Self { lhs.arithmetic("-", rhs.plainNode("-")) }
    /// `x * y` between expressions.
    public static func * (lhs: Self, rhs: Self) -> Self { lhs.arithmetic("*", rhs.plainNode("*")) }
}

extension SQLExpression where Value: SQLColumnEncodable & FixedWidthInteger {
    /// `x & mask`.
    public static func & (lhs: Self, rhs: Value) -> Self { lhs.arithmetic("&", .bound(rhs)) }
    /// `x | bits`.
    public static func | (lhs: Self, rhs: Value) -> Self { lhs.arithmetic("|", .bound(rhs)) }
    /// `x << n`.
    public static func << (lhs: Self, rhs: Value) -> Self { lhs.arithmetic("<<", .bound(rhs)) }
    /// `x >> n`.
    public static func >> (lhs: Self, rhs: Value) -> Self { lhs.arithmetic(">>", .bound(rhs)) }
    /// `~x`.
    public static prefix func ~ (operand: Self) -> Self { Self(node: .prefix("~", operand.plainNode("~"))) }
}

// MARK: - Aggregates

extension SQLExpression {
    /// `count(x)`: the rows where `x` is not `NULL`; `distinct` counts different values.
    public func count(distinct: Bool = false) -> SQLExpression<Root, Int> {
        SQLExpression<Root, Int>(node: .function("count", [node], distinct: distinct))
    }

    /// `avg(x)` as a double; nil when there is no row.
    public func average(distinct: Bool = false) -> SQLExpression<Root, Double?> {
        SQLExpression<Root, Double?>(node: .function("avg", [plainNode("avg")], distinct: distinct))
    }
}

extension SQLExpression where Value: Comparable {
    /// `min(x)`; nil when there is no row.
    public func min() -> SQLExpression<Root, Value?> {
        SQLExpression<Root, Value?>(node: .function("min", [plainNode("min")], distinct: false))
    }

    /// `max(x)`; nil when there is no row.
    public func max() -> SQLExpression<Root, Value?> {
        SQLExpression<Root, Value?>(node: .function("max", [plainNode("max")], distinct: false))
    }
}

extension SQLExpression where Value: Numeric {
    /// `sum(x)`; nil when there is no row.
    public func sum(distinct: Bool = false) -> SQLExpression<Root, Value?> {
        SQLExpression<Root, Value?>(node: .function("sum", [plainNode("sum")], distinct: distinct))
    }
}

// Optional columns: the aggregate is optional once, not twice (`Double?`, not `Double??`).
extension SQLExpression {
    /// `min(x)` of an optional column; nil when there is no row or only `NULL`s.
    public func min<Wrapped>() -> SQLExpression<Root, Wrapped?> where Value == Wrapped? {
        SQLExpression<Root, Wrapped?>(node: .function("min", [plainNode("min")], distinct: false))
    }

    /// `max(x)` of an optional column; nil when there is no row or only `NULL`s.
    public func max<Wrapped>() -> SQLExpression<Root, Wrapped?> where Value == Wrapped? {
        SQLExpression<Root, Wrapped?>(node: .function("max", [plainNode("max")], distinct: false))
    }

    /// `sum(x)` of an optional numeric column (`NULL`s are skipped); nil when there is no
    /// row or only `NULL`s.
    public func sum<Wrapped: Numeric>(distinct: Bool = false) -> SQLExpression<Root, Wrapped?> where Value == Wrapped? {
        SQLExpression<Root, Wrapped?>(node: .function("sum", [plainNode("sum")], distinct: distinct))
    }
}

// MARK: - Key paths

// The same operators with a key path of the model on the left: `Post.where(\.userId == 1)`.

/// `column = value` (`IS NULL` for nil).
@inlinable
public func == <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) == rhs
}

/// `column <> value` (`IS NOT NULL` for nil).
@inlinable
public func != <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) != rhs
}

/// `column < value`.
@inlinable
public func < <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) < rhs
}

/// `column <= value`.
@inlinable
public func <= <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) <= rhs
}

/// `column > value`.
@inlinable
public func > <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) > rhs
}

/// `column >= value`.
@inlinable
public func >= <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) >= rhs
}

/// `column & mask`, to compare: `(\.flags & 4) == 4`.
public func & <Root: SQLModel, Value: SQLColumnEncodable & FixedWidthInteger>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLExpression<Root, Value> {
    SQLExpression(lhs) & rhs
}

/// `column | bits`.
public func | <Root: SQLModel, Value: SQLColumnEncodable & FixedWidthInteger>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLExpression<Root, Value> {
    SQLExpression(lhs) | rhs
}

// With an expression on the right, such as a prepared query's parameter:
// `Post.preparedQuery(Int.self) { userId in Post.where(\.userId == userId) }`.

/// `column = expression` (`IS` for an optional parameter).
public func == <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: SQLExpression<Root, Value>) -> SQLCondition<Root> {
    SQLExpression(lhs) == rhs
}

/// `column <> expression` (`IS NOT` for an optional parameter).
public func != <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: SQLExpression<Root, Value>) -> SQLCondition<Root> {
    SQLExpression(lhs) != rhs
}

/// `column < expression`.
public func < <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: SQLExpression<Root, Value>) -> SQLCondition<Root> {
    SQLExpression(lhs) < rhs
}

/// `column <= expression`.
public func <= <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: SQLExpression<Root, Value>) -> SQLCondition<Root> {
    SQLExpression(lhs) <= rhs
}

/// `column > expression`.
public func > <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: SQLExpression<Root, Value>) -> SQLCondition<Root> {
    SQLExpression(lhs) > rhs
}

/// `column >= expression`.
public func >= <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: SQLExpression<Root, Value>) -> SQLCondition<Root> {
    SQLExpression(lhs) >= rhs
}
