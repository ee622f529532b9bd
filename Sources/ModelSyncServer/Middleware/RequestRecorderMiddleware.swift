import Hummingbird
import ModelSyncCore

/// A middleware that keeps the newest requests a server received, for tests that assert what
/// a client sent. Install it through ``ServerOptions/middleware``; `ModelSyncTesting`'s
/// `TestServer` does.
///
/// ```swift
/// let recorder = RequestRecorderMiddleware()
/// let server = try await SyncServer.start(data: data, options: ServerOptions(middleware: [recorder]))
/// // … requests …
/// recorder.requests.last?.header("If-Match")
/// ```
public final class RequestRecorderMiddleware: RouterMiddleware, Sendable {
    public typealias Context = SyncServerContext

    private let log: Locked<RequestLog>
    private let records: Bool

    /// Creates a recorder that keeps the newest `limit` requests (0 or less: none).
    public init(limit: Int = 1_000) {
        log = Locked(RequestLog(limit: limit))
        records = limit > 0
    }

    /// The most recent requests received, oldest first.
    public var requests: [RecordedRequest] { log.current.entries }

    /// Forgets the recorded requests.
    public func clear() {
        log.withLock { $0.removeAll() }
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard records else { return try await next(request, context) }
        let entry = RecordedRequest(
            method: request.method.rawValue,
            uri: request.uri.description,
            headers: request.headers.map { ($0.name.rawName, $0.value) }
        )
        log.withLock { $0.append(entry) }
        return try await next(request, context)
    }
}

/// A request as the server received it.
public struct RecordedRequest: Sendable {
    /// The method, e.g. `GET`.
    public var method: String
    /// The path with its query, e.g. `/posts?_page=2`.
    public var uri: String
    /// The header fields, in order.
    public var headers: [(name: String, value: String)]

    /// The first value of the header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// The newest requests, at most `limit` of them. Trimmed only when it holds twice the limit, so
/// that recording a request costs O(1) amortised rather than a shift of the whole log.
package struct RequestLog: Sendable {
    package let limit: Int
    /// What is held: the newest `limit` and up to `limit` older ones awaiting the next trim.
    package private(set) var recorded: [RecordedRequest] = []

    package init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// The newest `limit` requests, oldest first.
    package var entries: [RecordedRequest] { Array(recorded.suffix(limit)) }

    package mutating func append(_ request: RecordedRequest) {
        guard limit > 0 else { return }
        if recorded.count - limit >= limit { recorded.removeFirst(recorded.count - limit) }
        recorded.append(request)
    }

    package mutating func removeAll() {
        recorded.removeAll()
    }
}

/// The former name of ``RequestRecorderMiddleware``.
@available(*, deprecated, renamed: "RequestRecorderMiddleware")
public typealias RequestRecorder = RequestRecorderMiddleware
