import Foundation
import ModelSyncJSON

/// A failure the server injects into its answers, so that clients can test retries, timeouts
/// and error handling against real HTTP.
///
/// ```swift
/// server.inject(Fault(.status(503, retryAfter: 1), times: 2))   // the next two requests
/// server.inject(Fault(.dropConnection, fraction: 0.25))          // a quarter of all requests
/// server.inject(Fault(.loseAnswer, fraction: 0.1))               // applied, but never answered
/// ```
public struct Fault: Sendable {
    /// What the server does instead of (or before) answering.
    public enum Action: Sendable, Equatable {
        /// Answers with this status and `body` (by default `{"error": "injected fault"}`), with a
        /// `Retry-After` header (seconds) when given.
        case status(Int, retryAfter: Int? = nil, body: JSONValue? = nil)
        /// Closes the connection without answering, before the request is handled.
        case dropConnection
        /// Handles the request (a write is applied), then closes the connection without
        /// answering: the client cannot tell whether its write landed.
        case loseAnswer
        /// Waits this long, then answers normally.
        case delay(Duration)
    }

    /// What happens to an affected request.
    public var action: Action
    /// How many requests are affected before the fault is used up; nil for no limit.
    public var remaining: Int?
    /// The share of requests affected, from 0 to 1.
    public var fraction: Double

    /// Creates a fault that affects the next `times` requests (nil: every request), each with
    /// probability `fraction`.
    public init(_ action: Action, times: Int? = 1, fraction: Double = 1) {
        self.action = action
        self.remaining = times
        self.fraction = fraction
    }

    /// Creates a fault that affects a share of all requests, with no limit.
    public init(_ action: Action, fraction: Double) {
        self.init(action, times: nil, fraction: fraction)
    }
}

/// A request as the server received it, for tests that assert what a client sent.
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
struct RequestLog: Sendable {
    let limit: Int
    /// What is held: the newest `limit` and up to `limit` older ones awaiting the next trim.
    private(set) var recorded: [RecordedRequest] = []

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// The newest `limit` requests, oldest first.
    var entries: [RecordedRequest] { Array(recorded.suffix(limit)) }

    mutating func append(_ request: RecordedRequest) {
        guard limit > 0 else { return }
        if recorded.count - limit >= limit { recorded.removeFirst(recorded.count - limit) }
        recorded.append(request)
    }

    mutating func removeAll() {
        recorded.removeAll()
    }
}
