import ModelSyncCore

/// A related model with the pivot row that links it to the owner (its own columns included,
/// e.g. the `level` of a hero–enemy link).
public struct Linked<Related: SQLModel, Pivot: SQLModel>: Sendable {
    /// The related model.
    public let model: Related
    /// The pivot row linking it.
    public let pivot: Pivot

    /// Pairs a related model with its pivot row.
    public init(model: Related, pivot: Pivot) {
        self.model = model
        self.pivot = pivot
    }
}

extension Linked: Equatable where Related: Equatable, Pivot: Equatable {}

/// Owner and related models linked by rows of a pivot model holding both primary keys:
/// `Hero.enemies` through `HeroEnemy { heroId, enemyId, level }`. Loads join the pivot, so
/// every related model comes with its pivot row. Polymorphic
/// (``SQLModel/morphToMany(_:through:as:relatedKey:onDelete:)``), the pivot also holds the
/// type name of one side, and the relation applies its delete rule to the pivot rows itself.
///
/// ```swift
/// static let enemies = belongsToMany(Enemy.self, through: HeroEnemy.self)
/// try Hero.enemies.attach(orc, to: hero, pivot: HeroEnemy(level: 3), db)
/// let foes = try Hero.enemies.load(for: hero, db, where: #""hero_enemies"."level" >= ?"#, [2])
/// foes[0].model.name; foes[0].pivot.level
/// ```
public struct BelongsToMany<Owner: SQLModel, Related: SQLModel, Pivot: SQLModel>: ModelRelation {
    /// The pivot's property holding the owner's key (`heroId` for `Hero` by convention).
    public let ownerForeignKey: String
    /// The pivot's property holding the related model's key (`enemyId` for `Enemy`).
    public let relatedForeignKey: String
    /// What deleting the owner does to its pivot rows when the library applies the rule
    /// (polymorphic pivots); nil otherwise (the pivot's ``BelongsTo`` rules apply).
    public let onDelete: DeleteRule?
    let morph: MorphType?

    /// Declares the relation; see ``SQLModel/belongsToMany(_:through:foreignKey:relatedKey:)``.
    public init(foreignKey: PartialKeyPath<Pivot>? = nil, relatedKey: PartialKeyPath<Pivot>? = nil) {
        self.init(
            ownerForeignKey: foreignKey.map(propertyName) ?? conventionalForeignKey(Owner.self),
            relatedForeignKey: relatedKey.map(propertyName) ?? conventionalForeignKey(Related.self), morph: nil, onDelete: nil)
    }

    init(ownerForeignKey: String, relatedForeignKey: String, morph: MorphType?, onDelete: DeleteRule?) {
        self.ownerForeignKey = ownerForeignKey
        self.relatedForeignKey = relatedForeignKey
        self.morph = morph
        self.onDelete = onDelete
    }

    /// The fields the relation uses.
    private struct Fields {
        let ownerKey, relatedKey, pivotOwner, pivotRelated: RelationField
        let pivotType: RelationField?
    }

    private func fields() throws -> Fields {
        Fields(
            ownerKey: try RelationField(key: Owner.self, nil), relatedKey: try RelationField(key: Related.self, nil),
            pivotOwner: try RelationField(Pivot.self, ownerForeignKey), pivotRelated: try RelationField(Pivot.self, relatedForeignKey),
            pivotType: try morph.map { try RelationField(Pivot.self, $0.property) })
    }

