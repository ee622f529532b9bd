import CSQLite
import ModelSyncCore
import ModelSyncJSON

// What every relation shares: the protocol the table and delete paths see, delete rules,
// errors, the inspectable SQL of a load, naming conventions and the grouped fetch loop.

/// A relation declared on a model, as its table and its deletes see it. List the relations
/// whose rules matter in ``SQLModel/relations``: a ``BelongsTo`` adds a `FOREIGN KEY` clause to
/// the table it is declared on; a polymorphic relation applies its ``DeleteRule`` itself.
public protocol ModelRelation<Owner>: Sendable {
    /// The model the relation is declared on.
    associatedtype Owner: SQLModel
    /// The `FOREIGN KEY … REFERENCES … ON DELETE …` clause for the owner's table, if the
    /// relation has one.
    func foreignKeyClause() throws -> String?
    /// Throws ``RelationError/deleteRestricted(table:referencingTable:columns:rows:)`` when a
    /// restrict rule that the library applies forbids deleting `owner`.
    func checkDelete(of owner: Owner, _ db: SQLiteConnection) throws
    /// Applies a cascade or set-null rule that the library applies, before `owner` is deleted.
    func prepareDelete(of owner: Owner, _ db: SQLiteConnection) throws
}

extension ModelRelation {
    /// No foreign key.
    public func foreignKeyClause() throws -> String? { nil }
    /// No check.
    public func checkDelete(of owner: Owner, _ db: SQLiteConnection) throws {}
    /// Nothing to apply.
    public func prepareDelete(of owner: Owner, _ db: SQLiteConnection) throws {}
}

/// What deleting a parent row does to the rows that refer to it.
public enum DeleteRule: String, Sendable, Equatable {
    /// The referring rows are deleted too.
    case cascade
    /// The referring rows keep existing with their reference set to NULL (the reference
    /// columns must be optional).
    case setNull
    /// The parent cannot be deleted while rows refer to it: the delete throws
    /// ``RelationError/deleteRestricted(table:referencingTable:columns:rows:)``.
    case restrict

    var sql: String {
        switch self {
        case .cascade: "CASCADE"
        case .setNull: "SET NULL"
        case .restrict: "RESTRICT"
        }
    }
}

/// A relation failure. Constraint and I/O failures of the statements themselves stay
/// ``SQLiteError``s.
public enum RelationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Deleting a row of `table` was refused: `rows` rows of `referencingTable` refer to it
    /// through `columns` under a restrict rule. Nothing was deleted.
    case deleteRestricted(table: String, referencingTable: String, columns: [String], rows: Int)
    /// A relation cannot work as declared on `model` (a missing foreign-key property, a
    /// set-null rule on a column that cannot hold NULL, a composite key).
    case invalidDeclaration(model: String, reason: String)
    /// A polymorphic type column holds `value`, which names none of the relation's types.
    case unknownType(column: String, value: String)
    /// A key that relations cannot carry to SQLite in a list (a blob).
    case unsupportedKey(SQLValue)

    /// What went wrong, naming the tables and columns.
    public var description: String {
        switch self {
        case .deleteRestricted(let table, let referencing, let columns, let rows):
            "cannot delete from \(table): \(rows) row(s) of \(referencing) refer to it through \(columns.joined(separator: ", ")) (restrict)"
        case .invalidDeclaration(let model, let reason): "relation of \(model): \(reason)"
        case .unknownType(let column, let value): "\(column) holds '\(value)', which is none of the relation's types"
        case .unsupportedKey(let value): "\(value) cannot be a relation key"
        }
    }
}

/// The statement a relation runs: its SQL text and the values bound to its parameters, in
/// order. Every load has a `sql(for:…)` twin that returns it without running it.
public struct RelationSQL: Sendable, Equatable, CustomStringConvertible {
    /// The SQL text, with `?` parameters.
    public var sql: String
    /// The values bound to the parameters.
    public var arguments: [SQLValue]

