import CSQLite
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

/// What a `SELECT` reads: its table, its source and its select list. Every query of a model
/// starts from its table's one (``SQLTable/modelSelect``), so that a query made per call retains
/// one object instead of each part, and shapes compare it by identity.
final class SelectHead: Sendable {
    /// The table that unqualified columns belong to.
    let table: String
    let source: SQLSource
    let columns: [SQLNode]
    /// Whether rendering it binds no value (a table and plain columns, as a model's queries
    /// select), so that binding a query of a known shape can skip it.
    let bindsNothing: Bool

    init(table: String, source: SQLSource? = nil, columns: [SQLNode]) {
        self.table = table
        self.source = source ?? .table(table)
        self.columns = columns
        let plainSource = if case .table = self.source { true } else { false }
        bindsNothing =
            plainSource
            && columns.allSatisfy { column in
                switch column {
                case .keyword, .column: true
                default: false
                }
            }
    }
}

/// `DISTINCT`, `GROUP BY`, `HAVING`, `ORDER BY` and `OFFSET` of a ``SelectStatement``, in one
/// box that copies share (a change makes a new one).
final class SelectClauses: Sendable {
    struct Parts {
        var isDistinct = false
        var groupBy: [SQLNode] = []
        var having: SQLNode?
        var orderings: [SQLOrderingTerm] = []
        var offset: Int?

        var isEmpty: Bool { !isDistinct && groupBy.isEmpty && having == nil && orderings.isEmpty && offset == nil }
    }

    let parts: Parts
    var isDistinct: Bool { parts.isDistinct }
    var groupBy: [SQLNode] { parts.groupBy }
    var having: SQLNode? { parts.having }
    var orderings: [SQLOrderingTerm] { parts.orderings }
    var offset: Int? { parts.offset }

    init(_ parts: Parts) { self.parts = parts }
}

/// A `SELECT` statement as parts: what ``SQLQuery`` builds and renders.
@usableFromInline
struct SelectStatement: Sendable {
    private(set) var head: SelectHead
    /// The table that unqualified columns belong to.
    var table: String { head.table }
    var source: SQLSource { head.source }
    var columns: [SQLNode] {
        get { head.columns }
        set { head = SelectHead(table: head.table, source: head.source, columns: newValue) }
    }
    var filter: SQLNode?
    /// A condition applied before `filter` by every use of the statement (reads, counts,
    /// `updateAll`, `deleteAll`): a soft-deleting model's `"deletedAt" IS NULL`, which
    /// `withDeleted()` / `onlyDeleted()` replace.
    var scope: SQLNode?
    var limit: Int?
    /// The clauses most queries lack, boxed, and nil when all are absent: a query made per call
    /// copies and compares one nil for them.
    private var clauses: SelectClauses?

    var isDistinct: Bool {
        get { clauses?.isDistinct ?? false }
        set { changeClauses { $0.isDistinct = newValue } }
    }
    var groupBy: [SQLNode] {
        get { clauses?.groupBy ?? [] }
        set { changeClauses { $0.groupBy = newValue } }
    }
    var having: SQLNode? {
        get { clauses?.having }
        set { changeClauses { $0.having = newValue } }
    }
    var orderings: [SQLOrderingTerm] {
        get { clauses?.orderings ?? [] }
        set { changeClauses { $0.orderings = newValue } }
    }
    var offset: Int? {
        get { clauses?.offset }
        set { changeClauses { $0.offset = newValue } }
    }

    /// A new box (boxes are shared between copies, never changed), or none when nothing is set.
    private mutating func changeClauses(_ change: (inout SelectClauses.Parts) -> Void) {
        var parts = clauses?.parts ?? SelectClauses.Parts()
        change(&parts)
        clauses = parts.isEmpty ? nil : SelectClauses(parts)
    }

    /// Whether the two have the same clauses (the same box, or none).
    func hasSameClauseBox(as other: SelectStatement) -> Bool { clauses === other.clauses }

    init(table: String, source: SQLSource? = nil, columns: [SQLNode]) {
        self.head = SelectHead(table: table, source: source, columns: columns)
    }

    /// A query of every row of `table`'s model, within `scope`.
    @usableFromInline
    init(modelOf table: SQLTable, scope: SQLNode?) {
        self.head = table.modelSelect
        self.scope = scope
    }

    /// Whether it reads rows as they are: no distinct, grouping, limit or offset (so that it
    /// can be counted, updated or deleted through its filter alone).
    var isPlain: Bool { !isDistinct && groupBy.isEmpty && having == nil && limit == nil && offset == nil }

    /// Every table the statement reads: its own and those of its subqueries.
    var readTables: Set<String> {
        var tables: Set<String>
        switch source {
        case .table(let name): tables = [name]
        case .statement(_, let names): tables = names
        }
        for node in columns + groupBy + [filter, having].compactMap({ $0 }) + orderings.map(\.node) {
            tables.formUnion(node.subqueryTables)
        }
        return tables
    }

