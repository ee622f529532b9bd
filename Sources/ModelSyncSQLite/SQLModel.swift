import CSQLite
import ModelSyncCore

/// A model with a generated row codec, stored in a SQLite table. `@Model` writes the
/// conformance; the requirements are public only because generated code in your module
/// implements them.
public protocol SQLModel: Model {
    /// The model's table, statements and DDL, computed once per type (generated).
    static var sqlTable: SQLTable { get }
    /// Whether opening a database adds the columns and indexes this model has and its table
    /// lacks (nothing is ever dropped). Off by default: a mismatch is then an error. Turn it on
    /// by declaring `static var autoAlters: Bool { true }` in the model.
    static var autoAlters: Bool { get }
    /// Reads every field from the columns of the current row (generated).
    init(row: inout SQLRowDecoder) throws
    /// Binds every field to the statement's parameters (generated).
    func bind(to row: inout SQLRowEncoder) throws
    /// The relations whose rules the database applies: a ``BelongsTo`` becomes a
    /// `FOREIGN KEY … ON DELETE` clause of this model's table; a polymorphic ``HasMany`` /
    /// ``HasOne`` / ``BelongsToMany`` has its delete rule applied by ``delete(_:)``. Empty by
    /// default; declare `static let relations: [any ModelRelation<Self>] = [author]`.
    static var relations: [any ModelRelation<Self>] { get }
    /// The name of this model in the type column of a polymorphic relation (``MorphTo``,
    /// `morphMany`, `morphToMany`): its table name by default. Declare it to read and write
    /// the names another system stores, as Laravel's morph map does:
    /// `static var morphName: String { #"App\Models\Video"# }`.
    static var morphName: String { get }

    // Lifecycle hooks: see `LifecycleHooks.swift` for when each runs. Each has an empty
    // default; declare the ones the model needs.

    /// Runs before the model's row is inserted, after validation, on the write's connection:
    /// may change the model (the changes are written) or refuse the insert by throwing (the
    /// error reaches the caller; nothing is written).
    mutating func willInsert(_ db: SQLiteConnection) throws
    /// Runs after the row was inserted; the model has its assigned id. Throwing fails the
    /// write (the `write` transaction rolls back).
    func didInsert(_ db: SQLiteConnection) throws
    /// Runs before the model's row is updated, after validation: may change the model or
    /// refuse the update by throwing.
    mutating func willUpdate(_ db: SQLiteConnection) throws
    /// Runs after the row was updated. Throwing fails the write.
    func didUpdate(_ db: SQLiteConnection) throws
    /// Runs before the model's row is deleted: throwing refuses the delete.
    func willDelete(_ db: SQLiteConnection) throws
    /// Runs after the row was deleted (only when there was one). Throwing fails the write.
    func didDelete(_ db: SQLiteConnection) throws
}

extension SQLModel {
    public static var autoAlters: Bool { false }
    public static var relations: [any ModelRelation<Self>] { [] }
    public static var morphName: String { sqlTable.name }
    public mutating func willInsert(_ db: SQLiteConnection) throws {}
    public func didInsert(_ db: SQLiteConnection) throws {}
    public mutating func willUpdate(_ db: SQLiteConnection) throws {}
    public func didUpdate(_ db: SQLiteConnection) throws {}
    public func willDelete(_ db: SQLiteConnection) throws {}
    public func didDelete(_ db: SQLiteConnection) throws {}
}

// MARK: - Reading

extension SQLModel {
    /// The model with primary key `key`, or nil.
    public static func find(_ key: some SQLColumnEncodable, _ db: SQLiteConnection) throws -> Self? {
        try find(key: [key.sqlValue()], db)
    }

    /// The model with the composite primary key `key` (values in key order), or nil.
    public static func find(key: [SQLValue], _ db: SQLiteConnection) throws -> Self? {
        let table = try keyedTable()
        guard key.count == table.primaryKey.count else {
            throw SQLiteError.misuse("\(schema.name) has a \(table.primaryKey.count)-column primary key; got \(key.count) values")
        }
        let row = try selectingByKey(key, db) { try $0.step() ? decodeRow($0) : nil }
        // A soft-deleted row is left out, as queries leave it out.
        guard let row, Self.traits(db).isSoftDeletable else { return row }
        return row.isSoftDeleted ? nil : row
    }

    /// Runs `body` with the select-by-key statement, `key` bound (values in key order).
    static func selectingByKey<T>(_ key: [SQLValue], _ db: SQLiteConnection, _ body: (SQLStatement) throws -> T) throws -> T {
        let table = sqlTable
        return try db.withUnboundStatement(.selectByKey, of: table) { statement in
            for (field, value) in zip(table.primaryKey, key) {
                try statement.check(value.bind(to: statement.handle, at: Int32(field + 1)))
            }
            return try body(statement)
        }
    }

