import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Sends HTTP requests. ``RemoteStore`` talks to servers only through a transport, so that tests
/// and other platforms can swap it (AsyncHTTPClient by default, URLSession where available).
///
/// A transport returns every response, whatever its status, and throws
/// ``RemoteError/transport(_:)`` or ``RemoteError/timeout(_:)`` only when no response arrived.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response with its whole body.
    func send(_ request: RemoteRequest) async throws -> RemoteResponse
    /// Sends `request` and hands over its body as it arrives; the response holds the status and
    /// headers. A default implementation waits for the whole body.
    func stream(_ request: RemoteRequest) async throws -> (response: RemoteResponse, body: AsyncThrowingStream<[UInt8], any Error>)
}

/// The default transport: AsyncHTTPClient (SwiftNIO).
public struct AsyncHTTPClientTransport: HTTPTransport {
    /// The client requests go through.
    public let client: HTTPClient
    /// The timeout of requests that do not set one.
    public var defaultTimeout: Duration
    /// The largest response body accepted (at most 4 GiB: a larger limit counts as 4 GiB).
    public var maxResponseSize: Int

    /// A process-wide client, never shut down, that fails a request at once when a connection
    /// cannot be established (AsyncHTTPClient's own shared client keeps retrying until the
    /// request's deadline), so that ``RemoteStore``'s ``RetryPolicy`` decides about retries.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Creates a transport over `client` (``sharedClient`` by default, which needs no shutdown).
    public init(client: HTTPClient = AsyncHTTPClientTransport.sharedClient, defaultTimeout: Duration = .seconds(60), maxResponseSize: Int = 64 << 20) {
        self.client = client
        self.defaultTimeout = defaultTimeout
        self.maxResponseSize = maxResponseSize
    }

    public func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        let deadline = NIODeadline.now() + timeAmount(request.timeout ?? defaultTimeout)
        do {
            var headers = HTTPHeaders()
            for field in request.headers { headers.add(name: field.name, value: field.value) }
            let outgoing = try HTTPClient.Request(
                url: request.url, method: HTTPMethod(rawValue: request.method.rawValue), headers: headers,
                body: request.body.map { .bytes($0) }
            )
            // The delegate API keeps AsyncHTTPClient's deadline armed until the whole body is in
            // (`execute(_:deadline:)` disarms it with the head): one timer of its own bounds the
            // whole exchange, with no task or timer of ours.
            let accumulator = ResponseAccumulator(request: outgoing, maxBodySize: min(max(maxResponseSize, 0), Self.largestBody))
            let task = client.execute(request: outgoing, delegate: accumulator, deadline: deadline)
            let response = try await withTaskCancellationHandler { try await task.futureResult.get() } onCancel: { task.cancel() }
            return RemoteResponse(
                status: Int(response.status.code),
                headers: HeaderFields(response.headers.map { (name: $0.name, value: $0.value) }),
                body: response.body.map { Array($0.readableBytesView) } ?? []
            )
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout].contains(error) {
            throw RemoteError.timeout(RequestSummary(request))
        } catch let error as HTTPClientError where [.redirectCycleDetected, .redirectLimitReached].contains(error) {
            throw RemoteError.redirectLoop(RequestSummary(request))
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            throw RemoteError.transport(TransportFailure(request: RequestSummary(request), underlyingError: error))
        }
    }

    /// The largest body `ResponseAccumulator` accepts (a `ByteBuffer` holds at most 4 GiB).
    private static let largestBody = Int(exactly: UInt32.max) ?? Int(Int32.max)
}

