import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

@Model
struct OwnedNote: SQLModel, Equatable {
    var id: Int?
    var userId: String?
    var title: String
}

extension OwnedNote: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}

/// Tokens `user:<id>` and `admin`: the rules are what is tested here, not the cryptography.
struct PlainTokens: AccessTokenVerifier {
    func caller(for token: String) async throws -> Caller {
        if token == "admin" { return Caller(userID: "0", role: Caller.adminRole) }
        guard token.hasPrefix("user:"), token.count > 5 else { throw AccessTokenError.malformed }
        return Caller(userID: String(token.dropFirst(5)))
    }
}

/// Two users sync one collection of private notes (600) through `SyncStore`: each device holds
/// exactly its user's rows, and a note an admin gives to the other user leaves the first
/// device and reaches the second.
@Suite struct TwoUsersSyncTests {
    @Test(.timeLimit(.minutes(5))) func eachDeviceHoldsItsUsersRowsAndGivenRowsMove() async throws {
        let seed: JSONValue = ["notes": [
            ["id": 1, "userId": "ann", "title": "Ann's first"], ["id": 2, "userId": "bob", "title": "Bob's first"],
            ["id": 3, "userId": "ann", "title": "Ann's second"],
        ]]
        let access = AccessControl(rules: try AccessRules(json: ["notes": 600]), tokens: PlainTokens())
        let directory = try TemporaryDirectory(prefix: "modelsync-two-users")
        defer { directory.remove() }
        try await withTestServer(data: seed, options: ServerOptions(access: access)) { server in
            func device(_ user: String) throws -> SyncStore {
                var options = RemoteStore.Options()
                options.headers.add("Authorization", "Bearer user:\(user)")
                let database = try Database(path: directory.path("\(user).sqlite"), models: [OwnedNote.self])
                return SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: database, models: [OwnedNote.self])
            }
            func titles(_ store: SyncStore) async throws -> [String] {
                try await store.database.read { db in try OwnedNote.all(db, order: "id") }.map(\.title)
            }
            let (ann, bob) = (try device("ann"), try device("bob"))
            try await ann.pull(OwnedNote.self)
            try await bob.pull(OwnedNote.self)
            #expect(try await titles(ann) == ["Ann's first", "Ann's second"])
            #expect(try await titles(bob) == ["Bob's first"])

            // Each writes; the server makes the writer the owner.
            var annNote = OwnedNote(title: "Ann's third")
            try await ann.save(&annNote)
            var bobNote = OwnedNote(title: "Bob's second")
            try await bob.save(&bobNote)
            try await ann.push()
            try await bob.push()
            try await ann.pull(OwnedNote.self)
            try await bob.pull(OwnedNote.self)
            #expect(try await titles(ann) == ["Ann's first", "Ann's second", "Ann's third"])
            #expect(try await titles(bob) == ["Bob's first", "Bob's second"])
            #expect(try await ann.database.read { db in try OwnedNote.all(db) }.allSatisfy { $0.userId == "ann" })

            // An admin gives Ann's first note to Bob: it leaves Ann's device, reaches Bob's.
            let admin = RemoteStore(baseURL: server.baseURL)
            let moved = try await admin.send(RemoteRequest(
                method: .patch, url: server.baseURL.appending(path: "notes/1"), headers: ["Authorization": "Bearer admin", "Content-Type": "application/json"],
                body: Array(#"{"userId": "bob"}"#.utf8)))
            #expect(moved.status == 200)
            let annPull = try await ann.pull(OwnedNote.self)
            #expect(annPull.deleted == 1 && !annPull.fullResync)
            try await bob.pull(OwnedNote.self)
            #expect(try await titles(ann) == ["Ann's second", "Ann's third"])
            #expect(try await titles(bob) == ["Ann's first", "Bob's first", "Bob's second"])

            // Bob signs in on Ann's device without clearing it: the cursor is Ann's, so the
            // device reads everything again and keeps only what Bob may read.
            var options = RemoteStore.Options()
            options.headers.add("Authorization", "Bearer user:bob")
            let switched = SyncStore(
                remote: RemoteStore(baseURL: server.baseURL, options: options), database: ann.database, models: [OwnedNote.self])
            let summary = try await switched.pull(OwnedNote.self)
            #expect(summary.fullResync)
            #expect(try await titles(switched) == ["Ann's first", "Bob's first", "Bob's second"])
        }
    }
}
