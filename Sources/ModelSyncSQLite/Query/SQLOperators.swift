import ModelSyncCore

// The operators of the query builder, on expressions and on key paths of models. Values
// bind through `SQLColumnEncodable`, exactly as the row encoder stores them; comparing with
// nil is `IS NULL` / `IS NOT NULL`, since `= NULL` matches nothing.

// MARK: - Comparison

extension SQLExpression where Value: SQLColumnEncodable {
    /// `x = value`; `x IS NULL` when the value is nil.
    public static func == (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("=", rhs) }
    /// `x <> value`; `x IS NOT NULL` when the value is nil.
    public static func != (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("<>", rhs) }
    /// `x < value`.
    public static func < (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("<", rhs) }
    /// `x <= value`.
    public static func <= (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare("<=", rhs) }
    /// `x > value`.
    public static func > (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare(">", rhs) }
    /// `x >= value`.
    public static func >= (lhs: Self, rhs: Value) -> SQLCondition<Root> { lhs.compare(">=", rhs) }

    /// `x = y` between two expressions (`$0.updatedAt == $0.createdAt`).
    public static func == (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.binary("=", rhs.node) }
    /// `x <> y`.
    public static func != (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.binary("<>", rhs.node) }
    /// `x < y`.
    public static func < (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.binary("<", rhs.node) }
    /// `x <= y`.
    public static func <= (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.binary("<=", rhs.node) }
    /// `x > y`.
    public static func > (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.binary(">", rhs.node) }
    /// `x >= y`.
    public static func >= (lhs: Self, rhs: Self) -> SQLCondition<Root> { lhs.binary(">=", rhs.node) }

    /// `x BETWEEN low AND high` (both ends included).
    public func between(_ low: Value, and high: Value) -> SQLCondition<Root> {
        SQLCondition(node: .between(node, .bound(low), .bound(high), negated: false))
    }

    /// `x NOT BETWEEN low AND high`.
    public func notBetween(_ low: Value, and high: Value) -> SQLCondition<Root> {
        SQLCondition(node: .between(node, .bound(low), .bound(high), negated: true))
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
            let bound = SQLNode.bound(value)
            if case .value(.null) = bound { hasNil = true } else { list.append(bound) }
        }
        let membership = SQLNode.inList(node, list, negated: negated)
        guard hasNil else { return SQLCondition(node: membership) }
        let nullTest = SQLNode.postfix(node, negated ? "IS NOT NULL" : "IS NULL")
        if list.isEmpty { return SQLCondition(node: nullTest) }
        return SQLCondition(node: .chain(negated ? "AND" : "OR", [membership, nullTest]))
    }

    private func compare(_ op: String, _ value: Value) -> SQLCondition<Root> {
        let bound = SQLNode.bound(value)
        if case .value(.null) = bound, op == "=" || op == "<>" {
            return SQLCondition(node: .postfix(node, op == "=" ? "IS NULL" : "IS NOT NULL"))
        }
        return binary(op, bound)
    }
}

extension SQLExpression {
    /// `x IN (SELECT …)`: the subquery selects one column of this type.
    public func `in`<Other>(_ subquery: SQLQuery<Other, Value>) -> SQLCondition<Root> {
        SQLCondition(node: .inSubquery(node, subquery.statement, negated: false))
    }

    /// `x NOT IN (SELECT …)`.
    public func notIn<Other>(_ subquery: SQLQuery<Other, Value>) -> SQLCondition<Root> {
        SQLCondition(node: .inSubquery(node, subquery.statement, negated: true))
    }

    /// `x IN (SELECT …)` for an optional column and a subquery of its wrapped type.
    public func `in`<Other, Wrapped>(_ subquery: SQLQuery<Other, Wrapped>) -> SQLCondition<Root> where Value == Wrapped? {
        SQLCondition(node: .inSubquery(node, subquery.statement, negated: false))
    }

    /// `x NOT IN (SELECT …)` for an optional column and a subquery of its wrapped type.
    public func notIn<Other, Wrapped>(_ subquery: SQLQuery<Other, Wrapped>) -> SQLCondition<Root> where Value == Wrapped? {
        SQLCondition(node: .inSubquery(node, subquery.statement, negated: true))
    }

    func binary<Result>(_ op: String, _ right: SQLNode) -> SQLExpression<Root, Result> {
        SQLExpression<Root, Result>(node: .binary(node, op, right))
    }
}

// MARK: - Logic

