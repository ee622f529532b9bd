import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncCore
import ModelSyncJSON
import NIOCore

/// A middleware that makes a server fail on purpose, so that clients can test retries,
/// timeouts and the unknown outcome of a write against real HTTP. Install it through
/// ``ServerOptions/middleware``; `ModelSyncTesting`'s `TestServer` does, and so does
/// `modelsync-server --fail-rate`.
///
/// ```swift
/// let faults = FaultInjectionMiddleware()
/// let server = try await SyncServer.start(data: data, options: ServerOptions(middleware: [faults]))
/// faults.inject(Fault(.status(503, retryAfter: 1), times: 2))   // the next two requests
/// faults.inject(Fault(.dropConnection, fraction: 0.25))          // a quarter of all requests
/// faults.inject(Fault(.loseAnswer, fraction: 0.1))               // applied, but never answered
/// ```
public final class FaultInjectionMiddleware: RouterMiddleware, Sendable {
    public typealias Context = SyncServerContext

    private let faults = Locked<[Fault]>([])
    private let delayBeforeAnswers: Locked<Duration>

    /// Creates the middleware with no faults; every answer waits `delay` first (a slow network).
    public init(delay: Duration = .zero) {
        delayBeforeAnswers = Locked(delay)
    }

    /// Adds a fault; faults apply in the order they were added, each until it is used up.
    public func inject(_ fault: Fault) {
        faults.withLock { $0.append(fault) }
    }

    /// Removes every fault.
    public func clearFaults() {
        faults.withLock { $0.removeAll() }
    }

    /// How long every answer waits before it is sent.
    public var delay: Duration {
        get { delayBeforeAnswers.current }
        set { delayBeforeAnswers.withLock { $0 = newValue } }
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch nextFault() {
        case .status(let status, let retryAfter, let body)?:
            var response = ServerRoutes.json(body ?? ["error": "injected fault"], status: HTTPResponse.Status(code: status))
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        case .dropConnection?:
            try await context.channel.close().get()
            throw APIError(status: .internalServerError, message: "connection dropped")
        case .loseAnswer?:
            // Applied, then unanswered: the outcome a client cannot know.
            _ = try? await next(request, context)
            try await context.channel.close().get()
            throw APIError(status: .internalServerError, message: "answer lost")
        case .delay(let duration)?:
            try await Task.sleep(for: duration)
        case nil:
            break
        }
        let delay = delayBeforeAnswers.current
        if delay > .zero { try await Task.sleep(for: delay) }
        return try await next(request, context)
    }

    /// The action of the first fault that applies to this request, using it up.
    private func nextFault() -> Fault.Action? {
        faults.withLock { faults in
            for index in faults.indices where Double.random(in: 0..<1) < faults[index].fraction {
                let action = faults[index].action
                if let remaining = faults[index].remaining {
                    if remaining <= 1 { faults.remove(at: index) } else { faults[index].remaining = remaining - 1 }
                }
                return action
            }
            return nil
        }
    }
}

/// A failure ``FaultInjectionMiddleware`` puts into a server's answers.
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

/// The former name of ``FaultInjectionMiddleware``.
@available(*, deprecated, renamed: "FaultInjectionMiddleware")
public typealias FaultInjection = FaultInjectionMiddleware
