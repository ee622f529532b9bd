import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

@Model
struct SharedBoard: SQLModel, Equatable {
    var id: Int?
    var ownerId: String?
    var name: String
}

@Model
struct BoardMembership: SQLModel, Equatable {
    var id: Int?
    var boardId: Int
    var userId: String
    var role: String
}

@Model
struct BoardCard: SQLModel, Equatable {
    var id: Int?
    var boardId: Int
    var title: String
}

@Model
struct CardComment: SQLModel, Equatable {
    var id: Int?
    var cardId: Int
    var authorId: String?
    var body: String
}

extension SharedBoard: RemoteResource { static let remote = RemoteConfiguration(path: "boards") }
extension BoardMembership: RemoteResource { static let remote = RemoteConfiguration(path: "memberships") }
extension BoardCard: RemoteResource { static let remote = RemoteConfiguration(path: "cards") }
extension CardComment: RemoteResource { static let remote = RemoteConfiguration(path: "comments") }

/// Two users' devices through `SyncStore` under sharing rules: Ann adds Bob to her board and
/// his device gets the board, its cards and their comments; she lowers his role and his pending
/// edit is parked with the reason while his other writes go through; she removes him and the
/// board leaves his device.
@Suite struct SharingSyncTests {
    static let rules: JSONValue = [
        "boards": ["owner": "ownerId", "members": ["collection": "memberships", "field": "boardId"], "create": "signedIn", "delete": "owner"],
        "cards": ["parent": ["collection": "boards", "field": "boardId"]],
        "comments": ["parent": ["collection": "cards", "field": "cardId"], "owner": "authorId"],
        "notes": 600,
    ]
    static let seed: JSONValue = [
        "boards": [["id": 1, "ownerId": "ann", "name": "Launch"]],
        "memberships": [],
        "cards": [["id": 1, "boardId": 1, "title": "Ship it"], ["id": 2, "boardId": 1, "title": "Tell people"]],
        "comments": [["id": 1, "cardId": 1, "authorId": "ann", "body": "Friday"]],
        "notes": [],
    ]
    static let models: [any SyncedModel.Type] = [SharedBoard.self, BoardMembership.self, BoardCard.self, CardComment.self, OwnedNote.self]

