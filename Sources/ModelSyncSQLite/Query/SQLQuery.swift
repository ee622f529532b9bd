import CSQLite
import ModelSyncCore

/// A `SELECT` over `Root`'s table whose rows are read as `Element`s: models (`Post.all()`,
/// `Post.where(\.userId == 1)`), or chosen columns and aggregates (`.select(\.id, \.title)`
/// reads `(Int?, String)` tuples).
///
/// A query is a value: each builder method returns a new query, and nothing touches a
/// database until a `fetch` method runs it on a connection. Its SQL text and arguments can be
/// inspected at any time (``sql``, ``arguments``); every value is bound, never spliced in.
///
/// ```swift
/// let recent = try db.read { try Post.where(\.userId == 1).order(.desc(\.id)).limit(10).fetchAll($0) }
/// ```
public struct SQLQuery<Root: SQLModel, Element>: Sendable {
    @usableFromInline var statement: SelectStatement
    /// Reads one row into an element; nil for models, read by their generated `init(row:)`
    /// (a closure calling it would be allocated per query, since it captures `Root`).
    @usableFromInline let decodeRow: (@Sendable (inout SQLRowDecoder) throws -> Element)?

    @usableFromInline
    init(statement: SelectStatement, decodeRow: (@Sendable (inout SQLRowDecoder) throws -> Element)?) {
        self.statement = statement
        self.decodeRow = decodeRow
    }

    /// Reads the current row of `row` into an element.
    @inlinable
    func decode(_ row: inout SQLRowDecoder) throws -> Element {
        if let decodeRow { return try decodeRow(&row) }
        // Specialized for models, where `Element` is `Root`, the cast is gone.
        guard let element = try Root(row: &row) as? Element else { throw Self.noRowReader() }
        return element
    }

    /// What reading a row fails with when the elements are not models and there is no reader
    /// (no builder makes such a query).
    @usableFromInline
    static func noRowReader() -> SQLiteError {
        .misuse("a query of \(Element.self) has no way to read its rows")
    }

    /// The statement as SQL text and its arguments, in order. Throws when the query names
    /// a column the model does not have (``SQLiteError/Kind/unknownColumn(table:column:)``)
    /// or holds a value that cannot be bound.
    public func rendered() throws -> SQLFragment {
        try statement.rendered()
    }

    /// The statement's SQL text (see ``rendered()``).
    public var sql: String {
        get throws { try rendered().sql }
    }

    /// The values bound to the statement's parameters, in order (see ``rendered()``).
    public var arguments: [SQLValue] {
        get throws { try rendered().arguments }
    }

    /// The tables the query reads: its own and those of its subqueries. An observer re-runs
    /// the query when one of them changes.
    public var readTables: Set<String> { statement.readTables }

    // Consuming: a chain of builder calls (`Post.where(…).limit(1)`) changes one statement in
    // place instead of copying it at each step.
    consuming func with(_ change: (inout SelectStatement) -> Void) -> Self {
        var copy = self
        change(&copy.statement)
        return copy
    }
}

extension SQLQuery where Element == Root {
    /// Every row of the model's table, as models.
    @inlinable
    public init() {
        // Inlinable, as `where` and the comparison operators, for the query built per call.
        let table = Root.sqlTable
        self.init(statement: SelectStatement(modelOf: table, scope: Root.liveRowsScope(of: table)), decodeRow: nil)
    }

    /// The models read from the rows of a raw `SELECT`, matched to fields by column name (the
    /// statement becomes a subquery: `SELECT <the model's columns> FROM (<sql>)`). A column
    /// the statement lacks is an ``SQLiteError/Kind/unknownColumn(table:column:)`` error.
    /// `tables` are the tables it reads, for observers (by default the model's own).
    public init(sql: String, _ arguments: [SQLValue] = [], tables: Set<String>? = nil) {
        let table = Root.sqlTable
        let source = SQLSource.statement(SQLFragment(sql, arguments), tables: tables ?? [table.name])
        self.init(statement: SelectStatement(table: table.name, source: source, columns: table.selectedColumns), decodeRow: nil)
    }
}

// MARK: - Building

extension SQLQuery {
    /// Keeps the rows that meet `condition` (and every condition given before).
    @inlinable
    public consuming func `where`(_ condition: SQLCondition<Root>) -> Self {
        var query = self
        query.statement.addFilter(condition.conditionNode)
        return query
    }

    /// Keeps the rows that meet the condition built from the model's columns:
    /// `.where { $0.title.hasPrefix("Swift") || $0.views > 100 }`.
    public consuming func `where`(_ condition: (SQLQueryColumns<Root>) -> SQLCondition<Root>) -> Self {
        `where`(condition(SQLQueryColumns()))
    }

    /// Keeps the rows whose boolean column is true: `.where(\.isPinned)`.
    public consuming func `where`(_ keyPath: KeyPath<Root, Bool>) -> Self {
        `where`(SQLCondition(keyPath))
    }

    /// Keeps the rows that meet a raw SQL condition with its own arguments.
    public consuming func `where`(sql: String, _ arguments: [SQLValue] = []) -> Self {
        `where`(SQLCondition.sql(sql, arguments))
    }

