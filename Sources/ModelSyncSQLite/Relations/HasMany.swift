import ModelSyncCore

/// Children hold the owner's key: `User.posts` — every post whose `userId` is the user's id.
/// Polymorphic (``SQLModel/morphMany(_:as:onDelete:)``), the children also hold the owner's
/// type name in a type column, and the relation applies its delete rule itself.
///
/// ```swift
/// static let posts = hasMany(Post.self)                          // Post.userId = User.id
/// let posts = try User.posts.load(for: user, db, order: "id DESC")
/// let byUser = try User.posts.load(for: users, db)               // [[Post]], one query
/// ```
public struct HasMany<Owner: SQLModel, Child: SQLModel>: ModelRelation {
    /// The child's property holding the owner's key (`userId` for `User` by convention).
    public let foreignKey: String
    /// The owner's property referred to; nil for its primary key.
    public let ownerKey: String?
    /// What deleting the owner does to its children when the library applies the rule
    /// (polymorphic relations); nil otherwise (the children's ``BelongsTo`` rule applies).
    public let onDelete: DeleteRule?
    let morph: MorphType?

    /// Declares the relation; see ``SQLModel/hasMany(_:foreignKey:references:)``.
    public init(foreignKey: PartialKeyPath<Child>? = nil, references ownerKey: PartialKeyPath<Owner>? = nil) {
        self.init(foreignKey: foreignKey.map(propertyName) ?? conventionalForeignKey(Owner.self), ownerKey: ownerKey.map(propertyName), morph: nil, onDelete: nil)
    }

    init(foreignKey: String, ownerKey: String?, morph: MorphType?, onDelete: DeleteRule?) {
        self.foreignKey = foreignKey
        self.ownerKey = ownerKey
        self.morph = morph
        self.onDelete = onDelete
    }

    /// The statement that loads the children of `owners`, with `condition` and `order` on
    /// the children's side.
    public func sql(for owners: [Owner], where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> RelationSQL {
        try sql(for: owners, filter: RelatedFilter(where: condition, arguments, order: order))
    }

    /// The statement that loads the children of `owners` that `query` reads, in its order:
    /// `User.posts.sql(for: users, Post.where(\.title != "Draft").order(.desc(\.id)))`.
    public func sql(for owners: [Owner], _ query: SQLQuery<Child, Child>) throws -> RelationSQL {
        try sql(for: owners, filter: RelatedFilter(query, qualified: false))
    }

    /// The children of `owner` that `query` reads, in its order.
    public func load(for owner: Owner, _ db: SQLiteConnection, _ query: SQLQuery<Child, Child>) throws -> [Child] {
        try load(for: [owner], db, filter: RelatedFilter(query, qualified: false))[0]
    }

    /// The children of each of `owners` that `query` reads, in its order, with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, _ query: SQLQuery<Child, Child>) throws -> [[Child]] {
        try load(for: owners, db, filter: RelatedFilter(query, qualified: false))
    }

    func sql(for owners: [Owner], filter: RelatedFilter) throws -> RelationSQL {
        try Child.relatedSQL(try RelationField(Child.self, foreignKey), try ownerKeys(owners), fixed: try fixed(), filter: filter)
    }

    /// The children of `owner` matching `condition`, in `order`.
    public func load(for owner: Owner, _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> [Child] {
        try load(for: [owner], db, filter: RelatedFilter(where: condition, arguments, order: order))[0]
    }

    /// The children of each of `owners` (in the owners' order), with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> [[Child]] {
        try load(for: owners, db, filter: RelatedFilter(where: condition, arguments, order: order))
    }

    func load(for owners: [Owner], _ db: SQLiteConnection, filter: RelatedFilter) throws -> [[Child]] {
        let keys = try ownerKeys(owners)
        let children = try Child.related(try RelationField(Child.self, foreignKey), keys, fixed: try fixed(), filter: filter, db)
        return keys.map { children[$0] ?? [] }
    }

    private func ownerKeys(_ owners: [Owner]) throws -> [SQLValue] {
        let key = try RelationField(key: Owner.self, ownerKey)
        return try owners.map { try $0.fieldValue(key.index) }
    }

