import Foundation
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
    public var openHooks: [@Sendable (SQLiteConnection) throws -> Void]

    /// Creates a configuration; every parameter has the default described on its property.
    public init(
        busyTimeout: Double = 5,
        foreignKeys: Bool = true,
        walMode: Bool = true,
        maximumReaders: Int = 4,
        readOnly: Bool = false,
        createsTables: Bool = true,
        openHooks: [@Sendable (SQLiteConnection) throws -> Void] = []
    ) {
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
/// (each `write` is one transaction; nested `write`s on the same thread become savepoints);
/// reads run concurrently on reader connections and see the last committed state. An
/// in-memory database has a single connection for both. Several databases (files or
/// in-memory) can be open at once; each is independent.
public final class Database: Sendable {
    /// The file path, or nil for an in-memory database.
    public let path: String?
    /// The settings the connections were opened with.
    public let configuration: DatabaseConfiguration
    private let writer: Exclusive<SQLiteConnection>
    private let readers: ReaderPool?
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
        self.writer = Exclusive(connection)
        self.observations = ObservationCenter(concurrentFetches: min(max(1, configuration.maximumReaders), ProcessInfo.processInfo.activeProcessorCount))
        self.readers = ReaderPool(maximum: max(1, configuration.maximumReaders)) {
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
        self.writer = Exclusive(try SQLiteConnection(path: ":memory:", readOnly: false, configuration: configuration))
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
        try writer.withLock { try $0.beginOpenEndedTransaction() }
        readsFromWriter.withLock { $0 = true }
    }

    /// Rolls back everything written since ``beginRollbackScope()``.
    package func endRollbackScope() throws {
        readsFromWriter.withLock { $0 = false }
        try writer.withLock { try $0.rollbackOpenEndedTransaction() }
    }

    // MARK: - Synchronous access

    /// Runs `body` in a write transaction on the writer connection: committed when `body`
    /// returns, rolled back when it throws. Calls nested on the same thread use savepoints.
    public func write<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withWriter { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `body` on the writer connection outside any transaction (e.g. for `VACUUM`, or
    /// to manage transactions yourself).
    public func writeWithoutTransaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withWriter(body)
    }

    /// Runs `body` in a read transaction: it sees one consistent, committed state of the
    /// database. On a file database it runs concurrently with writes and other reads.
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard let readers, !readsFromWriter.current else {
            return try withWriter { connection in
                // In memory (or in a rollback scope), reads share the writer; inside a write
                // they see its changes.
                connection.isInTransaction
                    ? try body(connection) : try connection.transaction(deferred: true) { try body(connection) }
            }
        }
        return try readers.withReader { connection in
            try connection.transaction(deferred: true) { try body(connection) }
        }
    }

    /// Runs `body` with the writer connection, then tells the observations which tables the
    /// transactions committed meanwhile changed. Every use of the writer goes through here, so
    /// writes made with ``writeWithoutTransaction(_:)`` and autocommit statements notify too.
    /// The notification only schedules fetches: it never runs in SQLite's hooks, and never
    /// waits for the observers.
    private func withWriter<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        var committed: Set<String> = []
        defer {
            if !committed.isEmpty { observations.databaseDidCommit(changing: committed, in: self) }
        }
        return try writer.withLock { connection in
            defer { committed = connection.takeCommittedChanges() }
            return try body(connection)
        }
    }

    /// Makes the writer collect the tables each transaction changes, if it does not yet. An
    /// observation calls it before its first fetch: the fetch sees every commit before, the
    /// hooks every commit after.
    func trackChanges() {
        guard !tracksChanges.current else { return }
        writer.withLock { $0.trackChanges() }
        tracksChanges.withLock { $0 = true }
    }

    // MARK: - Asynchronous access

    /// ``write(_:)`` without blocking the calling task: the work runs on a background thread.
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await background { try self.write(body) }
    }

    /// ``read(_:)`` without blocking the calling task: the work runs on a background thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await background { try self.read(body) }
    }

    private func background<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// A value used by one thread at a time; re-entrant on the thread that holds it.
final class Exclusive<Value>: @unchecked Sendable {
    private let lock = NSRecursiveLock()
    private let value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(value)
    }
}

/// Reader connections, opened on demand up to a maximum; a caller waits when all are busy.
final class ReaderPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var idle: [SQLiteConnection] = []
    private var opened = 0
    private let maximum: Int
    private let open: @Sendable () throws -> SQLiteConnection

    init(maximum: Int, open: @escaping @Sendable () throws -> SQLiteConnection) {
        self.maximum = maximum
        self.open = open
    }

    func withReader<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let connection = try acquire()
        defer { release(connection) }
        return try body(connection)
    }

    private func acquire() throws -> SQLiteConnection {
        condition.lock()
        while idle.isEmpty && opened >= maximum { condition.wait() }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        opened += 1
        condition.unlock()
        do {
            return try open()
        } catch {
            condition.lock()
            opened -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func release(_ connection: SQLiteConnection) {
        condition.lock()
        idle.append(connection)
        condition.signal()
        condition.unlock()
    }
}