    /// Keeps the row whose primary key is `key` (bound as the key's column stores it).
    public func `where`(key: some SQLColumnEncodable) -> Self {
        `where`(key: [SQLNode.bound(key) { try Root.sqlTable.storedKey(key) }])
    }

    /// Keeps the row whose composite primary key is `key` (values in key order). A model
    /// without a primary key, or a key of the wrong length, makes the query fail with
    /// ``SQLiteError/Kind/misuse``.
    public func `where`(key: [SQLValue]) -> Self {
        `where`(key: key.map(SQLNode.value))
    }

    private func `where`(key: [SQLNode]) -> Self {
        let table = Root.sqlTable
        guard !table.primaryKey.isEmpty, key.count == table.primaryKey.count else {
            let message =
                table.primaryKey.isEmpty
                ? "\(Root.schema.name) has no primary key; mark one with @PrimaryKey"
                : "\(Root.schema.name) has a \(table.primaryKey.count)-column primary key; got \(key.count) values"
            return with { $0.addFilter(.failure(.misuse(message))) }
        }
        return with { statement in
            for (field, value) in zip(table.primaryKey, key) {
                statement.addFilter(.operation(table.fieldColumns[field], "=", value))
            }
        }
    }

    /// Sorts by the columns of key paths, each ascending: `.order(\.userId, \.id)`. For other
    /// directions, pass orderings: `.order(.asc(\.userId), .desc(\.id))`. Replaces any previous
    /// ordering.
    public func order<each V>(_ keyPaths: repeat KeyPath<Root, each V>) -> Self {
        var orderings: [SQLOrdering<Root>] = []
        for keyPath in repeat each keyPaths {
            orderings.append(SQLOrdering(keyPath, of: Root.sqlTable))
        }
        return order(orderings)
    }

    /// Sorts by `orderings`, the first one first: `.order(.desc(\.publishedAt, nulls: .last), .asc(\.id))`.
    /// Replaces any previous ordering.
    public func order(_ orderings: SQLOrdering<Root>...) -> Self {
        order(orderings)
    }

    /// Sorts by `orderings`, the first one first. Replaces any previous ordering.
    public consuming func order(_ orderings: [SQLOrdering<Root>]) -> Self {
        with { $0.orderings = orderings.map(\.term) }
    }

    /// Sorts by orderings built from the model's columns: `.order { [$0.title.collating(.nocase).asc] }`.
    public func order(_ orderings: (SQLQueryColumns<Root>) -> [SQLOrdering<Root>]) -> Self {
        order(orderings(SQLQueryColumns()))
    }

    /// At most `limit` rows, after skipping `offset`.
    public consuming func limit(_ limit: Int, offset: Int? = nil) -> Self {
        with {
            $0.limit = limit
            // Nil keeps an offset set earlier (`.offset(20).limit(10)`).
            if let offset { $0.offset = offset }
        }
    }

    /// Skips the first `offset` rows.
    public consuming func offset(_ offset: Int) -> Self {
        with { $0.offset = offset }
    }

    /// Drops duplicate rows (`SELECT DISTINCT`).
    public consuming func distinct() -> Self {
        with { $0.isDistinct = true }
    }

    /// Groups rows by the columns of key paths (`GROUP BY`); select aggregates to read them.
    public func group<each V>(by keyPaths: repeat KeyPath<Root, each V>) -> Self {
        var nodes: [SQLNode] = []
        for keyPath in repeat each keyPaths {
            nodes.append(SQLExpression(keyPath).node)
        }
        return with { $0.groupBy = nodes }
    }

    /// Groups rows by expressions built from the model's columns.
    public func group<each V>(_ expressions: (SQLQueryColumns<Root>) -> (repeat SQLExpression<Root, each V>)) -> Self {
        var nodes: [SQLNode] = []
        for expression in repeat each expressions(SQLQueryColumns()) {
            nodes.append(expression.node)
        }
        return with { $0.groupBy = nodes }
    }

    /// Keeps the groups that meet `condition` (`HAVING`).
    public func having(_ condition: SQLCondition<Root>) -> Self {
        with { $0.having = $0.having.map { .chain("AND", $0, condition.conditionNode) } ?? condition.conditionNode }
    }

    /// Keeps the groups that meet the condition built from the model's columns:
    /// `.having { $0.rowCount() > 1 }`.
    public func having(_ condition: (SQLQueryColumns<Root>) -> SQLCondition<Root>) -> Self {
        having(condition(SQLQueryColumns()))
    }

    /// Reads the columns of key paths instead of whole models: `.select(\.id, \.title)`
    /// fetches `(Int?, String)` tuples (one key path: its values).
    public func select<each V: SQLColumnDecodable & SendableMetatype>(_ keyPaths: repeat KeyPath<Root, each V>) -> SQLQuery<Root, (repeat each V)> {
        var columns: [(node: SQLNode, transformed: TransformedColumn?)] = []
        for keyPath in repeat each keyPaths {
            let expression = SQLExpression(keyPath)
            columns.append((expression.node, expression.transformed))
        }
        return selecting(columns)
    }

