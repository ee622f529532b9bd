import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import ModelSyncCore
import ModelSyncJSON
import NIOCore
import PostgresNIO
import ServiceLifecycle
import UnixSignals

/// A json-server-compatible REST server over a JSON document, built on Hummingbird.
///
/// Every top-level array of the document is a collection (`/posts`, `/posts/1`,
/// `/posts/1/comments`), every top-level object a singular resource (`/profile`). Start one
/// in-process on a random port, use it, and shut it down:
///
/// ```swift
/// let server = try await ModelSyncServer.start(data: ["posts": [["id": 1, "title": "Hello"]]])
/// // … requests to server.baseURL …
/// await server.shutdown()
/// ```
///
/// With a file, every write is saved back to it atomically.
public final class ModelSyncServer: Sendable {
    /// The address the server listens on.
    public let host: String
    /// The port the server listens on (the one chosen by the system when started with port 0).
    public let port: Int
    /// `http://host:port`.
    public let baseURL: URL

    private let backend: any ServerBackend
    private let state: ServerState
    private let group: ServiceGroup
    private let running: Task<Void, Never>
    private let initialDelay: Duration

    private init(
        host: String, port: Int, backend: any ServerBackend, state: ServerState, group: ServiceGroup, running: Task<Void, Never>,
        initialDelay: Duration
    ) {
        self.host = host
        self.port = port
        self.baseURL = URL(string: "http://\(host.contains(":") ? "[\(host)]" : host):\(port)") ?? URL(fileURLWithPath: "/")
        self.backend = backend
        self.state = state
        self.group = group
        self.running = running
        self.initialDelay = initialDelay
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
        options: ServerOptions = ServerOptions(), logger: Logger = ModelSyncServer.defaultLogger
    ) async throws -> ModelSyncServer {
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
        options: ServerOptions = ServerOptions(), logger: Logger = ModelSyncServer.defaultLogger,
        stopsOnSignals: Bool = false
    ) async throws -> ModelSyncServer {
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
        options: ServerOptions = ServerOptions(), logger: Logger = ModelSyncServer.defaultLogger,
        stopsOnSignals: Bool = false
    ) async throws -> ModelSyncServer {
        let backend = try await PostgresBackend.open(database, initialData: nil, feedLimits: options.feedLimits, logger: logger)
        return try await start(
            backend: backend, host: host, port: port, options: options, logger: logger,
            shutdownSignals: stopsOnSignals ? [.sigint, .sigterm] : [])
    }

    /// Starts a server over a PostgreSQL database after replacing its data with `data` (for
    /// tests: ``reset()`` puts `data` back).
    public static func start(
        data: JSONValue, database: ServerDatabase, host: String = "127.0.0.1", port: Int = 0,
        options: ServerOptions = ServerOptions(), logger: Logger = ModelSyncServer.defaultLogger
    ) async throws -> ModelSyncServer {
        let backend = try await PostgresBackend.open(database, initialData: data, feedLimits: options.feedLimits, logger: logger)
        return try await start(backend: backend, host: host, port: port, options: options, logger: logger)
    }

    /// Loads a JSON document (as a JSON-file server saves it, bookkeeping included) into a
    /// PostgreSQL database, in one transaction: records keep their versions, so clients' feed
    /// cursors stay valid.
    ///
    /// - Throws: ``ServerError/cannotImport(_:)`` when the schema already holds data and
    ///   `replacing` is false, or when PostgreSQL cannot hold the data as it is; nothing changes.
    public static func importData(_ data: JSONValue, into database: ServerDatabase, replacing: Bool = false, logger: Logger = ModelSyncServer.defaultLogger) async throws {
        try await withClient(database, logger: logger) { client in
            try await PostgresBackend.importData(data, schema: PostgresSchema(name: database.schema), client: client, replacing: replacing, logger: logger)
        }
    }

    /// Loads a database file (as ``start(file:host:port:options:logger:stopsOnSignals:)``
    /// serves it) into a PostgreSQL database: ``importData(_:into:replacing:logger:)``.
    ///
    /// - Throws: ``ServerError/unreadableFile(path:reason:)`` or ``ServerError/notAnObject``
    ///   for a file that is not a JSON object, and what `importData` throws.
    public static func importData(fromFile file: URL, into database: ServerDatabase, replacing: Bool = false, logger: Logger = ModelSyncServer.defaultLogger) async throws {
        try await importData(.object(JSONFileBackend.load(file)), into: database, replacing: replacing, logger: logger)
    }

