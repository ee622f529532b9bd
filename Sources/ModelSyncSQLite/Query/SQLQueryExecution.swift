import CSQLite
import ModelSyncCore

// Running queries on a connection: the statements come from the connection's cache, the
// rows are read by the same decoder as `SQLModel.all`.

extension SQLQuery {
    // The two fetches are inlinable, so that the caller's module specializes them for its
    // element type (see `SQLPreparedQuery`); the statement is run by `runSelect`, which is not
    // generic in its result.

    /// Every element the query reads, in its order.
    @inlinable
    public func fetchAll(_ db: SQLiteConnection) throws -> [Element] {
        var elements: [Element] = []
        try runSelect(all: true, db) { elements = try readAll($0) }
        return elements
    }

    /// The first element the query reads (`LIMIT 1`), or nil.
    @inlinable
    public func fetchOne(_ db: SQLiteConnection) throws -> Element? {
        var element: Element?
        try runSelect(all: false, db) { element = try readFirst($0) }
        return element
    }

    /// Every row `statement` reads from here on, as elements.
    @inlinable
    func readAll(_ statement: SQLStatement) throws -> [Element] {
        var elements: [Element] = []
        // The decoder holds only the statement and the table, so one serves every row.
        var row = SQLRowDecoder(statement: statement.handle, table: Root.sqlTable)
        while try statement.step() {
            elements.append(try decode(&row))
        }
        return elements
    }

    /// The next row `statement` reads, as an element, or nil.
    @inlinable
    func readFirst(_ statement: SQLStatement) throws -> Element? {
        guard try statement.step() else { return nil }
        var row = SQLRowDecoder(statement: statement.handle, table: Root.sqlTable)
        return try decode(&row)
    }

    /// The element whose primary key is `key`, among those the query reads, or nil.
    public func fetchOne(_ db: SQLiteConnection, key: some SQLColumnEncodable) throws -> Element? {
        try `where`(key: key).fetchOne(db)
    }

    /// The element whose composite primary key is `key` (values in key order), or nil.
    public func fetchOne(_ db: SQLiteConnection, key: [SQLValue]) throws -> Element? {
        try `where`(key: key).fetchOne(db)
    }

    /// How many elements the query reads. A plain query of models counts with `SELECT
    /// count(*) … WHERE …`; one with chosen columns or aggregates, `DISTINCT`, groups, a limit
    /// or an offset counts its rows as a subquery.
    public func fetchCount(_ db: SQLiteConnection) throws -> Int {
        try run(renderedCount(), db) { statement in
            try statement.step() ? Int(statement.value(at: 0).integerValue ?? 0) : 0
        }
    }

    /// Whether the query reads at least one row (`SELECT EXISTS (…)`).
    public func exists(_ db: SQLiteConnection) throws -> Bool {
        try run(renderedExists(), db) { statement in
            try statement.step() && statement.value(at: 0) == .integer(1)
        }
    }

    /// The statement ``fetchOne(_:)-(SQLiteConnection)`` runs: the query with `LIMIT 1` (a smaller limit stays).
    public func renderedFirst() throws -> SQLFragment {
        try firstStatement.rendered()
    }

    /// The statement with `LIMIT 1`.
    var firstStatement: SelectStatement { statement.firstRowOnly }

    /// The statement ``fetchCount(_:)-(SQLiteConnection)`` runs, and its arguments.
    public func renderedCount() throws -> SQLFragment {
        let count = SQLNode.function("count", [.keyword("*")], distinct: false)
        var counting = statement
        if readsModelRows {
            counting.columns = [count]
            counting.orderings = []
        } else {
            counting = SelectStatement(table: statement.table, source: .statement(try statement.rendered(), tables: []), columns: [count])
        }
        return try counting.rendered()
    }

    /// Whether the query reads one element per row of its source: the model's own columns,
    /// plainly. Chosen columns may hold aggregates (`.select { $0.views.sum() }` reads one
    /// element from many rows), so those are counted through a subquery.
    private var readsModelRows: Bool {
        guard statement.isPlain, statement.columns.count == 1, case .keyword(let list) = statement.columns[0] else { return false }
        return list == Root.sqlTable.columnList
    }

    /// The statement ``exists(_:)-(SQLiteConnection)`` runs, and its arguments.
    public func renderedExists() throws -> SQLFragment {
        let query = try statement.rendered()
        return SQLFragment("SELECT EXISTS (\(query.sql))", query.arguments)
    }