    /// Whether a row with primary key `key` exists.
    public static func exists(_ key: some SQLColumnEncodable, _ db: SQLiteConnection) throws -> Bool {
        try find(key, db) != nil
    }

    /// The models matching `condition` (SQL after `WHERE`, with `?` parameters bound to
    /// `arguments`), in `order` (SQL after `ORDER BY`), at most `limit`.
    ///
    /// ```swift
    /// let recent = try Post.all(db, where: "userId = ?", [1], order: "id DESC", limit: 10)
    /// ```
    public static func all(
        _ db: SQLiteConnection,
        where condition: String? = nil,
        _ arguments: [SQLValue] = [],
        order: String? = nil,
        limit: Int? = nil
    ) throws -> [Self] {
        try query(where: condition, arguments, order: order, limit: limit).fetchAll(db)
    }

    /// The first model matching `condition` in `order`, or nil.
    public static func first(
        _ db: SQLiteConnection,
        where condition: String? = nil,
        _ arguments: [SQLValue] = [],
        order: String? = nil
    ) throws -> Self? {
        try all(db, where: condition, arguments, order: order, limit: 1).first
    }

    /// The number of rows matching `condition`.
    public static func count(_ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = []) throws -> Int {
        try query(where: condition, arguments, order: nil, limit: nil).fetchCount(db)
    }

    /// The stored version of this model (found by its primary key), or nil when it was deleted.
    public func fresh(_ db: SQLiteConnection) throws -> Self? {
        try Self.find(key: primaryKeyValues(), db)
    }

    /// Reloads this model from its row.
    public mutating func refresh(_ db: SQLiteConnection) throws {
        guard let stored = try fresh(db) else { throw Self.rowNotFound(Self.sqlTable.sql(.selectByKey)) }
        self = stored
    }

    static func decodeRow(_ statement: SQLStatement) throws -> Self {
        var row = SQLRowDecoder(statement: statement.handle, table: sqlTable)
        return try Self(row: &row)
    }

    /// The builder query of the string-based API.
    private static func query(where condition: String?, _ arguments: [SQLValue], order: String?, limit: Int?) -> SQLQuery<Self, Self> {
        var query = all()
        if let condition {
            query = query.where(sql: condition, arguments)
        } else if !arguments.isEmpty {
            query = query.where(SQLCondition(node: .failure(.misuse("\(arguments.count) arguments given without a condition"))))
        }
        if let order { query = query.order(.sql(order)) }
        if let limit { query = query.limit(limit) }
        return query
    }
}

// MARK: - Writing

extension SQLModel {
    /// Inserts the model. When its primary key is a nil integer, SQLite assigns it and the
    /// model is re-read from its new row: the id, and any column default the database filled
    /// in, flow back into the value.
    ///
    /// Like every write, it first checks the model with ``ModelSyncCore/Model/validated()``
    /// unless `validate` is false: an invalid model throws ``ModelSyncCore/ValidationError``
    /// and nothing is written.
    public mutating func insert(_ db: SQLiteConnection, validate: Bool = true) throws {
        try insertRow(db, or: nil, validate: validate)
    }

    /// Inserts the model with `INSERT [OR action]`; returns false when the action skipped the
    /// row (`OR IGNORE`), leaving the model as it was.
    @discardableResult
    mutating func insertRow(_ db: SQLiteConnection, or action: SQLiteConflictAction?, validate: Bool) throws -> Bool {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        let table = Self.sqlTable
        // The hook works on a copy: a refused or skipped insert leaves the model as it was.
        var row = self
        row.stampForWrite(inserting: true, db)
        try row.willInsert(db)
        let withoutKey = try table.rowIDKeyMayBeNil && row.primaryKeyValues() == [.null]
        try row.run(withoutKey ? .insertWithoutKey : .insert, or: action, db)
        // `changes` is that of the statement that just ran: 0 when it skipped the row.
        if action != nil, db.changes == 0 { return false }
        if withoutKey {
            let rowID = db.lastInsertRowID
            guard let stored = try db.withUnboundStatement(.selectByRowID, of: table, { statement in
                try statement.bind([.integer(rowID)])
                return try statement.step() ? Self.decodeRow(statement) : nil
            }) else { throw Self.rowNotFound(table.sql(.selectByRowID)) }
            row = stored
        }
        try row.didInsert(db)
        self = row
        return true
    }

