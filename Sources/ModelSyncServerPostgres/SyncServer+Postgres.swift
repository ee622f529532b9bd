import Foundation
import Logging
import ModelSyncJSON
import ModelSyncServer
import PostgresNIO

/// A ``/ModelSyncServer/SyncServer`` over PostgreSQL: start one over a database, and move data between a
/// database and a JSON file.
extension SyncServer {
    /// Starts a server over a PostgreSQL database that holds data (see
    /// ``importData(_:into:replacing:logger:)``). Several servers may serve one database.
    ///
    /// Under access rules (``/ModelSyncServer/ServerOptions/access``) every read and write obeys
    /// them, and row-level security holds them too: the collection tables get policies that say
    /// the rules, and each request's transaction names its caller. Connect as a role that
    /// row-level security binds (not a superuser, no `BYPASSRLS`), or name one with `?role=`.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError`` when PostgreSQL cannot be reached, the schema holds no data,
    ///   the server cannot listen, or (under access rules) the role bypasses row-level security.
    public static func start(
        database: ServerDatabase, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = SyncServer.defaultLogger,
        stopsOnSignals: Bool = false
    ) async throws -> SyncServer {
        let backend = try await PostgresBackend.open(database, initialData: nil, feedLimits: options.feedLimits, rules: options.access?.rules, logger: logger)
        return try await start(
            backend: backend, host: host, port: port, options: options, logger: logger,
            stopsOnSignals: stopsOnSignals)
    }

    /// Starts a server over a PostgreSQL database after replacing its data with `data` (for
    /// tests: `TestServer.reset()` puts `data` back).
    public static func start(
        data: JSONValue, database: ServerDatabase, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = SyncServer.defaultLogger
    ) async throws -> SyncServer {
        let backend = try await PostgresBackend.open(database, initialData: data, feedLimits: options.feedLimits, rules: options.access?.rules, logger: logger)
        return try await start(backend: backend, host: host, port: port, options: options, logger: logger)
    }

    /// Loads a JSON document (as a JSON-file server saves it, bookkeeping included) into a
    /// PostgreSQL database, in one transaction: records keep their versions, so clients' feed
    /// cursors stay valid.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/cannotImport(_:)`` when the schema already holds data and
    ///   `replacing` is false, or when PostgreSQL cannot hold the data as it is; nothing changes.
    public static func importData(_ data: JSONValue, into database: ServerDatabase, replacing: Bool = false, logger: Logger = SyncServer.defaultLogger) async throws {
        try await withClient(database, logger: logger) { client in
            try await PostgresBackend.importData(data, schema: PostgresSchema(name: database.schema), client: client, replacing: replacing, logger: logger)
        }
    }

    /// Loads a database file (as ``/ModelSyncServer/SyncServer/start(file:host:port:options:logger:stopsOnSignals:)``
    /// serves it) into a PostgreSQL database: ``importData(_:into:replacing:logger:)``.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/unreadableFile(path:reason:)`` or ``/ModelSyncServer/ServerError/notAnObject``
    ///   for a file that is not a JSON object, and what `importData` throws.
    public static func importData(fromFile file: URL, into database: ServerDatabase, replacing: Bool = false, logger: Logger = SyncServer.defaultLogger) async throws {
        try await importData(.object(JSONFileBackend.load(file)), into: database, replacing: replacing, logger: logger)
    }

    /// Writes the data of a PostgreSQL database to a database file, atomically, in the form a
    /// JSON-file server saves: ``exportData(from:logger:)``.
    public static func exportData(from database: ServerDatabase, toFile file: URL, logger: Logger = SyncServer.defaultLogger) async throws {
        try JSONFileBackend.writeDocument(try await exportData(from: database, logger: logger), to: file)
    }

    /// The data of a PostgreSQL database as a JSON document that a JSON-file server (or
    /// ``importData(_:into:replacing:logger:)``) reads back, bookkeeping included.
    public static func exportData(from database: ServerDatabase, logger: Logger = SyncServer.defaultLogger) async throws -> JSONValue {
        try await withClient(database, logger: logger) { client in
            // The accounts' generation column, when an earlier version made the schema.
            try await PostgresBackend.upgradeAccounts(PostgresSchema(name: database.schema), client, logger)
            return try await PostgresBackend.exportData(schema: PostgresSchema(name: database.schema), client: client, logger: logger)
        }
    }

    /// Makes `email`'s built-in account an admin with `password` in a PostgreSQL database,
    /// creating the account and its record in `accountsCollection` when there is none: the first
    /// admin, made offline (`modelsync-server admin <email> --database …`). Servers running on
    /// the database see the change from their next request.
    ///
    /// - Returns: The account's user id and whether it was created.
    public static func makeAdmin(
        email: String, password: String, passwords: any PasswordHasher, database: ServerDatabase, accountsCollection: String = "users",
        logger: Logger = SyncServer.defaultLogger
    ) async throws -> (userID: String, created: Bool) {
        var database = database
        database.minimumConnections = 0
        let backend = try await PostgresBackend.open(database, initialData: nil, feedLimits: FeedLimits(), logger: logger)
        return try await makeAdmin(email: email, password: password, passwords: passwords, closing: backend, accountsCollection: accountsCollection)
    }

    private static func withClient<T: Sendable>(_ database: ServerDatabase, logger: Logger, _ body: (PostgresClient) async throws -> T) async throws -> T {
        // An import or export opens the connections it uses, not a server's pool of idle ones.
        var database = database
        database.minimumConnections = 0
        // An import or export is one long transaction by design.
        database.statementTimeout = nil
        let (client, running) = try await PostgresClient.running(database, logger: logger)
        let result: Result<T, any Error>
        do { result = .success(try await body(client)) } catch { result = .failure(error) }
        running.cancel()
        await running.value
        return try result.get()
    }
}
