import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerAuth

@Model
struct Board: SQLModel {
    var id: Int?
    var ownerId: String?
    var name: String
}

@Model
struct Membership: SQLModel {
    var id: Int?
    var boardId: Int
    var userId: String
    var role: String
}

@Model
struct Card: SQLModel {
    var id: Int?
    var boardId: Int
    var title: String
}

@Model
struct Comment: SQLModel {
    var id: Int?
    var cardId: Int
    var authorId: String?
    var body: String
}

extension Board: RemoteResource { static let remote = RemoteConfiguration(path: "boards") }
extension Membership: RemoteResource { static let remote = RemoteConfiguration(path: "memberships") }
extension Card: RemoteResource { static let remote = RemoteConfiguration(path: "cards") }
extension Comment: RemoteResource { static let remote = RemoteConfiguration(path: "comments") }

/// Sharing: a team tracker under the README's rules. Members of a board see its cards and their
/// comments; Ann adds Bob, lowers him to viewer, removes him, and his device follows.
enum SharingSection {
    /// The `--access` file's rules: boards have members, cards follow their board, comments their card.
    static let rules: JSONValue = [
        "boards": ["owner": "ownerId", "members": ["collection": "memberships", "field": "boardId"], "create": "signedIn", "delete": "owner"],
        "cards": ["parent": ["collection": "boards", "field": "boardId"]],
        "comments": ["parent": ["collection": "cards", "field": "cardId"], "owner": "authorId"],
    ]
    static let models: [any SyncedModel.Type] = [Board.self, Membership.self, Card.self, Comment.self]

    static func run() async throws {
        section("Sharing: members and rows that follow their parent")
        // Tokens an identity provider would issue: a JWT whose subject is the user's id.
        let tokens = try await JWTAccessTokens(secret: Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
        let access = AccessControl(rules: try AccessRules(json: rules), tokens: tokens)
        let data: JSONValue = [
            "boards": [["id": 1, "ownerId": "ann", "name": "Launch"]],
            "memberships": [],
            "cards": [["id": 1, "boardId": 1, "title": "Ship it"], ["id": 2, "boardId": 1, "title": "Tell people"]],
            "comments": [["id": 1, "cardId": 1, "authorId": "ann", "body": "Friday"]],
        ]
        try await withSQLiteServer(data: data, options: ServerOptions(access: access), directory: "modelsync-demo-sharing") { server, directory in
            func device(_ user: String) async throws -> SyncStore {
                var options = RemoteStore.Options()
                options.headers.add("Authorization", "Bearer \(try await tokens.accessToken(for: user, role: nil))")
                let database = try Database(path: directory.appendingPathComponent("\(user).sqlite").path, models: models)
                return SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: database, models: models)
            }
            try await tour(ann: try await device("ann"), bob: try await device("bob"))
        }
    }

    private static func tour(ann: SyncStore, bob: SyncStore) async throws {
        try await pullAll(ann)
        try await pullAll(bob)
        let file = rules.objectValue?.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" } ?? []
        step("the --access file: boards have members, cards follow their board, comments their card; Bob pulls",
             file.joined(separator: "\n") + "\nBob's device: \(try await held(bob))")

        var membership = Membership(boardId: 1, userId: "bob", role: "editor")
        try await ann.save(&membership)
        try await ann.push()
        try await pullAll(bob)
        step("Ann adds Bob to the board as an editor; Bob pulls", "Bob's device: \(try await held(bob))")

        membership.role = "viewer"
        try await ann.save(&membership)
        try await ann.push()
        guard var card = try await bob.database.read({ db in try Card.find(1, db) }) else { return }
        card.title = "Ship it today"
        try await bob.save(&card)
        let pushed = try await bob.push()
        let parked = try await bob.parkedEntry(for: card)
        step("Ann lowers Bob to viewer while he edits a card offline; Bob pushes: a 403, parked with the reason",
             "sent \(pushed.sent), parked \(pushed.parked): \(parked?.lastError ?? "-")")

        try await ann.delete(membership)
        try await ann.push()
        if let parked { try await bob.discard(parked) }
        try await pullAll(bob)
        step("Ann removes Bob; he discards his refused edit and pulls: the rows leave his device", "Bob's device: \(try await held(bob))")
    }

    private static func pullAll(_ store: SyncStore) async throws {
        for model in models { try await store.pull(model) }
    }

    /// What a device holds, as one line.
    private static func held(_ store: SyncStore) async throws -> String {
        let rows = try await store.database.read { db in
            try Board.all(db, order: "id").map { "board \($0.name)" } + Card.all(db, order: "id").map { "card \($0.title)" }
                + Comment.all(db, order: "id").map { "comment \($0.body)" }
        }
        return rows.isEmpty ? "nothing" : rows.joined(separator: ", ")
    }
}
