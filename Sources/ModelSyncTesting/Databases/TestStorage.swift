import Foundation
import ModelSync

/// Where a test database lives. Run a test against both with
/// `@Test(arguments: TestStorage.allCases)`.
public enum TestStorage: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A file in a temporary directory of its own (WAL, a writer and a reader pool, like an
    /// app's database), removed when the database is deallocated.
    case file
    /// An in-memory database (one connection).
    case memory

    /// `file` or `memory`, which names the argument of a parameterized test.
    public var description: String { rawValue }

    /// Opens a new, empty database of this kind with `migrations` run and the tables of
    /// `models` prepared, independent of every other one.
    ///
    /// A file database lives in a new temporary directory that is removed, with the database,
    /// its WAL and anything else put there, when the returned database is deallocated.
    ///
    /// - Throws: ``/ModelSyncSQLite/SQLiteError`` when a migration fails or a table does not match its model;
    ///   the temporary directory is removed then too.
    public func open(
        models: [any SQLModel.Type] = [], migrations: Migrator? = nil,
        configuration: DatabaseConfiguration = DatabaseConfiguration()
    ) throws -> Database {
        try open(models: models, migrations: migrations, configuration: configuration, removedAtExit: false)
    }

    /// ``open(models:migrations:configuration:)``; `removedAtExit` also removes a file
    /// database's directory when the process exits, for a database that is never deallocated.
    func open(
        models: [any SQLModel.Type], migrations: Migrator?, configuration: DatabaseConfiguration, removedAtExit: Bool
    ) throws -> Database {
        switch self {
        case .memory:
            return try Database(inMemory: models, migrations: migrations, configuration: configuration)
        case .file:
            let directory = try TemporaryDirectory(prefix: "modelsync-db")
            do {
                let database = try Database(
                    path: directory.path("test.sqlite"), models: models, migrations: migrations, configuration: configuration)
                database.onDeinit { directory.remove() }
                if removedAtExit { directory.removeAtExit() }
                return database
            } catch {
                directory.remove()
                throw error
            }
        }
    }
}

/// Runs `body` with a new database (see ``TestStorage/open(models:migrations:configuration:)``);
/// a file database's temporary files are removed when `body` returns or throws, unless `body`
/// keeps the database.
///
/// ```swift
/// try withTestDatabase(.file, models: [Post.self]) { db in
///     try db.write { try post.insert($0) }
/// }
/// ```
public func withTestDatabase<T>(
    _ storage: TestStorage = .memory, models: [any SQLModel.Type] = [], migrations: Migrator? = nil,
    configuration: DatabaseConfiguration = DatabaseConfiguration(), _ body: (Database) throws -> T
) throws -> T {
    try body(try storage.open(models: models, migrations: migrations, configuration: configuration))
}

/// The `async` form of ``withTestDatabase(_:models:migrations:configuration:_:)``.
public func withTestDatabase<T>(
    _ storage: TestStorage = .memory, models: [any SQLModel.Type] = [], migrations: Migrator? = nil,
    configuration: DatabaseConfiguration = DatabaseConfiguration(), _ body: (Database) async throws -> T
) async throws -> T {
    try await body(try storage.open(models: models, migrations: migrations, configuration: configuration))
}