    /// Writes the data of a PostgreSQL database to a database file, atomically, in the form a
    /// JSON-file server saves: ``exportData(from:logger:)``.
    public static func exportData(from database: ServerDatabase, toFile file: URL, logger: Logger = ModelSyncServer.defaultLogger) async throws {
        var bytes = JSONWriter.prettyPrinted(try await exportData(from: database, logger: logger).jsonBytes())
        bytes.append(UInt8(ascii: "\n"))
        try AtomicFile.replace(file, with: bytes, mode: nil)
    }

    /// The data of a PostgreSQL database as a JSON document that a JSON-file server (or
    /// ``importData(_:into:replacing:logger:)``) reads back, bookkeeping included.
    public static func exportData(from database: ServerDatabase, logger: Logger = ModelSyncServer.defaultLogger) async throws -> JSONValue {
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
    ) async throws -> ModelSyncServer {
        let state = ServerState(delay: options.delay, requestLogLimit: options.requestLogLimit)
        let (events, continuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let application = Application(
            responder: DeclaredBodyLimit(
                inner: ServerResponder(backend: backend, state: state, options: options), limit: options.maxBodySize),
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
                return ModelSyncServer(
                    host: host, port: bound, backend: backend, state: state, group: group, running: running,
                    initialDelay: options.delay)
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

    // MARK: Testing clients

    /// Adds a fault; faults apply in the order they were added, each until it is used up.
    public func inject(_ fault: Fault) {
        state.faults.withLock { $0.append(fault) }
    }

    /// Removes every fault.
    public func clearFaults() {
        state.faults.withLock { $0.removeAll() }
    }

    /// Changes the delay before every answer.
    public func setDelay(_ delay: Duration) {
        state.delay.withLock { $0 = delay }
    }

    /// The most recent requests received, oldest first (see ``ServerOptions/requestLogLimit``).
    public var recordedRequests: [RecordedRequest] {
        state.requests.current.entries
    }

    /// Forgets the recorded requests.
    public func clearRecordedRequests() {
        state.requests.withLock { $0.removeAll() }
    }

    /// Puts the server back as it started, so the next test sees the same server: the data it
    /// was started with (written back to its file, if it has one), no faults, no recorded
    /// requests, the delay of its options.
    ///
    /// - Throws: ``ServerError`` or a file error when the data cannot be saved to its file; the
    ///   served data is then unchanged.
    public func reset() async throws {
        try await backend.reset()
        clearFaults()
        clearRecordedRequests()
        setDelay(initialDelay)
    }
}

/// Answers a write whose `Content-Length` declares more than the limit at once, without
/// waiting for the body, then ends the connection.
///
/// The inner responder gets the request with an empty body: it still records the request,
/// applies faults and CORS, and answers 413 from the declared length. The answer goes out with
/// `Connection: close`, and the server's side of the connection is shut as soon as it is
/// written, so the client sees the whole answer at once. What the client still sends is read
/// and dropped (never kept) until it closes: a client that writes its whole body before reading
/// (urllib, requests) would otherwise be reset and could lose the answer.
struct DeclaredBodyLimit<Inner: HTTPResponder>: HTTPResponder where Inner.Context == ServerContext {
    let inner: Inner
    let limit: Int

    /// The methods whose body the server reads.
    private static var readsBody: Set<HTTPRequest.Method> { [.post, .put, .patch] }

    func respond(to request: Request, context: ServerContext) async throws -> Response {
        guard Self.readsBody.contains(request.method),
              let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit
        else { return try await inner.respond(to: request, context: context) }
        let unread = request.body
        var refused = request
        refused.body = RequestBody(buffer: ByteBuffer())
        var response = try await inner.respond(to: refused, context: context)
        response.headers[.connection] = "close"
        let answer = response.body
        let channel = context.channel
        response.body = ResponseBody(contentLength: answer.contentLength) { writer in
            try await answer.write(writer)
            try? await channel.close(mode: .output).get()
            do {
                for try await _ in unread {}
            } catch {
                // The client closed mid-body: nothing is left to read.
            }
        }
        return response
    }
}
