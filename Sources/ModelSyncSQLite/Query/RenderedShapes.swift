import CSQLite
import ModelSyncCore

// Rendering a query once per shape. A loop that runs one query with other values
// (`Post.where(\.id == key).fetchOne(db)` per key) builds a statement that differs from the
// previous one only in its bound values; its SQL text is the same. Each connection keeps the
// last few `SELECT`s it rendered: when the next one renders like one of them, only its
// arguments are collected, by the same walk with the text switched off (so they come in the
// same order).

extension SQLNode {
    /// Whether the two nodes render the same SQL text, whatever values they bind. Compared by
    /// bytes, like the statement cache (`"é"` and `"e\u{301}"` are two column names). A
    /// failure is never alike: rendering must throw it.
    func rendersLike(_ other: SQLNode) -> Bool {
        switch (self, other) {
        case let (.column(column), .column(otherColumn)):
            return column.isSame(as: otherColumn)
        case (.value, .value):
            return true
        case let (.columnValue(column, op, _), .columnValue(otherColumn, otherOp, _)):
            return op.isIdentical(to: otherOp) && column.isSame(as: otherColumn)
        case let (.raw(fragment), .raw(otherFragment)):
            return fragment.sql.isIdentical(to: otherFragment.sql)
        case let (.keyword(text), .keyword(otherText)):
            return text.isIdentical(to: otherText)
        case let (.prefix(op, operand), .prefix(otherOp, otherOperand)), let (.postfix(operand, op), .postfix(otherOperand, otherOp)):
            return op.isIdentical(to: otherOp) && operand.rendersLike(otherOperand)
        case let (.binary(left, op, right), .binary(otherLeft, otherOp, otherRight)):
            return op.isIdentical(to: otherOp) && left.rendersLike(otherLeft) && right.rendersLike(otherRight)
        case let (.chain(op, items), .chain(otherOp, otherItems)):
            return op.isIdentical(to: otherOp) && items.rendersLike(otherItems)
        case let (.function(name, arguments, distinct), .function(otherName, otherArguments, otherDistinct)):
            return distinct == otherDistinct && name.isIdentical(to: otherName) && arguments.rendersLike(otherArguments)
        case let (.between(operand, low, high, negated), .between(otherOperand, otherLow, otherHigh, otherNegated)):
            return negated == otherNegated && operand.rendersLike(otherOperand) && low.rendersLike(otherLow) && high.rendersLike(otherHigh)
        case let (.inList(operand, list, negated), .inList(otherOperand, otherList, otherNegated)):
            guard negated == otherNegated, operand.rendersLike(otherOperand) else { return false }
            // A list that binds as one JSON array is one parameter, whatever its length.
            let asJSON = SQLRenderer.bindsAsJSON(list)
            guard asJSON == SQLRenderer.bindsAsJSON(otherList) else { return false }
            return asJSON || list.rendersLike(otherList)
        case let (.inSubquery(operand, select, negated), .inSubquery(otherOperand, otherSelect, otherNegated)):
            return negated == otherNegated && operand.rendersLike(otherOperand) && select.rendersLike(otherSelect)
        case let (.exists(select), .exists(otherSelect)), let (.subquery(select), .subquery(otherSelect)):
            return select.rendersLike(otherSelect)
        case let (.pattern(operand, op, pattern, escape), .pattern(otherOperand, otherOp, otherPattern, otherEscape)):
            guard op.isIdentical(to: otherOp), operand.rendersLike(otherOperand), pattern.rendersLike(otherPattern) else { return false }
            switch (escape, otherEscape) {
            case (nil, nil): return true
            case let (escape?, otherEscape?): return escape.rendersLike(otherEscape)
            default: return false
            }
        case let (.bytes(operand), .bytes(otherOperand)):
            return operand.rendersLike(otherOperand)
        case let (.jsonArrayContains(array, element), .jsonArrayContains(otherArray, otherElement)):
            return array.rendersLike(otherArray) && element.rendersLike(otherElement)
        default:
            return false
        }
    }
}

extension [SQLNode] {
    func rendersLike(_ other: [SQLNode]) -> Bool {
        guard count == other.count else { return false }
        // One buffer holds one list: a model's select list is the table's own array in every
        // query of it, so its (long) column list is not compared.
        let sameBuffer = withUnsafeBufferPointer { nodes in
            other.withUnsafeBufferPointer { otherNodes in nodes.baseAddress == otherNodes.baseAddress }
        }
        return sameBuffer || zip(self, other).allSatisfy { $0.rendersLike($1) }
    }
}

extension SQLNode? {
    func rendersLike(_ other: SQLNode?) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case let (node?, otherNode?): node.rendersLike(otherNode)
        default: false
        }
    }
}

