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
    /// own (authentication, logging) or the test hooks (``FaultInjectionMiddleware``, ``RequestRecorderMiddleware``).
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

/// Why a server could not start, or could not move its data.
///
/// A struct with static members, not an enum (as Hummingbird's `HTTPError` and postgres-nio's
/// `PSQLError`): a new kind of failure is a new ``Code`` value, which breaks no caller's exhaustive
/// `switch`. Compare ``code`` with the static members, or the whole error for equality.
public struct ServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``ServerError``; compare it with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case notAnObject, unreadableFile, couldNotStart, invalidDatabaseURL, database, cannotImport, unsupported
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The data is not a JSON object (its top-level arrays are collections, objects singular
        /// resources).
        public static let notAnObject = Code(.notAnObject)
        /// The database file could not be read or parsed (``path``, ``reason``).
        public static let unreadableFile = Code(.unreadableFile)
        /// The server stopped before it started listening (e.g. the port is taken) (``reason``).
        public static let couldNotStart = Code(.couldNotStart)
        /// A database URL that is not `postgres://user@host:port/database[?schema=…]` (``reason``: the URL).
        public static let invalidDatabaseURL = Code(.invalidDatabaseURL)
        /// PostgreSQL could not be reached, or refused what was asked (``reason``).
        public static let database = Code(.database)
        /// Data that cannot be imported as it is (two items with one id, a NUL character, a
        /// database that already holds data) (``reason``).
        public static let cannotImport = Code(.cannotImport)
        /// A combination of options this server cannot honour (``reason``).
        public static let unsupported = Code(.unsupported)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The file, for ``Code/unreadableFile``.
    public let path: String?
    /// What went wrong, in words; for ``Code/invalidDatabaseURL``, the URL.
    public let reason: String?

    private init(_ code: Code, path: String? = nil, reason: String? = nil) { (self.code, self.path, self.reason) = (code, path, reason) }

    /// The data is not a JSON object.
    public static let notAnObject = ServerError(.notAnObject)
    /// The database file at `path` could not be read or parsed.
    public static func unreadableFile(path: String, reason: String) -> ServerError { ServerError(.unreadableFile, path: path, reason: reason) }
    /// The server stopped before it started listening.
    public static func couldNotStart(_ reason: String) -> ServerError { ServerError(.couldNotStart, reason: reason) }
    /// A database URL that is not a PostgreSQL URL.
    public static func invalidDatabaseURL(_ url: String) -> ServerError { ServerError(.invalidDatabaseURL, reason: url) }
    /// PostgreSQL could not be reached, or refused what was asked.
    public static func database(_ reason: String) -> ServerError { ServerError(.database, reason: reason) }
    /// Data that cannot be imported as it is.
    public static func cannotImport(_ reason: String) -> ServerError { ServerError(.cannotImport, reason: reason) }
    /// A combination of options this server cannot honour.
    public static func unsupported(_ reason: String) -> ServerError { ServerError(.unsupported, reason: reason) }

    /// A sentence saying what went wrong, for logs and the command line.
    public var description: String {
        let reason = reason ?? ""
        return switch code {
        case .notAnObject: "the database must be a JSON object whose arrays are collections"
        case .unreadableFile: "cannot read \(path ?? ""): \(reason)"
        case .couldNotStart: "the server could not start: \(reason)"
        case .invalidDatabaseURL: "not a PostgreSQL URL (postgres://user@host:port/database): \(reason)"
        case .database: "PostgreSQL: \(reason)"
        case .cannotImport: "cannot import: \(reason)"
        case .unsupported: "unsupported: \(reason)"
        default: "server error \(code): \(reason)"
        }
    }
}