    /// The statement that loads the related models and pivot rows of `owners`: the related
    /// table joined with the pivot, `condition` and `order` over both.
    public func sql(for owners: [Owner], where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> RelationSQL {
        let fields = try fields()
        return try request(fields, try owners.map { try $0.fieldValue(fields.ownerKey.index) }, RelatedFilter(where: condition, arguments, order: order))
    }

    /// The models linked to `owner`, each with its pivot row.
    public func load(for owner: Owner, _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> [Linked<Related, Pivot>] {
        try load(for: [owner], db, filter: RelatedFilter(where: condition, arguments, order: order))[0]
    }

    /// The models linked to each of `owners` (in the owners' order), with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> [[Linked<Related, Pivot>]] {
        try load(for: owners, db, filter: RelatedFilter(where: condition, arguments, order: order))
    }

    /// The statement that loads the models linked to `owners` that `query` reads, through the
    /// pivot rows that `pivot` reads: conditions of both, `query`'s order before `pivot`'s
    /// (`Hero.enemies.sql(for: heroes, Enemy.all(), pivot: HeroEnemy.where(\.level >= 2).order(.desc(\.level)))`).
    public func sql(for owners: [Owner], _ query: SQLQuery<Related, Related>, pivot: SQLQuery<Pivot, Pivot>? = nil) throws -> RelationSQL {
        let fields = try fields()
        return try request(fields, try owners.map { try $0.fieldValue(fields.ownerKey.index) }, try filter(query, pivot))
    }

    /// The models linked to `owner` that `query` reads, through the pivot rows `pivot` reads.
    public func load(for owner: Owner, _ db: SQLiteConnection, _ query: SQLQuery<Related, Related>, pivot: SQLQuery<Pivot, Pivot>? = nil) throws -> [Linked<Related, Pivot>] {
        try load(for: [owner], db, filter: filter(query, pivot))[0]
    }

    /// The models linked to each of `owners` that `query` reads, through the pivot rows
    /// `pivot` reads, with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, _ query: SQLQuery<Related, Related>, pivot: SQLQuery<Pivot, Pivot>? = nil) throws -> [[Linked<Related, Pivot>]] {
        try load(for: owners, db, filter: filter(query, pivot))
    }

    /// Both sides' conditions and orders, every column qualified by its table.
    private func filter(_ query: SQLQuery<Related, Related>, _ pivot: SQLQuery<Pivot, Pivot>?) throws -> RelatedFilter {
        let related = try RelatedFilter(query, qualified: true)
        return try pivot.map { related.adding(try RelatedFilter($0, qualified: true)) } ?? related
    }

    func load(for owners: [Owner], _ db: SQLiteConnection, filter: RelatedFilter) throws -> [[Linked<Related, Pivot>]] {
        let fields = try fields()
        let keys = try owners.map { try $0.fieldValue(fields.ownerKey.index) }
        guard keys.contains(where: { $0 != .null }) else { return keys.map { _ in [] } }
        let pivotStart = Related.schema.fields.count
        let groups = try db.groupedRows(try request(fields, keys, filter), keyColumn: pivotStart + fields.pivotOwner.index) { statement in
            let (related, pivot) = (Related.rowReader(statement), Pivot.rowReader(statement, columnOffset: Int32(pivotStart)))
            return { Linked(model: try related(), pivot: try pivot()) }
        }
        return keys.map { groups[$0] ?? [] }
    }

    private func request(_ fields: Fields, _ keys: [SQLValue], _ filter: RelatedFilter) throws -> RelationSQL {
        let related = Related.sqlTable
        let pivot = Pivot.sqlTable
        let columns = Related.schema.fields.map { quoteIdentifier(related.name) + "." + quoteIdentifier($0.column) }
            + Pivot.schema.fields.map { quoteIdentifier(pivot.name) + "." + quoteIdentifier($0.column) }
        let select = "SELECT \(columns.joined(separator: ", ")) FROM \(quoteIdentifier(related.name)) JOIN \(quoteIdentifier(pivot.name))"
            + " ON \(fields.pivotRelated.qualified(in: pivot)) = \(fields.relatedKey.qualified(in: related))"
        return try relationSQL(
            select, fixed: try fixedValues(fields).map { ($0.field.qualified(in: pivot), $0.value) },
            keyColumn: fields.pivotOwner.qualified(in: pivot), keys: distinctKeys(keys), filter: filter)
    }

    /// The pivot's type column and its value, for a polymorphic pivot.
    private func fixedValues(_ fields: Fields) throws -> [(field: RelationField, value: SQLValue)] {
        guard let morph, let type = fields.pivotType else { return [] }
        return [(type, .text(morph.value))]
    }

    // MARK: - Links