    /// A cursor that reads the elements one at a time, for results too large to hold at
    /// once. Use it inside the `read` / `write` closure that gave you `db`, and do not keep
    /// it beyond: the statement belongs to the connection.
    public func fetchCursor(_ db: SQLiteConnection) throws -> SQLCursor<Element> {
        let fragment = try statement.rendered()
        let statement = try translatingUnknownColumns { try db.statement(for: fragment.sql) }
        db.recordReads(of: statement)
        return try SQLCursor(statement: statement, arguments: fragment.arguments, table: Root.sqlTable, decodeRow: decode)
    }

    /// Runs `fragment` on a cached statement.
    func run<T>(_ fragment: SQLFragment, _ db: SQLiteConnection, _ body: (SQLStatement) throws -> T) throws -> T {
        try translatingUnknownColumns { try db.withStatement(fragment.sql, fragment.arguments, body) }
    }

    /// Runs the whole query (`all`) or its first row's statement through the connection's
    /// recent selects (see `withSelect(_:firstRowOnly:_:)`).
    @usableFromInline
    func runSelect(all: Bool, _ db: SQLiteConnection, _ body: (SQLStatement) throws -> Void) throws {
        try translatingUnknownColumns { try db.withSelect(statement, firstRowOnly: !all, body) }
    }

    /// SQLite's "no such column" as a ``SQLiteError/Kind/unknownColumn(table:column:)`` error,
    /// with the SQL of the statement that raised it.
    func translatingUnknownColumns<T>(_ body: () throws -> T) throws -> T {
        try ModelSyncSQLite.translatingUnknownColumns(of: statement.table, body)
    }
}

/// SQLite's "no such column" as a ``SQLiteError/Kind/unknownColumn(table:column:)`` error of
/// `table`, with the SQL of the statement that raised it.
func translatingUnknownColumns<T>(of table: String, _ body: () throws -> T) throws -> T {
    let prefix = "no such column: "
    do {
        return try body()
    } catch let error as SQLiteError where error.kind == .sqlite && error.message.hasPrefix(prefix) {
        throw SQLiteError.unknownColumn(table: table, column: String(error.message.dropFirst(prefix.count)), sql: error.sql)
    }
}

// MARK: - Writing

/// One `SET column = value` of ``SQLQuery/updateAll(_:_:)-(_,SQLAssignment<Root>...)``.
public struct SQLAssignment<Root: SQLModel>: Sendable {
    let column: SQLNode
    let value: SQLNode

    /// Sets the column of `keyPath` to `value` (as the column stores it: through the
    /// property's transformer, when the column holds its representation).
    public static func set<V: SQLColumnEncodable>(_ keyPath: KeyPath<Root, V>, to value: V) -> Self {
        Self(column: Root.sqlTable.fieldColumnNode(keyPath), value: SQLExpression(keyPath).operand(value))
    }

    /// Sets the column of `keyPath` to an expression: `.set(\.views, to: SQLExpression(\.views) + 1)`.
    /// An expression stored another way than the column (a plain value for a column that holds
    /// its transformer's representation) fails with ``SQLiteError/Kind/transformedColumn(table:column:)``.
    public static func set<V>(_ keyPath: KeyPath<Root, V>, to expression: SQLExpression<Root, V>) -> Self {
        Self(
            column: Root.sqlTable.fieldColumnNode(keyPath),
            value: SQLExpression(keyPath).comparableNode(expression.node, transformed: expression.transformed))
    }

    /// Sets the column of `keyPath` to an expression built from the columns:
    /// `.set(\.views) { $0.views + 1 }`.
    public static func set<V>(_ keyPath: KeyPath<Root, V>, _ expression: (SQLQueryColumns<Root>) -> SQLExpression<Root, V>) -> Self {
        set(keyPath, to: expression(SQLQueryColumns()))
    }
}

extension SQLQuery {
    /// Deletes the rows the query reads; returns how many. A query with a limit, an offset,
    /// `DISTINCT` or groups deletes the rows its `SELECT` would read (by rowid, or by primary
    /// key in a `WITHOUT ROWID` table).
    ///
    /// For a ``SoftDeletableModel`` it soft-deletes: one `UPDATE` sets `deletedAt` (and a
    /// ``TimestampedModel``'s `updatedAt`) on those of the rows that are live, and returns how
    /// many; ``forceDeleteAll(_:)`` removes rows. No hooks run.
    @discardableResult
    public func deleteAll(_ db: SQLiteConnection) throws -> Int {
        if let softDeletion = Root.softDeletion(at: db.configuration.now()) {
            return try with { $0.addFilter(softDeletion.isLive) }.updateAll(db, softDeletion.assignments)
        }
        return try removeAll(db)
    }

