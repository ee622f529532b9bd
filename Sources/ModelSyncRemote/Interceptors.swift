import Foundation

/// What an interceptor wants done with a response.
public enum InterceptorDecision: Sendable {
    /// Carry on with the response.
    case proceed
    /// Send the request again, once (every interceptor prepares it anew), e.g. after
    /// refreshing an expired token.
    case retry
}

/// Sees (and may change) every request before it is sent, and sees every response.
///
/// ```swift
/// struct Auth: RemoteInterceptor {
///     let tokens: TokenStore
///     func prepare(_ request: inout RemoteRequest) async throws {
///         request.headers["Authorization"] = "Bearer \(await tokens.current)"
///     }
///     func inspect(_ response: RemoteResponse, for request: RemoteRequest) async throws -> InterceptorDecision {
///         guard response.status == 401 else { return .proceed }
///         try await tokens.refresh()
///         return .retry
///     }
/// }
/// ```
public protocol RemoteInterceptor: Sendable {
    /// Changes the request: method, URL, headers, body, timeout.
    func prepare(_ request: inout RemoteRequest) async throws
    /// Looks at the response; ``InterceptorDecision/retry`` sends the request once more.
    func inspect(_ response: RemoteResponse, for request: RemoteRequest) async throws -> InterceptorDecision
}

extension RemoteInterceptor {
    public func prepare(_ request: inout RemoteRequest) async throws {}
    public func inspect(_ response: RemoteResponse, for request: RemoteRequest) async throws -> InterceptorDecision {
        .proceed
    }
}

/// An interceptor made of closures.
public struct ClosureInterceptor: RemoteInterceptor {
    private let prepareRequest: @Sendable (inout RemoteRequest) async throws -> Void
    private let inspectResponse: @Sendable (RemoteResponse, RemoteRequest) async throws -> InterceptorDecision

    /// Creates an interceptor from a request closure and, optionally, a response closure.
    public init(
        prepare: @escaping @Sendable (inout RemoteRequest) async throws -> Void,
        inspect: @escaping @Sendable (RemoteResponse, RemoteRequest) async throws -> InterceptorDecision = { _, _ in .proceed }
    ) {
        self.prepareRequest = prepare
        self.inspectResponse = inspect
    }

    public func prepare(_ request: inout RemoteRequest) async throws {
        try await prepareRequest(&request)
    }

    public func inspect(_ response: RemoteResponse, for request: RemoteRequest) async throws -> InterceptorDecision {
        try await inspectResponse(response, request)
    }
}

/// Sets a header on every request, with a value looked up each time (a token, a locale).
public struct HeaderInterceptor: RemoteInterceptor {
    /// The header name.
    public let name: String
    private let value: @Sendable () async throws -> String?

    /// Creates an interceptor that sets `name` to `value()` (nil leaves the request alone).
    public init(_ name: String, value: @escaping @Sendable () async throws -> String?) {
        self.name = name
        self.value = value
    }

    public func prepare(_ request: inout RemoteRequest) async throws {
        if let value = try await value() { request.headers[name] = value }
    }
}