    /// Links `related` to `owner` with a new pivot row. The row is `pivot` (for its own
    /// columns) with its key columns set from `owner` and `related` (and its type column, when
    /// polymorphic); without `pivot`, a row of the keys alone (other columns take their SQL
    /// defaults). A unique constraint over the pivot's keys, if it declares one, turns a
    /// second link of the same pair into a constraint ``SQLiteError``.
    public func attach(_ related: Related, to owner: Owner, pivot: Pivot? = nil, _ db: SQLiteConnection) throws {
        let fields = try fields()
        let values = [
            (fields.pivotOwner, try owner.fieldValue(fields.ownerKey.index)),
            (fields.pivotRelated, try related.fieldValue(fields.relatedKey.index)),
        ] + (try fixedValues(fields)).map { ($0.field, $0.value) }
        try Pivot.prepareTableOnce(db)
        let table = Pivot.sqlTable
        guard let pivot else {
            let columns = values.map(\.0.column).joined(separator: ", ")
            let parameters = values.map { _ in "?" }.joined(separator: ", ")
            return try db.execute("INSERT INTO \(quoteIdentifier(table.name)) (\(columns)) VALUES (\(parameters))", values.map(\.1))
        }
        _ = try pivot.validated()
        // A nil rowid key is bound NULL, which has SQLite assign it, as in `insert`.
        try db.withUnboundStatement(.insert, of: table) { statement in
            var row = SQLRowEncoder(statement: statement.handle, table: table)
            try pivot.bind(to: &row)
            for (field, value) in values { try row.bind(value, field.index) }
            try statement.run()
        }
    }

    /// Removes the links between `owner` and `related`; returns how many pivot rows went.
    @discardableResult
    public func detach(_ related: Related, from owner: Owner, _ db: SQLiteConnection) throws -> Int {
        let fields = try fields()
        return try deletePivots(fields, [
            (fields.pivotOwner, try owner.fieldValue(fields.ownerKey.index)),
            (fields.pivotRelated, try related.fieldValue(fields.relatedKey.index)),
        ], db)
    }

    /// Removes every link of `owner`; returns how many pivot rows went.
    @discardableResult
    public func detachAll(from owner: Owner, _ db: SQLiteConnection) throws -> Int {
        let fields = try fields()
        return try deletePivots(fields, [(fields.pivotOwner, try owner.fieldValue(fields.ownerKey.index))], db)
    }

    private func deletePivots(_ fields: Fields, _ keys: [(RelationField, SQLValue)], _ db: SQLiteConnection) throws -> Int {
        let conditions = keys + (try fixedValues(fields)).map { ($0.field, $0.value) }
        return try Pivot.deleteAll(db, where: conditions.map { "\($0.0.column) = ?" }.joined(separator: " AND "), conditions.map(\.1))
    }

    // MARK: - Delete rules of polymorphic pivots

    private func references(to owner: Owner) throws -> MorphReferences<Pivot>? {
        guard let morph, onDelete != nil else { return nil }
        let fields = try fields()
        guard let type = fields.pivotType else { return nil }
        return MorphReferences(type: type, id: fields.pivotOwner, typeValue: morph.value, key: try owner.fieldValue(fields.ownerKey.index))
    }

    /// A polymorphic pivot's restrict rule: throws while pivot rows refer to `owner`.
    public func checkDelete(of owner: Owner, _ db: SQLiteConnection) throws {
        if let onDelete { try references(to: owner)?.check(onDelete, deleting: Owner.sqlTable.name, db) }
    }

    /// A polymorphic pivot's cascade rule: deletes the pivot rows that refer to `owner`.
    public func prepareDelete(of owner: Owner, _ db: SQLiteConnection) throws {
        if let onDelete { try references(to: owner)?.apply(onDelete, db) }
    }
}

extension SQLModel {
    /// Declares that this model and `Related` are linked by `Pivot` rows (see
    /// ``BelongsToMany``).
    ///
    /// - Parameters:
    ///   - related: the linked model's type.
    ///   - pivot: the model of the rows that link the two.
    ///   - foreignKey: the pivot's property holding this model's key; by default this type's
    ///     name, lower-camel-cased, + `Id`.
    ///   - relatedKey: the pivot's property holding the related model's key; by default the
    ///     related type's name, lower-camel-cased, + `Id`.
    public static func belongsToMany<Related: SQLModel, Pivot: SQLModel>(
        _ related: Related.Type, through pivot: Pivot.Type, foreignKey: PartialKeyPath<Pivot>? = nil,
        relatedKey: PartialKeyPath<Pivot>? = nil
    ) -> BelongsToMany<Self, Related, Pivot> {
        BelongsToMany(foreignKey: foreignKey, relatedKey: relatedKey)
    }
}
