import Foundation
import Logging
import ModelSyncJSON
import PostgresNIO
@testable import ModelSyncServer
@testable import ModelSyncServerPostgres
import ServerTestSupport
import Testing

/// How the server reaches PostgreSQL: the URL forms it reads (libpq's), the Unix-domain socket,
/// and the prepared read by id, which must stay right when the tables under it are replaced.
@Suite struct PostgresConnectionTests {
    @Test func urlsAreReadAsLibpqReadsThem() throws {
        let tcp = try ServerDatabase(url: "postgresql://app:s%40cret@db.example.com:6432/shop?schema=sync")
        #expect(tcp.host == "db.example.com" && tcp.port == 6432 && tcp.username == "app" && tcp.password == "s@cret")
        #expect(tcp.database == "shop" && tcp.schema == "sync" && tcp.tls == .prefer && !tcp.usesUnixSocket)
        #expect(!tcp.description.contains("cret"))

        let loopback = try ServerDatabase(url: "postgres://127.0.0.1")
        #expect(loopback.port == 5432 && loopback.username == "postgres" && loopback.database == nil && loopback.schema == "public")
        #expect(loopback.tls == .disable)
        // The pool stays open at its full size unless the URL says otherwise.
        #expect(loopback.minimumConnections == ServerDatabase.maximumConnections)
        #expect(try ServerDatabase(url: "postgres://127.0.0.1?min_connections=0").minimumConnections == 0)
        #expect(try ServerDatabase(url: "postgres://127.0.0.1?min_connections=4").minimumConnections == 4)

        // A host that is a path is the socket's directory: as a parameter or percent-encoded.
        let parameter = try ServerDatabase(url: "postgres://app@:5433/shop?host=/var/run/postgresql")
        let encoded = try ServerDatabase(url: "postgres://app@%2Fvar%2Frun%2Fpostgresql:5433/shop")
        for socket in [parameter, encoded] {
            #expect(socket.host == "/var/run/postgresql" && socket.port == 5433 && socket.usesUnixSocket && socket.tls == .disable)
        }
        #expect(try ServerDatabase(url: parameter.description).host == "/var/run/postgresql")

        #expect(tcp.applicationName == nil)
        #expect(try ServerDatabase(url: "postgres://h/db?application_name=sync%20one").applicationName == "sync one")

        for bad in [
            "http://127.0.0.1/db", "postgres:///db", "postgres://h/db?sslmode=always", "postgres://h/db?schema=", "postgres://h/db?host=%2Ftmp%00x",
            "postgres://h/db?min_connections=17", "postgres://h/db?min_connections=-1", "postgres://h/db?min_connections=", "postgres://h/db?min_connections",
            "postgres://h/db?min_connections=99999999999999999999", "postgres://h/db?application_name=a%00b",
        ] {
            #expect(throws: ServerError.self, "\(bad)") { try ServerDatabase(url: bad) }
        }
    }

