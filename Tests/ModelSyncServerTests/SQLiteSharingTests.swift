import Foundation
import Logging
import ModelSyncJSON
import ModelSyncSQLite
import ModelSyncTesting
@testable import ModelSyncServer
@testable import ModelSyncServerSQLite
import ServerTestSupport
import Testing

/// What sharing rules need of the SQLite file: the tombstones' shared fields (a migration of
/// files made before), and membership lookups through the expression indexes made at start.
/// The access matrix over every backend is in the suites over `Backend.allCases`.
@Suite struct SQLiteSharingTests {
    static let rules: JSONValue = [
        "boards": ["owner": "ownerId", "members": ["collection": "memberships", "field": "boardId"], "create": "signedIn", "delete": "owner"],
        "cards": ["parent": ["collection": "boards", "field": "boardId"]],
        "comments": ["parent": ["collection": "cards", "field": "cardId"]],
    ]
    /// Ann owns boards 1 and 2; Bob views board 1 and edits board 3 (Cat's).
    static let data: JSONValue = [
        "users": [["id": 1, "email": "ann@example.com"], ["id": 2, "email": "bob@example.com"], ["id": 3, "email": "cat@example.com"]],
        "boards": [["id": 1, "ownerId": 1, "name": "Ann's"], ["id": 2, "ownerId": 1, "name": "Ann's other"], ["id": 3, "ownerId": 3, "name": "Cat's"]],
        "memberships": [
            ["id": 1, "boardId": 1, "userId": 2, "role": "viewer"], ["id": 2, "boardId": 3, "userId": 2, "role": "editor"],
            // User `2.0`, not Bob (`2`): SQL finds it by the number, Swift tells them apart.
            (try? JSONValue(parsing: Array(#"{"id": 3, "boardId": 2, "userId": 2.0, "role": "manager"}"#.utf8))) ?? .null,
        ],
        "cards": [
            ["id": 1, "boardId": 1, "title": "on 1"], ["id": 2, "boardId": 2, "title": "on 2"], ["id": 3, "boardId": 1, "title": "moves"],
            ["id": 4, "boardId": 3, "title": "on 3"],
            // Board 1 by its id's text (as the JSON file compares), and by a value naming no board.
            ["id": 5, "boardId": "1", "title": "on 1 too"], ["id": 6, "boardId": true, "title": "nowhere"],
        ],
        "comments": [["id": 1, "cardId": 1, "body": "on card 1"], ["id": 2, "cardId": 2, "body": "on card 2"]],
    ]
    static let link = SharingRule.Membership(collection: "memberships", field: "boardId")

    static func options() throws -> ServerOptions {
        ServerOptions(access: AccessControl(rules: try AccessRules(json: rules), tokens: TestTokens()))
    }

    /// The backend over `data` under `rules`, in a file of `directory`.
    static func openBackend(in directory: TemporaryDirectory) async throws -> (backend: SQLiteBackend, rules: AccessRules) {
        let rules = try AccessRules(json: Self.rules)
        let backend = try await SQLiteBackend.open(
            path: directory.path("data.sqlite"), initialData: Self.data, feedLimits: FeedLimits(), rules: rules, logger: Logger(label: "test"))
        return (backend, rules)
    }

    static let ann = [("Authorization", "Bearer test:1:")]
    static let bob = [("Authorization", "Bearer test:2:")]
    static let admin = [("Authorization", "Bearer test:9:admin")]

    @Test func aFileMadeBeforeSharingOpensAndItsTombstonesGainTheirFields() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-migrate")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        // A file as the server left it before the second migration: one record, one deletion.
        do {
            let database = try Database(path: path, configuration: DatabaseConfiguration(foreignKeys: false, createsTables: false))
            var old = Migrator(reservedPart: "server")
            old.registerSQL(SQLiteSchema.migrations[0].id, SQLiteSchema.migrations[0].sql)
            try old.migrate(database)
            try await database.write { connection in
                try connection.execute("INSERT INTO \(SQLiteSchema.resources) (name, position, kind) VALUES ('posts', 0, 'collection')")
                try connection.execute(
                    "INSERT INTO \(SQLiteSchema.records) (collection, id_text, integer_id, version, record) VALUES ('posts', '1', 1, 1, '{\"id\":1}')")
                try connection.execute(
                    "INSERT INTO \(SQLiteSchema.tombstones) (sequence, collection, id, at) VALUES (2, 'posts', '2', CAST(strftime('%s', 'now') AS INTEGER))")
                try connection.execute("UPDATE \(SQLiteSchema.state) SET sequence = 2")
            }
            #expect(try await database.read { try $0.rows("SELECT name FROM pragma_table_info('\(SQLiteSchema.tombstones)')") }.contains { $0[0] == .text("fields") } == false)
        }
        let server = try await SyncServer.start(sqlite: path)
        let base = server.baseURL.absoluteString
        // The old deletion is still in the feed, and a new one is kept in the new column.
        let feed = try await send(.GET, base + "/_changes?since=0").json?["changes"]?.arrayValue ?? []
        #expect(feed.map { $0["id"] } == [1, 2])
        #expect(try await send(.DELETE, base + "/posts/1").status == 200)
        await server.shutdown()

        let database = try Database(path: path, configuration: DatabaseConfiguration(foreignKeys: false, createsTables: false))
        let columns = try await database.read { try $0.rows("SELECT name FROM pragma_table_info('\(SQLiteSchema.tombstones)')") }.compactMap { $0[0].textValue }
        #expect(columns.contains("fields"))
        let applied = try await database.read { try SQLiteSchema.migrator.appliedMigrations($0) }
        #expect(applied == SQLiteSchema.migrations.map(\.id))
        #expect(try await database.read { try $0.rows("SELECT id FROM \(SQLiteSchema.tombstones) ORDER BY sequence") }.map { $0[0] } == [SQLValue.text("2"), .text("1")])
    }

    @Test func exportAndImportKeepTheSharedFieldsOfDeletions() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-sharing-export")
        defer { directory.remove() }
        let (first, second) = (directory.path("first.sqlite"), directory.path("second.sqlite"))
        let server = try await SyncServer.start(data: Self.data, sqlite: first, options: try Self.options())
        #expect(try await send(.DELETE, server.baseURL.absoluteString + "/cards/1", headers: Self.ann).status == 200)
        await server.shutdown()

        let exported = try await SyncServer.exportData(fromSQLite: first)
        let stones = exported[Bookkeeping.member]?["tombstones"]?.arrayValue ?? []
        #expect(stones.map { $0["fields"] } == [["id": 1, "boardId": 1]])
        // In another file, the deletion still reaches the members of the card's board.
        try await SyncServer.importData(exported, intoSQLite: second)
        let again = try await SyncServer.start(sqlite: second, options: try Self.options())
        let changes = try await send(.GET, again.baseURL.absoluteString + "/_changes?collections=cards", headers: Self.bob).json?["changes"]?.arrayValue ?? []
        #expect(changes.filter { $0["deleted"] == true }.map { $0["id"] } == [1])
        await again.shutdown()
    }

    @Test func membershipLookupsAndMemberListsReadTheExpressionIndexes() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-sharing-index")
        defer { directory.remove() }
        let (backend, rules) = try await Self.openBackend(in: directory)
        let membersByUser = SharingSQL.indexName(collection: "memberships", field: "userId")
        let indexes = try await backend.database.read { try $0.rows("SELECT name FROM sqlite_master WHERE type = 'index'") }.compactMap { $0[0].textValue }
        #expect(indexes.contains(membersByUser))

        // A user's memberships: a search of the index on the user field, not a scan.
        let lookup = try #require(SharingSQL.memberships(in: Self.link, userID: "2"))
        let plan = try await backend.database.read { try $0.rows("EXPLAIN QUERY PLAN " + lookup.sql, lookup.arguments) }.compactMap { $0[3].textValue }
        #expect(plan.contains { $0.contains("SEARCH") && $0.contains("USING INDEX \(membersByUser)") }, "\(plan)")
        // A board's cards (a membership moves them): a search of the index on the parent field.
        let cardsByBoard = SharingSQL.indexName(collection: "cards", field: "boardId")
        let (byBoard, boardArguments) = SharingSQL.fieldIsOneOf("boardId", ["1", "3"])
        let moves = "SELECT record FROM \(SQLiteSchema.records) WHERE collection = 'cards' AND \(byBoard) ORDER BY version"
        let movesPlan = try await backend.database.read { connection in
            try connection.rows("EXPLAIN QUERY PLAN " + moves, boardArguments).compactMap { $0[3].textValue }
        }
        #expect(movesPlan.contains { $0.contains("SEARCH") && $0.contains("USING INDEX \(cardsByBoard)") }, "\(movesPlan)")
        let cards = try await backend.currentChanges(of: "cards", where: "boardId", isOneOf: ["1", "3"], visibility: .open)
        #expect(cards.map(\.id) == [1, 3, 4, 5])
        let found = try await backend.memberships(of: "2", in: [Self.link])
        #expect(found == [MembershipList.Entry(link: Self.link, rowID: "1", role: "viewer"), MembershipList.Entry(link: Self.link, rowID: "3", role: "editor")])
        #expect(try await backend.memberships(of: "1", in: [Self.link]).isEmpty)
        #expect(try await backend.memberships(of: "2.0", in: [Self.link]) == [MembershipList.Entry(link: Self.link, rowID: "2", role: "manager")])
        // A user's id is bound, never spliced into the SQL: quotes and NUL are only text.
        for hostile in ["2' OR '1'='1", "2\u{0}' OR 1 --"] {
            #expect(try await backend.memberships(of: hostile, in: [Self.link]).isEmpty)
            var arguments: [SQLValue] = []
            let rows = Visibility(rules: rules, caller: Caller(userID: hostile)).rows(of: "cards")
            let list = "SELECT count(*) FROM \(SQLiteSchema.records) AS listed WHERE collection = 'cards' AND \(SharingSQL.vouch(rows, row: "listed", &arguments))"
            let count = try await backend.database.read { [arguments] connection in try connection.scalar(list, arguments)?.integerValue }
            #expect(count == 0)
        }

        // A list of comments under Bob's rules: his memberships by that index, cards and boards by id.
        let rows = Visibility(rules: rules, caller: Caller(userID: "2")).rows(of: "comments")
        var arguments: [SQLValue] = []
        let list = "SELECT record FROM \(SQLiteSchema.records) WHERE collection = 'comments' AND \(SharingSQL.condition(rows, &arguments))"
        let listPlan = try await backend.database.read { [arguments] connection in
            try connection.rows("EXPLAIN QUERY PLAN " + list, arguments).compactMap { $0[3].textValue }
        }
        #expect(listPlan.contains { $0.contains("USING INDEX \(membersByUser)") }, "\(listPlan)")
        // Comments by the index on their card key, cards by the index on their board key: no
        // scan of either collection.
        let commentsByCard = SharingSQL.parentKeyIndexName(collection: "comments", field: "cardId")
        let cardsByBoardKey = SharingSQL.parentKeyIndexName(collection: "cards", field: "boardId")
        #expect(listPlan.contains { $0.contains("SEARCH") && $0.contains("USING INDEX \(commentsByCard)") }, "\(listPlan)")
        #expect(listPlan.contains { $0.contains("SEARCH") && $0.contains("USING INDEX \(cardsByBoardKey)") }, "\(listPlan)")
        #expect(!listPlan.contains { $0.hasPrefix("SCAN") && $0 != "SCAN CONSTANT ROW" }, "\(listPlan)")
        // The statement of a filtered list of cards as the list runs it (ordered by `row_id`):
        // still by the parent-key index, not the collection in order.
        let bobsCards = Visibility(rules: rules, caller: Caller(userID: "2")).rows(of: "cards")
        let cardsList = SQLiteBackend.listStatement(
            "cards", try ListQuery(QueryParameters("title=moves")), bobsCards, columns: [], order: ListSQL.ordering(try ListQuery(QueryParameters(nil)), bobsCards))
        let cardsPlan = try await backend.database.read { connection in
            try connection.rows("EXPLAIN QUERY PLAN " + cardsList.sql, cardsList.arguments).compactMap { $0[3].textValue }
        }
        #expect(cardsPlan.first?.contains("USING INDEX \(cardsByBoardKey)") == true, "\(cardsPlan)")
        // SQL keeps comment 2 too (on board 2, which user `2.0` manages) for Swift's check, and
        // vouches only for comment 1.
        let listed = try await backend.database.read { [arguments] connection in try connection.rows(list, arguments).count }
        #expect(listed == 2)
        var sureArguments: [SQLValue] = []
        let sure = "SELECT count(*) FROM \(SQLiteSchema.records) AS listed WHERE collection = 'comments' AND \(SharingSQL.vouch(rows, row: "listed", &sureArguments))"
        let vouched = try await backend.database.read { [sureArguments] connection in try connection.scalar(sure, sureArguments)?.integerValue }
        #expect(vouched == 1)
        await backend.close()
    }

