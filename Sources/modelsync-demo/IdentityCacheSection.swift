import Foundation
import ModelSync
import ModelSyncServer

@Model
struct CachedUser: SQLModel, Equatable {
    var id: Int
    var name: String
    var email: String = ""
}

@Model(table: "cached_posts")
struct CachedPost: SQLModel, Equatable {
    var id: Int
    var userId: Int
    var title: String
    var user: CachedUser?
}

extension CachedPost: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

/// The identity map and the offline cache: posts whose users share one canonical value, a
/// partial payload merged, a cached-then-fresh read, and the cache answering when the server
/// is gone.
enum IdentityCacheSection {
    static func run() async throws {
        section("Identity map and offline cache")
        try await withSQLiteServer(data: SyncServer.sampleData, directory: "modelsync-demo-cache") { server, directory in
            try await tour(server, directory)
        }
    }

    private static func tour(_ server: SyncServer, _ directory: URL) async throws {
        var options = RemoteStore.Options()
        options.retry = RetryPolicy(maxAttempts: 1)               // offline means offline, at once
        let api = RemoteStore(baseURL: server.baseURL, options: options)
        let database = try Database(path: directory.appendingPathComponent("cache.sqlite").path, models: [CachedPost.self])
        let store = CachedStore(remote: api, database: database)
        let map = store.identityMap

        let posts = try await store.list(CachedPost.self, parameters: ["_expand": "user", "_start": 8, "_end": 12], policy: .remoteOnly)
        let rows = try await database.read { try CachedPost.count($0) }
        step(
            "list(CachedPost.self, parameters: [\"_expand\": \"user\", …])  →  4 posts, each with its user",
            posts.value.map { "#\($0.id) by \($0.user?.name ?? "?")" }.joined(separator: "\n")
                + "\nidentity map: \(map.count) entries (4 posts, 2 users); SQLite table cached_posts: \(rows) rows")

        let decoder = JSONModelDecoder(options: JSONDecodingOptions(identityMap: map))
        let merged = try decoder.decode(CachedUser.self, from: #"{"id": 1, "name": "Leanne G."}"#)
        step(
            "A partial payload {\"id\": 1, \"name\": \"Leanne G.\"} merges into the canonical user 1",
            "\(merged.name) <\(merged.email)>  (the email was not in the payload and was kept)")

        let original = try await api.fetch(CachedPost.self, id: 9)   // plain: not through the map
        var edited = original
        edited.title = "Edited on the server"
        try await api.save(&edited, patchingChangesFrom: original)     // PATCH {"title": …}
        var lines: [String] = []
        for try await update in store.fetchCachedThenFresh(CachedPost.self, id: 9) {
            switch update {
            case .cached(let post): lines.append("1. cached: \(post.title)")
            case .notCached: lines.append("1. nothing cached")
            case .fresh(let post):
                lines.append("2. fresh:  \(post.title)")
                lines.append("   the payload had no user: the post keeps its copy (\(post.user?.name ?? "none")), a snapshot;"
                    + " the canonical user 1 is \(map.value(CachedUser.self, id: 1)?.name ?? "?")")
            }
        }
        step("fetchCachedThenFresh(CachedPost.self, id: 9)", lines.joined(separator: "\n"))

        await server.shutdown()
        let offline = try await store.fetch(CachedPost.self, id: 10, policy: .remoteElseCache)
        step(
            "Server stopped; fetch(CachedPost.self, id: 10, policy: .remoteElseCache)",
            "\(offline.value.title)  (from the \(offline.source == .cache ? "cache" : "server"); "
                + "network failed: \(offline.isFallback))")

        let file = directory.appendingPathComponent("identity-map.json")
        try map.save(to: file)
        let reloaded = IdentityMap()
        let count = try reloaded.load(from: file, models: [CachedPost.self, CachedUser.self])
        step("map.save(to:) and IdentityMap().load(from:models:)", "\(count) values back; user 1 is \(reloaded.value(CachedUser.self, id: 1)?.name ?? "?")")
    }
}