extension SQLExpression where Value == Bool {
    /// Both conditions.
    public static func && (lhs: Self, rhs: Self) -> Self { Self(node: .chain("AND", lhs.node, rhs.node)) }
    /// Either condition.
    public static func || (lhs: Self, rhs: Self) -> Self { Self(node: .chain("OR", lhs.node, rhs.node)) }
    /// The negation: `NOT (x)`.
    public static prefix func ! (condition: Self) -> Self { Self(node: .prefix("NOT ", condition.node)) }
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
        SQLCondition(node: .pattern(node, "LIKE", .bound(pattern), escape: escape.map { .bound(String($0)) }))
    }

    /// `x GLOB pattern`: `*` matches any run, `?` one character, `[…]` a set; case-sensitive.
    public func glob(_ pattern: String) -> SQLCondition<Root> {
        SQLCondition(node: .pattern(node, "GLOB", .bound(pattern), escape: nil))
    }

    /// Whether the text starts with `prefix` (taken literally: wildcards in it match only
    /// themselves). Case-sensitive unless `ignoringCase` (ASCII letters).
    public func hasPrefix(_ prefix: String, ignoringCase: Bool = false) -> SQLCondition<Root> {
        match(prefix, after: true, ignoringCase: ignoringCase)
    }

    /// Whether the text ends with `suffix` (taken literally).
    public func hasSuffix(_ suffix: String, ignoringCase: Bool = false) -> SQLCondition<Root> {
        match(suffix, before: true, ignoringCase: ignoringCase)
    }

    /// Whether the text contains `text` (taken literally).
    public func contains(_ text: String, ignoringCase: Bool = false) -> SQLCondition<Root> {
        match(text, before: true, after: true, ignoringCase: ignoringCase)
    }

    /// Whether the text is `length` characters long and starts with `prefix`: `hasPrefix("22",
    /// length: 4)` is the pattern `22__`. Matches nothing when `length` is shorter than the prefix.
    public func hasPrefix(_ prefix: String, length: Int, ignoringCase: Bool = false) -> SQLCondition<Root> {
        fixedWidth(prefix, length: length, prefix: true, ignoringCase: ignoringCase)
    }

    /// Whether the text is `length` characters long and ends with `suffix` (`__22`).
    public func hasSuffix(_ suffix: String, length: Int, ignoringCase: Bool = false) -> SQLCondition<Root> {
        fixedWidth(suffix, length: length, prefix: false, ignoringCase: ignoringCase)
    }

    private func fixedWidth(_ text: String, length: Int, prefix: Bool, ignoringCase: Bool) -> SQLCondition<Root> {
        guard length >= text.count else { return .never }
        let blanks = String(repeating: ignoringCase ? "_" : "?", count: length - text.count)
        let literal = Self.escape(text, ignoringCase: ignoringCase)
        return pattern(prefix ? literal + blanks : blanks + literal, ignoringCase: ignoringCase)
    }

    private func match(_ text: String, before: Bool = false, after: Bool = false, ignoringCase: Bool) -> SQLCondition<Root> {
        let any = ignoringCase ? "%" : "*"
        let literal = Self.escape(text, ignoringCase: ignoringCase)
        return pattern((before ? any : "") + literal + (after ? any : ""), ignoringCase: ignoringCase)
    }

    /// `LIKE … ESCAPE '\'` when ignoring case, else `GLOB` (which is case-sensitive).
    private func pattern(_ pattern: String, ignoringCase: Bool) -> SQLCondition<Root> {
        ignoringCase ? like(pattern, escape: "\\") : glob(pattern)
    }

    /// `text` with the pattern's wildcards made literal: `\`-escaped for `LIKE`, bracketed
    /// for `GLOB` (which has no escape character).
    static func escape(_ text: String, ignoringCase: Bool) -> String {
        var escaped = ""
        for character in text {
            switch (ignoringCase, character) {
            case (true, "%"), (true, "_"), (true, "\\"): escaped += "\\\(character)"
            case (false, "*"), (false, "?"), (false, "["): escaped += "[\(character)]"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

// MARK: - Arithmetic and bits

extension SQLExpression where Value: SQLColumnEncodable & Numeric {
    /// `x + y`.
    public static func + (lhs: Self, rhs: Value) -> Self { lhs.binary("+", .bound(rhs)) }
    /// `x - y`.
    public static func - (lhs: Self, rhs: Value) -> Self { lhs.binary("-", .bound(rhs)) }
    /// `x * y`.
    public static func * (lhs: Self, rhs: Value) -> Self { lhs.binary("*", .bound(rhs)) }
    /// `x + y` between expressions.
    public static func + (lhs: Self, rhs: Self) -> Self { lhs.binary("+", rhs.node) }
    /// `x - y` between expressions.
    public static func - (lhs: Self, rhs: Self) -> Self { lhs.binary("-", rhs.node) }
    /// `x * y` between expressions.
    public static func * (lhs: Self, rhs: Self) -> Self { lhs.binary("*", rhs.node) }
}

extension SQLExpression where Value: SQLColumnEncodable & FixedWidthInteger {
    /// `x & mask`.
    public static func & (lhs: Self, rhs: Value) -> Self { lhs.binary("&", .bound(rhs)) }
    /// `x | bits`.
    public static func | (lhs: Self, rhs: Value) -> Self { lhs.binary("|", .bound(rhs)) }
    /// `x << n`.
    public static func << (lhs: Self, rhs: Value) -> Self { lhs.binary("<<", .bound(rhs)) }
    /// `x >> n`.
    public static func >> (lhs: Self, rhs: Value) -> Self { lhs.binary(">>", .bound(rhs)) }
    /// `~x`.
    public static prefix func ~ (operand: Self) -> Self { Self(node: .prefix("~", operand.node)) }
}

// MARK: - Aggregates

extension SQLExpression {
    /// `count(x)`: the rows where `x` is not `NULL`; `distinct` counts different values.
    public func count(distinct: Bool = false) -> SQLExpression<Root, Int> {
        SQLExpression<Root, Int>(node: .function("count", [node], distinct: distinct))
    }

    /// `avg(x)` as a double; nil when there is no row.
    public func average(distinct: Bool = false) -> SQLExpression<Root, Double?> {
        SQLExpression<Root, Double?>(node: .function("avg", [node], distinct: distinct))
    }
}

extension SQLExpression where Value: Comparable {
    /// `min(x)`; nil when there is no row.
    public func min() -> SQLExpression<Root, Value?> {
        SQLExpression<Root, Value?>(node: .function("min", [node], distinct: false))
    }

    /// `max(x)`; nil when there is no row.
    public func max() -> SQLExpression<Root, Value?> {
        SQLExpression<Root, Value?>(node: .function("max", [node], distinct: false))
    }
}

extension SQLExpression where Value: Numeric {
    /// `sum(x)`; nil when there is no row.
    public func sum(distinct: Bool = false) -> SQLExpression<Root, Value?> {
        SQLExpression<Root, Value?>(node: .function("sum", [node], distinct: distinct))
    }
}

// Optional columns: the aggregate is optional once, not twice (`Double?`, not `Double??`).
extension SQLExpression {
    /// `min(x)` of an optional column; nil when there is no row or only `NULL`s.
    public func min<Wrapped>() -> SQLExpression<Root, Wrapped?> where Value == Wrapped? {
        SQLExpression<Root, Wrapped?>(node: .function("min", [node], distinct: false))
    }

    /// `max(x)` of an optional column; nil when there is no row or only `NULL`s.
    public func max<Wrapped>() -> SQLExpression<Root, Wrapped?> where Value == Wrapped? {
        SQLExpression<Root, Wrapped?>(node: .function("max", [node], distinct: false))
    }

    /// `sum(x)` of an optional numeric column (`NULL`s are skipped); nil when there is no
    /// row or only `NULL`s.
    public func sum<Wrapped: Numeric>(distinct: Bool = false) -> SQLExpression<Root, Wrapped?> where Value == Wrapped? {
        SQLExpression<Root, Wrapped?>(node: .function("sum", [node], distinct: distinct))
    }
}

// MARK: - Key paths

// The same operators with a key path of the model on the left: `Post.where(\.userId == 1)`.

/// `column = value` (`IS NULL` for nil).
public func == <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) == rhs
}

/// `column <> value` (`IS NOT NULL` for nil).
public func != <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) != rhs
}

/// `column < value`.
public func < <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) < rhs
}

/// `column <= value`.
public func <= <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) <= rhs
}

/// `column > value`.
public func > <Root: SQLModel, Value: SQLColumnEncodable>(lhs: KeyPath<Root, Value>, rhs: Value) -> SQLCondition<Root> {
    SQLExpression(lhs) > rhs
}

/// `column >= value`.
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