    /// The statement with `LIMIT 1` (a smaller limit stays): what a fetch of the first row runs.
    var firstRowOnly: SelectStatement {
        var first = self
        first.limit = Self.limit(limit, firstRowOnly: true)
        return first
    }

    /// The limit the statement runs with, as itself or as ``firstRowOnly`` (which a query
    /// fetching one row renders and compares without copying the statement).
    static func limit(_ limit: Int?, firstRowOnly: Bool) -> Int? {
        firstRowOnly ? Swift.min(limit ?? 1, 1) : limit
    }

    /// What the `WHERE` clause holds: `scope AND filter`.
    var condition: SQLNode? {
        guard let scope else { return filter }
        return filter.map { .chain("AND", scope, $0) } ?? scope
    }

    /// `filter AND condition`.
    @usableFromInline
    mutating func addFilter(_ condition: consuming SQLNode) {
        // Consuming: the builder's node moves in, without a retain and a release.
        if let filter { self.filter = .chain("AND", filter, condition) } else { filter = condition }
    }

    func rendered() throws -> SQLFragment {
        var renderer = SQLRenderer()
        try renderer.append(self)
        return renderer.fragment
    }
}

/// Writes nodes and statements as SQL text, collecting the bound values in order; or, for a
/// statement already prepared from SQL of the same shape, binds the values to it in that order.
struct SQLRenderer {
    private(set) var sql = ""
    private(set) var arguments: [SQLValue] = []
    /// The tables being selected from, innermost last: columns of the innermost one are
    /// written unqualified, others (correlated references) with their table.
    private var tables: [String] = []

    /// False when only the values are wanted (the SQL of the same shape is known): the walk is
    /// the same, so the values come in the same order, but no text is built.
    private let writesSQL: Bool
    /// Where the values go instead of `arguments`: parameter 1, 2, … of this statement (its
    /// handle: the walk retains nothing).
    private let binding: OpaquePointer?
    /// How many values have been bound to `binding`.
    private var boundCount: Int32 = 0
    /// Whether parameters of a prepared query may appear: only when preparing one. Anywhere
    /// else a parameter has no value to bind.
    private var takesParameters = false
    /// Where the parameters stand among the arguments (each holds `NULL` there), in order.
    private(set) var parameters: [SQLParameterSlot] = []

    var fragment: SQLFragment { SQLFragment(sql, arguments) }

    init(table: String? = nil) {
        if let table { tables = [table] }
        self.writesSQL = true
        self.binding = nil
        sql.reserveCapacity(256)
    }

    /// A renderer for a prepared query: each parameter renders as `?` and is noted among
    /// ``parameters``.
    static func preparing() -> SQLRenderer {
        var renderer = SQLRenderer()
        renderer.takesParameters = true
        return renderer
    }

    /// A renderer that writes no SQL and binds each value to the next parameter of
    /// `statement`, prepared from SQL of the same shape: nothing is allocated.
    init(binding statement: SQLStatement) {
        self.writesSQL = false
        self.binding = statement.handle
    }

    @inline(__always)
    private mutating func emit(_ text: @autoclosure () -> String) {
        if writesSQL { sql += text() }
    }

    /// Appends SQL text as is (keywords and identifiers the builder made, never values).
    mutating func write(_ text: String) {
        emit(text)
    }

    /// The next parameter's value: collected, or bound to the statement.
    private mutating func argument(_ value: SQLValue) throws {
        guard let binding else { return arguments.append(value) }
        boundCount += 1
        let result = value.bind(to: binding, at: boundCount)
        if result != SQLITE_OK { throw SQLiteError(result: result, handle: sqlite3_db_handle(binding), sql: Self.sql(of: binding)) }
    }

    /// Checks that every parameter of the statement being bound got its value (the same
    /// shape has as many, so this only guards the shape comparison).
    func finishBinding() throws {
        guard let binding else { return }
        let count = sqlite3_bind_parameter_count(binding)
        guard boundCount == count else {
            throw SQLiteError.misuse("expected \(count) arguments, got \(boundCount)", sql: Self.sql(of: binding))
        }
    }

    /// The SQL text of a prepared statement, for errors.
    private static func sql(of statement: OpaquePointer) -> String? {
        sqlite3_sql(statement).map { String(cString: $0) }
    }

    /// Where a node stands, which decides whether it needs parentheses.
    enum Position {
        /// Alone (after `WHERE`, in a list): never parenthesised.
        case top
        /// An item of an `AND` / `OR` chain: parenthesised when it is another chain or raw SQL.
        case chainItem
        /// An operand of any other operator: parenthesised unless atomic.
        case operand
    }

