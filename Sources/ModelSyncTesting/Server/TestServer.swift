import Foundation
import ModelSync
import ModelSyncCore
import ModelSyncServer

/// Runs `body` with a new ``/ModelSyncServer/ModelSyncServer`` started in-process on a free port of
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
    data: JSONValue = ModelSyncServer.sampleData, options: ServerOptions = ServerOptions(),
    _ body: (ModelSyncServer) async throws -> T
) async throws -> T {
    let server = try await ModelSyncServer.start(data: data, options: options)
    return try await run(body, with: server)
}

/// Runs `body` with a new server over a copy of the JSON `file` (so writes never change the
/// fixture), and shuts it down and removes the copy when `body` returns or throws.
///
/// - Throws: ``/ModelSyncServer/ServerError`` when the file cannot be read or the server cannot start, a file
///   error when it cannot be copied, or what `body` throws.
public func withTestServer<T>(
    file: URL, options: ServerOptions = ServerOptions(), _ body: (ModelSyncServer) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory(prefix: "modelsync-server")
    let copy = directory.url.appendingPathComponent(file.lastPathComponent)
    try FileManager.default.copyItem(at: file, to: copy)
    let server = try await ModelSyncServer.start(file: copy, options: options)
    defer { directory.remove() }
    return try await run(body, with: server)
}

/// `body`, then the server's graceful shutdown, whether `body` threw or not.
private func run<T>(_ body: (ModelSyncServer) async throws -> T, with server: ModelSyncServer) async throws -> T {
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

/// One server shared by many tests, put back as it started (``/ModelSyncServer/ModelSyncServer/reset()``)
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
    private let started = Locked<ModelSyncServer?>(nil)

    /// Describes the server; the first ``withServer(_:)`` starts it on a free port of
    /// 127.0.0.1. Creating one cannot fail, so it fits a `static let` of a test suite.
    public init(data: JSONValue = ModelSyncServer.sampleData, options: ServerOptions = ServerOptions()) {
        self.data = data
        self.options = options
    }

    /// Waits for its turn, starts the server (the first time) or resets it, and runs `body`
    /// with it.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError`` when the server cannot start, what the reset or `body` throws.
    public func withServer<T>(_ body: (ModelSyncServer) async throws -> T) async throws -> T {
        await turns.acquire()
        return try await afterwards {
            let server: ModelSyncServer
            if let running = started.current {
                try await running.reset()
                server = running
            } else {
                server = try await ModelSyncServer.start(data: data, options: options)
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
