import CSQLite
import ModelSyncCore

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
