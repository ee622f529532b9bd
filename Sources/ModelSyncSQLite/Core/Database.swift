import CSQLite
import Foundation
import Logging
import ModelSyncCore

/// How a ``Database`` opens its connections.
public struct DatabaseConfiguration: Sendable {
    /// How long a statement waits for a lock held by another connection before failing with
    /// `SQLITE_BUSY`, in seconds. Writers of one `Database` never wait on each other: they
    /// take turns on its single writer connection.
    public var busyTimeout: Double
    /// Whether `FOREIGN KEY` constraints are enforced.
    public var foreignKeys: Bool
    /// Write-ahead logging for database files, so readers and the writer never block each
    /// other. Ignored for in-memory databases.
    public var walMode: Bool
    /// The most reader connections a file database opens (they are opened on demand).
    public var maximumReaders: Int
    /// Opens the database read-only: every write fails with `SQLITE_READONLY`.
    public var readOnly: Bool
    /// Create the table of each model passed to the database (and of each model saved) when
    /// it does not exist yet.
    public var createsTables: Bool
    /// Called on every new connection, after ModelSync's own settings: set pragmas,
    /// register functions.
    ///
    /// ModelSync turns `PRAGMA recursive_triggers` on, so that the rows `REPLACE` deletes fire
    /// delete triggers (a ``FullTextIndex`` needs them). A trigger that writes its own table
    /// then fires itself: give it a `WHEN` clause that stops the recursion, or turn the pragma
    /// off here when no full-text index sees `REPLACE`.
    public var openHooks: [@Sendable (SQLiteConnection) throws -> Void]
    /// How many prepared statements each connection keeps (least recently used ones are
    /// finalized beyond it). Queries whose SQL differs only in their values share one
    /// statement (values are bound, `IN` lists too), so this bounds distinct query shapes.
    public var statementCacheSize: Int = 256
    /// Where every statement is traced, at `.trace` level: the SQL with its arguments written
    /// in (text and blob literals beyond 256 bytes cut short) as the message, and the time
    /// SQLite spent running it as the metadata `sqlite.duration` (`0.12 ms`) and
    /// `sqlite.duration_ns`. A logger above `.trace` costs one level check per statement; nil
    /// (the default) installs nothing.
    public var logger: Logger?
    /// Swift closures registered as SQL functions on every connection, the readers opened
    /// later included, before the ``openHooks`` run.
    public var functions: [SQLiteScalarFunction]
    /// The time ActiveRecord writes stamp into ``TimestampedModel`` and
    /// ``SoftDeletableModel`` rows; the system clock unless replaced (a test's fixed clock).
    public var now: @Sendable () -> Date = { Date() }

    /// Creates a configuration; every parameter has the default described on its property.
    public init(
        busyTimeout: Double = 5,
        foreignKeys: Bool = true,
        walMode: Bool = true,
        maximumReaders: Int = 4,
        readOnly: Bool = false,
        createsTables: Bool = true,
        openHooks: [@Sendable (SQLiteConnection) throws -> Void] = [],
        logger: Logger? = nil,
        functions: [SQLiteScalarFunction] = []
    ) {
        self.logger = logger
        self.functions = functions
        self.busyTimeout = busyTimeout
        self.foreignKeys = foreignKeys
        self.walMode = walMode
        self.maximumReaders = maximumReaders
        self.readOnly = readOnly
        self.createsTables = createsTables
        self.openHooks = openHooks
    }
}

/// A SQLite database: one writer connection and, for files in WAL mode, a pool of readers.
///
/// ```swift
/// let db = try Database(path: "app.sqlite", models: [Post.self])
/// try db.write { try post.save($0) }
/// let posts = try db.read { try Post.all($0) }
/// ```
///
/// `Database` is `Sendable`: share one value between tasks. Writes take turns on the writer
/// (each `write` is one transaction; nested `write`s become savepoints); reads run
/// concurrently on reader connections and see the last committed state. An in-memory
/// database has a single connection for both. Several databases (files or in-memory) can be
/// open at once; each is independent.
///
/// The async `read`/`write` suspend while they wait (no thread is parked) and are cancellable;
/// the synchronous ones block the calling thread. Both follow the same rules:
/// - a `read` nested in a `write` runs on the writer and sees its uncommitted changes;
/// - a `read` nested in a `read` runs in the outer read's transaction;
/// - a `write` nested in a `write` is a savepoint;
/// - a `write` nested in a `read` throws ``SQLiteError/Kind-swift.enum/writeInsideRead`` at
///   once.
/// No nesting waits for a connection its own thread holds, so none can deadlock.
public final class Database: Sendable {
    /// The file path, or nil for an in-memory database.
    public let path: String?
    /// The settings the connections were opened with.
    public let configuration: DatabaseConfiguration
    private let writer: ConnectionPool
    private let readers: ConnectionPool?
    /// Whether a rollback scope is open: reads then go to the writer, the only connection that
    /// sees the scope's uncommitted rows.
    private let readsFromWriter = Locked(false)
    /// Run when the database is deallocated (a test database removes its temporary files).
    private let deinitActions = Locked<[@Sendable () -> Void]>([])
    /// The live observations, told after each commit which tables changed.
    let observations: ObservationCenter
    /// Whether the writer collects changed tables: from the first observation on, so that
    /// databases nobody observes never pay for SQLite's hooks.
    private let tracksChanges = Locked(false)

