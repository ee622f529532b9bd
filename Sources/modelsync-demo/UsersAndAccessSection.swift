import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncServerSQLite

/// Users and access: a server with access rules and built-in accounts (bcrypt, JWTs, refresh
/// tokens); two users sign in with `AccountSession` and sync through `SyncStore`, each device
/// holding only its user's posts; a row an admin gives away leaves one device for the other.
enum UsersAndAccessSection {
    static func run() async throws {
        section("Users and access")
        // Every post is its owner's alone (600); the owner is the post's userId.
        let secret = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        let tokens = try await JWTAccessTokens(secret: secret)
        let passwords = try BcryptPasswordHasher(cost: 10)
        let accounts = BuiltInAccounts(issuer: tokens, passwords: passwords, refreshTokens: RefreshTokenPolicy(digest: SHA256TokenDigest()))
        let access = AccessControl(rules: try AccessRules(json: ["posts": 600]), tokens: tokens, accounts: accounts)
        // The first admin is made offline, before the server starts (`modelsync-server admin`):
        // registering an email never makes an admin.
        try await withSQLiteServer(
            data: ["users": [], "posts": []], options: ServerOptions(access: access), directory: "modelsync-demo-users",
            prepare: { file in
                _ = try await SyncServer.makeAdmin(email: "admin@example.com", password: "correct horse battery", passwords: passwords, sqlite: file)
            }
        ) { server, directory in
            try await tour(server.baseURL, directory)
        }
    }

    /// One user's device: a session, and a sync store that sends its token.
    private struct Device {
        let session: AccountSession
        let sync: SyncStore

        init(_ url: URL, database path: String) throws {
            session = AccountSession(baseURL: url)
            var options = RemoteStore.Options()
            options.interceptors.append(session)
            sync = SyncStore(
                remote: RemoteStore(baseURL: url, options: options), database: try Database(path: path, models: [DemoPost.self]),
                models: [DemoPost.self])
            sync.use(session)
        }

        /// The signed-in user's id, as the rows' `userId` holds it.
        var userID: Int { session.tokens?.userID.flatMap { Int($0) } ?? 0 }

        /// The titles of the device's posts.
        func titles() async throws -> String {
            let titles = try await sync.database.read { db in try DemoPost.all(db, order: "id") }.map(\.title)
            return titles.isEmpty ? "none" : titles.joined(separator: ", ")
        }
    }

    private static func tour(_ url: URL, _ directory: URL) async throws {
        let ann = try Device(url, database: directory.appendingPathComponent("ann.sqlite").path)
        let bob = try Device(url, database: directory.appendingPathComponent("bob.sqlite").path)
        let admin = AccountSession(baseURL: url)
        let annUser = try await ann.session.register(email: "ann@example.com", password: "correct horse")
        _ = try await bob.session.register(email: "bob@example.com", password: "battery staple")
        let adminUser = try await admin.logIn(email: "admin@example.com", password: "correct horse battery")
        step("register (the admin, made offline, logs in): bcrypt-hashed passwords, a JWT and a refresh token each; the user never holds the hash",
             "Ann: \(annUser)\nadmin: \(adminUser)")

        // Each writes offline, then pushes: the server makes the writer the owner.
        var annPost = DemoPost(id: nil, userId: ann.userID, title: "Ann's draft", text: "…")
        try await ann.sync.save(&annPost)
        var bobPost = DemoPost(id: nil, userId: bob.userID, title: "Bob's draft", text: "…")
        try await bob.sync.save(&bobPost)
        try await ann.sync.push()
        try await bob.sync.push()
        try await ann.sync.pull(DemoPost.self)
        try await bob.sync.pull(DemoPost.self)
        step("push and pull: each device holds exactly its user's rows",
             "Ann's device: \(try await ann.titles())\nBob's device: \(try await bob.titles())")

        // Bob asks for Ann's post by id: a row he may not read does not exist for him.
        let stranger = RemoteStore(baseURL: url, options: {
            var options = RemoteStore.Options()
            options.interceptors.append(bob.session)
            return options
        }())
        let annID = try await ann.sync.database.read { db in try DemoPost.all(db).first?.id } ?? 0
        let refused = await Result(catching: { try await stranger.fetch(DemoPost.self, id: annID) })
        step("Bob fetches Ann's post by id", refusal(refused))

        // An admin gives Ann's post to Bob: it leaves Ann's device and reaches Bob's.
        let adminToken = try await admin.accessToken() ?? ""
        let give = RemoteRequest(
            method: .patch, url: url.appending(path: "posts/\(annID)"),
            headers: ["Authorization": "Bearer \(adminToken)", "Content-Type": "application/json"],
            body: Array(#"{"userId": \#(bob.userID)}"#.utf8))
        _ = try await RemoteStore(baseURL: url).send(give)
        let annPull = try await ann.sync.pull(DemoPost.self)
        try await bob.sync.pull(DemoPost.self)
        step("an admin gives Ann's post to Bob; both pull",
             "Ann's device: \(try await ann.titles()) (\(annPull.deleted) removed)\nBob's device: \(try await bob.titles())")

        try await ann.sync.signOut(ann.session)
        step("Ann signs out: the refresh token is revoked, the synced tables and outbox cleared",
             "session \(ann.session.state), local posts: \(try await ann.titles())")
    }

    private static func refusal(_ result: Result<DemoPost, any Error>) -> String {
        switch result {
        case .success(let post): "answered \(post.title)"
        case .failure(let error as RemoteError): "refused: \(error.status.map(String.init) ?? "?") (\(error))"
        case .failure(let error): "failed: \(error)"
        }
    }
}

extension Result where Failure == any Error {
    fileprivate init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