    /// Updates every column of the model's row; throws when there is no such row. Validates
    /// first unless `validate` is false (see ``insert(_:validate:)``).
    public func update(_ db: SQLiteConnection, validate: Bool = true) throws {
        try updateRow(db, or: nil, validate: validate)
    }

    /// Updates the model's row with `UPDATE [OR action]`; returns false when the action
    /// skipped it, throws when there is no such row.
    @discardableResult
    func updateRow(_ db: SQLiteConnection, or action: SQLiteConflictAction?, validate: Bool) throws -> Bool {
        try updatedRow(db, or: action, validate: validate) != nil
    }

    /// ``updateRow(_:or:validate:)``, handing back the model as written (with the changes of
    /// `willUpdate`), or nil when the action skipped it.
    func updatedRow(_ db: SQLiteConnection, or action: SQLiteConflictAction?, validate: Bool) throws -> Self? {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        let table = try Self.keyedTable()
        if let row = try updatedWithHooks(db, or: action) { return row }
        // Nothing changed: the row is missing, or `OR IGNORE` skipped it.
        guard action == .ignore, try rowExists(db) else { throw Self.rowNotFound(table.sql(.update)) }
        return nil
    }

    /// Runs the update of the whole row between its hooks (`updatedAt` stamped first); the row
    /// as written, or nil when no row changed (`didUpdate` then does not run).
    private func updatedWithHooks(_ db: SQLiteConnection, or action: SQLiteConflictAction?) throws -> Self? {
        var row = self
        row.stampForWrite(inserting: false, db)
        try row.willUpdate(db)
        try row.run(.update, or: action, db)
        guard db.changes > 0 else { return nil }
        try row.didUpdate(db)
        return row
    }

    /// Updates only the columns of `properties` (`[\.title, \.views]`); throws when there is no
    /// such row. Validates the whole model first unless `validate` is false.
    public func update(_ db: SQLiteConnection, only properties: [PartialKeyPath<Self>], validate: Bool = true) throws {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        let table = try Self.keyedTable()
        var indices = try properties.map(Self.fieldIndex)
        guard !indices.isEmpty else { return }
        var row = self
        // A timestamped model's `updatedAt` is written with the listed columns.
        if row.stampForWrite(inserting: false, db) {
            let updatedAt = try Self.fieldIndex(named: "updatedAt")
            if !indices.contains(updatedAt) { indices.append(updatedAt) }
        }
        try row.willUpdate(db)
        let sql = table.updateSQL(only: indices)
        try row.run(sql, db)
        if db.changes == 0 { throw Self.rowNotFound(sql) }
        try row.didUpdate(db)
    }

    /// Inserts the model when its primary key is nil or has no row yet, else updates its row.
    /// Validates first unless `validate` is false (see ``insert(_:validate:)``).
    public mutating func save(_ db: SQLiteConnection, validate: Bool = true) throws {
        try saveRow(db, or: nil, validate: validate)
    }

    /// ``save(_:validate:)`` with `OR action` on its statements; returns whether the row was
    /// written.
    @discardableResult
    mutating func saveRow(_ db: SQLiteConnection, or action: SQLiteConflictAction?, validate: Bool) throws -> Bool {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        let table = Self.sqlTable
        guard !table.primaryKey.isEmpty, !(try primaryKeyValues().contains(.null)) else {
            return try insertRow(db, or: action, validate: false)
        }
        // The update's hooks run first: whether a row has the key is known only once the
        // update has run.
        if let row = try updatedWithHooks(db, or: action) {
            self = row
            return true
        }
        // No row was updated: none has the key, or `OR IGNORE` skipped it (then the insert
        // meets the existing key and is skipped too).
        return try insertRow(db, or: action, validate: false)
    }

    /// Inserts the model, or updates the existing row with the same primary key
    /// (`INSERT … ON CONFLICT DO UPDATE`): one statement. Validates first unless `validate`
    /// is false (see ``insert(_:validate:)``).
    public func upsert(_ db: SQLiteConnection, validate: Bool = true) throws {
        try validateForWrite(validate, db)
        try Self.prepareTableOnce(db)
        _ = try Self.keyedTable()
        try run(.upsert, db)
    }

    /// Deletes the model's row; returns whether there was one. The delete rules of the
    /// model's ``relations`` and of foreign keys referring to its table apply (see
    /// `Relations/DeleteRules.swift`); a restrict rule that refuses the delete throws
    /// ``RelationError/deleteRestricted(table:referencingTable:columns:rows:)``.
    ///
    /// `willDelete` runs first and may refuse the delete by throwing; `didDelete` runs when a
    /// row was deleted.
    ///
    /// A ``SoftDeletableModel`` keeps its row: `delete` sets its `deletedAt` (see
    /// ``SoftDeletableModel/forceDelete(_:)``), and returns false when it was deleted already.
    @discardableResult
    public func delete(_ db: SQLiteConnection) throws -> Bool {
        try deleteRow(db, soft: true)
    }

