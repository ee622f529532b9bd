import Foundation
import ModelSyncCore

/// A model whose rows keep when they were created and last written. Conform a model with
/// stored properties `createdAt` and `updatedAt` (`Date?`): `extension Note: TimestampedModel {}`.
///
/// The ActiveRecord writes fill them with ``DatabaseConfiguration/now``: `insert` sets
/// `createdAt` (unless the model has one) and `updatedAt`; `update`, `save`, a soft delete and
/// a restore set `updatedAt` (`update(_:only:)` writes it with the listed columns). Upserts
/// store the values as given, which is how a sync pull keeps the server's times.
public protocol TimestampedModel: SQLModel {
    /// When the row was inserted; filled in by the first insert when nil.
    var createdAt: Date? { get set }
    /// When the row was last written by an insert, update, save, soft delete or restore.
    var updatedAt: Date? { get set }
}

extension TimestampedModel {
    /// Sets the timestamps of a write made at `date`: `updatedAt`, and `createdAt` when
    /// `inserting` and still nil. The ActiveRecord writes call it; call it yourself before
    /// writes that store values as given (an upsert, a sync layer's save).
    public mutating func stampTimestamps(inserting: Bool, at date: Date) {
        if inserting, createdAt == nil { createdAt = date }
        updatedAt = date
    }
}

/// A model whose `delete` keeps the row and sets its `deletedAt` (a stored `Date?` property):
/// `extension Note: SoftDeletableModel {}`.
///
/// Queries of the model (`all`, `where`, counts, `updateAll`, `deleteAll`, `find`, `exists`)
/// leave deleted rows out; ``SQLQuery/withDeleted()`` takes them in, ``SQLQuery/onlyDeleted()``
/// reads them alone. `deleteAll` soft-deletes too. ``restore(_:)`` brings a row back,
/// ``forceDelete(_:)`` removes it (with the delete rules of its relations), and
/// ``SQLQuery/forceDeleteAll(_:)`` removes the rows a query reads. A soft delete changes no other row: relations' delete
/// rules apply only to a real delete.
public protocol SoftDeletableModel: SQLModel {
    /// When the row was deleted, or nil for a live row.
    var deletedAt: Date? { get set }
}

extension SoftDeletableModel {
    /// Whether the model's row is deleted (as the value says; see ``restore(_:)``).
    public var isDeleted: Bool { deletedAt != nil }

    /// Deletes the row for good, as ``SQLModel/delete(_:)-(SQLiteConnection)`` does for other models: the hooks
    /// and the delete rules of ``SQLModel/relations`` apply. Returns whether there was a row
    /// (deleted or not).
    @discardableResult
    public func forceDelete(_ db: SQLiteConnection) throws -> Bool {
        try deleteRow(db, soft: false)
    }

    /// Brings a soft-deleted row back: `deletedAt` becomes nil (and `updatedAt` moves, for a
    /// ``TimestampedModel``), in the row and in the model. Returns false when the row is not
    /// deleted (or does not exist). Runs no hooks.
    @discardableResult
    public mutating func restore(_ db: SQLiteConnection) throws -> Bool {
        var row = self
        row.deletedAt = nil
        guard try row.writeDeletion(db, whereDeleted: true) else { return false }
        self = row
        return true
    }

    /// Marks the row deleted now; returns false when it was already deleted or is missing.
    func softDelete(_ db: SQLiteConnection) throws -> Bool {
        var row = self
        row.deletedAt = db.configuration.now()
        return try row.writeDeletion(db, whereDeleted: false)
    }

    /// Writes `deletedAt` (and a timestamped model's `updatedAt`) to the row, when its
    /// `deletedAt` is set (`whereDeleted`) or nil.
    private mutating func writeDeletion(_ db: SQLiteConnection, whereDeleted: Bool) throws -> Bool {
        try Self.prepareTableOnce(db)
        let table = try Self.keyedTable()
        let deletedAt = try Self.fieldIndex(named: "deletedAt")
        var written = [deletedAt]
        if stampForWrite(inserting: false, db) { written.append(try Self.fieldIndex(named: "updatedAt")) }
        let sql = table.updateSQL(only: written)
            + " AND \(quoteIdentifier(Self.schema.fields[deletedAt].column)) IS \(whereDeleted ? "NOT NULL" : "NULL")"
        try run(sql, db)
        return db.changes > 0
    }
}

extension SQLQuery where Root: SoftDeletableModel {
    /// The query over every row, soft-deleted ones included.
    public func withDeleted() -> Self {
        with { $0.scope = nil }
    }

    /// The query over the soft-deleted rows only.
    public func onlyDeleted() -> Self {
        with { $0.scope = Root.deletedAtNode.map { .postfix($0, "IS NOT NULL") } }
    }