    /// Opens (creating if needed) the database file at `path`, runs the pending `migrations`,
    /// and prepares the tables of `models`: creates missing ones when
    /// ``DatabaseConfiguration/createsTables`` is on, adds columns to those of models that
    /// ``SQLModel/autoAlters``, and checks the others against their models.
    public init(
        path: String,
        models: [any SQLModel.Type] = [],
        migrations: Migrator? = nil,
        configuration: DatabaseConfiguration = DatabaseConfiguration()
    ) throws {
        self.path = path
        self.configuration = configuration
        let connection = try SQLiteConnection(path: path, readOnly: configuration.readOnly, configuration: configuration)
        if configuration.walMode, !configuration.readOnly {
            try connection.execute("PRAGMA journal_mode = WAL")
            try connection.execute("PRAGMA synchronous = NORMAL")
        }
        self.writer = ConnectionPool(single: connection)
        self.observations = ObservationCenter(concurrentFetches: min(max(1, configuration.maximumReaders), ProcessInfo.processInfo.activeProcessorCount))
        self.readers = ConnectionPool(maximum: max(1, configuration.maximumReaders)) {
            let reader = try SQLiteConnection(path: path, readOnly: configuration.readOnly, configuration: configuration)
            try reader.execute("PRAGMA query_only = ON")
            return reader
        }
        try prepare(models, migrations)
    }

    /// Opens a new, empty in-memory database, independent of every other one, runs
    /// `migrations` and creates the tables of `models`.
    public init(
        inMemory models: [any SQLModel.Type] = [],
        migrations: Migrator? = nil,
        configuration: DatabaseConfiguration = DatabaseConfiguration()
    ) throws {
        self.path = nil
        self.configuration = configuration
        self.writer = ConnectionPool(single: try SQLiteConnection(path: ":memory:", readOnly: false, configuration: configuration))
        // One connection: observations fetch one batch at a time.
        self.observations = ObservationCenter(concurrentFetches: 1)
        self.readers = nil
        try prepare(models, migrations)
    }

    private func prepare(_ models: [any SQLModel.Type], _ migrations: Migrator?) throws {
        try withWriter { connection in
            try migrations?.migrate(connection)
            guard !models.isEmpty else { return }
            try connection.transaction {
                connection.tablesBeingPrepared = Set(models.map { $0.sqlTable.name.lowercased() })
                defer { connection.tablesBeingPrepared = [] }
                for model in models { try model.prepareTable(connection) }
            }
        }
    }

    deinit {
        for action in deinitActions.current { action() }
    }

    /// Registers work to run when the database is deallocated.
    package func onDeinit(_ action: @escaping @Sendable () -> Void) {
        deinitActions.withLock { $0.append(action) }
    }

    // MARK: - Rollback scopes (tests)

    /// Opens a transaction on the writer that stays open until ``endRollbackScope()``: every
    /// `write` in between becomes a savepoint inside it, and reads use the writer so they see
    /// those writes.
    package func beginRollbackScope() throws {
        try withWriter { try $0.beginOpenEndedTransaction() }
        readsFromWriter.withLock { $0 = true }
    }

    /// Rolls back everything written since ``beginRollbackScope()``.
    package func endRollbackScope() throws {
        readsFromWriter.withLock { $0 = false }
        try withWriter { try $0.rollbackOpenEndedTransaction() }
    }

    // MARK: - Synchronous access

    /// Runs `body` in a write transaction on the writer connection: committed when `body`
    /// returns, rolled back when it throws. A `write` nested in a `write` (or in a `read`
    /// nested in a `write`) becomes a savepoint of the outer transaction; a `write` inside a
    /// `read` throws ``SQLiteError/Kind-swift.enum/writeInsideRead`` at once.
    public func write<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withWriter { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `body` on the writer connection outside any transaction (e.g. for `VACUUM`, or
    /// to manage transactions yourself). Nests like ``write(_:)-53tgv``.
    public func writeWithoutTransaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withWriter(body)
    }

    /// Runs `body` in a read transaction: it sees one consistent, committed state of the
    /// database. On a file database it runs concurrently with writes and other reads.
    ///
    /// Nested in a `write`, it runs on the writer connection and sees the write's uncommitted
    /// changes; nested in a `read`, it runs in that read's transaction.
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if let connection = writer.heldByCurrentThread() {
            // Nested in a use of the writer: part of it, in its transaction if one is open.
            return connection.isInTransaction
                ? try body(connection) : try connection.transaction(deferred: true) { try body(connection) }
        }
        if let readers, let connection = readers.heldByCurrentThread() { return try body(connection) }
        guard let readers, !readsFromWriter.current else {
            return try withWriter { connection in try readOnWriter(connection, body) }
        }
        return try readers.withConnection { connection in
            try connection.transaction(deferred: true) { try body(connection) }
        }
    }

