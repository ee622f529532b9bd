// Typed conditions across a relation, instead of a raw join: the models that have (or have
// no) related rows matching a query (Eloquent's `whereHas`, GRDB's `joining(required:)` without
// its duplicates). Each renders `key [NOT] IN (SELECT … FROM related WHERE …)`, so a model
// appears once whatever the number of matching related rows.
//
//     let authors = Writer.where(has: Writer.books, Book.where(\.title.hasPrefix("Te")))

extension SQLQuery {
    /// Only the models with at least one child of `relation` that `children` reads.
    public func `where`<Child>(has relation: HasMany<Root, Child>, _ children: SQLQuery<Child, Child> = Child.all()) -> Self {
        with { $0.addFilter(relationFilter { try relation.keyCondition(children, negated: false) }) }
    }

    /// Only the models with no child of `relation` that `children` reads.
    public func `where`<Child>(hasNo relation: HasMany<Root, Child>, _ children: SQLQuery<Child, Child> = Child.all()) -> Self {
        with { $0.addFilter(relationFilter { try relation.keyCondition(children, negated: true) }) }
    }

    /// Only the models whose parent through `relation` is one that `parents` reads.
    public func `where`<Parent>(has relation: BelongsTo<Root, Parent>, _ parents: SQLQuery<Parent, Parent> = Parent.all()) -> Self {
        with { $0.addFilter(relationFilter { try relation.keyCondition(parents) }) }
    }
}

extension SQLModel {
    /// The models with at least one child of `relation` that `children` reads:
    /// `Writer.where(has: Writer.books, Book.where(\.title == "Tehanu"))`.
    public static func `where`<Child>(has relation: HasMany<Self, Child>, _ children: SQLQuery<Child, Child> = Child.all())
        -> SQLQuery<Self, Self>
    {
        all().where(has: relation, children)
    }

    /// The models whose parent through `relation` is one that `parents` reads.
    public static func `where`<Parent>(has relation: BelongsTo<Self, Parent>, _ parents: SQLQuery<Parent, Parent> = Parent.all())
        -> SQLQuery<Self, Self>
    {
        all().where(has: relation, parents)
    }
}

/// The condition `build` makes, or a failure the query throws when it runs (a relation that
/// names no stored property).
private func relationFilter(_ build: () throws -> SQLNode) -> SQLNode {
    do {
        return try build()
    } catch let error as SQLiteError {
        return .failure(error)
    } catch {
        return .failure(.misuse("\(error)"))
    }
}

/// `SELECT column FROM …` of `query`'s rows with a key: its filter and scope, without order.
private func keySubquery<M: SQLModel>(_ query: SQLQuery<M, M>, column: String) -> SelectStatement {
    var statement = query.statement
    let key = SQLNode.column(table: M.sqlTable.name, name: column)
    statement.columns = [key]
    statement.orderings = []
    // A NULL among the keys would make `NOT IN` match nothing at all.
    statement.addFilter(.postfix(key, "IS NOT NULL"))
    return statement
}

extension HasMany {
    /// `ownerKey [NOT] IN (SELECT foreignKey FROM children WHERE …)`, the type column fixed
    /// for a polymorphic relation.
    func keyCondition(_ children: SQLQuery<Child, Child>, negated: Bool) throws -> SQLNode {
        let ownerKey = try RelationField(key: Owner.self, ownerKey)
        var select = keySubquery(children, column: try RelationField(Child.self, foreignKey).field.column)
        if let morph {
            let type = try RelationField(Child.self, morph.property).field.column
            select.addFilter(.operation(.column(table: Child.sqlTable.name, name: type), "=", .value(.text(morph.value))))
        }
        return .inSubquery(.column(table: Owner.sqlTable.name, name: ownerKey.field.column), select, negated: negated)
    }
}

extension BelongsTo {
    /// `foreignKey IN (SELECT parentKey FROM parents WHERE …)`.
    func keyCondition(_ parents: SQLQuery<Parent, Parent>) throws -> SQLNode {
        let foreignKey = try RelationField(Owner.self, foreignKey)
        let select = keySubquery(parents, column: try RelationField(key: Parent.self, parentKey).field.column)
        return .inSubquery(.column(table: Owner.sqlTable.name, name: foreignKey.field.column), select, negated: false)
    }
}
