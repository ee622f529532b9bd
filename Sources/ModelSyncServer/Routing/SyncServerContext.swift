import Hummingbird
import HummingbirdCore
import NIOCore

/// The context a ``SyncServer`` gives each request's middleware and handlers: Hummingbird's
/// core storage, plus the connection, so that a middleware can end it (a fault that drops the
/// connection or loses an answer; the early 413).
public struct SyncServerContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    public let channel: any Channel
    /// Who makes the request: set from its bearer token when the server has
    /// ``ServerOptions/access``; anonymous otherwise.
    public var caller = Caller.anonymous

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }

    /// The client's address, for logs and traces.
    public var remoteAddress: SocketAddress? { channel.remoteAddress }
}

/// A middleware that runs on every request a ``SyncServer`` answers (see
/// ``ServerOptions/middleware``).
public typealias SyncServerMiddleware = MiddlewareProtocol<Request, Response, SyncServerContext>
