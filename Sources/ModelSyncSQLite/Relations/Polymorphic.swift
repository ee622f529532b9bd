import ModelSyncCore

// Polymorphic relations: a reference made of a type column (the referred model's `morphName`,
// its table name by default) and an id column. SQLite has no foreign key for it, so its delete rules run here.

/// The owner refers to one of several model types through a type column and an id column:
/// `Note.subject` — a note's `subjectType` is `"heroes"` or `"enemies"` and its `subjectId`
/// a key of that table. The inverse is ``SQLModel/morphMany(_:as:onDelete:)``.
///
/// ```swift
/// static let subject = morphTo("subject", types: [Hero.self, Enemy.self])
/// let subject = try Note.subject.load(for: note, db) as? Hero
/// ```
public struct MorphTo<Owner: SQLModel>: ModelRelation {
    /// The owner's property holding the referred model's type name (`subjectType`).
    public let typeProperty: String
    /// The owner's property holding the referred model's key (`subjectId`).
    public let idProperty: String
    /// The model types the reference may name, each by its `morphName`.
    public let types: [any SQLModel.Type]

    /// Declares the relation; see ``SQLModel/morphTo(_:types:)``.
    public init(_ name: String, types: [any SQLModel.Type]) {
        self.typeProperty = name + "Type"
        self.idProperty = name + "Id"
        self.types = types
    }

    /// The statements that load the models `owners` refer to: one per type they name.
    public func sql(for owners: [Owner]) throws -> [RelationSQL] {
        try idsByType(owners).map { type, ids in try Self.keySQL(type, ids) }
    }

    /// The model `owner` refers to (cast it: `as? Hero`), or nil.
    public func load(for owner: Owner, _ db: SQLiteConnection) throws -> (any SQLModel)? {
        try load(for: [owner], db)[0]
    }

    /// The models `owners` refer to, in their order: one query per type named.
    public func load(for owners: [Owner], _ db: SQLiteConnection) throws -> [(any SQLModel)?] {
        var found: [ExactText: [SQLValue: any SQLModel]] = [:]
        for (type, ids) in try idsByType(owners) {
            found[ExactText(type.morphName)] = try Self.load(type, ids, db)
        }
        return try references(owners).map { reference in reference.flatMap { found[ExactText($0.type)]?[$0.id] } }
    }

    /// Each owner's (type name, id), nil when either is NULL.
    private func references(_ owners: [Owner]) throws -> [(type: String, id: SQLValue)?] {
        let type = try RelationField(Owner.self, typeProperty)
        let id = try RelationField(Owner.self, idProperty)
        return try owners.map { owner in
            let name = try owner.fieldValue(type.index)
            let key = try owner.fieldValue(id.index)
            guard name != .null, key != .null else { return nil }
            guard case .text(let text) = name else { throw RelationError.unknownType(column: type.field.column, value: "\(name)") }
            return (text, key)
        }
    }

    /// The ids referred to, by model type (in `types` order).
    private func idsByType(_ owners: [Owner]) throws -> [(any SQLModel.Type, [SQLValue])] {
        // Type names by bytes: "e\u{301}" in the column does not name the model "é".
        var ids: [ExactText: [SQLValue]] = [:]
        for case let reference? in try references(owners) { ids[ExactText(reference.type), default: []].append(reference.id) }
        let column = try RelationField(Owner.self, typeProperty).field.column
        let known = Set(types.map { ExactText($0.morphName) })
        if let unknown = ids.keys.map(\.text).sorted().first(where: { !known.contains(ExactText($0)) }) {
            throw RelationError.unknownType(column: column, value: unknown)
        }
        return types.compactMap { type in ids[ExactText(type.morphName)].map { (type, $0) } }
    }

    private static func keySQL<T: SQLModel>(_ type: T.Type, _ ids: [SQLValue]) throws -> RelationSQL {
        try T.relatedSQL(try RelationField(key: T.self, nil), ids, filter: RelatedFilter())
    }

    private static func load<T: SQLModel>(_ type: T.Type, _ ids: [SQLValue], _ db: SQLiteConnection) throws -> [SQLValue: any SQLModel] {
        try T.related(try RelationField(key: T.self, nil), ids, filter: RelatedFilter(), db).compactMapValues(\.first)
    }
}

/// The rows of `Child` that refer to one owner through a type and an id column: what a
/// polymorphic delete rule counts, deletes or sets to NULL.
struct MorphReferences<Child: SQLModel> {
    let type: RelationField
    let id: RelationField
    let typeValue: String
    let key: SQLValue

