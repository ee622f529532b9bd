import Foundation
import Logging
import ModelSyncServer
import PostgresNIO

/// A PostgreSQL database for ``/ModelSyncServer/SyncServer`` to keep its data in, instead of a JSON file.
///
/// ```swift
/// let database = try ServerDatabase(url: "postgres://app@127.0.0.1:5432/app")
/// let server = try await SyncServer.start(database: database, port: 3000)
/// ```
///
/// Several servers may share one database: each sees the others' writes, and every server's
/// change stream carries them (`LISTEN`/`NOTIFY`).
public struct ServerDatabase: Sendable, Hashable, CustomStringConvertible {
    /// The server's host name or address, or (an absolute path) the directory of its Unix-domain
    /// socket, as libpq reads it: the socket is `<host>/.s.PGSQL.<port>`.
    public var host: String
    /// The server's port (5432 unless the URL gives one).
    public var port: Int
    /// The role to connect as (`postgres` unless the URL gives one).
    public var username: String
    /// The role's password, if the URL gives one (it is never printed).
    public var password: String?
    /// The database to connect to; nil connects to the one named like the role.
    public var database: String?
    /// The schema that holds the server's tables (`public` unless the URL says `?schema=`).
    public var schema: String
    /// The role a server under access rules takes for its requests (`?role=`, set per
    /// transaction): one that row-level security binds, when the connecting role does not (a
    /// superuser). The connecting role must be a member of it (a superuser is), and the server
    /// grants it what it needs in the schema. Nil: the connecting role.
    public var role: String?
    /// How many connections to PostgreSQL the server keeps open while it is idle
    /// (`?min_connections=`, 0 through ``maximumConnections``; all of them unless the URL says
    /// otherwise). A connection beyond these is closed after a minute unused, and while it is
    /// open the pool sets a timer each time a request returns it, which cost about a quarter of
    /// the server's CPU per read by id under load.
    public var minimumConnections: Int
    /// How many connections to PostgreSQL one server opens at most: requests beyond these wait
    /// for one.
    public static let maximumConnections = 16
    /// Whether the connection must use TLS (`?sslmode=require`), may (`prefer`, the default
    /// except on loopback) or must not (`disable`, the default on loopback). A Unix-domain socket
    /// never uses TLS, as with libpq.
    public var tls: TLSMode
    /// The name the server's connections give PostgreSQL (`?application_name=`, as with libpq),
    /// shown in `pg_stat_activity`: tells several servers' connections apart. Nil: none.
    public var applicationName: String?
    /// The longest any one statement of the server may run (`?statement_timeout=`, in
    /// milliseconds; 0 for none): PostgreSQL cancels it after that, and the request answers 503
    /// with `"reason": "statement_timeout"`, nothing of it saved. A bound on the work one request
    /// can make the database do (a pattern, a filter over a large table). A server's setup,
    /// imports and exports run without it.
    public var statementTimeout: Duration?
    /// The statement timeout unless the URL gives one: thirty seconds.
    public static let defaultStatementTimeout = Duration.seconds(30)

