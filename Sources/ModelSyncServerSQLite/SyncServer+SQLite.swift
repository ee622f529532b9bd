import Foundation
import Logging
import ModelSyncJSON
import ModelSyncSQLite
import ModelSyncServer

/// A ``/ModelSyncServer/SyncServer`` over a SQLite file: start one over a file, move data between
/// a file and a JSON document, and back a file up while it is served.
extension SyncServer {
    /// Whether `path` names a SQLite file by its extension (`.sqlite`, `.sqlite3` or `.db`), as
    /// `modelsync-server serve <path>` decides between a SQLite file and a JSON file.
    public static func isSQLitePath(_ path: String) -> Bool {
        let lowered = path.lowercased()
        return [".sqlite", ".sqlite3", ".db"].contains { lowered.hasSuffix($0) }
    }

    /// Starts a server over the SQLite file at `path`, created (empty) when missing. One server
    /// serves a file at a time: a second one is refused.
    ///
    /// - Parameters:
    ///   - path: The SQLite file.
    ///   - host: The address to listen on; loopback by default.
    ///   - port: The port; 0 (the default) takes a free one (see ``/ModelSyncServer/SyncServer/baseURL``).
    ///   - options: The server's options, as for the other backends.
    ///   - durability: How commits are synced: ``SQLiteBackend/Durability/full`` (the default)
    ///     answers a write once it would survive a power loss.
    ///   - logger: Where the server logs.
    ///   - stopsOnSignals: Whether SIGINT and SIGTERM stop the server gracefully (the command line's).
    /// - Throws: ``/ModelSyncServer/ServerError/couldNotStart(_:)`` when another server serves
    ///   the file or the server cannot listen, ``/ModelSyncServer/ServerError/unreadableFile(path:reason:)``
    ///   when the file is no SQLite database or fails `PRAGMA quick_check`.
    public static func start(
        sqlite path: String, host: String = "127.0.0.1", port: Int = 0, options: ServerOptions = ServerOptions(),
        durability: SQLiteBackend.Durability = .full, logger: Logger = SyncServer.defaultLogger, stopsOnSignals: Bool = false
    ) async throws -> SyncServer {
        let backend = try await SQLiteBackend.open(
            path: path, initialData: nil, feedLimits: options.feedLimits, durability: durability, rules: options.access?.rules, logger: logger)
        return try await start(backend: backend, host: host, port: port, options: options, logger: logger, stopsOnSignals: stopsOnSignals)
    }

    /// Starts a server over the SQLite file at `path` after replacing its data with `data` (for
    /// tests: `TestServer.reset()` puts `data` back).
    public static func start(
        data: JSONValue, sqlite path: String, host: String = "127.0.0.1", port: Int = 0, options: ServerOptions = ServerOptions(),
        logger: Logger = SyncServer.defaultLogger
    ) async throws -> SyncServer {
        let backend = try await SQLiteBackend.open(path: path, initialData: data, feedLimits: options.feedLimits, rules: options.access?.rules, logger: logger)
        return try await start(backend: backend, host: host, port: port, options: options, logger: logger)
    }

    /// Loads a JSON document (as a JSON-file server saves it, bookkeeping included) into the
    /// SQLite file at `path` (created when missing), in one transaction: records keep their
    /// versions, so clients' feed cursors stay valid.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/cannotImport(_:)`` when the file already holds
    ///   data and `replacing` is false, or when two items of a collection have one id; nothing
    ///   changes then. ``/ModelSyncServer/ServerError/couldNotStart(_:)`` while a server serves the file.
    public static func importData(_ data: JSONValue, intoSQLite path: String, replacing: Bool = false, logger: Logger = SyncServer.defaultLogger) async throws {
        let backend = try await SQLiteBackend.open(path: path, initialData: nil, feedLimits: FeedLimits(), logger: logger)
        do {
            try await backend.database.write { connection in
                let holdsData = try connection.scalar("SELECT EXISTS (SELECT 1 FROM \(SQLiteSchema.resources))")?.integerValue == 1
                guard !holdsData || replacing else { throw ServerError.cannotImport("\(path) already holds data (replace it with --replace)") }
                try SQLiteBackend.replaceData(with: data, connection)
            }
        } catch {
            await backend.close()
            throw error
        }
        await backend.close()
    }

