import AsyncHTTPClient
import Foundation
import Logging
import ModelSyncJSON
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncServerSQLite
import ModelSyncTesting
import NIOCore
import NIOHTTP1
import PostgresNIO
import Testing

/// The data most tests serve: jsonplaceholder-shaped users, posts and comments, and a profile.
let sampleData: JSONValue = [
    "users": [
        ["id": 1, "name": "Leanne", "email": "leanne@example.com"],
        ["id": 2, "name": "Ervin", "email": "ervin@example.com"],
    ],
    "posts": [
        ["id": 1, "userId": 1, "title": "alpha", "views": 10, "author": ["name": "Leanne"]],
        ["id": 2, "userId": 1, "title": "beta", "views": 30, "author": ["name": "Leanne"]],
        ["id": 3, "userId": 2, "title": "gamma ray", "views": 20, "author": ["name": "Ervin"]],
        ["id": 4, "userId": 2, "title": "delta", "views": 20, "author": ["name": "Ervin"]],
        ["id": 5, "userId": 2, "title": "epsilon", "views": 5, "author": ["name": "Ervin"]],
    ],
    "comments": [
        ["id": 1, "postId": 1, "body": "first"],
        ["id": 2, "postId": 1, "body": "second"],
        ["id": 3, "postId": 2, "body": "third"],
    ],
    "profile": ["name": "typicode"],
]

/// A response with its body read.
struct Reply {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var json: JSONValue? { try? JSONValue(parsing: body) }
    func header(_ name: String) -> String? { headers[name].first }
    /// The ids of a list body, in order.
    var ids: [Int] { json?.arrayValue?.compactMap { $0["id"]?.intValue } ?? [] }
}

/// Sends one request with AsyncHTTPClient. The default timeout guards against a hang only, like
/// the tests' time limits: with every test running at once, a save's fsync can wait long.
func send(
    _ method: HTTPMethod, _ url: String, body: String? = nil, headers: [(String, String)] = [],
    timeout: TimeAmount = .minutes(5)
) async throws -> Reply {
    var request = HTTPClientRequest(url: url)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: timeout)
    let bytes = try await response.body.collect(upTo: 16 << 20)
    return Reply(status: Int(response.status.code), headers: response.headers, body: Array(bytes.readableBytesView))
}

/// Where a test server keeps its data: the conformance suite runs each server test on both.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case jsonDocument
    case postgres
    case sqlite

    var testDescription: String { rawValue }
}

/// Where the PostgreSQL clients of the tests log, at debug level unless
/// `MODELSYNC_TEST_PG_LOG_LEVEL` says otherwise: the file named by
/// `MODELSYNC_TEST_PG_LOG` (`.ci/run` sets it and prints its end when a run stalls, issue #17),
/// else the servers' quiet default.
enum TestPostgresLog {
    private static let file: FileHandle? = {
        guard let path = ProcessInfo.processInfo.environment["MODELSYNC_TEST_PG_LOG"], !path.isEmpty,
              FileManager.default.createFile(atPath: path, contents: nil)
        else { return nil }
        return FileHandle(forWritingAtPath: path)
    }()
    private static let lock = NSLock()
    /// `MODELSYNC_TEST_PG_LOG_LEVEL` (`trace` shows every statement), else debug.
    private static let level = ProcessInfo.processInfo.environment["MODELSYNC_TEST_PG_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .debug

    /// The logger of one client (`label` names it in each line).
    static func logger(_ label: String) -> Logger {
        guard file != nil else { return SyncServer.defaultLogger }
        var logger = Logger(label: label) { label in FileLogHandler(label: label, write: write) }
        logger.logLevel = level
        return logger
    }

    private static func write(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        // The throwing form: the other one traps on a write error (a full disk).
        try? file?.write(contentsOf: Data(line.utf8))
    }

    /// One line per message: time, label, level, message, metadata.
    private struct FileLogHandler: LogHandler {
        let label: String
        let write: @Sendable (String) -> Void
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            let details = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            write("\(Date().timeIntervalSince1970) \(label) \(event.level) \(event.message)\(details)\n")
        }
    }
}

/// The PostgreSQL the tests use: `MODELSYNC_POSTGRES_URL`, which `.ci/run` (through
/// `.ci/postgres.sh`) exports. Without it a PostgreSQL test is skipped, or fails under `CI=true`.
enum TestPostgres {
    static let url = ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_URL"]