    /// How a connection uses TLS.
    public enum TLSMode: String, Sendable, Hashable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS, or no connection.
        case require
    }

    /// Reads `postgres://user[:password]@host[:port][/database][?schema=…&sslmode=…&host=…&min_connections=…&application_name=…&statement_timeout=…]`.
    ///
    /// As with libpq, a host that is an absolute path (`?host=/var/run/postgresql`, or the
    /// authority percent-encoded: `postgres://%2Fvar%2Frun%2Fpostgresql/app`) names the directory
    /// of the server's Unix-domain socket: on one machine, that skips TCP altogether.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/invalidDatabaseURL(_:)`` when the text is not such a URL.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme ?? "") else {
            throw ServerError.invalidDatabaseURL(text)
        }
        let items = components.queryItems ?? []
        guard let host = items.first(where: { $0.name == "host" })?.value ?? components.percentEncodedHost?.removingPercentEncoding,
              !host.isEmpty, !host.utf8.contains(0)
        else { throw ServerError.invalidDatabaseURL(text) }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user?.removingPercentEncoding ?? "postgres"
        self.password = components.password?.removingPercentEncoding
        let name = String(components.path.drop(while: { $0 == "/" }))
        self.database = name.isEmpty ? nil : name.removingPercentEncoding
        self.schema = items.first { $0.name == "schema" }?.value ?? "public"
        let role = items.first { $0.name == "role" }?.value
        if let role, role.isEmpty || role.utf8.count > 63 || role.utf8.contains(0) { throw ServerError.invalidDatabaseURL(text) }
        self.role = role
        let minimum = items.first { $0.name == "min_connections" }.map { $0.value.flatMap { Int($0) } }
        if let minimum, minimum.map({ !(0...Self.maximumConnections).contains($0) }) ?? true { throw ServerError.invalidDatabaseURL(text) }
        self.minimumConnections = minimum.flatMap { $0 } ?? Self.maximumConnections
        let loopback = Self.isOnThisMachine(host)
        guard let tls = TLSMode(rawValue: items.first { $0.name == "sslmode" }?.value ?? (loopback ? "disable" : "prefer")),
              !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0)
        else { throw ServerError.invalidDatabaseURL(text) }
        self.tls = tls
        let applicationName = items.first { $0.name == "application_name" }?.value
        if let applicationName, applicationName.utf8.contains(0) { throw ServerError.invalidDatabaseURL(text) }
        self.applicationName = applicationName
        let timeout = items.first { $0.name == "statement_timeout" }.map { $0.value.flatMap { Int($0) } }
        if let timeout, timeout.map({ $0 < 0 }) ?? true { throw ServerError.invalidDatabaseURL(text) }
        self.statementTimeout = timeout.flatMap { $0 }.map { $0 == 0 ? nil : Duration.milliseconds($0) } ?? Self.defaultStatementTimeout
    }

    /// Whether the connection goes through a Unix-domain socket (``host`` is its directory).
    public var usesUnixSocket: Bool { host.hasPrefix("/") }

    /// Whether PostgreSQL is on this machine: a loopback address or a Unix-domain socket.
    var isOnThisMachine: Bool { Self.isOnThisMachine(host) }

    private static func isOnThisMachine(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1" || host.hasPrefix("/")
    }

    /// The URL without the password, for logs.
    public var description: String {
        usesUnixSocket
            ? "postgres://\(username)@:\(port)/\(database ?? "")?schema=\(schema)&host=\(host)"
            : "postgres://\(username)@\(host):\(port)/\(database ?? "")?schema=\(schema)"
    }

    /// The same database, taking another role for requests under access rules (see ``role``).
    public func withRole(_ role: String?) -> ServerDatabase {
        var copy = self
        copy.role = role
        return copy
    }

    /// The same database, another schema (tests give each server its own).
    public func withSchema(_ schema: String) -> ServerDatabase {
        var copy = self
        copy.schema = schema
        return copy
    }

    func clientConfiguration() throws -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch self.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        var configuration = usesUnixSocket
            ? PostgresClient.Configuration(
                unixSocketPath: host + "/.s.PGSQL.\(port)", username: username, password: password, database: database)
            : PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.maximumConnections = Self.maximumConnections
        configuration.options.minimumConnections = minimumConnections
        // The pool's keep-alive query sets a timer each time a request returns a connection (a
        // sixth of the server's CPU per read by id): kept only where something between the two
        // may drop an idle connection unseen. On this machine a closed connection is seen at once.
        if isOnThisMachine { configuration.options.keepAliveBehavior = nil }
        // Unqualified names in prepared statements (their text is fixed) are the schema's; their
        // plans are made once, not at every run (plain queries are planned as they run anyway).
        configuration.options.additionalStartupParameters = [
            ("search_path", quotePostgres(schema)), ("plan_cache_mode", "force_generic_plan"),
        ]
        if let applicationName { configuration.options.additionalStartupParameters.append(("application_name", applicationName)) }
        if let statementTimeout {
            // Whole milliseconds, at least one (0 would mean none).
            let milliseconds = max(1, statementTimeout.components.seconds * 1_000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000)
            configuration.options.additionalStartupParameters.append(("statement_timeout", String(milliseconds)))
        }
        return configuration
    }
}

extension PostgresClient {
    /// A client of `database` whose pool runs in the returned task (cancel it, then await it,
    /// to close the connections).
    static func running(_ database: ServerDatabase, logger: Logger) async throws -> (PostgresClient, Task<Void, Never>) {
        let client = PostgresClient(configuration: try database.clientConfiguration(), backgroundLogger: logger)
        // Waits until the task starts, so that no lease comes before `run()` (postgres-nio warns).
        let (started, signal) = AsyncStream<Void>.makeStream()
        let running = Task {
            signal.finish()
            await client.run()
        }
        for await _ in started {}
        return (client, running)
    }
}
