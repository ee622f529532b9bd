// Eager loading that hands back a graph: each model with its related models attached, nested
// levels too, one query per relation and level (as GRDB's `including(all:)` and Fluent's
// `.with` do).
//
//     let shelves = try Writer.order(\.name)
//         .including(Writer.books, Book.order(\.title).including(Book.reviews))
//         .fetchAll(db)                               // [(Writer, [(Book, [Review])])]
//     for (writer, books) in shelves { … }

/// A query of models with related models attached: what `SQLQuery.including(_:_:)`
/// and its siblings return. Each `including` adds one element to the tuple: `(Writer, [Book])`,
/// then `((Writer, [Book]), Profile?)`.
public struct GraphQuery<Root: SQLModel, Element>: Sendable {
    /// The query of the root models, in its order.
    public let base: SQLQuery<Root, Root>
    /// Builds the elements from the root models read, one per root, in order.
    let build: @Sendable ([Root], SQLiteConnection) throws -> [Element]

    /// Every root model the base query reads, with what it includes.
    public func fetchAll(_ db: SQLiteConnection) throws -> [Element] {
        try build(try base.fetchAll(db), db)
    }

    /// The first root model the base query reads, with what it includes; nil when none.
    public func fetchOne(_ db: SQLiteConnection) throws -> Element? {
        try build(try base.limit(1).fetchAll(db), db).first
    }

    /// The element extended with what `load` finds for each root.
    private func adding<Loaded>(_ load: @escaping @Sendable ([Root], SQLiteConnection) throws -> [Loaded]) -> GraphQuery<Root, (Element, Loaded)> {
        let build = self.build
        return GraphQuery<Root, (Element, Loaded)>(base: base) { roots, db in
            Array(zip(try build(roots, db), try load(roots, db)))
        }
    }

    /// Also the children of `relation` that `children` reads, in its order.
    public func including<Child>(_ relation: HasMany<Root, Child>, _ children: SQLQuery<Child, Child> = Child.all())
        -> GraphQuery<Root, (Element, [Child])>
    {
        adding { roots, db in try relation.load(for: roots, db, children) }
    }

    /// Also the children of `relation`, each with what `children` includes (a nested level).
    public func including<Child, Nested>(_ relation: HasMany<Root, Child>, _ children: GraphQuery<Child, Nested>)
        -> GraphQuery<Root, (Element, [Nested])>
    {
        adding { roots, db in
            let groups = try relation.load(for: roots, db, children.base)
            return regroup(try children.build(groups.flatMap { $0 }, db), like: groups)
        }
    }

    /// Also the child of `relation` (nil when there is none).
    public func including<Child>(_ relation: HasOne<Root, Child>, _ child: SQLQuery<Child, Child> = Child.all())
        -> GraphQuery<Root, (Element, Child?)>
    {
        adding { roots, db in try relation.load(for: roots, db, child) }
    }

    /// Also the parent of `relation` (nil when the key is nil or names no row `parent` reads).
    public func including<Parent>(_ relation: BelongsTo<Root, Parent>, _ parent: SQLQuery<Parent, Parent> = Parent.all())
        -> GraphQuery<Root, (Element, Parent?)>
    {
        adding { roots, db in try relation.load(for: roots, db, parent) }
    }

    /// Also the parent of `relation`, with what `parent` includes (a nested level).
    public func including<Parent, Nested>(_ relation: BelongsTo<Root, Parent>, _ parent: GraphQuery<Parent, Nested>)
        -> GraphQuery<Root, (Element, Nested?)>
    {
        adding { roots, db in
            let parents = try relation.load(for: roots, db, parent.base)
            var built = try parent.build(parents.compactMap { $0 }, db).makeIterator()
            return parents.map { $0 == nil ? nil : built.next() }
        }
    }

    /// Also the models linked through `relation`'s pivot, each with its pivot row.
    public func including<Related, Pivot>(
        _ relation: BelongsToMany<Root, Related, Pivot>, _ related: SQLQuery<Related, Related> = Related.all()
    ) -> GraphQuery<Root, (Element, [Linked<Related, Pivot>])> {
        adding { roots, db in try relation.load(for: roots, db, related) }
    }
}

extension GraphQuery where Element == Root {
    /// The models of `query`, nothing attached yet.
    init(_ query: SQLQuery<Root, Root>) {
        self.init(base: query) { roots, _ in roots }
    }
}

/// `flat` cut into runs as long as the groups of `groups`.
private func regroup<Item, Model>(_ flat: [Item], like groups: [[Model]]) -> [[Item]] {
    var start = flat.startIndex
    return groups.map { group in
        let end = min(start + group.count, flat.endIndex)
        defer { start = end }
        return Array(flat[start..<end])
    }
}

extension SQLQuery where Element == Root {
    /// Each model with the children of `relation` that `children` reads:
    /// `Writer.all().including(Writer.books)` reads `[(Writer, [Book])]` with two queries.
    public func including<Child>(_ relation: HasMany<Root, Child>, _ children: SQLQuery<Child, Child> = Child.all())
        -> GraphQuery<Root, (Root, [Child])>
    {
        GraphQuery(self).including(relation, children)
    }

    /// Each model with the children of `relation`, each with what `children` includes:
    /// `Writer.all().including(Writer.books, Book.all().including(Book.reviews))`.
    public func including<Child, Nested>(_ relation: HasMany<Root, Child>, _ children: GraphQuery<Child, Nested>)
        -> GraphQuery<Root, (Root, [Nested])>
    {
        GraphQuery(self).including(relation, children)
    }

    /// Each model with the child of `relation`, or nil.
    public func including<Child>(_ relation: HasOne<Root, Child>, _ child: SQLQuery<Child, Child> = Child.all())
        -> GraphQuery<Root, (Root, Child?)>
    {
        GraphQuery(self).including(relation, child)
    }

    /// Each model with the parent of `relation`, or nil.
    public func including<Parent>(_ relation: BelongsTo<Root, Parent>, _ parent: SQLQuery<Parent, Parent> = Parent.all())
        -> GraphQuery<Root, (Root, Parent?)>
    {
        GraphQuery(self).including(relation, parent)
    }

    /// Each model with the parent of `relation` and what `parent` includes, or nil.
    public func including<Parent, Nested>(_ relation: BelongsTo<Root, Parent>, _ parent: GraphQuery<Parent, Nested>)
        -> GraphQuery<Root, (Root, Nested?)>
    {
        GraphQuery(self).including(relation, parent)
    }

    /// Each model with the models linked through `relation`'s pivot.
    public func including<Related, Pivot>(
        _ relation: BelongsToMany<Root, Related, Pivot>, _ related: SQLQuery<Related, Related> = Related.all()
    ) -> GraphQuery<Root, (Root, [Linked<Related, Pivot>])> {
        GraphQuery(self).including(relation, related)
    }
}