    /// Loads a database file (as ``/ModelSyncServer/SyncServer/start(file:host:port:options:logger:stopsOnSignals:)``
    /// serves it) into the SQLite file at `path`: ``importData(_:intoSQLite:replacing:logger:)``.
    public static func importData(fromFile file: URL, intoSQLite path: String, replacing: Bool = false, logger: Logger = SyncServer.defaultLogger) async throws {
        try await importData(.object(JSONFileBackend.load(file)), intoSQLite: path, replacing: replacing, logger: logger)
    }

    /// Writes the data of the SQLite file at `path` to a database file, atomically, in the form
    /// a JSON-file server saves: ``exportData(fromSQLite:logger:)``.
    public static func exportData(fromSQLite path: String, toFile file: URL, logger: Logger = SyncServer.defaultLogger) async throws {
        try JSONFileBackend.writeDocument(try await exportData(fromSQLite: path, logger: logger), to: file)
    }

    /// The data of the SQLite file at `path` as a JSON document that a JSON-file server (or an
    /// import into PostgreSQL or SQLite) reads back, bookkeeping included: one snapshot, read
    /// while a server may be serving the file.
    public static func exportData(fromSQLite path: String, logger: Logger = SyncServer.defaultLogger) async throws -> JSONValue {
        let database = try openServed(path)
        return try await database.read { connection in try SQLiteBackend.exportData(connection) }
    }

    /// Copies the SQLite file at `path` to `destination` (a new file) as one consistent snapshot,
    /// while a server may be serving it (`VACUUM INTO`): the copy is itself a database a
    /// server serves.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/unreadableFile(path:reason:)`` when the file cannot
    ///   be read or `destination` exists.
    public static func backUp(sqlite path: String, to destination: String) async throws {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw ServerError.unreadableFile(path: destination, reason: "the backup's file exists already")
        }
        let database = try openServed(path)
        do {
            // Outside a transaction (VACUUM runs in none), on a connection of its own: it reads one
            // snapshot and takes no write lock.
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // A thread of its own: the copy's reads and writes block it.
                DispatchQueue.global().async {
                    continuation.resume(with: Result {
                        try database.writeWithoutTransaction { connection in try connection.execute("VACUUM INTO ?", [.text(destination)]) }
                    })
                }
            }
        } catch {
            throw ServerError.unreadableFile(path: path, reason: "the backup failed: \(error)")
        }
    }

    /// Makes `email`'s built-in account an admin with `password` in the SQLite file at `path`,
    /// creating the account and its record in `accountsCollection` when there is none: the first
    /// admin, made offline (`modelsync-server admin <email> data.sqlite`; stop the server first,
    /// it holds the file).
    ///
    /// - Returns: The account's user id and whether it was created.
    public static func makeAdmin(
        email: String, password: String, passwords: any PasswordHasher, sqlite path: String, accountsCollection: String = "users",
        logger: Logger = SyncServer.defaultLogger
    ) async throws -> (userID: String, created: Bool) {
        let backend = try await SQLiteBackend.open(path: path, initialData: nil, feedLimits: FeedLimits(), logger: logger)
        return try await makeAdmin(email: email, password: password, passwords: passwords, closing: backend, accountsCollection: accountsCollection)
    }

    /// The file at `path` opened for reading beside the server that may serve it (WAL: its
    /// writes go on meanwhile).
    private static func openServed(_ path: String) throws -> Database {
        guard FileManager.default.fileExists(atPath: path) else { throw ServerError.unreadableFile(path: path, reason: "no such file") }
        do {
            return try Database(path: path, configuration: DatabaseConfiguration(foreignKeys: false, maximumReaders: 1, createsTables: false, functions: [SQLiteSchema.emailFunction]))
        } catch {
            throw ServerError.unreadableFile(path: path, reason: "\(error)")
        }
    }
}
