import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore
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
/// logging, the test hooks ``FaultInjectionMiddleware`` and ``RequestRecorderMiddleware``) goes in
/// ``ServerOptions/middleware``.
public final class SyncServer: Sendable {
    /// The address the server listens on.
    public let host: String
    /// The port the server listens on (the one chosen by the system when started with port 0).
    public let port: Int
    /// `http://host:port`.
    public let baseURL: URL

    private let backend: any ServerBackend & ServerAccountStore
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    private init(host: String, port: Int, backend: any ServerBackend & ServerAccountStore, group: ServiceGroup, running: Task<Void, Never>) {
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
            options: options, logger: logger, stopsOnSignals: stopsOnSignals
        )
    }

    /// Starts a server over `backend` (the JSON file here; PostgreSQL in `ModelSyncServerPostgres`).
    package static func start(
        backend: any ServerBackend & ServerAccountStore, host: String, port: Int, options: ServerOptions, logger: Logger, stopsOnSignals: Bool = false
    ) async throws -> SyncServer {
        if let access = options.access, let accounts = access.accounts {
            do {
                try await AccountService.prepare(store: backend, accounts: accounts, collection: access.rules.accountsCollection, logger: logger)
            } catch {
                await backend.close()
                throw error
            }
        }
        let shutdownSignals: [UnixSignal] = stopsOnSignals ? [.sigint, .sigterm] : []
        let (events, continuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let application = Application(
            router: router(backend: backend, options: options, logger: logger),
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
    private static func router(backend: any ServerBackend & ServerAccountStore, options: ServerOptions, logger: Logger) -> Router<SyncServerContext> {
        let router = Router(context: SyncServerContext.self)
        // Observability first, so that it sees every answer, refusals included; each only when
        // asked for, since each costs every request (measured: docs/PERFORMANCE.md).
        if options.recordsMetrics || options.prometheus != nil { router.add(middleware: MetricsMiddleware()) }
        if options.traces { router.add(middleware: TracingMiddleware()) }
        if logger.logLevel <= options.requestLogLevel { router.add(middleware: LogRequestsMiddleware(options.requestLogLevel)) }
        router.add(middleware: CORSMiddleware(
            allowOrigin: .originBased,
            allowHeaders: [
                .accept, .authorization, .contentType, .origin, .ifMatch, .ifNoneMatch, .ifModifiedSince, .idempotencyKey,
                .syncProtocol, .lastEventID,
            ],
            allowMethods: ServerRoutes.allowedMethods,
            exposedHeaders: ExposedHeadersMiddleware.names
        ))
        router.add(middleware: ExposedHeadersMiddleware())
        router.add(middleware: MethodGuardMiddleware(readOnly: options.readOnly))
        router.add(middleware: DeclaredBodyLimitMiddleware(limit: options.maxBodySize))
        for middleware in options.middleware { router.add(middleware: middleware) }
        if let access = options.access {
            let accounts = access.accounts.map { _ in CurrentAccounts(store: backend, collection: access.rules.accountsCollection) }
            router.add(middleware: AuthenticationMiddleware(tokens: access.tokens, accounts: accounts))
        }
        router.add(middleware: ProtocolNegotiationMiddleware())
        router.add(middleware: ErrorAnswerMiddleware())
        ServerRoutes(backend: backend, accounts: backend, options: options).route(into: router)
        return router
    }
}
