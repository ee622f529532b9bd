import Foundation
import ModelSync
import ModelSyncServer

/// A post as the sync workloads keep it: a nil id until the server assigns one.
@Model
struct SyncBenchPost: SQLModel, Equatable {
    var id: Int?
    var userId: Int
    var title: String
    var body: String
}

extension SyncBenchPost: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

/// `sync_push`: the same 2,000 edits (about half creates, a third updates, the rest deletes,
/// many of them to rows edited before) reach the bundled server, started in-process over 500
/// existing posts.
///
/// - ours: the edits are queued offline in a `SyncStore` (untimed, in `reset`), then one timed
///   `push()` sends the coalesced outbox, independent rows concurrently.
/// - peer `remote_loop`: a loop of `RemoteStore.save` / `delete`, one request per edit, as an
///   app without an outbox would do online.
///
/// Both end with the same server data (checked once before timing). A `REQUESTS` line gives
/// the requests each side sent.
enum SyncWorkloads {
    static let existingPosts = 500

    static let push = Workload(
        name: "sync_push",
        summary: "push 2,000 queued edits (creates, updates, deletes; many to the same rows) to the bundled server; peer: remote_loop (RemoteStore.save/delete per edit)",
        unit: .requestsPerSecond,
        sizes: [WorkloadSize(2_000, quick: true)]
    ) { size in
        let edits = Edit.script(count: size.count)
        let recorder = RequestRecorderMiddleware(limit: 100_000)
        let server = try await FreshServer.start(data: seedData(posts: existingPosts), options: ServerOptions(middleware: [recorder]))
        var remoteOptions = RemoteStore.Options()
        remoteOptions.caching = false
        let remote = RemoteStore(baseURL: server.baseURL, options: remoteOptions)
        let files = try Files()
        let queued = QueuedSync()

        @Sendable func queueEdits() async throws -> SyncStore {
            try await server.restart()
            let path = files.directory.appendingPathComponent("sync-\(UUID().uuidString).sqlite").path
            let database = try Database(path: path, models: [SyncBenchPost.self])
            try await database.write { db in
                for id in 1...existingPosts { try SyncBenchPost(id: id, userId: id % 10 + 1, title: "post \(id)", body: "seeded").upsert(db) }
            }
            let sync = SyncStore(remote: remote, database: database, models: [SyncBenchPost.self])
            var posts: [Int: SyncBenchPost] = [:]
            for id in 1...existingPosts { posts[id] = SyncBenchPost(id: id, userId: id % 10 + 1, title: "post \(id)", body: "seeded") }
            try await Edit.apply(edits, to: &posts, save: { try await sync.save(&$0) }, delete: { try await sync.delete($0) })
            recorder.clear()
            return sync
        }
        let ours = Contender.ours(reset: { await queued.set(try await queueEdits()) }) {
            guard let sync = await queued.store else { throw BenchmarkError("sync_push: nothing queued") }
            let summary = try await sync.push()
            guard summary.remaining == 0 && summary.parked == 0 else { throw BenchmarkError("sync_push: \(summary)") }
            return summary.sent
        }
        let peer = Contender(name: "remote_loop", reset: { try await server.restart(); recorder.clear() }) {
            var posts: [Int: SyncBenchPost] = [:]
            for id in 1...existingPosts { posts[id] = SyncBenchPost(id: id, userId: id % 10 + 1, title: "post \(id)", body: "seeded") }
            try await Edit.apply(edits, to: &posts, save: { try await remote.save(&$0) }, delete: { try await remote.delete($0) })
            return posts.count
        }
        return PreparedWorkload(ours: ours, peers: [peer]) {
            try await ours.reset()
            _ = try await ours.run()
            let oursRequests = recorder.requests.count
            let oursData = try comparable(try await server.data)
            try await peer.reset()
            _ = try await peer.run()
            let peerRequests = recorder.requests.count
            let peerData = try comparable(try await server.data)
            guard oursData == peerData else { throw BenchmarkError("sync_push: the server's data differs after the two runs") }
            FileHandle.standardError.write(Data("REQUESTS sync_push ours=\(oursRequests) remote_loop=\(peerRequests) edits=\(size.count)\n".utf8))
        }
    }