    /// A read that runs on the writer although not nested in a write (in memory, or in a
    /// rollback scope): a write inside it is refused, as it would be on a reader.
    private func readOnWriter<T>(_ connection: SQLiteConnection, _ body: (SQLiteConnection) throws -> T) throws -> T {
        connection.readDepth += 1
        defer { connection.readDepth -= 1 }
        return connection.isInTransaction
            ? try body(connection) : try connection.transaction(deferred: true) { try body(connection) }
    }

    /// Runs `body` with the writer connection, then tells the observations which tables the
    /// transactions committed meanwhile changed. Every use of the writer goes through here, so
    /// writes made with ``writeWithoutTransaction(_:)`` and autocommit statements notify too.
    /// The notification only schedules fetches: it never runs in SQLite's hooks, and never
    /// waits for the observers. Nested in a use of the writer on the same thread, `body` runs
    /// in it (the outer use notifies); nested in a read, it throws.
    private func withWriter<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if let connection = writer.heldByCurrentThread() {
            guard connection.readDepth == 0 else { throw SQLiteError.writeInsideRead() }
            return try body(connection)
        }
        if let readers, readers.heldByCurrentThread() != nil { throw SQLiteError.writeInsideRead() }
        var committed: Set<String> = []
        defer {
            if !committed.isEmpty { observations.databaseDidCommit(changing: committed, in: self) }
        }
        return try writer.withConnection { connection in
            defer { committed = connection.takeCommittedChanges() }
            return try body(connection)
        }
    }

    /// Makes the writer collect the tables each transaction changes, if it does not yet. An
    /// observation calls it before its first fetch: the fetch sees every commit before, the
    /// hooks every commit after.
    package func trackChanges() {
        guard !tracksChanges.current else { return }
        if let connection = writer.heldByCurrentThread() {
            connection.trackChanges()
        } else {
            // The writer pool holds one open connection: acquiring it cannot fail.
            try? writer.withConnection { $0.trackChanges() }
        }
        tracksChanges.withLock { $0 = true }
    }

    /// How many async callers wait for the writer (for tests).
    package var writerWaiterCount: Int { writer.asyncWaiterCount }

    // MARK: - Asynchronous access

    /// ``write(_:)`` for async callers: the task suspends (no thread waits) until the writer
    /// is free, then runs `body` on its own thread.
    ///
    /// Cancelling the task while it waits removes it from the queue; cancelling it while
    /// `body` runs interrupts the running statement and rolls the transaction back. Either way
    /// the call throws `CancellationError`.
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withWriter { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `migrator`'s pending migrations, then checks the tables of `models` against them
    /// on the writer (once per connection, as a first write would), for an async caller: the
    /// task suspends (no thread waits) until the writer is free. (Not an async overload of a
    /// public method, which would make every unawaited call of the synchronous one in async
    /// code an error.)
    package func migrate(_ migrator: Migrator, checking models: [any SQLModel.Type] = []) async throws {
        try await withWriter { connection in
            try migrator.migrate(connection)
            for model in models { try model.prepareTable(connection) }
        }
    }

    /// ``read(_:)`` for async callers: the task suspends (no thread waits) until a reader is
    /// free, then runs `body` on its own thread. Cancellation works as for
    /// ``write(_:)-10iz``.
    public func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        guard let readers, !readsFromWriter.current else {
            return try await withWriter { connection in try self.readOnWriter(connection, body) }
        }
        return try await readers.withConnection { connection in
            try connection.transaction(deferred: true) { try body(connection) }
        }
    }

    /// ``withWriter(_:)`` for async callers. A body cannot await, so no async call is ever
    /// nested in another's body on the same thread: no reentrancy check is needed.
    private func withWriter<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await writer.withConnection { connection in
            defer {
                let committed = connection.takeCommittedChanges()
                if !committed.isEmpty { self.observations.databaseDidCommit(changing: committed, in: self) }
            }
            return try body(connection)
        }
    }
}

extension SQLiteError {
    /// A write started inside a read: the read's connection is read-only, and waiting for the
    /// writer there could deadlock.
    static func writeInsideRead() -> SQLiteError {
        SQLiteError(
            .writeInsideRead, code: SQLITE_MISUSE,
            message: "a write cannot run inside a read: start the write outside, or read inside the write")
    }
}