    /// A list of cards under a parent rule keeps the cards on the boards the reader may read,
    /// whatever the board field holds (on SQLite, by the index on the parent key, with the
    /// values SQL does not spell kept for Swift's check).
    @Test(arguments: Backend.allCases) func listsUnderAParentRuleKeepEveryValueSwiftChecks(backend: Backend) async throws {
        var data = Self.data
        let odd: [JSONValue] = [
            ["id": 7, "boardId": 1.5, "title": "real"], ["id": 8, "boardId": .null, "title": "null"], ["id": 9, "boardId": [1], "title": "array"],
            ["id": 10, "title": "no board"], ["id": 11, "boardId": 0, "title": "zero"], ["id": 12, "boardId": "3", "title": "on 3 by text"],
        ]
        data["cards"] = .array((data["cards"]?.arrayValue ?? []) + odd)
        data["boards"] = .array((data["boards"]?.arrayValue ?? []) + [["id": 0, "ownerId": 2, "name": "Bob's zero"], ["id": "1.5", "ownerId": 2, "name": "Bob's 1.5"]])
        try await withServer(data, options: try Self.options(), backend: backend) { _, base async throws in
            let cards = try await send(.GET, base + "/cards", headers: Self.bob).json?.arrayValue?.compactMap { $0["id"]?.intValue }
            // Boards 1 (viewer) and 3 (editor), 0 and "1.5" (his own).
            #expect(cards == [1, 3, 4, 5, 7, 11, 12])
        }
    }