    /// `sync_pull`: the server holds 10,000 posts, and 1% of them changed (80 edits, 10
    /// deletions, 10 new posts) since the client's last pull; the client's table holds the
    /// 10,000 as they were (a copy of the same SQLite file for each run, untimed).
    ///
    /// - ours: `SyncStore.pull`, a delta from the server's change feed after the stored cursor.
    /// - peer `list_reconcile`: what an app does without a feed, one `RemoteStore.list` of the
    ///   whole collection, then one transaction that upserts every post and deletes the local
    ///   rows the server no longer has.
    static let pull = Workload(
        name: "sync_pull",
        summary: "bring 10,000 local posts up to date after 1% changed on the server; peer: list_reconcile (full list + upsert + delete missing)",
        unit: .rowsPerSecond,
        sizes: [WorkloadSize(10_000, quick: true)]
    ) { size in
        let server = try await FreshServer.start(data: seedData(posts: size.count))
        var remoteOptions = RemoteStore.Options()
        remoteOptions.caching = false
        let remote = RemoteStore(baseURL: server.baseURL, options: remoteOptions)
        let files = try Files()
        // The client as of the last pull: every post, and the feed's cursor.
        let template = files.directory.appendingPathComponent("template.sqlite").path
        do {
            let database = try Database(path: template, models: [SyncBenchPost.self])
            try await SyncStore(remote: remote, database: database, models: [SyncBenchPost.self]).pull(SyncBenchPost.self)
            try database.writeWithoutTransaction { db in try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        @Sendable func changeOnePercent() async throws {
            try await server.restart()
            for index in 0..<size.count / 100 {
                let id = index * 97 % size.count + 1
                switch index % 10 {
                case 0: try await remote.delete(SyncBenchPost(id: id, userId: 0, title: "", body: ""))
                case 1:
                    var post = SyncBenchPost(id: nil, userId: 1, title: "new \(index)", body: "created")
                    try await remote.save(&post)
                default:
                    var post = try await remote.fetch(SyncBenchPost.self, id: id)
                    post.body = "changed \(index)"
                    try await remote.save(&post)
                }
            }
        }
        @Sendable func freshClient(_ name: String) throws -> Database {
            let path = files.directory.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path
            try FileManager.default.copyItem(atPath: template, toPath: path)
            return try Database(path: path, models: [SyncBenchPost.self])
        }
        let oursStore = QueuedSync()
        let peerDatabase = QueuedDatabase()
        let ours = Contender.ours(reset: {
            try await changeOnePercent()
            // A running app's store: tables checked and bookkeeping ready before the timed pull.
            let sync = SyncStore(remote: remote, database: try freshClient("ours"), models: [SyncBenchPost.self])
            _ = try await sync.pendingCount()
            _ = try await sync.database.read { db in try SyncBenchPost.all(db, limit: 1) }
            await oursStore.set(sync)
        }) {
            guard let sync = await oursStore.store else { throw BenchmarkError("sync_pull: no client") }
            let summary = try await sync.pull(SyncBenchPost.self)
            return summary.upserted + summary.deleted
        }
        let peer = Contender(name: "list_reconcile", reset: {
            try await changeOnePercent()
            let database = try freshClient("peer")
            _ = try await database.read { db in try SyncBenchPost.all(db, limit: 1) }
            await peerDatabase.set(database)
        }) {
            guard let database = await peerDatabase.database else { throw BenchmarkError("sync_pull: no client") }
            let posts = try await remote.list(SyncBenchPost.self)
            return try await database.write { db in
                var seen = Set<Int>()
                for post in posts {
                    try post.upsert(db, validate: false)
                    if let id = post.id { seen.insert(id) }
                }
                var deleted = 0
                let table = "\"" + SyncBenchPost.schema.table + "\""
                for case .integer(let id)? in try db.rows("SELECT id FROM \(table)").map(\.first) where !seen.contains(Int(id)) {
                    try db.execute("DELETE FROM \(table) WHERE id = ?", [.integer(id)])
                    deleted += 1
                }
                return posts.count + deleted
            }
        }
        return PreparedWorkload(ours: ours, peers: [peer]) {
            try await ours.reset()
            _ = try await ours.run()
            try await peer.reset()
            _ = try await peer.run()
            guard let oursDatabase = await oursStore.store?.database, let peerDB = await peerDatabase.database else {
                throw BenchmarkError("sync_pull: no clients")
            }
            let oursRows = try await oursDatabase.read { db in try SyncBenchPost.all(db, order: "id") }
            let peerRows = try await peerDB.read { db in try SyncBenchPost.all(db, order: "id") }
            try expectEqual(oursRows, peerRows, "sync_pull: the two clients' tables")
            guard oursRows.count == size.count else { throw BenchmarkError("sync_pull: \(oursRows.count) rows, expected \(size.count)") }
        }
    }

    static let all = [push, pull]

    /// The server's data: `count` posts, ids 1…count.
    static func seedData(posts count: Int) -> JSONValue {
        ["posts": .array((1...count).map { id in
            ["id": .number(JSONNumber(id)), "userId": .number(JSONNumber(id % 10 + 1)), "title": .string("post \(id)"), "body": "seeded"]
        })]
    }

    /// The database the next timed run of the peer reconciles into.
    actor QueuedDatabase {
        var database: Database?
        func set(_ database: Database) { self.database = database }
    }

    /// The store whose outbox the next timed run pushes.
    actor QueuedSync {
        var store: SyncStore?
        func set(_ store: SyncStore) { self.store = store }
    }

    /// The posts' contents by title (ids differ: the server numbers creates in arrival order,
    /// which concurrent sending changes).
    static func comparable(_ data: JSONValue) throws -> [String: String] {
        var posts: [String: String] = [:]
        for post in data["posts"]?.arrayValue ?? [] {
            guard let title = post["title"]?.stringValue else { throw BenchmarkError("sync_push: a post without a title") }
            posts[title] = (post["body"]?.stringValue ?? "") + "|" + String(post["userId"]?.intValue ?? -1)
        }
        return posts
    }

    /// One edit of the script.
    enum Edit {
        case create(index: Int)
        case update(target: Int, revision: Int)
        case delete(target: Int)

        /// A fixed script: rows are named by creation order (existing posts are 1…500, the
        /// created ones 501…); updates and deletes pick among the rows still alive.
        static func script(count: Int) -> [Edit] {
            var generator = SeededGenerator(seed: 0x5EED_5F0C)
            var alive = Array(1...existingPosts)
            var next = existingPosts + 1
            var edits: [Edit] = []
            for revision in 0..<count {
                let roll = generator.int(in: 0...99)
                if roll < 50 || alive.isEmpty {
                    edits.append(.create(index: next))
                    alive.append(next)
                    next += 1
                } else {
                    // Recent rows are edited more often: half of the picks come from the last 40.
                    let recent = generator.int(in: 0...1) == 0
                    let position = recent ? max(0, alive.count - 1 - generator.int(in: 0...39)) : generator.int(in: 0...(alive.count - 1))
                    if roll < 85 {
                        edits.append(.update(target: alive[position], revision: revision))
                    } else {
                        edits.append(.delete(target: alive[position]))
                        alive.remove(at: position)
                    }
                }
            }
            return edits
        }

        /// Applies the script through `save` and `delete`; `posts` maps a row's script name to
        /// its current value (with the key the store gave it).
        static func apply(
            _ edits: [Edit], to posts: inout [Int: SyncBenchPost],
            save: (inout SyncBenchPost) async throws -> Void, delete: (SyncBenchPost) async throws -> Void
        ) async throws {
            for edit in edits {
                switch edit {
                case .create(let index):
                    var post = SyncBenchPost(id: nil, userId: index % 10 + 1, title: "post \(index)", body: "created")
                    try await save(&post)
                    posts[index] = post
                case .update(let target, let revision):
                    guard var post = posts[target] else { throw BenchmarkError("sync_push: no row \(target)") }
                    post.body = "revision \(revision)"
                    try await save(&post)
                    posts[target] = post
                case .delete(let target):
                    guard let post = posts.removeValue(forKey: target) else { throw BenchmarkError("sync_push: no row \(target)") }
                    try await delete(post)
                }
            }
        }
    }
}

/// The bundled server, started afresh on the same port between runs instead of reset (a test
/// hook the production server does not have): the same data gives the same versions and feed
/// sequence, so a client's cursor stays valid across restarts.
actor FreshServer {
    private let seed: JSONValue
    private let options: ServerOptions
    private var server: SyncServer
    nonisolated let baseURL: URL

    private init(seed: JSONValue, options: ServerOptions, server: SyncServer) {
        self.seed = seed
        self.options = options
        self.server = server
        self.baseURL = server.baseURL
    }

    static func start(data: JSONValue, options: ServerOptions = ServerOptions()) async throws -> FreshServer {
        FreshServer(seed: data, options: options, server: try await SyncServer.start(data: data, options: options))
    }

    /// Stops the server and starts it again over the data it started with.
    func restart() async throws {
        let port = server.port
        await server.shutdown()
        server = try await SyncServer.start(data: seed, port: port, options: options)
    }

    /// The data as it is now.
    var data: JSONValue {
        get async throws { try await server.data }
    }

    func shutdown() async {
        await server.shutdown()
    }
}
