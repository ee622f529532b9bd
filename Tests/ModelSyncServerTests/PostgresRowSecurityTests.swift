import Foundation
import Logging
import ModelSyncJSON
@testable import ModelSyncServer
@testable import ModelSyncServerPostgres
import PostgresNIO
import ServerTestSupport
import Testing

/// Row-level security under access rules: what the server's role reaches with a caller's
/// settings, whatever SQL it runs (a check the server forgot leaks nothing), and grouped writes
/// of several callers each held to their own caller.
@Suite struct PostgresRowSecurityTests {
    /// Plain SQL as the server's role, with Ann's settings, reads and touches Ann's rows only.
    @Test func aQueryWithoutFiltersSeesOnlyTheCallersRows() async throws {
        try await withSecuredServer { server, database in
            let schema = TestPostgres.quotedSchema(database)
            try await withRawConnection(database) { connection in
                let messages = try await table(of: "messages", schema, connection)
                let posts = try await table(of: "posts", schema, connection)
                func asCaller(_ user: String, role: String = "", _ statement: String) async throws -> [String] {
                    try await self.asCaller(connection, user, role: role, statement)
                }
                // Reads: Ann's message only; every post (644); nothing for nobody.
                #expect(try await asCaller("1", "SELECT id_text FROM \(schema).\(messages) ORDER BY id_text") == ["1"])
                #expect(try await asCaller("1", "SELECT id_text FROM \(schema).\(posts) ORDER BY id_text") == ["1", "2"])
                #expect(try await asCaller("", "SELECT id_text FROM \(schema).\(messages)") == [])
                #expect(try await asCaller("9", role: "admin", "SELECT id_text FROM \(schema).\(messages) ORDER BY id_text") == ["1", "2"])
                // Writes: an unfiltered update or delete touches Ann's rows only.
                #expect(try await asCaller("1", "UPDATE \(schema).\(messages) SET record = record || '{\"text\":\"x\"}' RETURNING id_text") == ["1"])
                #expect(try await asCaller("1", "UPDATE \(schema).\(posts) SET record = record || '{\"title\":\"x\"}' RETURNING id_text") == ["1"])
                #expect(try await asCaller("1", "DELETE FROM \(schema).\(messages) RETURNING id_text") == ["1"])
                // Ann cannot give her row to Bob, nor make one in his name.
                await #expect(throws: (any Error).self) {
                    try await asCaller("1", "UPDATE \(schema).\(messages) SET record = record || '{\"userId\":2}' WHERE id_text = '1'")
                }
                await #expect(throws: (any Error).self) {
                    try await asCaller("1", "INSERT INTO \(schema).\(messages) (id_text, version, record) VALUES ('9', 999, '{\"id\":9,\"userId\":2}')")
                }
                // The view of every table reads as its owner: the role may not use it.
                await #expect(throws: (any Error).self) { try await asCaller("9", role: "admin", "SELECT id_text FROM \(schema).modelsync_all_records") }
                // The transactions above rolled back: the server still answers Ann with her row.
            }
            let reply = try await send(.GET, server.baseURL.absoluteString + "/messages", headers: AccessTests.Who.ann.headers)
            #expect(reply.status == 200 && reply.ids == [1])
            // The superuser bypasses row-level security: a server under rules refuses it.
            await #expect(throws: ServerError.self) {
                let refused = try await SyncServer.start(database: database, options: try AccessTests.options())
                await refused.shutdown()
            }
        }
    }

    /// One group commit holding several callers' writes: each runs as its own caller.
    @Test func aGroupOfSeveralCallersWritesEachAsItsCaller() async throws {
        let database = try TestPostgres.database()
        try await TestPostgres.ensureAccessRole(database)
        let rules = try AccessRules(json: AccessTests.rules)
        let backend = try await PostgresBackend.open(
            database.withRole(TestPostgres.accessRole), initialData: AccessTests.data, feedLimits: FeedLimits(), rules: rules,
            logger: TestPostgresLog.logger("backend \(database.schema)"))
        do {
            let (ann, bob) = (Caller(userID: "1"), Caller(userID: "2"))
            func access(_ caller: Caller) -> CollectionAccess { rules.access(to: "messages", for: caller) }
            let operations = [
                ItemOperation(write: .create(collection: "messages", body: ["text": "Ann's", "userId": 1]), access: access(ann)),
                ItemOperation(write: .update(collection: "messages", id: "2", body: ["text": "Ann was here"], merge: true), access: access(ann)),
                ItemOperation(write: .create(collection: "messages", body: ["text": "Bob's", "userId": 2]), access: access(bob)),
                ItemOperation(write: .update(collection: "messages", id: "2", body: ["text": "Bob's own"], merge: true), access: access(bob)),
                ItemOperation(write: .delete(collection: "messages", id: "1"), access: access(bob)),
                ItemOperation(write: .update(collection: "messages", id: "1", body: ["text": "Ann's own"], merge: true), access: access(ann)),
            ]
            let outcomes = await backend.commitGroup(operations)
            let statuses = outcomes.map { outcome -> Int in
                switch outcome {
                case .success(let result): result.status
                case .failure(let error): (error as? APIError)?.status.code ?? 500
                }
            }
            #expect(statuses == [201, 404, 201, 200, 404, 200])
            let everything = try await backend.everything().value["messages"]?.arrayValue ?? []
            #expect(everything.map { $0["text"] } == ["Ann's own", "Bob's own", "Ann's", "Bob's"])
            let annSees = try await backend.list("messages", ListRequest(
                query: try ListQuery(QueryParameters("")), parameters: QueryParameters(""), defaultPageSize: 10, embeds: [], expands: [],
                visibility: Visibility(rules: rules, caller: ann)))
            #expect(annSees.items.map { $0["text"] } == ["Ann's own", "Ann's"])
        } catch {
            Issue.record(error)
        }
        await backend.close()
        await TestPostgres.drop(database)
    }

    /// `import --replace` under a running server: the new tables keep the policies (and grants)
    /// from the commit on, and a collection new to the data is closed to all but admins.
    @Test func anImportOverARunningSchemaKeepsItsPolicies() async throws {
        try await withSecuredServer { _, database in
            var replacement = AccessTests.data.objectValue ?? [:]
            replacement["extra"] = [["id": 1, "userId": 1]]
            try await SyncServer.importData(.object(replacement), into: database, replacing: true)
            let schema = TestPostgres.quotedSchema(database)
            try await withRawConnection(database) { connection in
                let messages = try await table(of: "messages", schema, connection)
                let extra = try await table(of: "extra", schema, connection)
                #expect(try await asCaller(connection, "1", "SELECT id_text FROM \(schema).\(messages) ORDER BY id_text") == ["1"])
                #expect(try await asCaller(connection, "", "SELECT id_text FROM \(schema).\(messages)") == [])
                #expect(try await asCaller(connection, "1", "SELECT id_text FROM \(schema).\(extra)") == [])
                #expect(try await asCaller(connection, "9", role: "admin", "SELECT id_text FROM \(schema).\(extra)") == ["1"])
            }
        }
    }

    // MARK: Raw SQL

    /// A server under `AccessTests`' rules (or `options`') over a fresh schema holding `data`, as
    /// the access role; errors are recorded, and the server and schema always go.
    func withSecuredServer(
        data: JSONValue = AccessTests.data, options: ServerOptions? = nil, _ body: (SyncServer, ServerDatabase) async throws -> Void
    ) async throws {
        let database = try TestPostgres.database()
        try await TestPostgres.ensureAccessRole(database)
        let server = try await SyncServer.start(
            data: data, database: database.withRole(TestPostgres.accessRole), options: try options ?? AccessTests.options(),
            logger: TestPostgresLog.logger("server \(database.schema)"))
        do {
            try await body(server, database)
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }

    /// `statement`'s rows as the server's role with a caller's settings, rolled back.
    func asCaller(_ connection: PostgresConnection, _ user: String, role: String = "", _ statement: String) async throws -> [String] {
        try await transaction(connection, user: user, role: role) { try await rows(statement, connection) }
    }

    private func withRawConnection(_ database: ServerDatabase, _ body: (PostgresConnection) async throws -> Void) async throws {
        try await TestPostgres.withConnection(to: database, label: "test.raw", body)
    }

    /// `body` in a transaction as the server's role with a caller's settings; rolled back.
    private func transaction<T>(_ connection: PostgresConnection, user: String, role: String, _ body: () async throws -> T) async throws -> T {
        _ = try await connection.query("BEGIN", logger: Logger(label: "test")).collect()
        let settings: PostgresQuery = """
            SELECT set_config('role', \(TestPostgres.accessRole), true), set_config('modelsync.user_id', \(user), true), \
            set_config('modelsync.role', \(role), true)
            """
        do {
            _ = try await connection.query(settings, logger: Logger(label: "test")).collect()
            let result = try await body()
            _ = try await connection.query("ROLLBACK", logger: Logger(label: "test")).collect()
            return result
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: Logger(label: "test")).collect()
            throw error
        }
    }

    private func rows(_ sql: String, _ connection: PostgresConnection) async throws -> [String] {
        var found: [String] = []
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test")) {
            if let text = try? row.decode(String.self) { found.append(text) }
        }
        return found
    }

    func table(of collection: String, _ schema: String, _ connection: PostgresConnection) async throws -> String {
        let query = PostgresQuery(unsafeSQL: "SELECT table_name FROM \(schema).modelsync_resources WHERE name = '\(collection)'")
        for try await table in try await connection.query(query, logger: Logger(label: "test")).decode(String.self) { return table }
        throw APIError.notFound("no table for \(collection)")
    }
}
