import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore
import PostgresNIO
import ServiceLifecycle
import UnixSignals

/// A json-server-compatible REST server with the sync extensions, over a JSON document or
/// PostgreSQL, built on Hummingbird's router.
///
/// Every top-level array of the document is a collection (`/posts`, `/posts/1`,
/// `/posts/1/comments`), every top-level object a singular resource (`/profile`). Start one
/// in-process on a random port, use it, and shut it down:
///
/// ```swift
/// let server = try await SyncServer.start(data: ["posts": [["id": 1, "title": "Hello"]]])
/// // … requests to server.baseURL …
/// await server.shutdown()
/// ```
///
/// With a file, every write is saved back to it atomically. Middleware of your own (auth,
/// logging, the test hooks ``FaultInjection`` and ``RequestRecorder``) goes in
/// ``ServerOptions/middleware``.
public final class SyncServer: Sendable {
    /// The address the server listens on.
    public let host: String
    /// The port the server listens on (the one chosen by the system when started with port 0).
    public let port: Int
    /// `http://host:port`.
    public let baseURL: URL

    private let backend: any ServerBackend
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    private init(host: String, port: Int, backend: any ServerBackend, group: ServiceGroup, running: Task<Void, Never>) {
        self.host = host
        self.port = port
        self.baseURL = URL(string: "http://\(host.contains(":") ? "[\(host)]" : host):\(port)") ?? URL(fileURLWithPath: "/")
        self.backend = backend
        self.group = group
        self.running = running
    }

    /// Starts a server over `data`, in memory only.
    ///
    /// - Parameters:
    ///   - data: A JSON object: its arrays are collections, its objects singular resources.
    ///   - host: The address to listen on.
    ///   - port: The port; 0 lets the system choose a free one (read it from ``port``).
    ///   - options: Read-only mode, delay, limits.
    ///   - logger: Where the server logs.
    /// - Throws: ``ServerError`` when the data is not an object or the server cannot listen.
    public static func start(
        data: JSONValue, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = SyncServer.defaultLogger
    ) async throws -> SyncServer {
        guard let root = data.objectValue else { throw ServerError.notAnObject }
        return try await start(backend: JSONFileBackend(root: root, file: nil, feedLimits: options.feedLimits), host: host, port: port, options: options, logger: logger)
    }

    /// Starts a server over a JSON file; every write is saved back to it atomically.
    ///
    /// - Parameters:
    ///   - file: A JSON file holding an object, as for ``start(data:host:port:options:logger:)``.
    ///   - host: The address to listen on.
    ///   - port: The port; 0 lets the system choose a free one (read it from ``port``).
    ///   - options: Read-only mode, delay, limits.
    ///   - logger: Where the server logs.
    ///   - stopsOnSignals: Whether SIGINT and SIGTERM shut the server down gracefully (for a
    ///     command-line server; leave it off in-process).
    /// - Throws: ``ServerError`` when the file cannot be read, is not an object, or the server
    ///   cannot listen.
    public static func start(
        file: URL, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = SyncServer.defaultLogger,
        stopsOnSignals: Bool = false
    ) async throws -> SyncServer {
        let root = try JSONFileBackend.load(file)
        if !options.readOnly { JSONFileBackend.removeStaleTemporaryFiles(of: file, logger: logger) }
        return try await start(
            backend: JSONFileBackend(root: root, file: options.readOnly ? nil : file, feedLimits: options.feedLimits), host: host, port: port,
            options: options, logger: logger, shutdownSignals: stopsOnSignals ? [.sigint, .sigterm] : []
        )
    }

    /// Starts a server over a PostgreSQL database that holds data (see
    /// ``importData(_:into:replacing:logger:)``). Several servers may serve one database.
    ///
    /// - Throws: ``ServerError`` when PostgreSQL cannot be reached, the schema holds no data,
    ///   or the server cannot listen.
    public static func start(
        database: ServerDatabase, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = SyncServer.defaultLogger,
        stopsOnSignals: Bool = false
    ) async throws -> SyncServer {
        let backend = try await PostgresBackend.open(database, initialData: nil, feedLimits: options.feedLimits, logger: logger)
        return try await start(
            backend: backend, host: host, port: port, options: options, logger: logger,
            shutdownSignals: stopsOnSignals ? [.sigint, .sigterm] : [])
    }

    /// Starts a server over a PostgreSQL database after replacing its data with `data` (for
    /// tests: ``reset()`` puts `data` back).
    public static func start(
        data: JSONValue, database: ServerDatabase, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = SyncServer.defaultLogger
    ) async throws -> SyncServer {
        let backend = try await PostgresBackend.open(database, initialData: data, feedLimits: options.feedLimits, logger: logger)
        return try await start(backend: backend, host: host, port: port, options: options, logger: logger)
    }

    /// Loads a JSON document (as a JSON-file server saves it, bookkeeping included) into a
    /// PostgreSQL database, in one transaction: records keep their versions, so clients' feed
    /// cursors stay valid.
    ///
    /// - Throws: ``ServerError/cannotImport(_:)`` when the schema already holds data and
    ///   `replacing` is false, or when PostgreSQL cannot hold the data as it is; nothing changes.
    public static func importData(_ data: JSONValue, into database: ServerDatabase, replacing: Bool = false, logger: Logger = SyncServer.defaultLogger) async throws {
        try await withClient(database, logger: logger) { client in
            try await PostgresBackend.importData(data, schema: PostgresSchema(name: database.schema), client: client, replacing: replacing, logger: logger)
        }
    }