    /// Appends `select`, or its ``SelectStatement/firstRowOnly`` form.
    mutating func append(_ select: SelectStatement, firstRowOnly: Bool = false) throws {
        // Only the text needs the tables (to qualify columns); binding allocates nothing.
        if writesSQL { tables.append(select.table) }
        defer { if writesSQL { tables.removeLast() } }
        emit(select.isDistinct ? "SELECT DISTINCT " : "SELECT ")
        let head = select.head
        // A model's select list and table bind no value: binding skips them.
        if writesSQL || !head.bindsNothing {
            try appendList(head.columns)
            switch head.source {
            case .table(let name): emit(" FROM "); try appendQuoted(name)
            case .statement(let fragment, _): emit(" FROM ("); try appendRaw(fragment); emit(")")
            }
        }
        try appendCondition(of: select)
        if !select.groupBy.isEmpty {
            emit(" GROUP BY ")
            try appendList(select.groupBy)
        }
        if let having = select.having {
            emit(" HAVING ")
            try append(having)
        }
        if !select.orderings.isEmpty {
            emit(" ORDER BY ")
            try appendOrderings(select.orderings)
        }
        if let limit = SelectStatement.limit(select.limit, firstRowOnly: firstRowOnly) {
            emit(" LIMIT ?")
            try argument(.integer(Int64(limit)))
        } else if select.offset != nil {
            emit(" LIMIT -1")
        }
        if let offset = select.offset {
            emit(" OFFSET ?")
            try argument(.integer(Int64(offset)))
        }
    }

    /// ` WHERE ` and the statement's ``SelectStatement/condition``, written as that chain
    /// renders without building it: a soft-deleting model's queries have both parts, and this
    /// runs for each of them.
    private mutating func appendCondition(of select: borrowing SelectStatement) throws {
        // The chain only lays the text out: the values are the scope's, then the filter's.
        if !writesSQL {
            if let scope = select.scope { try append(scope) }
            if let filter = select.filter { try append(filter) }
            return
        }
        let (scope, filter) = (select.scope, select.filter)
        guard let scope else {
            if let filter { emit(" WHERE "); try append(filter) }
            return
        }
        emit(" WHERE ")
        guard let filter else { return try append(scope) }
        // `.chain("AND", scope, filter)` flattens AND chains on either side into one list.
        func items(_ node: SQLNode) -> [SQLNode]? {
            if case .chain("AND", let items) = node { return items }
            return nil
        }
        let scopeItems = items(scope)
        let filterItems = items(filter)
        let count = (scopeItems?.count ?? 1) + (filterItems?.count ?? 1)
        if count == 0 { return emit("1") }
        let position: Position = count > 1 ? .chainItem : .top
        var written = 0
        func appendItem(_ item: SQLNode) throws {
            if written > 0 { appendSpaced("AND") }
            written += 1
            try append(item, at: position)
        }
        if let scopeItems { for item in scopeItems { try appendItem(item) } } else { try appendItem(scope) }
        if let filterItems { for item in filterItems { try appendItem(item) } } else { try appendItem(filter) }
    }

    /// The terms of an `ORDER BY`, comma-separated (relations splice them into their loads).
    mutating func appendOrderings(_ terms: [SQLOrderingTerm]) throws {
        for (index, term) in terms.enumerated() {
            if index > 0 { emit(", ") }
            try append(term.node)
            if term.descending { emit(" DESC") }
            switch term.nulls {
            case .first?: emit(" NULLS FIRST")
            case .last?: emit(" NULLS LAST")
            case nil: break
            }
        }
    }

    /// Whether an `IN` list binds as one JSON array: two or more bound integers or texts
    /// without NUL (reals could lose a bit through JSON, blobs have no JSON form).
    static func bindsAsJSON(_ list: [SQLNode]) -> Bool {
        guard list.count > 1 else { return false }
        return list.allSatisfy { node in
            guard case .value(let value) = node else { return false }
            switch value {
            case .integer: return true
            // json_each cuts a string at an escaped NUL: such a list keeps one parameter per value.
            case .text(let text): return !text.utf8.contains(0)
            default: return false
            }
        }
    }

    mutating func appendList(_ nodes: [SQLNode]) throws {
        for (index, node) in nodes.enumerated() {
            if index > 0 { emit(", ") }
            try append(node)
        }
    }

    /// `name` as a quoted identifier, written in place (rendering runs once per query).
    private mutating func appendQuoted(_ name: String) throws {
        guard writesSQL else { return }
        try checkIdentifier(name)
        if name.utf8.contains(UInt8(ascii: "\"")) {
            emit(quoteIdentifier(name))
        } else {
            emit("\"")
            emit(name)
            emit("\"")
        }
    }