    /// The type column's condition of a polymorphic relation.
    private func fixed() throws -> [(column: String, value: SQLValue)] {
        guard let morph else { return [] }
        return [(try RelationField(Child.self, morph.property).column, .text(morph.value))]
    }

    private func references(to owner: Owner) throws -> MorphReferences<Child>? {
        guard let morph, onDelete != nil else { return nil }
        return try MorphReferences(
            type: RelationField(Child.self, morph.property), id: RelationField(Child.self, foreignKey), typeValue: morph.value,
            key: owner.fieldValue(RelationField(key: Owner.self, ownerKey).index))
    }

    /// A polymorphic relation's restrict rule: throws while children refer to `owner`.
    public func checkDelete(of owner: Owner, _ db: SQLiteConnection) throws {
        if let onDelete { try references(to: owner)?.check(onDelete, deleting: Owner.sqlTable.name, db) }
    }

    /// A polymorphic relation's cascade or set-null rule, applied to the children of `owner`.
    public func prepareDelete(of owner: Owner, _ db: SQLiteConnection) throws {
        if let onDelete { try references(to: owner)?.apply(onDelete, db) }
    }
}

/// One child holds the owner's key: `User.profile`. Loads like ``HasMany`` and keeps the
/// first child (in `order`, when given).
public struct HasOne<Owner: SQLModel, Child: SQLModel>: ModelRelation {
    /// The relation as a has-many.
    public let many: HasMany<Owner, Child>

    /// Declares the relation; see ``SQLModel/hasOne(_:foreignKey:references:)``.
    public init(_ many: HasMany<Owner, Child>) { self.many = many }

    /// The statement that loads the children of `owners`.
    public func sql(for owners: [Owner], where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> RelationSQL {
        try many.sql(for: owners, where: condition, arguments, order: order)
    }

    /// The child of `owner`, or nil.
    public func load(for owner: Owner, _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> Child? {
        try many.load(for: owner, db, where: condition, arguments, order: order).first
    }

    /// The child of each of `owners`, with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, where condition: String? = nil, _ arguments: [SQLValue] = [], order: String? = nil) throws -> [Child?] {
        try many.load(for: owners, db, where: condition, arguments, order: order).map(\.first)
    }

    /// The first child of `owner` that `query` reads, or nil.
    public func load(for owner: Owner, _ db: SQLiteConnection, _ query: SQLQuery<Child, Child>) throws -> Child? {
        try many.load(for: owner, db, query).first
    }

    /// The first child of each of `owners` that `query` reads, with one query.
    public func load(for owners: [Owner], _ db: SQLiteConnection, _ query: SQLQuery<Child, Child>) throws -> [Child?] {
        try many.load(for: owners, db, query).map(\.first)
    }

    /// The has-many's restrict check.
    public func checkDelete(of owner: Owner, _ db: SQLiteConnection) throws { try many.checkDelete(of: owner, db) }
    /// The has-many's cascade or set-null.
    public func prepareDelete(of owner: Owner, _ db: SQLiteConnection) throws { try many.prepareDelete(of: owner, db) }
}

extension SQLModel {
    /// Declares that `Child` rows hold this model's key (see ``HasMany``).
    ///
    /// - Parameters:
    ///   - child: the child model's type.
    ///   - foreignKey: the child's property holding the key; by default this model's type
    ///     name, lower-camel-cased, + `Id` (`userId` for `User`).
    ///   - references: this model's property referred to; its primary key by default.
    public static func hasMany<Child: SQLModel>(
        _ child: Child.Type, foreignKey: PartialKeyPath<Child>? = nil, references: PartialKeyPath<Self>? = nil
    ) -> HasMany<Self, Child> {
        HasMany(foreignKey: foreignKey, references: references)
    }

    /// Declares that one `Child` row holds this model's key (see ``HasOne``).
    public static func hasOne<Child: SQLModel>(
        _ child: Child.Type, foreignKey: PartialKeyPath<Child>? = nil, references: PartialKeyPath<Self>? = nil
    ) -> HasOne<Self, Child> {
        HasOne(HasMany(foreignKey: foreignKey, references: references))
    }
}