    /// Rule fields named with a backslash (`own\er`) are members' names on every backend: SQLite's
    /// paths spell them differently across versions, so SQL leaves those rows to Swift's check
    /// rather than lose them.
    @Test(arguments: Backend.allCases) func ruleFieldsWithABackslashKeepTheRowsTheyAdmit(backend: Backend) async throws {
        let rules: JSONValue = [
            "boards": ["owner": "own\\er", "members": ["collection": "memberships", "field": "board\\Id"]],
            "cards": ["parent": ["collection": "boards", "field": "board\\Id"]],
        ]
        let data: JSONValue = [
            "users": [["id": 1], ["id": 2], ["id": 3]],
            "boards": [["id": 1, "own\\er": 1], ["id": 2, "own\\er": 2], ["id": 3, "own\\er": 3]],
            "memberships": [["id": 1, "board\\Id": 2, "userId": 1, "role": "viewer"]],
            "cards": [["id": 1, "board\\Id": 1], ["id": 2, "board\\Id": 2], ["id": 3, "board\\Id": 3]],
        ]
        let options = ServerOptions(access: AccessControl(rules: try AccessRules(json: rules), tokens: TestTokens()))
        try await withServer(data, options: options, backend: backend) { _, base async throws in
            // Ann owns board 1 and views board 2.
            #expect(try await send(.GET, base + "/boards", headers: Self.ann).ids == [1, 2])
            #expect(try await send(.GET, base + "/cards", headers: Self.ann).ids == [1, 2])
        }
    }

