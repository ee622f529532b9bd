import ModelSyncCore

// A model value remembers the relations it loaded: the second `related(_:_:)` of one relation
// answers from memory (Daikiri's and Eloquent's loaded relations). A value read from the
// database anew starts with an empty cache, so it sees rows added since; `invalidate` forgets.

/// The related models one model value has loaded. `@Model` gives each value of a struct that
/// declares `SQLModel` and relations a cache of its own (copies of the value share it); you do
/// not create one.
///
/// It takes no part in the model's equality, hashing or coding.
public final class RelationCache: Hashable, Sendable {
    private let entries = Locked<[String: any Sendable]>([:])

    /// An empty cache.
    public init() {}

    /// Every cache equals every other: what a value has loaded does not change what it is.
    public static func == (lhs: RelationCache, rhs: RelationCache) -> Bool { true }

    /// Hashes nothing, as equality compares nothing.
    public func hash(into hasher: inout Hasher) {}

    /// The value stored under `key`, or what `load` returns, stored. Two threads asking at once
    /// may both load; the later result stays.
    func value<T: Sendable>(_ key: String, _ load: () throws -> T) rethrows -> T {
        // Unwrapped before the cast: a missing entry cast to an optional `T` would be a cached nil.
        if let entry = entries.withLock({ $0[key] }), let cached = entry as? T { return cached }
        let loaded = try load()
        entries.withLock { $0[key] = loaded }
        return loaded
    }

    /// Forgets the value under `key`, or every value when nil.
    func remove(_ key: String?) {
        entries.withLock { entries in
            if let key { entries[key] = nil } else { entries.removeAll() }
        }
    }
}

extension SQLModel {
    /// The children of `relation`, loaded once per model value (see ``RelationCache``).
    public func related<Child>(_ relation: HasMany<Self, Child>, _ db: SQLiteConnection) throws -> [Child] {
        try cached(relation) { try relation.load(for: self, db) }
    }

    /// The child of `relation`, loaded once per model value.
    public func related<Child>(_ relation: HasOne<Self, Child>, _ db: SQLiteConnection) throws -> Child? {
        try cached(relation) { try relation.load(for: self, db) }
    }

    /// The parent of `relation`, loaded once per model value.
    public func related<Parent>(_ relation: BelongsTo<Self, Parent>, _ db: SQLiteConnection) throws -> Parent? {
        try cached(relation) { try relation.load(for: self, db) }
    }

    /// The models linked through `relation`'s pivot, loaded once per model value.
    public func related<Related, Pivot>(_ relation: BelongsToMany<Self, Related, Pivot>, _ db: SQLiteConnection) throws
        -> [Linked<Related, Pivot>]
    {
        try cached(relation) { try relation.load(for: self, db) }
    }

    /// Forgets what this value (and its copies) loaded through `relation`: the next
    /// ``related(_:_:)-(HasMany<Self,Child>,_)`` reads the database again.
    public func invalidate(_ relation: some ModelRelation<Self>) {
        relationCache?.remove(Self.cacheKey(relation))
    }

    /// Forgets every relation this value (and its copies) loaded.
    public func invalidateRelations() {
        relationCache?.remove(nil)
    }

    /// `load`'s result, from the cache when this value has one (else loaded every time).
    private func cached<T: Sendable>(_ relation: some ModelRelation<Self>, _ load: () throws -> T) throws -> T {
        guard let relationCache else { return try load() }
        return try relationCache.value(Self.cacheKey(relation), load)
    }

    /// A relation's key in the cache: its type and its declaration (keys, rules), which tell
    /// two relations of one model apart.
    private static func cacheKey(_ relation: some ModelRelation<Self>) -> String {
        String(reflecting: type(of: relation)) + "|" + String(describing: relation)
    }
}
