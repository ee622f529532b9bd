// The ActiveRecord and query calls with a `Database` in place of a connection, for async code:
// `try await post.insert(db)`, `try await Post.where(\.userId == 1).fetchAll(db)`.
//
// Why: in async code, `db.write { … }` resolves to the async overload, whose closure runs on
// the writer's thread and so must be `@Sendable`; the sync habit of mutating a model captured
// from the caller (`try db.write { try post.insert($0) }`) then does not compile. These calls
// take the model by value, run the same sync operation on the right connection, and hand the
// result back, so the common case reads the same in both worlds.

extension SQLModel {
    /// ``insert(_:validate:)-(SQLiteConnection,_)`` in a write transaction of `database`;
    /// the model gets its assigned id, as the sync call gives it.
    public mutating func insert(_ database: Database, validate: Bool = true) async throws {
        try await writing(database) { model, db in try model.insert(db, validate: validate) }
    }

    /// ``save(_:validate:)-(SQLiteConnection,_)`` (insert or update) in a write transaction.
    public mutating func save(_ database: Database, validate: Bool = true) async throws {
        try await writing(database) { model, db in try model.save(db, validate: validate) }
    }

    /// Runs `operation` on a copy of this model in a write transaction, then takes the copy
    /// as written (with the id it was given).
    private mutating func writing(
        _ database: Database, _ operation: @escaping @Sendable (inout Self, SQLiteConnection) throws -> Void
    ) async throws {
        let model = self
        self = try await database.write { db in
            var written = model
            try operation(&written, db)
            return written
        }
    }

    /// ``update(_:validate:)-(SQLiteConnection,_)`` in a write transaction.
    public func update(_ database: Database, validate: Bool = true) async throws {
        try await database.write { [self] db in try update(db, validate: validate) }
    }

    /// ``delete(_:)-(SQLiteConnection)`` in a write transaction; whether a row was deleted.
    @discardableResult
    public func delete(_ database: Database) async throws -> Bool {
        try await database.write { [self] db in try delete(db) }
    }

    /// The model with primary key `key`, or nil, read in a read transaction.
    public static func find(_ key: some SQLColumnEncodable & Sendable, _ database: Database) async throws -> Self? {
        try await database.read { db in try find(key, db) }
    }
}

extension SQLQuery where Element: Sendable {
    /// ``fetchAll(_:)-(SQLiteConnection)`` in a read transaction of `database`.
    public func fetchAll(_ database: Database) async throws -> [Element] {
        try await database.read { [self] db in try fetchAll(db) }
    }

    /// ``fetchOne(_:)-(SQLiteConnection)`` in a read transaction of `database`.
    public func fetchOne(_ database: Database) async throws -> Element? {
        try await database.read { [self] db in try fetchOne(db) }
    }

    /// ``fetchCount(_:)-(SQLiteConnection)`` in a read transaction of `database`.
    public func fetchCount(_ database: Database) async throws -> Int {
        try await database.read { [self] db in try fetchCount(db) }
    }

    /// ``exists(_:)-(SQLiteConnection)`` in a read transaction of `database`.
    public func exists(_ database: Database) async throws -> Bool {
        try await database.read { [self] db in try exists(db) }
    }
}