    /// Deletes the rows matching `condition` (all rows when nil); returns how many. A
    /// ``SoftDeletableModel``'s rows are soft-deleted (see ``SQLQuery/deleteAll(_:)``).
    @discardableResult
    public static func deleteAll(_ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = []) throws -> Int {
        try query(where: condition, arguments, order: nil, limit: nil).deleteAll(db)
    }

    /// Saves every model in one transaction: all are written, or none. A failure is rethrown
    /// with ``SQLiteError/batchIndex`` set to the position of the model that failed, and its
    /// primary key in the message. Assigned ids flow back into `models`, only on success.
    ///
    /// Unless `validate` is false, every model is validated before the transaction begins: the
    /// first invalid one throws its ``ModelSyncCore/ValidationError`` with
    /// ``ModelSyncCore/ValidationError/batchIndex`` set, and nothing is written.
    public static func saveAll(_ models: inout [Self], _ db: SQLiteConnection, validate: Bool = true) throws {
        if validate { try validateAll(models) }
        var saved = models
        try db.transaction {
            for index in saved.indices {
                do {
                    try saved[index].save(db, validate: false)
                } catch var error as SQLiteError {
                    error.batchIndex = index
                    let key = (try? saved[index].primaryKeyValues()).map { $0.map(\.description).joined(separator: ", ") }
                    error.message = "batch row \(index)" + (key.map { " (primary key \($0))" } ?? "") + ": \(error.message)"
                    throw error
                }
            }
        }
        models = saved
    }

    /// Binds the model to one of its table's statements and runs it.
    func run(_ kind: SQLTable.Statement, _ db: SQLiteConnection) throws {
        try db.withUnboundStatement(kind, of: Self.sqlTable) { try bindAndRun($0) }
    }

    /// Binds the model to one of its table's statements, with `OR action` when given, and
    /// runs it.
    func run(_ kind: SQLTable.Statement, or action: SQLiteConflictAction?, _ db: SQLiteConnection) throws {
        if let action { try run(Self.sqlTable.sql(kind, or: action), db) } else { try run(kind, db) }
    }

    /// Whether the model's row exists (by primary key, whatever else the model's queries
    /// leave out).
    func rowExists(_ db: SQLiteConnection) throws -> Bool {
        try Self.selectingByKey(primaryKeyValues(), db) { try $0.step() }
    }

    /// Binds the model to the statement for `sql` and runs it.
    func run(_ sql: String, _ db: SQLiteConnection) throws {
        try db.withUnboundStatement(sql) { try bindAndRun($0) }
    }

    private func bindAndRun(_ statement: SQLStatement) throws {
        var encoder = SQLRowEncoder(statement: statement.handle, table: Self.sqlTable)
        try bind(to: &encoder)
        try statement.run()
    }

    /// The values of the primary-key fields, read through their key paths.
    func primaryKeyValues() throws -> [SQLValue] {
        try Self.keyedTable().primaryKey.map(fieldValue)
    }

    /// The value of field `index` as it is stored, read through its key path.
    func fieldValue(_ index: Int) throws -> SQLValue {
        let field = Self.schema.fields[index]
        guard let keyPath = field.keyPath, let value = self[keyPath: keyPath as AnyKeyPath], let stored = try sqlValue(of: value) else {
            throw SQLiteError.misuse("the field '\(field.name)' of \(Self.schema.name) cannot be read")
        }
        return stored
    }

    /// The schema index of the field at `keyPath`: one lookup in the table's key-path index,
    /// the one the query builder resolves columns with.
    static func fieldIndex(_ keyPath: PartialKeyPath<Self>) throws -> Int {
        guard let field = sqlTable.keyPaths.field(keyPath) else {
            throw SQLiteError.misuse("\(keyPath) is not a stored field of \(schema.name)")
        }
        return field
    }

    /// The table, after checking that the model has a primary key.
    static func keyedTable() throws -> SQLTable {
        guard !sqlTable.primaryKey.isEmpty else {
            throw SQLiteError.misuse("\(schema.name) has no primary key; mark one with @PrimaryKey")
        }
        return sqlTable
    }

    static func rowNotFound(_ sql: String) -> SQLiteError {
        SQLiteError(
            .rowNotFound(table: sqlTable.name), code: SQLITE_NOTFOUND,
            message: "no row of \(sqlTable.name) has this primary key", sql: sql)
    }
}