    private mutating func appendColumn(_ column: QualifiedColumn) throws {
        guard writesSQL else { return }
        // By bytes: tables "é" and "e\u{301}" are two tables to SQLite.
        if !(tables.last.map(column.table.isIdentical(to:)) ?? false) { try appendQuoted(column.table); emit(".") }
        try appendQuoted(column.name)
    }

    /// ` op `, without building it as a string first.
    private mutating func appendSpaced(_ op: String) {
        emit(" ")
        emit(op)
        emit(" ")
    }

    mutating func appendRaw(_ fragment: SQLFragment) throws {
        emit(fragment.sql)
        if binding == nil { return arguments += fragment.arguments }
        for value in fragment.arguments { try argument(value) }
    }

    mutating func append(_ node: SQLNode, at position: Position = .top) throws {
        // Not a switch on `(position, node)`: that tuple would copy the node, on every node.
        let parenthesised: Bool
        switch position {
        case .top:
            parenthesised = false
        case .chainItem:
            switch node {
            case .chain(_, let items): parenthesised = items.count > 1
            case .raw: parenthesised = true
            default: parenthesised = false
            }
        case .operand:
            if case .chain(_, let items) = node { parenthesised = items.count > 1 } else { parenthesised = !node.isAtomic }
        }
        if parenthesised { emit("(") }
        defer { if parenthesised { emit(")") } }

        switch node {
        case .column(let column):
            try appendColumn(column)
        case .value(let value):
            emit("?")
            try argument(value)
        case .columnValue(_, _, let value) where !writesSQL:
            // Binding a known shape: only the value is read.
            try argument(value)
        case .columnValue(let column, let op, let value):
            // As `.binary(.column, op, .value)`: both operands are atomic.
            try appendColumn(column)
            appendSpaced(op)
            emit("?")
            try argument(value)
        case .parameter(let index, let transformed):
            guard takesParameters, binding == nil else {
                throw SQLiteError.misuse("a parameter of a prepared query is used in another query", sql: nil)
            }
            emit("?")
            try argument(.null)
            parameters.append(SQLParameterSlot(position: Int32(arguments.count), parameter: index, transformed: transformed))
        case .raw(let fragment):
            try appendRaw(fragment)
        case .keyword(let text):
            emit(text)
        case .failure(let error):
            throw error
        case .prefix(let op, let operand):
            emit(op)
            try append(operand, at: .operand)
        case .postfix(let operand, let op):
            try append(operand, at: .operand)
            emit(" ")
            emit(op)
        case .binary(let left, let op, let right):
            try append(left, at: .operand)
            appendSpaced(op)
            try append(right, at: .operand)
        case .chain(let op, let items):
            if items.isEmpty { emit(op == "AND" ? "1" : "0") }
            for (index, item) in items.enumerated() {
                if index > 0 { appendSpaced(op) }
                try append(item, at: items.count > 1 ? .chainItem : position)
            }
        case .function(let name, let arguments, let distinct):
            emit(name)
            emit(distinct ? "(DISTINCT " : "(")
            try appendList(arguments)
            emit(")")
        case .between(let operand, let low, let high, let negated):
            try append(operand, at: .operand)
            emit(negated ? " NOT BETWEEN " : " BETWEEN ")
            try append(low, at: .operand)
            emit(" AND ")
            try append(high, at: .operand)
        case .inList(let operand, let list, let negated):
            try append(operand, at: .operand)
            emit(negated ? " NOT IN (" : " IN (")
            if Self.bindsAsJSON(list) {
                let keys = list.compactMap { node -> SQLValue? in if case .value(let value) = node { value } else { nil } }
                // One parameter whatever the list's length: one cached statement, and no
                // bound-parameter limit.
                emit("SELECT value FROM json_each(?)")
                try argument(try jsonKeyList(keys))
            } else {
                try appendList(list)
            }
            emit(")")
        case .inSubquery(let operand, let select, let negated):
            try append(operand, at: .operand)
            emit(negated ? " NOT IN (" : " IN (")
            try append(select)
            emit(")")
        case .exists(let select):
            emit("EXISTS (")
            try append(select)
            emit(")")
        case .subquery(let select):
            emit("(")
            try append(select)
            emit(")")
        case .pattern(let operand, let op, let pattern, let escape):
            try append(operand, at: .operand)
            appendSpaced(op)
            try append(pattern, at: .operand)
            if let escape {
                emit(" ESCAPE ")
                try append(escape, at: .operand)
            }
        case .bytes(let operand):
            emit("CAST(")
            try append(operand)
            emit(" AS BLOB)")
        case .jsonArrayContains(let array, let element):
            // Aliased, so that the outer table's own column named `value` cannot be meant.
            emit("EXISTS (SELECT 1 FROM json_each(")
            try append(array)
            emit(") AS \"modelsync_element\" WHERE \"modelsync_element\".\"value\" = ")
            try append(element, at: .operand)
            emit(")")
        }
    }
}
