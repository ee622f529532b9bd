import Foundation
import ModelSync
import ModelSyncCore
import ModelSyncServer

/// A ``/ModelSyncServer/SyncServer`` with the test hooks installed: injected faults, a delay
/// before every answer, and the requests it received.
///
/// ```swift
/// let server = try await TestServer.start(data: ["posts": [["id": 1, "title": "Hello"]]])
/// server.inject(Fault(.loseAnswer))           // the next write is applied, its answer lost
/// // … requests to server.baseURL …
/// server.recordedRequests.last?.header("Idempotency-Key")
/// await server.shutdown()
/// ```
///
/// The hooks are the server's middleware ``/ModelSyncServer/FaultInjectionMiddleware`` and
/// ``/ModelSyncServer/RequestRecorderMiddleware``; a production server has neither unless it installs them.
public final class TestServer: Sendable {
    /// The server itself.
    public let server: SyncServer
    /// Its fault injection and delay.
    public let faults: FaultInjectionMiddleware
    /// Its request log.
    public let recorder: RequestRecorderMiddleware
    private let initialDelay: Duration

    private init(server: SyncServer, faults: FaultInjectionMiddleware, recorder: RequestRecorderMiddleware, initialDelay: Duration) {
        self.server = server
        self.faults = faults
        self.recorder = recorder
        self.initialDelay = initialDelay
    }

    /// Starts a server with the hooks, through `start`, which is given `options` with the hooks
    /// added to its middleware (for a backend of your choice: a file, PostgreSQL).
    ///
    /// - Parameters:
    ///   - options: The server's options; the hooks run after its own middleware.
    ///   - delay: How long every answer waits (a slow network); ``setDelay(_:)`` changes it.
    ///   - requestLogLimit: How many recent requests ``recordedRequests`` keeps.
    ///   - start: Starts the server with the options given.
    public static func start(
        options: ServerOptions = ServerOptions(), delay: Duration = .zero, requestLogLimit: Int = 1_000,
        _ start: (ServerOptions) async throws -> SyncServer
    ) async throws -> TestServer {
        let (faults, recorder) = (FaultInjectionMiddleware(delay: delay), RequestRecorderMiddleware(limit: requestLogLimit))
        var options = options
        options.middleware += [recorder, faults]
        return TestServer(server: try await start(options), faults: faults, recorder: recorder, initialDelay: delay)
    }

    /// Starts a server over `data`, in memory, on a free port of 127.0.0.1.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError`` when the data is not an object or the server
    ///   cannot listen.
    public static func start(
        data: JSONValue = SyncServer.sampleData, options: ServerOptions = ServerOptions(), delay: Duration = .zero,
        requestLogLimit: Int = 1_000
    ) async throws -> TestServer {
        try await start(options: options, delay: delay, requestLogLimit: requestLogLimit) { try await SyncServer.start(data: data, options: $0) }
    }

    /// Starts a server over a JSON file, on a free port of 127.0.0.1; every write is saved back
    /// to it.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError`` when the file cannot be read or the server
    ///   cannot listen.
    public static func start(
        file: URL, options: ServerOptions = ServerOptions(), delay: Duration = .zero, requestLogLimit: Int = 1_000
    ) async throws -> TestServer {
        try await start(options: options, delay: delay, requestLogLimit: requestLogLimit) { try await SyncServer.start(file: file, options: $0) }
    }

    /// The address the server listens on.
    public var host: String { server.host }
    /// The port the server listens on.
    public var port: Int { server.port }
    /// `http://host:port`.
    public var baseURL: URL { server.baseURL }

    /// The data as it is now (as `GET /db` answers).
    public var data: JSONValue {
        get async throws { try await server.data }
    }

    /// Adds a fault; faults apply in the order they were added, each until it is used up.
    public func inject(_ fault: Fault) {
        faults.inject(fault)
    }

    /// Removes every fault.
    public func clearFaults() {
        faults.clearFaults()
    }

    /// Changes the delay before every answer.
    public func setDelay(_ delay: Duration) {
        faults.delay = delay
    }

    /// The most recent requests received, oldest first.
    public var recordedRequests: [RecordedRequest] { recorder.requests }

    /// Forgets the recorded requests.
    public func clearRecordedRequests() {
        recorder.clear()
    }

    /// Puts the server back as it started, so the next test sees the same server: the data it
    /// was started with (written back to its file, if it has one), no faults, no recorded
    /// requests, the delay it started with.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError`` or a file error when the data cannot be saved
    ///   to its file; the served data is then unchanged.
    public func reset() async throws {
        try await server.reset()
        clearFaults()
        clearRecordedRequests()
        setDelay(initialDelay)
    }

