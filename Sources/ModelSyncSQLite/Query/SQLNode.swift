import CSQLite
import ModelSyncCore

/// The untyped expression tree behind the typed query values. Key paths are resolved to
/// columns when a node is made, so a node holds only names and bound values; a key path
/// that names no column becomes a `failure`, thrown when the query is rendered.
///
/// Every case is one box, so that a node copies as one pointer; `column op value`, the most
/// common condition, is one case, so that `Post.where(\.id == key)` allocates one box, not three.
@usableFromInline
indirect enum SQLNode: Sendable {
    /// A column of its table (qualified in SQL only when that table is not the one being read).
    case column(QualifiedColumn)
    /// A bound value.
    case value(SQLValue)
    /// `column op value`: what `.binary(.column, op, .value)` renders, in one box (see
    /// ``operation(_:_:_:)``, which makes it).
    case columnValue(QualifiedColumn, String, SQLValue)
    /// Parameter `index` of a prepared query (``SQLPreparedQuery``), bound on each run; stored
    /// through `transformed` when it is compared with a column that holds its transformer's
    /// representation.
    case parameter(Int, transformed: TransformedColumn?)
    /// Raw SQL with its own arguments.
    case raw(SQLFragment)
    /// A constant keyword or literal written as is (`*`, `1`, `0`): never user data.
    case keyword(String)
    /// An error found while building (an unknown key path, a value that cannot be bound).
    case failure(SQLiteError)
    /// `op x` (`NOT`, `~`, `-`).
    case prefix(String, SQLNode)
    /// `x op` (`IS NULL`, `COLLATE NOCASE`).
    case postfix(SQLNode, String)
    /// `x op y`.
    case binary(SQLNode, String, SQLNode)
    /// `x AND y AND …` or `x OR y OR …`, flattened so that chains of one operator need no
    /// parentheses. Empty: the operator's identity (`1` for `AND`, `0` for `OR`).
    case chain(String, [SQLNode])
    /// `name([DISTINCT] arguments)`.
    case function(String, [SQLNode], distinct: Bool)
    /// `x [NOT] BETWEEN low AND high`.
    case between(SQLNode, SQLNode, SQLNode, negated: Bool)
    /// `x [NOT] IN (a, b, …)`; an empty list matches nothing (`NOT IN`: everything).
    case inList(SQLNode, [SQLNode], negated: Bool)
    /// `x [NOT] IN (SELECT …)`.
    case inSubquery(SQLNode, SelectStatement, negated: Bool)
    /// `EXISTS (SELECT …)`.
    case exists(SelectStatement)
    /// `(SELECT …)` as a value.
    case subquery(SelectStatement)
    /// `x LIKE pattern [ESCAPE e]`, `x GLOB pattern`.
    case pattern(SQLNode, String, SQLNode, escape: SQLNode?)
    /// `CAST(x AS BLOB)`: text as its bytes, which SQLite's functions compare in full, NUL
    /// included (patterns and text functions stop at the first NUL).
    case bytes(SQLNode)
    /// `EXISTS (SELECT 1 FROM json_each(array) … WHERE value = element)`: an array stored as
    /// JSON text holds an element.
    case jsonArrayContains(SQLNode, element: SQLNode)

    /// The column `name` of `table`.
    static func column(table: String, name: String) -> SQLNode {
        .column(QualifiedColumn(table: table, name: name))
    }

    /// `left op right`: one ``columnValue(_:_:_:)`` when it is a column and a value.
    static func operation(_ left: SQLNode, _ op: String, _ right: SQLNode) -> SQLNode {
        if case .column(let column) = left, case .value(let value) = right {
            return .columnValue(column, op, value)
        }
        return .binary(left, op, right)
    }

    /// Whether the node renders as one token or call, needing no parentheses as an operand.
    var isAtomic: Bool {
        switch self {
        case .column, .value, .parameter, .keyword, .failure, .function, .exists, .subquery, .bytes, .jsonArrayContains: true
        default: false
        }
    }

    /// The tables the node reads through subqueries.
    var subqueryTables: Set<String> {
        switch self {
        case .column, .value, .columnValue, .parameter, .raw, .keyword, .failure: []
        case .prefix(_, let node), .postfix(let node, _), .bytes(let node): node.subqueryTables
        case .binary(let left, _, let right): left.subqueryTables.union(right.subqueryTables)
        case .chain(_, let nodes), .function(_, let nodes, _): nodes.reduce(into: []) { $0.formUnion($1.subqueryTables) }
        case .between(let node, let low, let high, _): node.subqueryTables.union(low.subqueryTables).union(high.subqueryTables)
        case .inList(let node, let list, _): list.reduce(into: node.subqueryTables) { $0.formUnion($1.subqueryTables) }
        case .inSubquery(let node, let select, _): node.subqueryTables.union(select.readTables)
        case .exists(let select), .subquery(let select): select.readTables
        case .pattern(let node, _, let pattern, let escape):
            node.subqueryTables.union(pattern.subqueryTables).union(escape?.subqueryTables ?? [])
        case .jsonArrayContains(let array, let element): array.subqueryTables.union(element.subqueryTables)
        }
    }

    /// `left op right`, flattening chains of the same operator.
    static func chain(_ op: String, _ left: SQLNode, _ right: SQLNode) -> SQLNode {
        func items(_ node: SQLNode) -> [SQLNode] {
            if case .chain(op, let nodes) = node { return nodes }
            return [node]
        }
        return .chain(op, items(left) + items(right))
    }

    /// `left op value`, the value stored as `store` gives it, or through `transformed` (the
    /// column's transformer): `IS NULL` / `IS NOT NULL` for `=` / `<>` with nil, since `= NULL`
    /// matches nothing. The value becomes no node of its own: a column compared with it is one
    /// ``columnValue(_:_:_:)``.
    @usableFromInline
    static func comparison(
        _ left: SQLNode, _ op: String, _ value: Any, transformed: TransformedColumn?, _ store: () throws -> SQLValue
    ) -> SQLNode {
        let stored: SQLValue
        do {
            stored = try storedForm(of: value) { try transformed.map { try $0.transform.store(value) } ?? store() }
        } catch {
            return .binary(left, op, .failure(error))
        }
        if case .null = stored, op == "=" || op == "<>" {
            return .postfix(left, op == "=" ? "IS NULL" : "IS NOT NULL")
        }
        if case .column(let column) = left { return .columnValue(column, op, stored) }
        return .binary(left, op, .value(stored))
    }

    /// The node of a value, or a failure when it cannot be turned into one.
    static func bound(_ value: some SQLColumnEncodable) -> SQLNode {
        bound(value) { try value.sqlValue() }
    }

    /// The node of `value` in the form `store` gives it (through a column's transformer, say),
    /// or a failure naming the value.
    static func bound(_ value: Any, _ store: () throws -> SQLValue) -> SQLNode {
        do {
            return .value(try storedForm(of: value, store))
        } catch {
            return .failure(error)
        }
    }
}