    /// Creates a statement description.
    public init(sql: String, arguments: [SQLValue]) {
        self.sql = sql
        self.arguments = arguments
    }

    /// The SQL, then the arguments.
    public var description: String { "\(sql) -- \(arguments)" }
}

/// The conditions and order on the related side of a load, as SQL fragments: from the
/// string API (`where:`, `order:`) or rendered from a query of the related model.
struct RelatedFilter {
    var conditions: [SQLFragment] = []
    var orderings: [SQLFragment] = []

    init() {}

    /// Raw SQL after `WHERE` (plain `?` parameters) and after `ORDER BY`.
    init(where condition: String?, _ arguments: [SQLValue], order: String? = nil) {
        if let condition { conditions = [SQLFragment(condition, arguments)] }
        if let order { orderings = [SQLFragment(order)] }
    }

    /// The conditions and order of `query`; `qualified` writes every column with its table
    /// (loads that join a pivot). Limits, offsets, grouping and raw sources would apply to
    /// all owners at once, so they are refused.
    init<Model: SQLModel>(_ query: SQLQuery<Model, Model>, qualified: Bool) throws {
        let statement = query.statement
        guard statement.isPlain, case .table = statement.source else {
            throw SQLiteError.misuse("a related-side query of \(Model.schema.name) takes conditions and an order only (no limit, offset, distinct, grouping or raw source)")
        }
        func renderer() -> SQLRenderer { qualified ? SQLRenderer() : SQLRenderer(table: statement.table) }
        if let filter = statement.filter {
            var conditions = renderer()
            try conditions.append(filter)
            self.conditions = [conditions.fragment]
        }
        if !statement.orderings.isEmpty {
            var orderings = renderer()
            try orderings.appendOrderings(statement.orderings)
            self.orderings = [orderings.fragment]
        }
    }

    /// Both filters: every condition, then `self`'s order before `other`'s.
    func adding(_ other: RelatedFilter) -> RelatedFilter {
        var both = self
        both.conditions += other.conditions
        both.orderings += other.orderings
        return both
    }
}

// MARK: - Conventions and fields

/// `User` → `userId`, `HeroEnemy` → `heroEnemyId`, `URLItem` → `urlItemId`: the conventional
/// name of a property holding a `type`'s key.
func conventionalForeignKey(_ type: any SQLModel.Type) -> String {
    let name = type.schema.name
    let characters = Array(name)
    // The leading capitals are lowered, except the one that starts the next word.
    var upper = characters.prefix { $0.isUppercase }.count
    if upper > 1, upper < characters.count { upper -= 1 }
    upper = max(upper, 1)
    return String(characters.prefix(upper)).lowercased() + String(characters.dropFirst(upper)) + "Id"
}

/// The property name of a key path of `M`, or its description when the schema has no such
/// field (resolving it then fails with ``RelationError/invalidDeclaration(model:reason:)``).
func propertyName<M: SQLModel>(_ keyPath: PartialKeyPath<M>) -> String {
    M.schema.field(for: keyPath)?.name ?? "\(keyPath)"
}

/// A field of a model that a relation uses, resolved by property name.
struct RelationField {
    /// The field's index in the schema (and its column's index in a `SELECT` of the model).
    let index: Int
    let field: FieldSchema
    /// The quoted column name.
    var column: String { quoteIdentifier(field.column) }

    init<M: SQLModel>(_ model: M.Type, _ name: String) throws {
        guard let index = M.schema.fields.firstIndex(where: { $0.name == name }) else {
            throw RelationError.invalidDeclaration(model: M.schema.name, reason: "it has no stored property '\(name)'")
        }
        self.index = index
        self.field = M.schema.fields[index]
    }

    /// The model's single primary-key field (`name` nil) or the named one.
    init<M: SQLModel>(key model: M.Type, _ name: String?) throws {
        guard let name = name ?? (M.schema.primaryKey.count == 1 ? M.schema.primaryKey[0] : nil) else {
            throw RelationError.invalidDeclaration(
                model: M.schema.name, reason: "relations need a single-column primary key or an explicit key property")
        }
        try self.init(model, name)
    }

