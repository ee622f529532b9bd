import CSQLite
import ModelSyncCore

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