    /// Deletes the rows the query reads for good (``SQLQuery/deleteAll(_:)`` soft-deletes
    /// them); returns how many. Like `deleteAll`, it runs no hooks, and the query's scope
    /// applies: `Note.all().withDeleted().forceDeleteAll(db)` empties the table.
    @discardableResult
    public func forceDeleteAll(_ db: SQLiteConnection) throws -> Int {
        try removeAll(db)
    }
}

extension SQLModel {
    /// The condition every query of the model starts with: `"deletedAt" IS NULL` for a
    /// ``SoftDeletableModel``, nil for others.
    static var liveRowsScope: SQLNode? { liveRowsScope(of: sqlTable) }

    /// ``liveRowsScope``, given the model's table. Inlinable: every query of the model asks,
    /// and asked generically it costs a call through the metadata.
    @inlinable
    static func liveRowsScope(of table: SQLTable) -> SQLNode? {
        guard table.softDeletable.answer(for: Self.self, { Self.self is any SoftDeletableModel.Type }) else { return nil }
        return table.liveRowsCondition
    }

    /// What a bulk soft delete at `date` writes, and the condition of the rows it may change
    /// (live ones, so that a row keeps its first deletion time); nil for a model that is not a
    /// ``SoftDeletableModel``.
    static func softDeletion(at date: Date) -> (isLive: SQLNode, assignments: [SQLAssignment<Self>])? {
        guard let deletedAt = liveRowsScope else { return nil }
        var assignments = [dateAssignment("deletedAt", date, of: "SoftDeletableModel")]
        if Self.self is any TimestampedModel.Type {
            assignments.append(dateAssignment("updatedAt", date, of: "TimestampedModel"))
        }
        return (deletedAt, assignments)
    }

    /// `SET name = date`, the date bound as the field's column stores it (through its
    /// transformer, if it has one); a failure when the model has no such stored field.
    private static func dateAssignment(_ name: String, _ date: Date, of role: String) -> SQLAssignment<Self> {
        guard let index = schema.fields.firstIndex(where: { $0.name == name }) else {
            let failure = SQLNode.failure(.misuse("\(schema.name) is a \(role) without a stored property '\(name)'"))
            return SQLAssignment(column: failure, value: failure)
        }
        return SQLAssignment(column: sqlTable.fieldColumns[index], value: sqlTable.bound(date, field: index))
    }

    /// The `deletedAt` column, or a failure when the model has no such stored field.
    static var deletedAtNode: SQLNode? {
        guard let field = schema.fields.first(where: { $0.name == "deletedAt" }) else {
            return .failure(.misuse("\(schema.name) is a SoftDeletableModel without a stored property 'deletedAt'"))
        }
        return .column(table: sqlTable.name, name: field.column)
    }

    /// The schema index of the stored field named `name`.
    static func fieldIndex(named name: String) throws -> Int {
        guard let index = schema.fields.firstIndex(where: { $0.name == name }) else {
            throw SQLiteError.misuse("\(schema.name) has no stored property '\(name)'")
        }
        return index
    }

    /// Stamps a ``TimestampedModel`` for a write at the connection's clock; returns whether the
    /// model is one (other models are left alone).
    @discardableResult
    mutating func stampForWrite(inserting: Bool, _ db: SQLiteConnection) -> Bool {
        guard Self.traits(db).isTimestamped, let timestamped = Self.self as? any TimestampedModel.Type else { return false }
        stamp(as: timestamped, inserting: inserting, at: db.configuration.now())
        return true
    }

    private mutating func stamp<T: TimestampedModel>(as type: T.Type, inserting: Bool, at date: Date) {
        modify(as: type) { $0.stampTimestamps(inserting: inserting, at: date) }
    }

    /// Whether the model is a soft-deleted row of a ``SoftDeletableModel``.
    var isSoftDeleted: Bool {
        guard let deletable = Self.self as? any SoftDeletableModel.Type else { return false }
        return isDeleted(as: deletable)
    }

    private func isDeleted<D: SoftDeletableModel>(as type: D.Type) -> Bool {
        viewed(as: type) { $0.isDeleted }
    }

    /// Deletes the row (`soft`: marks a ``SoftDeletableModel``'s row deleted), between the
    /// delete hooks.
    func deleteRow(_ db: SQLiteConnection, soft: Bool) throws -> Bool {
        _ = try Self.keyedTable()
        try willDelete(db)
        if soft, let deletable = self as? any SoftDeletableModel {
            guard try deletable.softDelete(db) else { return false }
        } else {
            guard try deleteFollowingRules(db) else { return false }
        }
        try didDelete(db)
        return true
    }
}