    /// `"table"."column"`.
    func qualified(in table: SQLTable) -> String { quoteIdentifier(table.name) + "." + column }
}

/// A polymorphic reference's type column and the value naming one model type in it.
struct MorphType: Sendable {
    /// The property holding the type name.
    let property: String
    /// The type name: the model's ``SQLModel/morphName``.
    let value: String
}


// MARK: - Building and running loads

/// The distinct keys among `values`, in first-seen order, without NULLs (nothing refers
/// through a NULL).
func distinctKeys(_ values: [SQLValue]) -> [SQLValue] {
    var seen = Set<SQLValue>()
    return values.filter { $0 != .null && seen.insert($0).inserted }
}

/// The SQL of a load: `select` (a `SELECT … FROM …`), then the relation's fixed conditions,
/// `keyColumn` compared with `keys` (`= ?` for one key; for several, one parameter holding a
/// JSON array read by `json_each`, so any number of keys stays one statement under SQLite's
/// bound-parameter limit and one cached statement), the related-side filter and order.
func relationSQL(
    _ select: String, fixed: [(column: String, value: SQLValue)], keyColumn: String, keys: [SQLValue], filter: RelatedFilter
) throws -> RelationSQL {
    var conditions: [String] = []
    var arguments: [SQLValue] = []
    for (column, value) in fixed {
        conditions.append("\(column) = ?")
        arguments.append(value)
    }
    if keys.count == 1 {
        conditions.append("\(keyColumn) = ?")
        arguments.append(keys[0])
    } else {
        conditions.append("\(keyColumn) IN (SELECT value FROM json_each(?))")
        arguments.append(try jsonKeyList(keys))
    }
    for condition in filter.conditions {
        conditions.append("(\(condition.sql))")
        arguments += condition.arguments
    }
    var sql = select + " WHERE " + conditions.joined(separator: " AND ")
    if !filter.orderings.isEmpty {
        sql += " ORDER BY " + filter.orderings.map(\.sql).joined(separator: ", ")
        arguments += filter.orderings.flatMap(\.arguments)
    }
    return RelationSQL(sql: sql, arguments: arguments)
}

/// The keys as a JSON array: integers, reals and text (blobs have no JSON form).
func jsonKeyList(_ keys: [SQLValue]) throws -> SQLValue {
    var json = "["
    for (position, key) in keys.enumerated() {
        if position > 0 { json += "," }
        switch key {
        case .integer(let value): json += String(value)
        case .real(let value) where value.isFinite: json += "\(value)"
        case .text(let value): json += try JSONModelEncoder().encodeToString(value)
        default: throw RelationError.unsupportedKey(key)
        }
    }
    return .text(json + "]")
}

extension SQLiteConnection {
    /// Runs `request` and reads every row with the reader `makeReader` returns for the
    /// statement, grouped by the value of result column `keyColumn` (rows keep their order
    /// within a group). Rows of one key usually come together (SQLite walks the key list), so
    /// a run of equal keys is collected aside and hashed once.
    func groupedRows<Row>(
        _ request: RelationSQL, keyColumn: Int, _ makeReader: (SQLStatement) -> () throws -> Row
    ) throws -> [SQLValue: [Row]] {
        try withStatement(request.sql, request.arguments) { statement in
            let read = makeReader(statement)
            var groups: [SQLValue: [Row]] = [:]
            var runKey = SQLValue.null
            var run: [Row] = []
            while try statement.step() {
                let key = statement.value(at: keyColumn)
                if key != runKey {
                    if !run.isEmpty { groups[runKey, default: []].append(contentsOf: run) }
                    run.removeAll(keepingCapacity: true)
                    runKey = key
                }
                run.append(try read())
            }
            if !run.isEmpty { groups[runKey, default: []].append(contentsOf: run) }
            return groups
        }
    }
}