extension AsyncHTTPClientTransport {
    /// Sends `request` and hands over its body chunk by chunk as it arrives (Server-Sent
    /// Events, long downloads). The request's timeout (or ``defaultTimeout``) bounds the wait for
    /// the response head only: a stream may stay open for as long as the caller iterates.
    public func stream(_ request: RemoteRequest) async throws -> (response: RemoteResponse, body: AsyncThrowingStream<[UInt8], any Error>) {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers { outgoing.headers.add(name: field.name, value: field.value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, timeout: timeAmount(request.timeout ?? defaultTimeout))
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            throw RemoteError.transport(TransportFailure(request: RequestSummary(request), underlyingError: error))
        }
        let head = RemoteResponse(status: Int(response.status.code), headers: HeaderFields(response.headers.map { (name: $0.name, value: $0.value) }), body: [])
        let (body, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self)
        let reader = Task {
            do {
                for try await buffer in response.body { continuation.yield(Array(buffer.readableBytesView)) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        // The consumer stopping (or its task cancelled) ends the request.
        continuation.onTermination = { _ in reader.cancel() }
        return (head, body)
    }
}

/// The longest timeout a transport arms: longer ones (up to `Duration`'s own maximum) would
/// overflow the clocks' nanosecond counts, and 68 years is as good as never.
func boundedTimeout(_ timeout: Duration) -> Duration {
    min(max(timeout, .zero), .seconds(Int64(Int32.max)))
}

/// A timeout as SwiftNIO's time amount, bounded first (see ``boundedTimeout(_:)``), so that no
/// duration overflows the nanosecond count.
func timeAmount(_ timeout: Duration) -> TimeAmount {
    TimeAmount(boundedTimeout(timeout))
}

/// Runs `exchange`, the whole of one request and its response body, and throws
/// ``RemoteError/timeout(_:)`` when it has not finished within `timeout`, cancelling it.
///
/// The exchange runs in a task of its own that an event-loop timer cancels: a timer on the
/// loop costs less per request than a sleeping child task would (docs/PERFORMANCE.md).
/// ``URLSessionTransport`` needs it (URLSession's interval is an idle timeout);
/// ``AsyncHTTPClientTransport`` gets the same bound from AsyncHTTPClient's own deadline.
func withExchangeTimeout(
    _ timeout: Duration, _ request: RemoteRequest, on eventLoop: any EventLoop,
    _ exchange: @escaping @Sendable () async throws -> RemoteResponse
) async throws -> RemoteResponse {
    let task = Task { try await exchange() }
    let timer = eventLoop.scheduleTask(in: timeAmount(timeout)) { task.cancel() }
    defer { timer.cancel() }
    do {
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    } catch {
        // Cancelled, but not by our caller: by the timer.
        if task.isCancelled && !Task.isCancelled { throw RemoteError.timeout(RequestSummary(request)) }
        throw error
    }
}

#if canImport(FoundationNetworking) || canImport(Darwin)
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport over Foundation's `URLSession`, for Apple platforms (and Linux through
/// FoundationNetworking, where AsyncHTTPClient is the faster default).
public struct URLSessionTransport: HTTPTransport {
    /// The session requests go through.
    public let session: URLSession
    /// The timeout of requests that do not set one.
    public var defaultTimeout: Duration

    /// Creates a transport over `session`.
    public init(session: URLSession = .shared, defaultTimeout: Duration = .seconds(60)) {
        self.session = session
        self.defaultTimeout = defaultTimeout
    }

    /// URLSession's idle timeout for a request that must finish within `timeout`.
    static func idleInterval(_ timeout: Duration) -> TimeInterval {
        let interval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        #if canImport(FoundationNetworking)
        // FoundationNetworking truncates the interval to whole seconds: 0.5 s would time out at once.
        return max(interval, 1)
        #else
        return interval
        #endif
    }

    public func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        var outgoing = URLRequest(url: request.url)
        outgoing.httpMethod = request.method.rawValue
        for field in request.headers { outgoing.addValue(field.value, forHTTPHeaderField: field.name) }
        outgoing.httpBody = request.body.map { Data($0) }
        let timeout = boundedTimeout(request.timeout ?? defaultTimeout)
        // URLSession's interval is an idle timeout; the race below bounds the whole exchange.
        outgoing.timeoutInterval = Self.idleInterval(timeout)
        let session = session
        do {
            return try await withExchangeTimeout(timeout, request, on: HTTPClient.defaultEventLoopGroup.any()) { [outgoing] in
                let (data, response) = try await session.data(for: outgoing)
                guard let http = response as? HTTPURLResponse else {
                    throw RemoteError.transport(TransportFailure(request: RequestSummary(request), reason: "not an HTTP response"))
                }
                let headers = http.allHeaderFields.compactMap { name, value -> (name: String, value: String)? in
                    guard let name = name as? String else { return nil }
                    return (name, String(describing: value))
                }
                return RemoteResponse(status: http.statusCode, headers: HeaderFields(headers), body: Array(data))
            }
        } catch let error as RemoteError {
            throw error
        } catch let error as URLError where error.code == .timedOut {
            throw RemoteError.timeout(RequestSummary(request))
        } catch let error as URLError where error.code == .httpTooManyRedirects {
            throw RemoteError.redirectLoop(RequestSummary(request))
        } catch {
            if error is CancellationError || (error as? URLError)?.code == .cancelled || Task.isCancelled { throw CancellationError() }
            throw RemoteError.transport(TransportFailure(request: RequestSummary(request), underlyingError: error))
        }
    }
}
#endif
