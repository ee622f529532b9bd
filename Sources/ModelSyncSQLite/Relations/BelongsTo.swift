import ModelSyncCore

/// The owner holds the key of one parent: `Post.author` — a post's `userId` is a `User`'s id.
///
/// ```swift
/// static let author = belongsTo(User.self)                       // Post.userId → User.id
/// static let editor = belongsTo(User.self, foreignKey: \.editorId, onDelete: .setNull)
/// static let relations: [any ModelRelation<Post>] = [author, editor]  // FOREIGN KEY clauses
/// ```
///
/// Listed in ``SQLModel/relations``, it becomes a `FOREIGN KEY … REFERENCES … ON DELETE …`
/// clause of the owner's table (when the table is created), so SQLite itself applies the
/// delete rule, whatever deletes the parent.
///
/// A parent outside the schema gets no clause when the owner's table is created at open or
/// on first use: a model that is neither among the ``Database``'s models nor has a table yet
/// (a foreign key to a missing table would fail every insert of the owner). The relation
/// still loads its parents once their table exists, but SQLite applies no delete rule: give
/// the `Database` both models to have one.
public struct BelongsTo<Owner: SQLModel, Parent: SQLModel>: ModelRelation {
    /// The owner's property holding the parent's key (`userId` for `User` by convention).
    public let foreignKey: String
    /// The parent's property referred to; nil for its primary key.
    public let parentKey: String?
    /// What deleting the parent does to its owners.
    public let onDelete: DeleteRule

    /// Declares the relation; see ``SQLModel/belongsTo(_:foreignKey:references:onDelete:)``.
    public init(foreignKey: PartialKeyPath<Owner>? = nil, references parentKey: PartialKeyPath<Parent>? = nil, onDelete: DeleteRule = .restrict) {
        self.foreignKey = foreignKey.map(propertyName) ?? conventionalForeignKey(Parent.self)
        self.parentKey = parentKey.map(propertyName)
        self.onDelete = onDelete
    }

    /// The statement that loads the parents of `owners` (their distinct keys), with
    /// `condition` on the parents' side.
    public func sql(for owners: [Owner], where condition: String? = nil, _ arguments: [SQLValue] = []) throws -> RelationSQL {
        let (key, keys) = try parentKeys(owners)
        return try Parent.relatedSQL(key, keys, filter: RelatedFilter(where: condition, arguments))
    }

    /// The parent of `owner` (nil when its key is nil, there is no such row, or the parent
    /// does not match `condition`).
    public func load(for owner: Owner, _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = []) throws -> Parent? {
        try load(for: [owner], db, where: condition, arguments)[0]
    }

    /// The parents of `owners`, in their order, with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = []) throws -> [Parent?] {
        try load(for: owners, db, filter: RelatedFilter(where: condition, arguments))
    }

    /// The statement that loads the parents of `owners` that `query` reads.
    public func sql(for owners: [Owner], _ query: SQLQuery<Parent, Parent>) throws -> RelationSQL {
        let (key, keys) = try parentKeys(owners)
        return try Parent.relatedSQL(key, keys, filter: RelatedFilter(query, qualified: false))
    }

    /// The parent of `owner` if `query` reads it.
    public func load(for owner: Owner, _ db: SQLiteConnection, _ query: SQLQuery<Parent, Parent>) throws -> Parent? {
        try load(for: [owner], db, filter: RelatedFilter(query, qualified: false))[0]
    }

    /// The parents of `owners` that `query` reads (nil for the others), with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, _ query: SQLQuery<Parent, Parent>) throws -> [Parent?] {
        try load(for: owners, db, filter: RelatedFilter(query, qualified: false))
    }

    func load(for owners: [Owner], _ db: SQLiteConnection, filter: RelatedFilter) throws -> [Parent?] {
        let (key, keys) = try parentKeys(owners)
        let parents = try Parent.related(key, keys, filter: filter, db)
        return keys.map { parents[$0]?.first }
    }

    /// The parent's key field, and the key each owner holds.
    private func parentKeys(_ owners: [Owner]) throws -> (RelationField, [SQLValue]) {
        let fk = try RelationField(Owner.self, foreignKey)
        return (try RelationField(key: Parent.self, parentKey), try owners.map { try $0.fieldValue(fk.index) })
    }

    /// `FOREIGN KEY (<foreignKey>) REFERENCES <parent> (<key>) ON DELETE <rule>`; throws for a set-null rule on a non-optional key.
    public func foreignKeyClause() throws -> String? {
        let fk = try RelationField(Owner.self, foreignKey)
        let key = try RelationField(key: Parent.self, parentKey)
        if onDelete == .setNull, !fk.field.isOptional {
            throw RelationError.invalidDeclaration(
                model: Owner.schema.name, reason: "set null on delete needs an optional '\(foreignKey)'")
        }
        return "FOREIGN KEY (\(fk.column)) REFERENCES \(quoteIdentifier(Parent.sqlTable.name)) (\(key.column)) ON DELETE \(onDelete.sql)"
    }
}

/// A relation whose foreign key refers to another model's table.
protocol ReferencesTable {
    /// The table the foreign key refers to.
    var referencedTable: String { get }
}

extension BelongsTo: ReferencesTable {
    var referencedTable: String { Parent.sqlTable.name }
}

extension SQLModel {
    /// Declares that this model holds the key of a `Parent` (see ``BelongsTo``).
    ///
    /// - Parameters:
    ///   - parent: the parent model's type.
    ///   - foreignKey: the property holding the key; by default the parent's type name,
    ///     lower-camel-cased, + `Id` (`userId` for `User`).
    ///   - references: the parent's property referred to; its primary key by default.
    ///   - onDelete: what deleting the parent does to this model's rows (in SQL, once the
    ///     relation is listed in ``relations``).
    public static func belongsTo<Parent: SQLModel>(
        _ parent: Parent.Type, foreignKey: PartialKeyPath<Self>? = nil, references: PartialKeyPath<Parent>? = nil,
        onDelete: DeleteRule = .restrict
    ) -> BelongsTo<Self, Parent> {
        BelongsTo(foreignKey: foreignKey, references: references, onDelete: onDelete)
    }

    /// The statement selecting the rows whose `key` is one of `keys` (with `fixed` column
    /// values), filtered and ordered by `filter`.
    static func relatedSQL(
        _ key: RelationField, _ keys: [SQLValue], fixed: [(column: String, value: SQLValue)] = [], filter: RelatedFilter
    ) throws -> RelationSQL {
        try relationSQL("SELECT \(sqlTable.columnList) FROM \(sqlTable.quotedName)", fixed: fixed, keyColumn: key.column, keys: distinctKeys(keys), filter: filter)
    }

    /// Reads rows of this model from `statement` with one decoder (it holds no per-row state).
    static func rowReader(_ statement: SQLStatement, columnOffset: Int32 = 0) -> () throws -> Self {
        var row = SQLRowDecoder(statement: statement.handle, table: sqlTable, columnOffset: columnOffset)
        return { try Self(row: &row) }
    }

    /// The rows whose `key` is one of `keys`, grouped by it: one query, none for no keys.
    static func related(
        _ key: RelationField, _ keys: [SQLValue], fixed: [(column: String, value: SQLValue)] = [], filter: RelatedFilter,
        _ db: SQLiteConnection
    ) throws -> [SQLValue: [Self]] {
        guard keys.contains(where: { $0 != .null }) else { return [:] }
        let request = try relatedSQL(key, keys, fixed: fixed, filter: filter)
        return try db.groupedRows(request, keyColumn: key.index) { rowReader($0) }
    }
}