    /// Reads expressions built from the model's columns: `.select { ($0.userId, $0.views.sum()) }`.
    public func select<each V: SQLColumnDecodable & SendableMetatype>(
        _ expressions: (SQLQueryColumns<Root>) -> (repeat SQLExpression<Root, each V>)
    ) -> SQLQuery<Root, (repeat each V)> {
        var columns: [(node: SQLNode, transformed: TransformedColumn?)] = []
        for expression in repeat each expressions(SQLQueryColumns()) {
            columns.append((expression.node, expression.transformed))
        }
        return selecting(columns)
    }

    /// Reads one raw SQL expression as `type`: `.select(sql: "max(length(title))", as: Int?.self)`.
    public func select<V: SQLColumnDecodable & SendableMetatype>(sql: String, _ arguments: [SQLValue] = [], as type: V.Type) -> SQLQuery<Root, V> {
        selecting([(.raw(SQLFragment(sql, arguments)), nil)])
    }

    /// A column that holds its transformer's representation is read through the transformer.
    private func selecting<each V: SQLColumnDecodable & SendableMetatype>(
        _ columns: [(node: SQLNode, transformed: TransformedColumn?)]
    ) -> SQLQuery<Root, (repeat each V)> {
        var statement = self.statement
        statement.columns = columns.map { $0.node }
        // Empty when no column has a transformer: the row loop then skips the check.
        let transforms = columns.contains { $0.transformed != nil } ? columns.map { $0.transformed } : []
        return SQLQuery<Root, (repeat each V)>(statement: statement) { row in try row.decodeColumns(transforms) }
    }
}

extension SQLRowDecoder {
    /// Reads the selected columns in order, each as its type (through its transformer, for a
    /// column that holds a transformer's representation).
    func decodeColumns<each V: SQLColumnDecodable & SendableMetatype>(_ transforms: [TransformedColumn?]) throws -> (repeat each V) {
        var index: Int32 = 0
        func next<T: SQLColumnDecodable>(_ type: T.Type) throws -> T {
            defer { index += 1 }
            let column = SQLColumn(statement: statement, index: index)
            let name = { sqlite3_column_name(statement, index).map { String(cString: $0) } ?? "\(index)" }
            do {
                guard !transforms.isEmpty, let transformed = transforms[Int(index)] else {
                    return try T.decodeSQL(column)
                }
                guard let value = try transformed.transform.read(column) as? T else {
                    throw column.mismatch("\(T.self)")
                }
                return value
            } catch let mismatch as SQLColumnMismatch {
                throw SQLiteError.typeMismatch(
                    table: table.name, column: name(), "expected \(mismatch.expected), found \(mismatch.found)",
                    sql: sqlite3_sql(statement).map { String(cString: $0) })
            } catch let failure as TransformFailure {
                throw transformError(column: name(), failure)
            }
        }
        return (repeat try next((each V).self))
    }
}

// MARK: - Entry points

extension SQLModel {
    /// A query of every row of the model's table; refine it with `where`, `order`, `limit`, …
    /// (the form taking a connection, ``all(_:where:_:order:limit:)``, fetches at once).
    @inlinable
    public static func all() -> SQLQuery<Self, Self> {
        SQLQuery()
    }

    /// A query of the models that meet `condition`: `Post.where(\.userId == 1)`.
    @inlinable
    public static func `where`(_ condition: SQLCondition<Self>) -> SQLQuery<Self, Self> {
        all().where(condition)
    }

    /// A query of the models that meet the condition built from the columns:
    /// `Post.where { $0.title.contains("SQL") }`.
    public static func `where`(_ condition: (SQLQueryColumns<Self>) -> SQLCondition<Self>) -> SQLQuery<Self, Self> {
        all().where(condition)
    }

    /// A query of the models whose boolean column is true: `Post.where(\.isPinned)`.
    public static func `where`(_ keyPath: KeyPath<Self, Bool>) -> SQLQuery<Self, Self> {
        all().where(keyPath)
    }

    /// A query of the models that meet a raw SQL condition with its own arguments.
    public static func `where`(sql: String, _ arguments: [SQLValue] = []) -> SQLQuery<Self, Self> {
        all().where(sql: sql, arguments)
    }

    /// A query of every model, sorted by the columns of key paths, each ascending:
    /// `Post.order(\.userId, \.id)`.
    public static func order<each V>(_ keyPaths: repeat KeyPath<Self, each V>) -> SQLQuery<Self, Self> {
        all().order(repeat each keyPaths)
    }

    /// A query of every model, sorted by `orderings`: `Post.order(.desc(\.publishedAt), .asc(\.id))`.
    public static func order(_ orderings: SQLOrdering<Self>...) -> SQLQuery<Self, Self> {
        all().order(orderings)
    }

    /// The models read from a raw `SELECT` (see ``SQLQuery/init(sql:_:tables:)``).
    public static func query(sql: String, _ arguments: [SQLValue] = [], tables: Set<String>? = nil) -> SQLQuery<Self, Self> {
        SQLQuery(sql: sql, arguments, tables: tables)
    }
}