    private var condition: String { "\(type.column) = ? AND \(id.column) = ?" }
    private var arguments: [SQLValue] { [.text(typeValue), key] }

    /// Throws when `rule` is restrict and rows refer to the owner.
    func check(_ rule: DeleteRule, deleting table: String, _ db: SQLiteConnection) throws {
        guard rule == .restrict else { return }
        let rows = try Child.count(db, where: condition, arguments)
        if rows > 0 {
            throw RelationError.deleteRestricted(
                table: table, referencingTable: Child.sqlTable.name, columns: [type.field.column, id.field.column], rows: rows)
        }
    }

    /// Deletes the referring rows (through ``SQLModel/delete(_:)`` when they have relations of
    /// their own, so that their rules apply too) or sets their reference to NULL.
    func apply(_ rule: DeleteRule, _ db: SQLiteConnection) throws {
        switch rule {
        case .restrict:
            break
        case .cascade where Child.relations.isEmpty:
            try Child.deleteAll(db, where: condition, arguments)
        case .cascade:
            for child in try Child.all(db, where: condition, arguments) { try child.delete(db) }
        case .setNull:
            guard type.field.isOptional, id.field.isOptional else {
                throw RelationError.invalidDeclaration(
                    model: Child.schema.name, reason: "set null on delete needs optional '\(type.field.name)' and '\(id.field.name)'")
            }
            try db.execute(
                "UPDATE \(quoteIdentifier(Child.sqlTable.name)) SET \(type.column) = NULL, \(id.column) = NULL WHERE \(condition)", arguments)
        }
    }
}

extension SQLModel {
    /// Declares a reference to one of `types` through the properties `<name>Type` (the
    /// referred model's `morphName`) and `<name>Id` (its key). See ``MorphTo``.
    public static func morphTo(_ name: String, types: [any SQLModel.Type]) -> MorphTo<Self> {
        MorphTo(name, types: types)
    }

    /// Declares that `Child` rows refer to this model through `<name>Type` (this model's
    /// `morphName`) and `<name>Id`: the inverse of ``morphTo(_:types:)``. Deleting this model
    /// applies `onDelete` to them (no SQL foreign key can).
    public static func morphMany<Child: SQLModel>(_ child: Child.Type, as name: String, onDelete: DeleteRule = .cascade) -> HasMany<Self, Child> {
        HasMany(foreignKey: name + "Id", ownerKey: nil, morph: MorphType(property: name + "Type", value: morphName), onDelete: onDelete)
    }

    /// Declares that one `Child` row refers to this model through `<name>Type` and `<name>Id`.
    public static func morphOne<Child: SQLModel>(_ child: Child.Type, as name: String, onDelete: DeleteRule = .cascade) -> HasOne<Self, Child> {
        HasOne(morphMany(child, as: name, onDelete: onDelete))
    }

    /// Declares that this model is linked to `Related` models by `Pivot` rows that refer to
    /// this model polymorphically (`<name>Type`, `<name>Id`) and to the related model by
    /// `relatedKey` (by default its type name + `Id`): tags on heroes and on enemies through
    /// one `Tagging` table. Deleting this model applies `onDelete` to its pivot rows.
    public static func morphToMany<Related: SQLModel, Pivot: SQLModel>(
        _ related: Related.Type, through pivot: Pivot.Type, as name: String, relatedKey: PartialKeyPath<Pivot>? = nil,
        onDelete: DeleteRule = .cascade
    ) -> BelongsToMany<Self, Related, Pivot> {
        BelongsToMany(
            ownerForeignKey: name + "Id", relatedForeignKey: relatedKey.map(propertyName) ?? conventionalForeignKey(Related.self),
            morph: MorphType(property: name + "Type", value: morphName), onDelete: onDelete)
    }

    /// The inverse of ``morphToMany(_:through:as:relatedKey:onDelete:)``: the `Related` models
    /// of one type linked to this model (`Tag.heroes`). The pivot refers to this model by
    /// `foreignKey` (by default this type's name + `Id`); declare that side's delete rule as a
    /// ``BelongsTo`` of the pivot.
    public static func morphedByMany<Related: SQLModel, Pivot: SQLModel>(
        _ related: Related.Type, through pivot: Pivot.Type, as name: String, foreignKey: PartialKeyPath<Pivot>? = nil
    ) -> BelongsToMany<Self, Related, Pivot> {
        BelongsToMany(
            ownerForeignKey: foreignKey.map(propertyName) ?? conventionalForeignKey(Self.self), relatedForeignKey: name + "Id",
            morph: MorphType(property: name + "Type", value: Related.morphName), onDelete: nil)
    }
}