    @Test(.timeLimit(.minutes(5))) func membershipMovesTheBoardOntoAndOffADevice() async throws {
        let access = AccessControl(rules: try AccessRules(json: Self.rules), tokens: PlainTokens())
        let directory = try TemporaryDirectory(prefix: "modelsync-sharing")
        defer { directory.remove() }
        try await withTestServer(data: Self.seed, options: ServerOptions(access: access)) { server in
            func device(_ user: String) throws -> SyncStore {
                var options = RemoteStore.Options()
                options.headers.add("Authorization", "Bearer user:\(user)")
                let database = try Database(path: directory.path("\(user).sqlite"), models: Self.models)
                return SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: database, models: Self.models)
            }
            func pullAll(_ store: SyncStore) async throws -> [PullSummary] {
                [try await store.pull(SharedBoard.self), try await store.pull(BoardMembership.self),
                 try await store.pull(BoardCard.self), try await store.pull(CardComment.self), try await store.pull(OwnedNote.self)]
            }
            func held(_ store: SyncStore) async throws -> [String] {
                try await store.database.read { db in
                    try SharedBoard.all(db, order: "id").map { "board \($0.name)" } + BoardCard.all(db, order: "id").map { "card \($0.title)" }
                        + CardComment.all(db, order: "id").map { "comment \($0.body)" } + OwnedNote.all(db, order: "id").map { "note \($0.title)" }
                }
            }
            let (ann, bob) = (try device("ann"), try device("bob"))
            _ = try await pullAll(ann)
            _ = try await pullAll(bob)
            #expect(try await held(bob).isEmpty)

            // Ann adds Bob as an editor: his next pull brings the board, its cards and comments.
            var membership = BoardMembership(boardId: 1, userId: "bob", role: "editor")
            try await ann.save(&membership)
            #expect(try await ann.push().sent == 1)
            let added = try await pullAll(bob)
            #expect(added.allSatisfy { !$0.fullResync })
            #expect(try await held(bob) == ["board Launch", "card Ship it", "card Tell people", "comment Friday"])

            // Ann lowers him to viewer while he edits a card and writes a private note offline.
            membership.role = "viewer"
            try await ann.save(&membership)
            #expect(try await ann.push().sent == 1)
            var card = try #require(try await bob.database.read { db in try BoardCard.find(key: [1], db) })
            card.title = "Ship it today"
            try await bob.save(&card)
            var note = OwnedNote(title: "Bob's own")
            try await bob.save(&note)
            let pushed = try await bob.push()
            #expect(pushed.sent == 1 && pushed.parked == 1)
            let parked = try #require(try await bob.parkedEntry(for: card))
            #expect(parked.lastError?.contains("may not") == true)
            let noteOnServer = try await RemoteStore(baseURL: server.baseURL).send(RemoteRequest(
                method: .get, url: server.baseURL.appending(path: "notes"), headers: ["Authorization": "Bearer user:bob"]))
            #expect(String(decoding: noteOnServer.body, as: UTF8.self).contains("Bob's own"))

            // Ann removes him; he puts his refused edit aside (the server shows him no card now, so
            // the row goes) and pulls: the board leaves his device, his note stays.
            try await ann.delete(membership)
            #expect(try await ann.push().sent == 1)
            try await bob.discard(parked)
            let removed = try await pullAll(bob)
            #expect(removed.allSatisfy { !$0.fullResync })
            #expect(try await held(bob) == ["note Bob's own"])

            // Added back, he gets the card again at the version he last knew: a row moved back in
            // is stored, not taken for the echo of his own write.
            var again = BoardMembership(boardId: 1, userId: "bob", role: "viewer")
            try await ann.save(&again)
            #expect(try await ann.push().sent == 1)
            _ = try await pullAll(bob)
            #expect(try await held(bob) == ["board Launch", "card Ship it", "card Tell people", "comment Friday", "note Bob's own"])
        }
    }

    /// A user who belongs to 5,000 boards syncs them, their cards and the memberships, without
    /// error (PowerSync's default is 1,000 buckets a connection).
    @Test(.timeLimit(.minutes(5))) func aMemberOfFiveThousandBoardsSyncsThemAll() async throws {
        let count = 5_000
        let seed: JSONValue = [
            "boards": .array((1...count).map { ["id": .number(JSONNumber($0)), "ownerId": "ann", "name": .string("board \($0)")] }),
            "memberships": .array((1...count).map { ["id": .number(JSONNumber($0)), "boardId": .number(JSONNumber($0)), "userId": "bob", "role": "viewer"] }),
            "cards": .array((1...count).map { ["id": .number(JSONNumber($0)), "boardId": .number(JSONNumber($0)), "title": .string("card \($0)")] }),
            "comments": [], "notes": [],
        ]
        let access = AccessControl(rules: try AccessRules(json: Self.rules), tokens: PlainTokens())
        let directory = try TemporaryDirectory(prefix: "modelsync-sharing-scale")
        defer { directory.remove() }
        try await withTestServer(data: seed, options: ServerOptions(access: access)) { server in
            var options = RemoteStore.Options()
            options.headers.add("Authorization", "Bearer user:bob")
            let database = try Database(path: directory.path("bob.sqlite"), models: Self.models)
            let bob = SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: database, models: Self.models)
            #expect(try await bob.pull(SharedBoard.self).upserted == count)
            #expect(try await bob.pull(BoardMembership.self).upserted == count)
            #expect(try await bob.pull(BoardCard.self).upserted == count)
            #expect(try await database.read { db in try BoardCard.count(db) } == count)
        }
    }
}
