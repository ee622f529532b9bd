import ModelSyncCore

/// A query built and rendered once, with parameters in place of some of its values, then run
/// many times with new values: the loop of small lookups that would otherwise build, compare
/// and walk a query per call.
///
/// ```swift
/// let postsOfUser = try Post.preparedQuery(Int.self) { userId in
///     Post.where(\.userId == userId).order(.desc(\.id))
/// }
/// let posts = try db.read { db in try postsOfUser.fetchAll(db, 42) }
/// ```
///
/// Each run binds the values to the connection's cached statement of the query's SQL; nothing
/// else is built. A parameter binds as the column it is compared with stores values (through
/// its transformer, if it has one); `==` and `!=` with an optional parameter are `IS` and
/// `IS NOT`, so that nil finds the rows whose column is NULL, as `== nil` does in a query.
/// A parameter can stand where an expression of its type can: in comparisons, arithmetic,
/// function arguments. It cannot stand for a list (`in`), a limit or an offset.
public struct SQLPreparedQuery<Root: SQLModel, Element, each Parameter: SQLColumnEncodable>: Sendable {
    @usableFromInline let query: SQLQuery<Root, Element>
    /// The whole query, for ``fetchAll(_:_:)``.
    @usableFromInline let all: RenderedWithParameters
    /// The query with `LIMIT 1`, for ``fetchOne(_:_:)``.
    @usableFromInline let first: RenderedWithParameters

    init(_ query: SQLQuery<Root, Element>) throws {
        self.query = query
        all = try RenderedWithParameters(query.statement)
        first = try RenderedWithParameters(query.firstStatement)
    }

    /// The SQL text that ``fetchAll(_:_:)`` runs; each parameter is a `?`.
    public var sql: String { all.sql }

    // The two fetches are inlinable so that the caller's module specializes them for its
    // model and parameter types: called generically, looking up the metadata of the
    // parameter pack and of the result cost as much as binding and stepping.

    /// Every element the query reads with these parameter values, in its order.
    @inlinable
    public func fetchAll(_ db: SQLiteConnection, _ values: repeat each Parameter) throws -> [Element] {
        var elements: [Element] = []
        try all.run(db) { statement in
            try all.bind(repeat each values, to: statement)
            elements = try query.readAll(statement)
        }
        return elements
    }

    /// The first element the query reads with these parameter values (`LIMIT 1`), or nil.
    @inlinable
    public func fetchOne(_ db: SQLiteConnection, _ values: repeat each Parameter) throws -> Element? {
        var element: Element?
        try first.run(db) { statement in
            try first.bind(repeat each values, to: statement)
            element = try query.readFirst(statement)
        }
        return element
    }
}

extension SQLModel {
    /// A query with parameters, built once: `build` gets one expression per type in
    /// `parameterTypes`, to use where the query's values would go, and the prepared query
    /// takes their values on each run.
    ///
    /// ```swift
    /// let byTitle = try Post.preparedQuery(String.self, Int.self) { title, minimumViews in
    ///     Post.where { $0.title == title && $0.views >= minimumViews }
    /// }
    /// let post = try byTitle.fetchOne(db, "Hello", 10)
    /// ```
    ///
    /// Throws what rendering the query would: an unknown column, a value that cannot be bound,
    /// or a parameter where only a value can stand (a list, a limit).
    public static func preparedQuery<each Parameter: SQLColumnEncodable, Element>(
        _ parameterTypes: repeat (each Parameter).Type,
        query build: (repeat SQLExpression<Self, each Parameter>) -> SQLQuery<Self, Element>
    ) throws -> SQLPreparedQuery<Self, Element, repeat each Parameter> {
        let numbering = ParameterNumbering()
        return try SQLPreparedQuery(build(repeat numbering.next(each parameterTypes)))
    }
}

/// Hands out parameter expressions numbered in order.
private final class ParameterNumbering {
    private var count = 0

    func next<Root: SQLModel, Value>(_ type: Value.Type) -> SQLExpression<Root, Value> {
        defer { count += 1 }
        return SQLExpression(node: .parameter(count, transformed: nil))
    }
}

/// Where a prepared query's parameter is bound: parameter `position` of the statement.
struct SQLParameterSlot: Sendable {
    let position: Int32
    let parameter: Int
    let transformed: TransformedColumn?
}

/// A statement rendered with parameters: its text, the values it binds itself (limits, the
/// query's own constants) and where each parameter goes.
@usableFromInline
struct RenderedWithParameters: Sendable {
    let sql: String
    /// The table whose columns the statement names unqualified, for "no such column" errors.
    let table: String
    let fixedArguments: [(position: Int32, value: SQLValue)]
    let slots: [SQLParameterSlot]

    init(_ select: SelectStatement) throws {
        var renderer = SQLRenderer.preparing()
        try renderer.append(select)
        let parameterPositions = Set(renderer.parameters.map(\.position))
        sql = renderer.sql
        table = select.table
        fixedArguments = renderer.arguments.enumerated().compactMap { index, value in
            let position = Int32(index + 1)
            return parameterPositions.contains(position) ? nil : (position, value)
        }
        slots = renderer.parameters
    }

    /// Runs `body` on the connection's statement of the SQL, the query's own values bound.
    @usableFromInline
    func run(_ db: SQLiteConnection, _ body: (SQLStatement) throws -> Void) throws {
        try translatingUnknownColumns(of: table) {
            // The same `String` every run: the statement cache finds it by identity, unhashed.
            try db.withUnbound(try db.statement(for: sql)) { statement in
                for (position, value) in fixedArguments {
                    try statement.check(value.bind(to: statement.handle, at: position))
                }
                try body(statement)
            }
        }
    }

    /// Binds the values to the parameters, in order.
    @inlinable
    func bind<each Value: SQLColumnEncodable>(_ values: repeat each Value, to statement: SQLStatement) throws {
        var parameter = 0
        for value in repeat each values {
            try bind(value, asParameter: parameter, to: statement)
            parameter += 1
        }
    }

    /// Binds `value` wherever parameter `parameter` stands, as its column stores it. (An
    /// existential, so that this is not generic: boxing an integer or a string allocates
    /// nothing.)
    @usableFromInline
    func bind(_ value: any SQLColumnEncodable, asParameter parameter: Int, to statement: SQLStatement) throws {
        for slot in slots where slot.parameter == parameter {
            let stored = try storedForm(of: value) { try slot.transformed.map { try $0.transform.store(value) } ?? value.sqlValue() }
            try statement.check(stored.bind(to: statement.handle, at: slot.position))
        }
    }
}