    /// Registration's check that an email is free reads the records' emails by the expression
    /// index made at start (not a scan of the users on the writer), and still finds an address
    /// typed another way.
    @Test func registrationFindsARecordsEmailByTheIndex() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-email-index")
        defer { directory.remove() }
        let backend = try await Self.openBackend(in: directory).backend
        let plan = try await backend.database.read { connection in
            try connection.rows("EXPLAIN QUERY PLAN " + SQLiteBackend.emailTaken(in: "users"), [.text("ann@example.com"), .text("users")]).compactMap { $0[3].textValue }
        }
        #expect(plan.contains { $0.contains("SEARCH r USING INDEX modelsync_server_records_email_") }, "\(plan)")
        await #expect(throws: APIError.self) {
            _ = try await backend.register(email: "ann@example.com", passwordHash: "x", profile: ["email": " ANN@Example.com "], in: "users")
        }
        let made = try await backend.register(email: "dan@example.com", passwordHash: "x", profile: ["email": "dan@example.com"], in: "users")
        #expect(made.account.userID == "4")
        await backend.close()
    }

    /// The feed under rules reads tombstones as a stream and stops once the page is full: a
    /// tombstone past it (one Swift cannot read, put in the file behind the server's back) is
    /// never read.
    @Test func theFeedUnderRulesStopsReadingTombstonesOnceThePageIsFull() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-feed-page")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        let options = ServerOptions(access: AccessControl(rules: try AccessRules(json: ["posts": 600]), tokens: TestTokens()))
        let server = try await SyncServer.start(
            data: ["users": [["id": 1]], "posts": [["id": 1, "userId": 1], ["id": 2, "userId": 1], ["id": 3, "userId": 1]]], sqlite: path, options: options)
        let base = server.baseURL.absoluteString
        for id in 1...3 { #expect(try await send(.DELETE, "\(base)/posts/\(id)", headers: Self.ann).status == 200) }
        let database = try Database(path: path, configuration: DatabaseConfiguration(foreignKeys: false, createsTables: false))
        try await database.write { connection in
            try connection.execute(
                "INSERT INTO \(SQLiteSchema.tombstones) (sequence, collection, id, at, owner, departed, fields) VALUES (1000, 'posts', '7', 0, '1', 0, '{')")
        }
        let page = try await send(.GET, "\(base)/_changes?since=0&limit=2&collections=posts", headers: Self.ann)
        await server.shutdown()
        #expect(page.status == 200)
        #expect(page.json?["changes"]?.arrayValue?.map { [$0["id"], $0["deleted"]] } == [[1, true], [2, true]])
        #expect(page.json?["more"] == true)
    }

    /// A card that leaves Bob's board, comes back and leaves again shows as one deletion, at its
    /// latest departure, page after page, as the JSON file shows it: a departure that a later
    /// one stands for is left out without reading every tombstone at once.
    @Test func repeatedDeparturesPageAsTheJSONFileShowsThem() async throws {
        var pages: [Backend: [[String]]] = [:]
        for backend in [Backend.jsonDocument, .sqlite] {
            try await withServer(Self.data, options: try Self.options(), backend: backend) { _, base async throws in
                for board in [2, 1, 2, 1, 2] {
                    #expect(try await send(.PATCH, "\(base)/cards/3", body: #"{"boardId": \#(board)}"#, headers: Self.admin).status == 200)
                    #expect(try await send(.DELETE, "\(base)/comments/\(board == 2 ? 1 : 2)", headers: Self.admin).status != 500)
                }
                var cursor = "0"
                for _ in 0..<20 {
                    let page = try await send(.GET, "\(base)/_changes?since=\(cursor)&limit=1&collections=cards,comments", headers: Self.bob)
                    #expect(page.status == 200)
                    pages[backend, default: []].append(page.json?["changes"]?.arrayValue?.map { "\($0["collection"] ?? .null) \($0["id"] ?? .null) \($0["deleted"] ?? .null)" } ?? [])
                    cursor = page.json?["next"]?.stringValue ?? ""
                    if page.json?["more"] != true { break }
                }
            }
        }
        #expect(pages[.sqlite] == pages[.jsonDocument])
        #expect(pages[.sqlite]?.joined().filter { $0.hasPrefix("\"cards\" 3") } == ["\"cards\" 3 true"])
    }

    @Test func membersReadWriteAndSeeDeletionsThroughTheirBoards() async throws {
        try await withServer(Self.data, options: try Self.options(), backend: .sqlite) { _, base in
            func ids(_ path: String, _ who: [(String, String)]) async throws -> [Int] {
                let reply = try await send(.GET, base + path, headers: who)
                #expect(reply.status == 200, "\(path)")
                return reply.ids
            }
            // Reads: lists, counts and pages, items, nested routes, embeds and expands.
            #expect(try await ids("/cards", Self.bob) == [1, 3, 4, 5])
            #expect(try await ids("/comments", Self.bob) == [1])
            #expect(try await ids("/boards", Self.bob) == [1, 3])
            let page = try await send(.GET, base + "/cards?_page=2&_limit=2", headers: Self.bob)
            #expect(page.ids == [4, 5] && page.header("X-Total-Count") == "4")
            #expect(try await send(.GET, base + "/cards/2", headers: Self.bob).status == 404)
            #expect(try await send(.GET, base + "/boards/2/cards", headers: Self.bob).status == 404)
            #expect(try await ids("/boards/1/cards", Self.bob) == [1, 3, 5])
            let board = try await send(.GET, base + "/boards/1?_embed=cards", headers: Self.bob).json
            #expect(board?["cards"]?.arrayValue?.map { $0["id"] } == [1, 3, 5])
            #expect(try await send(.GET, base + "/cards/1?_expand=board", headers: Self.bob).json?["board"]?["id"] == 1)

            // Writes: a viewer may not edit, an editor may, and not onto a board out of reach.
            #expect(try await send(.PATCH, base + "/cards/1", body: #"{"title": "mine"}"#, headers: Self.bob).status == 403)
            #expect(try await send(.PATCH, base + "/cards/4", body: #"{"title": "edited"}"#, headers: Self.bob).status == 200)
            #expect(try await send(.PATCH, base + "/cards/4", body: #"{"boardId": 2}"#, headers: Self.bob).status == 403)
            #expect(try await send(.POST, base + "/cards", body: #"{"boardId": 3}"#, headers: Self.bob).status == 201)
            #expect(try await send(.POST, base + "/cards", body: #"{"boardId": 1}"#, headers: Self.bob).status == 403)
            // An id taken by a row Bob cannot view is not revealed: 403, not 409.
            #expect(try await send(.POST, base + "/cards", body: #"{"id": 2, "boardId": 3}"#, headers: Self.bob).status == 403)
            #expect(try await send(.POST, base + "/cards", body: #"{"id": 1, "boardId": 3}"#, headers: Self.bob).status == 409)

            // The feed: Ann moves card 3 off Bob's board and deletes card 1; an admin then deletes
            // its comment (which no one else reaches without its card) and one on Ann's board 2.
            let cursor = try #require(try await send(.GET, base + "/_changes?since=0", headers: Self.bob).json?["next"]?.stringValue)
            #expect(try await send(.PATCH, base + "/cards/3", body: #"{"boardId": 2}"#, headers: Self.ann).status == 200)
            #expect(try await send(.DELETE, base + "/cards/1", headers: Self.ann).status == 200)
            #expect(try await send(.DELETE, base + "/comments/1", headers: Self.ann).status == 404)
            #expect(try await send(.DELETE, base + "/comments/1", headers: Self.admin).status == 200)
            #expect(try await send(.DELETE, base + "/comments/2", headers: Self.admin).status == 200)
            func seen(since cursor: String) async throws -> (changes: [String], next: String?) {
                let page = try await send(.GET, base + "/_changes?since=\(cursor)", headers: Self.bob).json
                let changes = page?["changes"]?.arrayValue ?? []
                return (changes.map { "\($0["collection"]?.stringValue ?? "")/\($0["id"]?.intValue ?? 0)\($0["deleted"] == true ? " deleted" : "")" }, page?["next"]?.stringValue)
            }
            let (changes, later) = try await seen(since: cursor)
            // Card 3 left his view, card 1 and its comment (whose card went first) were deleted;
            // the comment on Ann's other board is none of his.
            #expect(changes == ["cards/3 deleted", "cards/1 deleted", "comments/1 deleted"])

            // A membership gained moves board 2 in with its cards and its other membership (read by
            // the parent field's index).
            #expect(try await send(.POST, base + "/memberships", body: #"{"boardId": 2, "userId": 2, "role": "viewer"}"#, headers: Self.ann).status == 201)
            let movedIn = try await seen(since: try #require(later)).changes
            #expect(Set(movedIn) == ["memberships/4", "boards/2", "memberships/3", "cards/2", "cards/3"], "\(movedIn)")
            #expect(try await ids("/cards", Self.bob).contains(3))
        }
    }
}