    /// Runs the query's `DELETE`; returns how many rows it removed.
    func removeAll(_ db: SQLiteConnection) throws -> Int {
        try run(renderedDelete(), db) { try $0.run() }
        return db.changes
    }

    /// The `DELETE` statement that ``deleteAll(_:)`` runs, and its arguments.
    public func renderedDelete() throws -> SQLFragment {
        try writeStatement("DELETE FROM " + checkedIdentifier(statement.table)) { _ in }
    }

    /// Sets columns of the rows the query reads (chosen as ``deleteAll(_:)`` chooses them);
    /// returns how many rows changed: `Post.where(\.userId == 1).updateAll(db, .set(\.views, to: 0))`.
    @discardableResult
    public func updateAll(_ db: SQLiteConnection, _ assignments: SQLAssignment<Root>...) throws -> Int {
        try updateAll(db, assignments)
    }

    /// Sets columns of the rows the query reads; returns how many rows changed.
    @discardableResult
    public func updateAll(_ db: SQLiteConnection, _ assignments: [SQLAssignment<Root>]) throws -> Int {
        guard !assignments.isEmpty else { return 0 }
        try run(renderedUpdate(assignments), db) { try $0.run() }
        return db.changes
    }

    /// The `UPDATE` statement that ``updateAll(_:_:)-(_,[SQLAssignment<Root>])`` runs, and its
    /// arguments.
    public func renderedUpdate(_ assignments: SQLAssignment<Root>...) throws -> SQLFragment {
        try renderedUpdate(assignments)
    }

    /// The `UPDATE` statement for `assignments`, and its arguments.
    public func renderedUpdate(_ assignments: [SQLAssignment<Root>]) throws -> SQLFragment {
        try writeStatement("UPDATE " + checkedIdentifier(statement.table) + " SET ") { renderer in
            for (index, assignment) in assignments.enumerated() {
                if index > 0 { renderer.write(", ") }
                try renderer.append(assignment.column)
                renderer.write(" = ")
                try renderer.append(assignment.value)
            }
        }
    }

    /// `head`, what `body` writes, and the `WHERE` that picks the query's rows.
    private func writeStatement(_ head: String, _ body: (inout SQLRenderer) throws -> Void) throws -> SQLFragment {
        guard case .table(let name) = statement.source else {
            throw SQLiteError.misuse("a query over a raw statement cannot update or delete rows")
        }
        var renderer = SQLRenderer(table: name)
        renderer.write(head)
        try body(&renderer)
        if statement.isPlain {
            if let condition = statement.condition {
                renderer.write(" WHERE ")
                try renderer.append(condition)
            }
        } else {
            // The rows the SELECT reads, by their key.
            let table = Root.sqlTable
            let key: [SQLNode] =
                table.schema.withoutRowID
                ? table.primaryKey.map { .column(table: name, name: table.schema.fields[$0].column) } : [.keyword("rowid")]
            var keys = statement
            keys.columns = key
            renderer.write(" WHERE ")
            // Several key columns are a row value: `("a", "b") IN (SELECT "a", "b" …)`.
            try renderer.append(key.count == 1 ? key[0] : .function("", key, distinct: false))
            renderer.write(" IN (")
            try renderer.append(keys)
            renderer.write(")")
        }
        return renderer.fragment
    }
}

/// Reads the elements of a query one row at a time (``SQLQuery/fetchCursor(_:)``).
///
/// ```swift
/// try db.read { db in
///     let cursor = try Post.order(\.id).fetchCursor(db)
///     while let post = try cursor.next() { … }
/// }
/// ```
public final class SQLCursor<Element> {
    private let statement: SQLStatement
    private var row: SQLRowDecoder
    private let decodeRow: (inout SQLRowDecoder) throws -> Element
    private var isFinished = false

    init(statement: SQLStatement, arguments: [SQLValue], table: SQLTable, decodeRow: @escaping (inout SQLRowDecoder) throws -> Element) throws {
        self.statement = statement
        self.row = SQLRowDecoder(statement: statement.handle, table: table)
        self.decodeRow = decodeRow
        // Taken from the cache: marked in use so that the same SQL run meanwhile gets a
        // statement of its own.
        statement.isInUse = true
        do {
            try statement.bind(arguments)
        } catch {
            finish()
            throw error
        }
    }

    deinit { finish() }

    /// The next element, or nil after the last one.
    public func next() throws -> Element? {
        guard !isFinished else { return nil }
        do {
            if try statement.step() { return try decodeRow(&row) }
        } catch {
            finish()
            throw error
        }
        finish()
        return nil
    }

    /// Resets the statement and gives it back to the connection's cache.
    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        statement.reset()
        statement.isInUse = false
    }
}
