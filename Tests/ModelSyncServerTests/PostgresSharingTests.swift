import Foundation
import ModelSyncJSON
import NIOHTTP1
@testable import ModelSyncServer
@testable import ModelSyncServerPostgres
import PostgresNIO
import ServerTestSupport
import Testing

/// Sharing rules over PostgreSQL: the row-level security policies say what the queries say (a
/// member sees the board, its cards and their comments; a viewer may not change them), read as
/// the server's role with a caller's settings, whatever SQL it runs; and the server's answers
/// over HTTP, the feed's deletions included.
@Suite struct PostgresSharingTests {
    /// A team tracker: Ann owns board 1, on which Bob is a viewer and Eve an editor; Cat owns
    /// board 2. Dan belongs nowhere.
    static let data: JSONValue = [
        "users": [["id": 1], ["id": 2], ["id": 3], ["id": 4], ["id": 5]],
        "boards": [["id": 1, "ownerId": 1, "name": "Ann's"], ["id": 2, "ownerId": 3, "name": "Cat's"]],
        "memberships": [["id": 1, "boardId": 1, "userId": 2, "role": "viewer"], ["id": 2, "boardId": 1, "userId": 5, "role": "editor"]],
        "cards": [["id": 1, "boardId": 1, "title": "on Ann's"], ["id": 2, "boardId": 2, "title": "on Cat's"]],
        "comments": [["id": 1, "cardId": 1, "authorId": 1, "text": "Ann's"], ["id": 2, "cardId": 2, "authorId": 3, "text": "Cat's"]],
    ]

    static let rules: JSONValue = [
        "boards": ["owner": "ownerId", "members": ["collection": "memberships", "field": "boardId"], "create": "signedIn", "delete": "owner"],
        "cards": ["parent": ["collection": "boards", "field": "boardId"]],
        "comments": ["parent": ["collection": "cards", "field": "cardId"], "owner": "authorId"],
    ]

    static func options() throws -> ServerOptions {
        ServerOptions(access: AccessControl(
            rules: try AccessRules(json: rules), tokens: TestTokens(), accounts: BuiltInAccounts(issuer: TestTokens(), passwords: TestPasswords())))
    }

