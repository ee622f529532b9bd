import Foundation
import ModelSyncCore
import ModelSyncRemote

/// What ``FaultyTransport`` does to one request.
public enum TransportFault: Sendable, Hashable {
    /// The request never reaches the server: a transport error, nothing applied.
    case loseRequest
    /// The server handles the request (a write is applied), then the answer is lost: a
    /// transport error. The case offline sync exists for: the client cannot know the outcome.
    case loseAnswer
    /// The server is not reached; the client gets this status (a 503, a 429) instead.
    case status(Int)
}

/// A transport that injects faults on the client side of real requests: lost requests, lost
/// answers to requests the server applied, and error statuses.
///
/// The test decides per request, so a seeded decision replays exactly:
///
/// ```swift
/// var plan = [TransportFault?](repeating: nil, count: 10)
/// plan[2] = .loseAnswer                                    // the third request: applied, unanswered
/// let faults = FaultPlan(plan)
/// let transport = FaultyTransport(decide: { _ in faults.next() })
/// let api = RemoteStore(baseURL: server.baseURL, transport: transport)
/// ```
///
/// The bundled server does the same on its side: `server.inject(Fault(.loseAnswer))`.
public struct FaultyTransport: HTTPTransport {
    /// The transport that really sends.
    public let base: any HTTPTransport
    /// The fault for a request, or nil to send it unharmed.
    public let decide: @Sendable (RemoteRequest) -> TransportFault?

    /// Creates a transport over `base` (AsyncHTTPClient by default).
    public init(base: any HTTPTransport = AsyncHTTPClientTransport(), decide: @escaping @Sendable (RemoteRequest) -> TransportFault?) {
        self.base = base
        self.decide = decide
    }

    public func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        switch decide(request) {
        case nil:
            return try await base.send(request)
        case .loseRequest:
            throw RemoteError.transport(TransportFailure(request: RequestSummary(request), reason: "injected: the request was lost"))
        case .loseAnswer:
            _ = try await base.send(request)
            throw RemoteError.transport(TransportFailure(request: RequestSummary(request), reason: "injected: the answer was lost"))
        case .status(let status):
            return RemoteResponse(
                status: status, headers: ["Content-Type": "application/json"], body: Array(#"{"error":"injected fault"}"#.utf8))
        }
    }
}

/// Faults handed out in order, one per request, then none: a plan a seeded test builds.
public final class FaultPlan: Sendable {
    private let remaining: Locked<ArraySlice<TransportFault?>>

    /// Creates a plan: the first request gets `faults[0]`, and so on.
    public init(_ faults: [TransportFault?] = []) {
        remaining = Locked(faults[...])
    }

    /// The next request's fault, nil when the plan is used up.
    public func next() -> TransportFault? {
        remaining.withLock { $0.popFirst() ?? nil }
    }

    /// Replaces what is left of the plan.
    public func set(_ faults: [TransportFault?]) {
        remaining.withLock { $0 = faults[...] }
    }

    /// How many requests the plan still decides.
    public var count: Int { remaining.withLock { $0.count } }
}