    @Test func aServerReachesPostgreSQLThroughItsUnixSocket() async throws {
        let tcp = try TestPostgres.database()
        let directory = try #require(ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_SOCKET_DIR"], "source .ci/postgres.sh")
        var socket = tcp
        socket.host = directory
        #expect(socket.usesUnixSocket)
        let server = try await SyncServer.start(data: sampleData, database: socket)
        do {
            let created = try await send(.POST, server.baseURL.absoluteString + "/posts", body: #"{"title":"over a socket"}"#)
            #expect(created.status == 201)
            let read = try await send(.GET, server.baseURL.absoluteString + "/posts/6")
            #expect(read.json?["title"] == "over a socket")
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(tcp)
    }

    /// `?application_name=` names the server's connections in `pg_stat_activity`, so that
    /// several servers' connections can be told apart.
    @Test func connectionsCarryTheApplicationName() async throws {
        var database = try TestPostgres.database()
        let name = "modelsync-test-" + database.schema
        database.applicationName = name
        let server = try await SyncServer.start(data: sampleData, database: database)
        do {
            let created = try await send(.POST, server.baseURL.absoluteString + "/posts", body: #"{"title":"named"}"#)
            #expect(created.status == 201)
            let named = try await TestPostgres.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = '\(name)'", in: database)
            #expect(named > 0)
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }

    /// Each connection prepares the read once; replacing the data drops and creates the tables
    /// (and the view) under those prepared reads, which PostgreSQL must plan again.
    @Test func readsByIDStayRightWhenTheDataIsReplaced() async throws {
        let database = try TestPostgres.database()
        let backend = try await PostgresBackend.open(database, initialData: sampleData, feedLimits: FeedLimits(), logger: Logger(label: "test"))
        do {
            // More reads at once than the pool has connections: most connections prepare it.
            try await readConcurrently(backend, expecting: "gamma ray")
            var replaced = sampleData
            replaced["posts"] = [["id": 3, "title": "replaced"], ["id": "a/../b", "title": "path"]]
            _ = try await PostgresBackend.replaceData(with: replaced, schema: backend.schema, client: backend.client, logger: backend.logger)
            // The backend's table names stay valid: the data's shape is the same.
            try await readConcurrently(backend, expecting: "replaced")
            #expect(try await backend.item("posts", id: "a/../b", embeds: [], expands: [], visibility: .open).value["title"] == "path")
            await #expect(throws: APIError.self) { try await backend.item("posts", id: "1", embeds: [], expands: [], visibility: .open) }
        } catch {
            Issue.record(error)
        }
        await backend.close()
        await TestPostgres.drop(database)
    }

    /// Data imported before the view existed gets it when a server opens it.
    @Test func aMissingViewIsCreatedWhenTheServerStarts() async throws {
        let database = try TestPostgres.database()
        let first = try await PostgresBackend.open(database, initialData: sampleData, feedLimits: FeedLimits(), logger: Logger(label: "test"))
        await first.close()
        try await TestPostgres.execute("DROP VIEW \(PostgresSchema(name: database.schema).allRecords)", in: database)
        do {
            let second = try await PostgresBackend.open(database, initialData: nil, feedLimits: FeedLimits(), logger: Logger(label: "test"))
            try await readConcurrently(second, expecting: "gamma ray")
            #expect(try await second.item("users", id: "2", embeds: [], expands: [], visibility: .open).value["name"] == "Ervin")
            await second.close()
        } catch {
            Issue.record(error)
        }
        await TestPostgres.drop(database)
    }

    private func readConcurrently(_ backend: PostgresBackend, expecting title: JSONValue) async throws {
        try await withThrowingTaskGroup(of: JSONValue?.self) { group in
            for _ in 0..<40 { group.addTask { try await backend.item("posts", id: "3", embeds: [], expands: [], visibility: .open).value["title"] } }
            for try await read in group { #expect(read == title) }
        }
    }

    /// postgres-nio drops a query sent to a closed connection, and its caller waits forever (the
    /// second stall of issue #17). The backend's guarded statements fail instead: on a
    /// connection closed before the statement, and on one ended while the statement runs.
    @Test(.timeLimit(.minutes(5))) func statementsOnAClosedConnectionFailInsteadOfWaiting() async throws {
        let database = try TestPostgres.database()
        let (client, running) = try await PostgresClient.running(database, logger: TestPostgresLog.logger("guarded \(database.schema)"))
        let logger = Logger(label: "guarded")
        do {
            try await client.withConnection { connection in
                #expect(try await connection.guardedQuery("SELECT 1", logger: logger).collect().count == 1)
                try await connection.close().get()
                await #expect(throws: PostgresBackend.connectionClosed) { try await connection.guardedQuery("SELECT 1", logger: logger) }
                await #expect(throws: PostgresBackend.connectionClosed) {
                    try await connection.guardedExecute(PostgresBackend.RecordByID(table: "t", id: "1"), logger: logger)
                }
            }
            // Ended by PostgreSQL mid-statement: the statement fails, and so does the next one
            // (a transaction's ROLLBACK), where postgres-nio's own query would wait.
            await #expect(throws: (any Error).self) {
                try await client.guardedTransaction(logger: logger) { connection in
                    var pid: Int32 = 0
                    for try await value in try await connection.guardedQuery("SELECT pg_backend_pid()", logger: logger).decode(Int32.self) { pid = value }
                    try await TestPostgres.execute("SELECT pg_terminate_backend(\(pid))", in: database)
                    try await connection.guardedRun("SELECT pg_sleep(30)", logger: logger)
                }
            }
        } catch {
            Issue.record(error)
        }
        running.cancel()
        await running.value
    }

    /// PostgreSQL raises an error while a statement runs, after its first row: reading one row
    /// or running the statement for its effect fails too (the error reaches only a reader of the
    /// rows; unread, it left the transaction aborted and its `COMMIT` silently rolled back).
    @Test(.timeLimit(.minutes(5))) func anErrorAfterTheFirstRowFailsTheStatement() async throws {
        let database = try TestPostgres.database()
        let (client, running) = try await PostgresClient.running(database, logger: TestPostgresLog.logger("first \(database.schema)"))
        let logger = Logger(label: "first")
        // The error comes after enough rows to fill postgres-nio's buffer and PostgreSQL's: the
        // first rows reach the reader before the error does.
        let failingLate: PostgresQuery = "SELECT 1 / (60000 - g) FROM generate_series(1, 60000) AS g"
        do {
            try await client.withConnection { connection in
                let first: Int32? = try await connection.guardedFirst("SELECT g FROM generate_series(7, 9) AS g", as: Int32.self, logger: logger)
                #expect(first == 7)
                let none: Int32? = try await connection.guardedFirst("SELECT 1 WHERE false", as: Int32.self, logger: logger)
                #expect(none == nil)
                await #expect(throws: PSQLError.self) { try await connection.guardedFirst(failingLate, as: Int32.self, logger: logger) }
                await #expect(throws: PSQLError.self) { try await connection.guardedRun(failingLate, logger: logger) }
            }
        } catch {
            Issue.record(error)
        }
        running.cancel()
        await running.value
    }
}