    /// A fresh schema of the test database, or a skip (a failure in CI) without one.
    static func database() throws -> ServerDatabase {
        guard let url, !url.isEmpty else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("MODELSYNC_POSTGRES_URL is not set: CI must start PostgreSQL (.ci/postgres.sh)")
            }
            try Test.cancel("PostgreSQL is not available: set MODELSYNC_POSTGRES_URL (see the README)")
        }
        var database = try ServerDatabase(url: url).withSchema("test_" + UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: ""))
        // Many test servers run at once: none keeps a pool of idle connections open.
        database.minimumConnections = 0
        return database
    }

    /// The URL of `database` (a schema of the test database), for `modelsync-server --database`.
    static func url(of database: ServerDatabase) -> String {
        var components = URLComponents(string: url ?? "") ?? URLComponents()
        components.queryItems = (components.queryItems ?? []).filter { $0.name != "schema" } + [URLQueryItem(name: "schema", value: database.schema)]
        return components.string ?? ""
    }

    /// The role servers under access rules take in the tests (see `ServerDatabase.role`).
    static let accessRole = "modelsync_test_access"

    /// Creates ``accessRole`` unless it exists (tests running at once may race to create it).
    static func ensureAccessRole(_ database: ServerDatabase) async throws {
        try await execute("""
            DO $$ BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(accessRole)') THEN CREATE ROLE \(accessRole) NOLOGIN; END IF;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END $$
            """, in: database)
    }

    /// Drops a test's schema.
    static func drop(_ database: ServerDatabase) async {
        _ = try? await execute("DROP SCHEMA IF EXISTS \(quotedSchema(database)) CASCADE", in: database)
    }

    /// The schema's name as an SQL identifier.
    static func quotedSchema(_ database: ServerDatabase) -> String {
        "\"" + database.schema.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Runs one SQL statement on a connection of its own; returns how many rows it gave.
    @discardableResult
    static func execute(_ sql: String, in database: ServerDatabase) async throws -> Int {
        try await withConnection(to: database, label: "test.execute") { connection in
            var rows = 0
            for try await _ in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestPostgresLog.logger("test.execute")) { rows += 1 }
            return rows
        }
    }

    /// `body` with a connection of its own to `database`, as its URL's user, without TLS.
    static func withConnection<T: Sendable>(
        to database: ServerDatabase, label: String, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        var configuration = PostgresClient.Configuration(
            host: database.host, port: database.port, username: database.username, password: database.password,
            database: database.database, tls: .disable)
        configuration.options.maximumConnections = 1
        let client = PostgresClient(configuration: configuration, backgroundLogger: TestPostgresLog.logger("\(label) \(database.schema)"))
        let (started, signal) = AsyncStream<Void>.makeStream()
        let running = Task {
            signal.finish()
            await client.run()
        }
        for await _ in started {}
        defer { running.cancel() }
        return try await client.withConnection { connection in try await body(connection) }
    }
}

/// Runs `body` against a fresh in-process server on a random port and always shuts it down.
func withServer(
    _ data: JSONValue = sampleData, options: ServerOptions = ServerOptions(), backend: Backend = .jsonDocument,
    delay: Duration = .zero, requestLogLimit: Int = 1_000, _ body: (TestServer, String) async throws -> Void
) async throws {
    let server: TestServer
    var database: ServerDatabase?
    var sqliteDirectory: TemporaryDirectory?
    switch backend {
    case .jsonDocument:
        server = try await TestServer.start(data: data, options: options, delay: delay, requestLogLimit: requestLogLimit)
    case .postgres:
        var fresh = try TestPostgres.database()
        if options.access != nil {
            // The tests connect as a superuser, whom row-level security does not bind.
            try await TestPostgres.ensureAccessRole(fresh)
            fresh = fresh.withRole(TestPostgres.accessRole)
        }
        database = fresh
        server = try await TestServer.start(options: options, delay: delay, requestLogLimit: requestLogLimit) {
            try await SyncServer.start(data: data, database: fresh, options: $0, logger: TestPostgresLog.logger("server \(fresh.schema)"))
        }
    case .sqlite:
        let directory = try TemporaryDirectory(prefix: "modelsync-server-sqlite")
        sqliteDirectory = directory
        server = try await TestServer.start(options: options, delay: delay, requestLogLimit: requestLogLimit) {
            try await SyncServer.start(data: data, sqlite: directory.url.appendingPathComponent("data.sqlite").path, options: $0)
        }
    }
    defer { sqliteDirectory?.remove() }
    do {
        try await body(server, server.baseURL.absoluteString)
        await server.shutdown()
    } catch {
        await server.shutdown()
        if let database { await TestPostgres.drop(database) }
        throw error
    }
    if let database { await TestPostgres.drop(database) }
}

/// A temporary directory holding `db.json`, removed afterwards.
func withDatabaseFile(_ contents: String, _ body: (URL) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-server-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("db.json")
    try Data(contents.utf8).write(to: file)
    try await body(file)
}
