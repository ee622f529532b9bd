import Foundation
import ModelSyncJSON
import NIOHTTP1
import ModelSyncServer
import ModelSyncServerPostgres
import ServerTestSupport
import Testing

/// A statement that PostgreSQL refuses while it runs, after it has described its rows, fails
/// the write. Such an error reaches only a reader of the rows; unread, it left the transaction
/// aborted, and `COMMIT` then rolled it back without an error: the client heard "saved".
@Suite struct PostgresRefusalTests {
    @Test(.timeLimit(.minutes(5))) func aWriteThatPostgreSQLRefusesIsNotAnsweredAsSaved() async throws {
        let database = try TestPostgres.database()
        let server = try await SyncServer.start(data: sampleData, database: database, logger: TestPostgresLog.logger("server \(database.schema)"))
        let url = server.baseURL.absoluteString
        do {
            let before = try await send(.GET, url + "/posts").json
            // Every write saves the state row last; a trigger refuses that.
            let schema = TestPostgres.quotedSchema(database)
            try await TestPostgres.execute(
                "CREATE FUNCTION \(schema).refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
                in: database)
            try await TestPostgres.execute(
                "CREATE TRIGGER refuse BEFORE UPDATE ON \(schema).modelsync_state FOR EACH ROW EXECUTE FUNCTION \(schema).refuse()",
                in: database)
            let writes: [(HTTPMethod, String, String?)] = [
                (.POST, "/posts", #"{"title": "refused"}"#), (.PATCH, "/posts/1", #"{"title": "refused"}"#),
                (.PUT, "/posts/2", #"{"title": "refused"}"#), (.DELETE, "/posts/3", nil),
            ]
            for (method, path, body) in writes {
                let reply = try await send(method, url + path, body: body)
                #expect(reply.status >= 500, "\(method) \(path) answered \(reply.status)")
            }
            #expect(try await send(.GET, url + "/posts").json == before)

            try await TestPostgres.execute("DROP TRIGGER refuse ON \(schema).modelsync_state", in: database)
            let taken = try await send(.POST, url + "/posts", body: #"{"title": "taken"}"#)
            #expect(taken.status == 201)
            let id = try #require(taken.json?["id"]?.intValue)
            #expect(try await send(.GET, url + "/posts/\(id)").json?["title"] == "taken")
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }
}