extension SelectStatement {
    /// Whether the two statements render the same SQL text, whatever values they bind; this one
    /// as its ``firstRowOnly`` form when `firstRowOnly` is set.
    func rendersLike(_ other: SelectStatement, firstRowOnly: Bool = false) -> Bool {
        guard isDistinct == other.isDistinct,
            (firstRowOnly || limit != nil) == (other.limit != nil), (offset == nil) == (other.offset == nil)
        else { return false }
        // The head first: usually the same object (one comparison), else it differs by table.
        guard head.rendersLike(other.head), filter.rendersLike(other.filter), scope.rendersLike(other.scope) else { return false }
        // Both without the rarer clauses (most queries), or the same ones.
        if hasSameClauseBox(as: other) { return true }
        return orderings.count == other.orderings.count
            && zip(orderings, other.orderings).allSatisfy { term, otherTerm in
                term.descending == otherTerm.descending && term.nulls == otherTerm.nulls && term.node.rendersLike(otherTerm.node)
            }
            && groupBy.rendersLike(other.groupBy) && having.rendersLike(other.having)
    }
}

extension SelectHead {
    /// Whether the two render the same text: the same object (every query of a model has its
    /// table's), or the same table, source and select list.
    func rendersLike(_ other: SelectHead) -> Bool {
        if self === other { return true }
        guard table.isIdentical(to: other.table) else { return false }
        switch (source, other.source) {
        case let (.table(name), .table(otherName)):
            guard name.isIdentical(to: otherName) else { return false }
        case let (.statement(fragment, _), .statement(otherFragment, _)):
            guard fragment.sql.isIdentical(to: otherFragment.sql) else { return false }
        default:
            return false
        }
        return columns.rendersLike(other.columns)
    }
}

/// The last few `SELECT`s a connection rendered, with their SQL, most recent last: enough for
/// a loop that alternates a few queries, small enough to compare one by one.
struct RecentSelects {
    static let capacity = 8

    /// A reference, so that scanning the entries copies no statement.
    final class Entry {
        let select: SelectStatement
        let sql: String
        /// The prepared statement of `sql`, once one ran: the next query of this shape binds it
        /// without looking its SQL text up in the statement cache. (Statements are finalised
        /// only when released, so holding it keeps it valid.)
        var prepared: SQLStatement?
        init(_ select: SelectStatement, _ sql: String) { (self.select, self.sql) = (select, sql) }

        /// Whether `query` renders like this entry's select (see ``SelectStatement/rendersLike(_:firstRowOnly:)``);
        /// a method, so that the entry's select is read in place rather than copied out.
        func isRendered(like query: borrowing SelectStatement, firstRowOnly: Bool) -> Bool {
            query.rendersLike(select, firstRowOnly: firstRowOnly)
        }
    }

    private var entries: [Entry] = []

    /// A recent statement that renders like `select` (as its first-row form when `firstRowOnly`
    /// is set), marked most recent.
    mutating func entry(renderingLike select: borrowing SelectStatement, firstRowOnly: Bool) -> Entry? {
        // The most recent first: a loop usually runs one shape.
        var index = entries.count - 1
        while index >= 0, !entries[index].isRendered(like: select, firstRowOnly: firstRowOnly) { index -= 1 }
        guard index >= 0 else { return nil }
        let entry = entries[index]
        if index != entries.count - 1 {
            entries.remove(at: index)
            entries.append(entry)
        }
        return entry
    }

    mutating func add(_ select: SelectStatement, sql: String) -> Entry {
        if entries.count == Self.capacity { entries.removeFirst() }
        let entry = Entry(select, sql)
        entries.append(entry)
        return entry
    }

    mutating func removeAll() { entries.removeAll() }
}

extension SQLiteConnection {
    /// Runs `body` with the prepared statement of `select`, its values bound. When the select
    /// renders like one rendered here recently, that one's statement (its entry's own when it
    /// is free, else one from the cache) is bound straight from the tree: no SQL text and no
    /// argument list are built. Otherwise the select is rendered and becomes a recent one.
    /// `firstRowOnly` runs the select's ``SelectStatement/firstRowOnly`` form.
    func withSelect<T>(_ select: borrowing SelectStatement, firstRowOnly: Bool, _ body: (SQLStatement) throws -> T) throws -> T {
        if let entry = recentSelects.entry(renderingLike: select, firstRowOnly: firstRowOnly) {
            let prepared: SQLStatement
            if let statement = entry.prepared, !statement.isInUse {
                prepared = statement
            } else {
                prepared = try statement(for: entry.sql)
                if entry.prepared == nil { entry.prepared = prepared }
            }
            // Bound before it is used, not in the closure given to `withUnbound`, which would
            // copy the select's parts to capture them. The statement is not in use, and its use
            // clears the values afterwards (one refused before it runs, when the connection is
            // interrupted, keeps them until its next use binds every parameter again).
            do {
                var renderer = SQLRenderer(binding: prepared)
                try renderer.append(select, firstRowOnly: firstRowOnly)
                try renderer.finishBinding()
            } catch {
                sqlite3_clear_bindings(prepared.handle)
                throw error
            }
            return try withUnbound(prepared, body)
        }
        let running = firstRowOnly ? select.firstRowOnly : copy select
        let fragment = try running.rendered()
        let entry = recentSelects.add(running, sql: fragment.sql)
        return try withStatement(fragment.sql, fragment.arguments) { statement in
            if entry.prepared == nil { entry.prepared = statement }
            return try body(statement)
        }
    }
}