    /// Loads a database file (as ``start(file:host:port:options:logger:stopsOnSignals:)``
    /// serves it) into a PostgreSQL database: ``importData(_:into:replacing:logger:)``.
    ///
    /// - Throws: ``ServerError/unreadableFile(path:reason:)`` or ``ServerError/notAnObject``
    ///   for a file that is not a JSON object, and what `importData` throws.
    public static func importData(fromFile file: URL, into database: ServerDatabase, replacing: Bool = false, logger: Logger = SyncServer.defaultLogger) async throws {
        try await importData(.object(JSONFileBackend.load(file)), into: database, replacing: replacing, logger: logger)
    }

    /// Writes the data of a PostgreSQL database to a database file, atomically, in the form a
    /// JSON-file server saves: ``exportData(from:logger:)``.
    public static func exportData(from database: ServerDatabase, toFile file: URL, logger: Logger = SyncServer.defaultLogger) async throws {
        var bytes = JSONWriter.prettyPrinted(try await exportData(from: database, logger: logger).jsonBytes())
        bytes.append(UInt8(ascii: "\n"))
        try AtomicFile.replace(file, with: bytes, mode: nil)
    }

    /// The data of a PostgreSQL database as a JSON document that a JSON-file server (or
    /// ``importData(_:into:replacing:logger:)``) reads back, bookkeeping included.
    public static func exportData(from database: ServerDatabase, logger: Logger = SyncServer.defaultLogger) async throws -> JSONValue {
        try await withClient(database, logger: logger) { client in
            try await PostgresBackend.exportData(schema: PostgresSchema(name: database.schema), client: client, logger: logger)
        }
    }

    private static func withClient<T: Sendable>(_ database: ServerDatabase, logger: Logger, _ body: (PostgresClient) async throws -> T) async throws -> T {
        let (client, running) = try await PostgresClient.running(database, logger: logger)
        let result: Result<T, any Error>
        do { result = .success(try await body(client)) } catch { result = .failure(error) }
        running.cancel()
        await running.value
        return try result.get()
    }

    private static func start(
        backend: any ServerBackend, host: String, port: Int, options: ServerOptions, logger: Logger,
        shutdownSignals: [UnixSignal] = []
    ) async throws -> SyncServer {
        let (events, continuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let application = Application(
            router: router(backend: backend, options: options),
            server: .http1(configuration: HTTP1Channel.Configuration(idleTimeout: options.idleTimeout.map(TimeAmount.init))),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: "modelsync-server",
                availableConnectionsDelegate: options.maxConnections.map { MaximumAvailableConnections($0, logger: logger) }
            ),
            onServerRunning: { channel in continuation.yield(.success(channel.localAddress?.port ?? port)) },
            logger: logger
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [application], gracefulShutdownSignals: shutdownSignals, logger: logger)
        )
        let running = Task {
            do {
                try await group.run()
                continuation.yield(.failure(ServerError.couldNotStart("stopped")))
            } catch {
                continuation.yield(.failure(ServerError.couldNotStart(String(describing: error))))
            }
            continuation.finish()
        }
        for await event in events {
            switch event {
            case .success(let bound):
                return SyncServer(host: host, port: bound, backend: backend, group: group, running: running)
            case .failure(let error):
                await running.value
                await backend.close()
                throw error
            }
        }
        throw ServerError.couldNotStart("stopped")
    }

    /// Stops accepting connections, lets requests in flight finish, and returns once the server
    /// has stopped. Calling it again does nothing.
    public func shutdown() async {
        // Open change streams would otherwise keep their requests, and the server, running.
        await backend.close()
        await group.triggerGracefulShutdown()
        await running.value
    }

    /// Returns when the server has stopped (after ``shutdown()`` or a shutdown signal).
    public func waitUntilStopped() async {
        await running.value
    }

    /// The data as it is now: every collection and singular resource (as `GET /db` answers).
    ///
    /// - Throws: an error of the database (PostgreSQL) when it cannot be read.
    public var data: JSONValue {
        get async throws { try await backend.everything().value }
    }

    /// The logger servers use unless given one: label `modelsync.server`, warnings and errors
    /// only, so that in-process servers stay quiet in tests and demos.
    public static var defaultLogger: Logger {
        var logger = Logger(label: "modelsync.server")
        logger.logLevel = .warning
        return logger
    }

    /// Puts the data back as the server started with it (written back to its file, if it has
    /// one), for `ModelSyncTesting`'s shared servers.
    ///
    /// - Throws: ``ServerError`` or a file error when the data cannot be saved to its file; the
    ///   served data is then unchanged.
    package func reset() async throws {
        try await backend.reset()
    }

    /// The router: the middleware every request passes, outermost first, then the routes.
    private static func router(backend: any ServerBackend, options: ServerOptions) -> Router<SyncServerContext> {
        let router = Router(context: SyncServerContext.self)
        // Observability first, so that it sees every answer, refusals included. Without a
        // bootstrapped metrics or tracing system these cost a lookup each.
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: TracingMiddleware())
        router.add(middleware: LogRequestsMiddleware(options.requestLogLevel))
        router.add(middleware: CORSMiddleware(
            allowOrigin: .originBased,
            allowHeaders: [
                .accept, .authorization, .contentType, .origin, .ifMatch, .ifNoneMatch, .ifModifiedSince, .idempotencyKey,
                .syncProtocol, .lastEventID,
            ],
            allowMethods: ServerRoutes.allowedMethods,
            exposedHeaders: ExposedHeaders.names
        ))
        router.add(middleware: ExposedHeaders())
        router.add(middleware: MethodGuard(readOnly: options.readOnly))
        router.add(middleware: DeclaredBodyLimit(limit: options.maxBodySize))
        for middleware in options.middleware { router.add(middleware: middleware) }
        router.add(middleware: ProtocolNegotiation())
        router.add(middleware: ErrorAnswers())
        ServerRoutes(backend: backend, options: options).route(into: router)
        return router
    }
}
