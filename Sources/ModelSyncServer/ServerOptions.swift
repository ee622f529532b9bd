import Foundation
import Hummingbird
import Logging
import Prometheus

/// How a ``SyncServer`` behaves, beyond the data it serves.
public struct ServerOptions: Sendable {
    /// Answers every write (`POST`, `PUT`, `PATCH`, `DELETE`) with 405 and never changes the data.
    public var readOnly: Bool
    /// The largest request body accepted; larger bodies are answered with 413. A write whose
    /// `Content-Length` declares more is answered at once, before its body arrives, and its
    /// connection then closes.
    public var maxBodySize: Int
    /// Items per page when `_page` is given without `_limit` or `_per_page`.
    public var defaultPageSize: Int
    /// How long a connection may send and receive nothing (while its request head or body is
    /// being read, or between requests) before the server closes it; nil never closes one.
    public var idleTimeout: Duration?
    /// The most connections open at once; further clients wait to be accepted until one
    /// closes. Nil sets no limit.
    public var maxConnections: Int?
    /// Whether the server answers what sync clients use beyond json-server: the change feed
    /// (`/_changes`, `/_changes/stream`, `?_since=`) and `POST /_batch`. Off, it behaves like
    /// json-server (404, and `_since` ignored), for testing clients against servers without
    /// them.
    public var servesSyncExtensions: Bool
    /// How long deletions stay in the change feed.
    public var feedLimits: FeedLimits
    /// How often an open change stream (`/_changes/stream`) sends a keep-alive comment.
    public var keepAliveInterval: Duration
    /// How much one change stream may hold for a client that does not read, and how many
    /// streams one caller may open (``ChangeStreamLimits``).
    public var changeStreamLimits = ChangeStreamLimits()
    /// Middleware run on every request, in order, after CORS and before the routes: an app's
    /// own (authentication, logging) or the test hooks (``FaultInjection``, ``RequestRecorder``).
    public var middleware: [any SyncServerMiddleware]
    /// The level at which each request and its answer are logged (to the server's logger). A
    /// logger set to a higher level logs none, and the server then installs no request logging.
    public var requestLogLevel: Logger.Level
    /// Whether requests are counted and timed through swift-metrics (Hummingbird's
    /// `MetricsMiddleware`); on whenever ``prometheus`` is set. Off by default: it costs every
    /// request a few lookups and locks, for metrics nobody reads unless a backend is bootstrapped.
    public var recordsMetrics: Bool
    /// Whether each request is a span of swift-distributed-tracing (Hummingbird's
    /// `TracingMiddleware`), for a tracer the process bootstraps. Off by default, for the same reason.
    public var traces: Bool
    /// A Prometheus registry to serve at `GET /_metrics`, in the text format; nil serves none.
    /// The server's request metrics (swift-metrics, through Hummingbird's `MetricsMiddleware`)
    /// reach it once the process bootstraps `MetricsSystem` with a `PrometheusMetricsFactory`
    /// on it, as `modelsync-server --metrics` does.
    public var prometheus: PrometheusCollectorRegistry?
    /// Accounts, tokens and access rules; nil leaves the server open to every client, as
    /// json-server is.
    public var access: AccessControl?

    /// Creates options; the defaults serve a writable database with no delay.
    public init(
        readOnly: Bool = false,
        maxBodySize: Int = 1 << 20,
        defaultPageSize: Int = 10,
        idleTimeout: Duration? = .seconds(30),
        maxConnections: Int? = 512,
        servesSyncExtensions: Bool = true,
        feedLimits: FeedLimits = FeedLimits(),
        keepAliveInterval: Duration = .seconds(15),
        middleware: [any SyncServerMiddleware] = [],
        requestLogLevel: Logger.Level = .debug,
        recordsMetrics: Bool = false,
        traces: Bool = false,
        prometheus: PrometheusCollectorRegistry? = nil,
        access: AccessControl? = nil
    ) {
        self.access = access
        self.middleware = middleware
        self.requestLogLevel = requestLogLevel
        self.recordsMetrics = recordsMetrics
        self.traces = traces
        self.prometheus = prometheus
        self.servesSyncExtensions = servesSyncExtensions
        self.feedLimits = feedLimits
        self.keepAliveInterval = keepAliveInterval
        self.readOnly = readOnly
        self.maxBodySize = maxBodySize
        self.defaultPageSize = defaultPageSize
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }
}

/// Why a server could not start.
public enum ServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The data is not a JSON object (its top-level arrays are collections, objects singular
    /// resources).
    case notAnObject
    /// The database file could not be read or parsed.
    case unreadableFile(path: String, reason: String)
    /// The server stopped before it started listening (e.g. the port is taken).
    case couldNotStart(String)
    /// A database URL that is not `postgres://user@host:port/database[?schema=…]`.
    case invalidDatabaseURL(String)
    /// PostgreSQL could not be reached, or refused what was asked.
    case database(String)
    /// Data that cannot be imported into PostgreSQL as it is (two items with one id, a NUL
    /// character, a database that already holds data).
    case cannotImport(String)
    /// A combination of options this server cannot honour.
    case unsupported(String)

    /// A sentence saying what went wrong, for logs and the command line.
    public var description: String {
        switch self {
        case .notAnObject: "the database must be a JSON object whose arrays are collections"
        case .unreadableFile(let path, let reason): "cannot read \(path): \(reason)"
        case .couldNotStart(let reason): "the server could not start: \(reason)"
        case .invalidDatabaseURL(let url): "not a PostgreSQL URL (postgres://user@host:port/database): \(url)"
        case .database(let reason): "PostgreSQL: \(reason)"
        case .cannotImport(let reason): "cannot import: \(reason)"
        case .unsupported(let reason): "unsupported: \(reason)"
        }
    }
}
