import Foundation
import ModelSync
import ModelSyncCore

/// One database, set up once (schema, migrations, seed rows), shared by many tests, each of
/// which runs inside a transaction that is rolled back when it ends: a test sees the shared
/// rows and its own writes, never another test's.
///
/// ```swift
/// static let shared = SharedTestDatabase(models: [Post.self]) { db in
///     try db.write { var post = Post(title: "Seed"); try post.insert($0) }
/// }
/// try await shared.withRollback { db in
///     try db.write { var post = Post(title: "Only here"); try post.insert($0) }   // gone afterwards
/// }
/// ```
///
/// Tests that use the same shared database take turns (one rollback scope at a time, in the
/// order they asked), because a rollback scope is one transaction on the single writer
/// connection. Inside a scope, `write` calls become savepoints and reads go through the
/// writer connection, which is the only one that sees the uncommitted rows; a file database's
/// reader pool is not used until the scope ends. Do not `COMMIT`, `ROLLBACK` or run
/// migrations inside a scope. A file database's temporary directory is removed when the
/// process exits.
public final class SharedTestDatabase: Sendable {
    private let turns = AsyncTurns()
    private let open: @Sendable () throws -> Database
    /// The database once opened (or why it could not be), shared by every later scope.
    private let opened = Locked<Result<Database, any Error>?>(nil)

    /// Describes the database; it is opened, and `seed` run once (its writes are committed:
    /// every test sees them), by the first ``withRollback(_:)``. Creating one cannot fail, so
    /// it fits a `static let` of a test suite.
    public init(
        _ storage: TestStorage = .memory, models: [any SQLModel.Type] = [], migrations: Migrator? = nil,
        configuration: DatabaseConfiguration = DatabaseConfiguration(),
        seed: @escaping @Sendable (Database) throws -> Void = { _ in }
    ) {
        let models = UncheckedSendable(models)
        open = {
            // A shared database usually lives in a `static let`, never deallocated.
            let database = try storage.open(
                models: models.value, migrations: migrations, configuration: configuration, removedAtExit: true)
            try seed(database)
            return database
        }
    }

    /// The shared database, opened and seeded on first use. Use it inside
    /// ``withRollback(_:)``: writes made outside a scope are committed for good.
    ///
    /// - Throws: ``/ModelSyncSQLite/SQLiteError`` from opening, migrating or seeding (every call, once it failed).
    public func database() throws -> Database {
        try opened.withLock { opened in
            if let opened { return try opened.get() }
            let result = Result { try open() }
            opened = result
            return try result.get()
        }
    }

    /// Runs `body` inside a transaction that is rolled back when `body` returns or throws.
    ///
    /// - Throws: what `body` throws, or ``/ModelSyncSQLite/SQLiteError`` when the database cannot be opened or
    ///   the transaction cannot be opened or rolled back.
    public func withRollback<T>(_ body: (Database) async throws -> T) async throws -> T {
        await turns.acquire()
        return try await afterwards {
            let database = try self.database()
            try database.beginRollbackScope()
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await body(database))
            } catch {
                outcome = .failure(error)
            }
            try database.endRollbackScope()
            return try outcome.get()
        } run: {
            await turns.release()
        }
    }
}

/// Turns handed out one at a time, first come, first served.
actor AsyncTurns {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Returns when it is the caller's turn.
    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Ends the caller's turn and starts the next one.
    func release() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