    /// Plain SQL as the server's role: the policies admit a member's board, cards and comments,
    /// nothing to a stranger, and no change to a viewer; an editor changes a card but cannot move
    /// it to a board it may not edit.
    @Test func thePoliciesFollowMembershipsAndParents() async throws {
        try await withSharingServer { _, database in
            let schema = TestPostgres.quotedSchema(database)
            try await TestPostgres.withConnection(to: database, label: "test.raw") { connection in
                var tables: [String: String] = [:]
                for name in ["boards", "memberships", "cards", "comments"] { tables[name] = "\(schema).\(try await table(of: name, schema, connection))" }
                func ids(_ user: String, _ collection: String, role: String = "") async throws -> [String] {
                    try await asCaller(connection, user, role: role, "SELECT id_text FROM \(tables[collection] ?? "") ORDER BY id_text")
                }
                // Bob, a viewer of board 1: the board, its card, the card's comment, his membership.
                #expect(try await ids("2", "boards") == ["1"])
                #expect(try await ids("2", "cards") == ["1"])
                #expect(try await ids("2", "comments") == ["1"])
                #expect(try await ids("2", "memberships") == ["1", "2"])
                // Dan, a member of nothing, and an anonymous caller: nothing.
                for user in ["4", ""] {
                    for collection in ["boards", "memberships", "cards", "comments"] { #expect(try await ids(user, collection).isEmpty) }
                }
                // Ann owns board 1, Cat board 2: each sees their own; an admin sees both.
                #expect(try await ids("1", "cards") == ["1"])
                #expect(try await ids("3", "comments") == ["2"])
                #expect(try await ids("9", "cards", role: "admin") == ["1", "2"])
                // Bob's update of the card touches nothing (the policy's USING hides it), and his
                // new card on board 1 is refused (its WITH CHECK).
                let touch = "UPDATE \(tables["cards"] ?? "") SET record = record || '{\"title\":\"x\"}' RETURNING id_text"
                #expect(try await asCaller(connection, "2", touch) == [])
                await #expect(throws: (any Error).self) {
                    try await asCaller(connection, "2", "INSERT INTO \(tables["cards"] ?? "") (id_text, version, record) VALUES ('9', 999, '{\"id\":9,\"boardId\":1}')")
                }
                // Eve, an editor of board 1, changes its card, and Cat's not; she cannot move it to
                // Cat's board.
                #expect(try await asCaller(connection, "5", touch) == ["1"])
                await #expect(throws: (any Error).self) {
                    try await asCaller(connection, "5", "UPDATE \(tables["cards"] ?? "") SET record = record || '{\"boardId\":2}' WHERE id_text = '1'")
                }
                // Bob may not make himself an editor: changing memberships takes a manager.
                #expect(try await asCaller(connection, "2", "UPDATE \(tables["memberships"] ?? "") SET record = record || '{\"role\":\"manager\"}' RETURNING id_text") == [])
                // But he may leave: of the memberships, each deletes their own only (each statement rolled back).
                #expect(try await asCaller(connection, "2", "DELETE FROM \(tables["memberships"] ?? "") RETURNING id_text") == ["1"])
                #expect(try await asCaller(connection, "5", "DELETE FROM \(tables["memberships"] ?? "") RETURNING id_text") == ["2"])
            }
        }
    }

    /// The server's answers on PostgreSQL: lists, items, nested routes and embeds show the
    /// member's rows only; a viewer's writes are refused; the feed shows a member the rows and
    /// the deletions of the rows it saw (a card moved away, a card deleted), and a stranger none.
    @Test func theServerAnswersMembersOnly() async throws {
        try await withServer(Self.data, options: try Self.options(), backend: .postgres) { _, base in
            func get(_ path: String, _ user: Int) async throws -> Reply {
                try await send(.GET, base + path, headers: [("Authorization", "Bearer test:\(user):")])
            }
            func write(_ method: HTTPMethod, _ path: String, _ body: String?, _ user: Int) async throws -> Reply {
                try await send(method, base + path, body: body, headers: [("Authorization", "Bearer test:\(user):")])
            }
            #expect(try await get("/cards", 2).ids == [1])
            #expect(try await get("/cards", 4).ids == [])
            #expect(try await get("/comments?_page=1&_limit=5", 2).ids == [1])
            #expect(try await get("/comments?_page=1&_limit=5", 2).header("X-Total-Count") == "1")
            #expect(try await get("/boards/1/cards", 2).ids == [1])
            #expect(try await get("/boards/2/cards", 2).status == 404)
            #expect(try await get("/boards/2", 2).status == 404)
            #expect(try await get("/boards/1?_embed=cards", 2).json?["cards"]?.arrayValue?.count == 1)
            #expect(try await get("/cards/1?_expand=board", 2).json?["board"]?["name"] == "Ann's")
            // A viewer reads and may not write; an editor may, but not onto a board it cannot edit.
            #expect(try await write(.PATCH, "/cards/1", #"{"title":"Bob's"}"#, 2).status == 403)
            #expect(try await write(.POST, "/cards", #"{"boardId":1,"title":"Bob's"}"#, 2).status == 403)
            #expect(try await write(.DELETE, "/cards/1", nil, 2).status == 403)
            #expect(try await write(.PATCH, "/cards/2", #"{"title":"Bob's"}"#, 2).status == 404)
            #expect(try await write(.PATCH, "/cards/1", #"{"title":"Eve's"}"#, 5).status == 200)
            #expect(try await write(.PATCH, "/cards/1", #"{"boardId":2}"#, 5).status == 403)
            #expect(try await write(.POST, "/cards", #"{"boardId":1,"title":"Eve's new"}"#, 5).status == 201)
            #expect(try await write(.POST, "/cards", #"{"boardId":2,"title":"Eve's new"}"#, 5).status == 403)
            // Bob's feed: his board, its cards, the comment, the memberships.
            let first = try await get("/_changes", 2)
            let seen = Set((first.json?["changes"]?.arrayValue ?? []).compactMap { change in
                change["collection"]?.stringValue.map { "\($0)/\(scalarText(change["id"] ?? .null) ?? "")" }
            })
            #expect(seen == ["boards/1", "cards/1", "cards/3", "comments/1", "memberships/1", "memberships/2", "users/2"])
            let cursor = first.json?["next"]?.stringValue ?? ""
            let strangerCursor = try await get("/_changes", 4).json?["next"]?.stringValue ?? ""
            // Ann makes a board of her own, moves card 1 there (its comment goes with it), and deletes card 3.
            #expect(try await write(.POST, "/boards", #"{"id":3,"name":"Ann's private"}"#, 1).status == 201)
            #expect(try await write(.PATCH, "/cards/1", #"{"boardId":3}"#, 1).status == 200)
            #expect(try await write(.DELETE, "/cards/3", nil, 1).status == 200)
            let after = try await get("/_changes?since=\(cursor)", 2).json?["changes"]?.arrayValue ?? []
            #expect(after.map { "\($0["collection"]?.stringValue ?? "")/\(scalarText($0["id"] ?? .null) ?? ""):\($0["deleted"]?.boolValue ?? false)" }.sorted()
                == ["cards/1:true", "cards/3:true", "comments/1:true"])
            let stranger = try await get("/_changes?since=\(strangerCursor)", 4).json?["changes"]?.arrayValue ?? []
            #expect(stranger.isEmpty)
            // A card whose board went first: its deletion still reaches the board's members, by
            // the board's tombstone.
            #expect(try await write(.POST, "/cards", #"{"id":4,"boardId":1}"#, 5).status == 201)
            let eveCursor = try await get("/_changes", 5).json?["next"]?.stringValue ?? ""
            #expect(try await write(.DELETE, "/boards/1", nil, 1).status == 200)
            #expect(try await send(.DELETE, base + "/cards/4", headers: [("Authorization", "Bearer test:9:admin")]).status == 200)
            let gone = try await get("/_changes?since=\(eveCursor)", 5).json?["changes"]?.arrayValue ?? []
            // (And Bob's membership of the board, which she no longer reads.)
            #expect(gone.map { "\($0["collection"]?.stringValue ?? "")/\(scalarText($0["id"] ?? .null) ?? ""):\($0["deleted"]?.boolValue ?? false)" }.sorted()
                == ["boards/1:true", "cards/4:true", "memberships/1:true"])
            // Dan made a viewer of board 3: his next read brings the board, the card moved there
            // and its comment, without reading everything again.
            let danCursor = try await get("/_changes", 4).json?["next"]?.stringValue ?? ""
            #expect(try await write(.POST, "/memberships", #"{"boardId":3,"userId":4,"role":"viewer"}"#, 1).status == 201)
            let danSees = try await get("/_changes?since=\(danCursor)", 4).json?["changes"]?.arrayValue ?? []
            #expect(Set(danSees.map { "\($0["collection"]?.stringValue ?? "")/\(scalarText($0["id"] ?? .null) ?? ""):\($0["deleted"]?.boolValue ?? false)" })
                == ["boards/3:false", "cards/1:false", "comments/1:false", "memberships/3:false"])
        }
    }

    /// `import --replace` under a running server: the new tables keep the columns the
    /// membership lookups read and the policies, and the server answers as before; an import
    /// that gives the collections other tables closes the policies that name them.
    /// The record function runs as its owner: it reads this schema's tables, never another's.
    @Test func theRecordFunctionReadsOnlyItsOwnSchema() async throws {
        try await withSharingServer { _, database in
            let schema = TestPostgres.quotedSchema(database)
            let other = "\"" + database.schema + "_other\""
            try await TestPostgres.execute("CREATE SCHEMA IF NOT EXISTS \(other)", in: database)
            try await TestPostgres.execute("CREATE TABLE \(other).secrets (record jsonb, id_text text)", in: database)
            try await TestPostgres.execute("INSERT INTO \(other).secrets VALUES ('{\"pin\": 1234}', '1')", in: database)
            await #expect(throws: (any Error).self) {
                try await TestPostgres.execute("SELECT \(schema).modelsync_record_of('\(other).secrets'::regclass, '1')", in: database)
            }
            _ = try? await TestPostgres.execute("DROP SCHEMA \(other) CASCADE", in: database)
        }
    }

    @Test func anImportOverARunningSchemaKeepsTheSharingPolicies() async throws {
        try await withSharingServer { server, database in
            let schema = TestPostgres.quotedSchema(database)
            try await SyncServer.importData(Self.data, into: database, replacing: true)
            let bob = [("Authorization", "Bearer test:2:")]
            #expect(try await send(.GET, server.baseURL.absoluteString + "/cards", headers: bob).ids == [1])
            #expect(try await send(.GET, server.baseURL.absoluteString + "/boards/1/cards", headers: bob).ids == [1])
            try await TestPostgres.withConnection(to: database, label: "test.raw") { connection in
                let cards = try await table(of: "cards", schema, connection)
                #expect(try await asCaller(connection, "2", "SELECT id_text FROM \(schema).\(cards) ORDER BY id_text") == ["1"])
            }
            // The collections in another order: each gets another table.
            var reordered = JSONObject()
            for name in ["comments", "cards", "memberships", "boards", "users"] { reordered[name] = Self.data[name] ?? [] }
            try await SyncServer.importData(.object(reordered), into: database, replacing: true)
            try await TestPostgres.withConnection(to: database, label: "test.raw") { connection in
                let cards = try await table(of: "cards", schema, connection)
                #expect(try await asCaller(connection, "2", "SELECT id_text FROM \(schema).\(cards) ORDER BY id_text") == [])
                #expect(try await asCaller(connection, "9", role: "admin", "SELECT id_text FROM \(schema).\(cards) ORDER BY id_text") == ["1", "2"])
            }
        }
    }

    // MARK: Raw SQL

    /// A server under the sharing rules over a fresh schema, as the access role.
    private func withSharingServer(_ body: (SyncServer, ServerDatabase) async throws -> Void) async throws {
        try await PostgresRowSecurityTests().withSecuredServer(data: Self.data, options: try Self.options(), body)
    }

    /// `statement`'s first column as text, as the server's role with a caller's settings, rolled back.
    private func asCaller(_ connection: PostgresConnection, _ user: String, role: String = "", _ statement: String) async throws -> [String] {
        try await PostgresRowSecurityTests().asCaller(connection, user, role: role, statement)
    }

    private func table(of collection: String, _ schema: String, _ connection: PostgresConnection) async throws -> String {
        try await PostgresRowSecurityTests().table(of: collection, schema, connection)
    }
}