    /// Stops the server gracefully (``/ModelSyncServer/SyncServer/shutdown()``).
    public func shutdown() async {
        await server.shutdown()
    }

    /// Returns when the server has stopped.
    public func waitUntilStopped() async {
        await server.waitUntilStopped()
    }
}

/// Runs `body` with a new ``TestServer`` started in-process on a free port of
/// 127.0.0.1 over `data`, and shuts it down gracefully when `body` returns or throws.
///
/// ```swift
/// try await withTestServer(data: ["posts": [["id": 1, "title": "Hello"]]]) { server in
///     let api = RemoteStore(baseURL: server.baseURL)
///     let post = try await api.fetch(Post.self, id: 1)
/// }
/// ```
///
/// - Throws: ``/ModelSyncServer/ServerError`` when the server cannot start, or what `body` throws.
public func withTestServer<T>(
    data: JSONValue = SyncServer.sampleData, options: ServerOptions = ServerOptions(), delay: Duration = .zero,
    _ body: (TestServer) async throws -> T
) async throws -> T {
    let server = try await TestServer.start(data: data, options: options, delay: delay)
    return try await run(body, with: server)
}

/// Runs `body` with a new server over a copy of the JSON `file` (so writes never change the
/// fixture), and shuts it down and removes the copy when `body` returns or throws.
///
/// - Throws: ``/ModelSyncServer/ServerError`` when the file cannot be read or the server cannot start, a file
///   error when it cannot be copied, or what `body` throws.
public func withTestServer<T>(
    file: URL, options: ServerOptions = ServerOptions(), _ body: (TestServer) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory(prefix: "modelsync-server")
    let copy = directory.url.appendingPathComponent(file.lastPathComponent)
    try FileManager.default.copyItem(at: file, to: copy)
    let server = try await TestServer.start(file: copy, options: options)
    defer { directory.remove() }
    return try await run(body, with: server)
}

/// `body`, then the server's graceful shutdown, whether `body` threw or not.
private func run<T>(_ body: (TestServer) async throws -> T, with server: TestServer) async throws -> T {
    try await afterwards { try await body(server) } run: { await server.shutdown() }
}

/// Returns or rethrows what `body` does, after running `cleanup` either way (an `async`
/// `defer`).
func afterwards<T>(_ body: () async throws -> T, run cleanup: () async -> Void) async throws -> T {
    let result: Result<T, any Error>
    do {
        result = .success(try await body())
    } catch {
        result = .failure(error)
    }
    await cleanup()
    return try result.get()
}

/// One server shared by many tests, put back as it started (``TestServer/reset()``)
/// before each of them: cheaper than a server per test, just as isolated.
///
/// Tests that use the same shared server take turns, since a reset in the middle of another
/// test would pull its data away.
///
/// ```swift
/// static let shared = SharedTestServer(data: ["posts": []])
/// try await shared.withServer { server in … }   // sees the data it started with
/// await shared.shutdown()
/// ```
public final class SharedTestServer: Sendable {
    private let turns = AsyncTurns()
    private let data: JSONValue
    private let options: ServerOptions
    /// The server once started; only touched during a turn (or by `shutdown`).
    private let started = Locked<TestServer?>(nil)

    /// Describes the server; the first ``withServer(_:)`` starts it on a free port of
    /// 127.0.0.1. Creating one cannot fail, so it fits a `static let` of a test suite.
    public init(data: JSONValue = SyncServer.sampleData, options: ServerOptions = ServerOptions()) {
        self.data = data
        self.options = options
    }

    /// Waits for its turn, starts the server (the first time) or resets it, and runs `body`
    /// with it.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError`` when the server cannot start, what the reset or `body` throws.
    public func withServer<T>(_ body: (TestServer) async throws -> T) async throws -> T {
        await turns.acquire()
        return try await afterwards {
            let server: TestServer
            if let running = started.current {
                try await running.reset()
                server = running
            } else {
                server = try await TestServer.start(data: data, options: options)
                started.withLock { $0 = server }
            }
            return try await body(server)
        } run: {
            await turns.release()
        }
    }

    /// Shuts the server down gracefully, if it was started; a later ``withServer(_:)`` starts
    /// a new one.
    public func shutdown() async {
        await turns.acquire()
        let server = started.withLock { server in
            defer { server = nil }
            return server
        }
        await server?.shutdown()
        await turns.release()
    }
}