/// `value` in the form `store` gives it; a failure is a typed error naming the value (the
/// builder's values and a prepared query's parameters alike).
func storedForm(of value: Any, _ store: () throws -> SQLValue) throws(SQLiteError) -> SQLValue {
    do {
        return try store()
    } catch let error as SQLiteError {
        throw error
    } catch {
        throw .misuse("\(value) cannot be bound: \(error)")
    }
}

/// A column and its table, as a node names it. A reference, so that a node copies one pointer,
/// and the table's own (``SQLTable/fieldColumns``), made once, are the same object in every
/// query: shapes compare them by identity before their names.
@usableFromInline
final class QualifiedColumn: Sendable {
    let table: String
    let name: String

    init(table: String, name: String) {
        (self.table, self.name) = (table, name)
    }

    /// Whether the two name the same column, by bytes (`"é"` and `"e\u{301}"` are two names).
    func isSame(as other: QualifiedColumn) -> Bool {
        self === other || (table.isIdentical(to: other.table) && name.isIdentical(to: other.name))
    }
}

/// One `ORDER BY` term.
struct SQLOrderingTerm: Sendable {
    var node: SQLNode
    var descending: Bool
    var nulls: SQLNullsOrder?
}

/// Where a select reads from: a model's table, or a raw statement read as a subquery.
enum SQLSource: Sendable {
    case table(String)
    case statement(SQLFragment, tables: Set<String>)
}
