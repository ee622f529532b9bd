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
        case let (.column(table, name), .column(otherTable, otherName)):
            return table.isIdentical(to: otherTable) && name.isIdentical(to: otherName)
        case (.value, .value):
            return true
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
        guard table.isIdentical(to: other.table), isDistinct == other.isDistinct,
            (firstRowOnly || limit != nil) == (other.limit != nil), (offset == nil) == (other.offset == nil)
        else { return false }
        switch (source, other.source) {
        case let (.table(name), .table(otherName)):
            guard name.isIdentical(to: otherName) else { return false }
        case let (.statement(fragment, _), .statement(otherFragment, _)):
            guard fragment.sql.isIdentical(to: otherFragment.sql) else { return false }
        default:
            return false
        }
        // The column list last: it is the longest text, and usually the same.
        return filter.rendersLike(other.filter) && scope.rendersLike(other.scope)
            && orderings.count == other.orderings.count
            && zip(orderings, other.orderings).allSatisfy { term, otherTerm in
                term.descending == otherTerm.descending && term.nulls == otherTerm.nulls && term.node.rendersLike(otherTerm.node)
            }
            && groupBy.rendersLike(other.groupBy) && having.rendersLike(other.having) && columns.rendersLike(other.columns)
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
    }

    private var entries: [Entry] = []

    /// A recent statement that renders like `select` (as its first-row form when `firstRowOnly`
    /// is set), marked most recent.
    mutating func entry(renderingLike select: SelectStatement, firstRowOnly: Bool) -> Entry? {
        guard let index = entries.lastIndex(where: { select.rendersLike($0.select, firstRowOnly: firstRowOnly) }) else { return nil }
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
    func withSelect<T>(_ select: SelectStatement, firstRowOnly: Bool, _ body: (SQLStatement) throws -> T) throws -> T {
        if let entry = recentSelects.entry(renderingLike: select, firstRowOnly: firstRowOnly) {
            let prepared: SQLStatement
            if let statement = entry.prepared, !statement.isInUse {
                prepared = statement
            } else {
                prepared = try statement(for: entry.sql)
                if entry.prepared == nil { entry.prepared = prepared }
            }
            return try withUnbound(prepared) { statement in
                var renderer = SQLRenderer(binding: statement)
                try renderer.append(select, firstRowOnly: firstRowOnly)
                try renderer.finishBinding()
                return try body(statement)
            }
        }
        let running = firstRowOnly ? select.firstRowOnly : select
        let fragment = try running.rendered()
        let entry = recentSelects.add(running, sql: fragment.sql)
        return try withStatement(fragment.sql, fragment.arguments) { statement in
            if entry.prepared == nil { entry.prepared = statement }
            return try body(statement)
        }
    }
}
