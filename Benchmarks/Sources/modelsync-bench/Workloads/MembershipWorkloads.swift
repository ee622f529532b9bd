import Foundation
@_spi(Benchmarks) import ModelSync
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncServerSQLite

/// A card as a member's device holds it.
@Model
struct MoveInCard: SQLModel, Equatable {
    var id: Int?
    var boardId: Int
    var title: String
}

extension MoveInCard: RemoteResource {
    static let remote = RemoteConfiguration(path: "cards")
}

/// The same card in a collection of one board's cards (`sync_subscribe_initial`'s peer).
@Model
struct BoardOnlyCard: SQLModel, Equatable {
    var id: Int?
    var boardId: Int
    var title: String
}

extension BoardOnlyCard: RemoteResource {
    static let remote = RemoteConfiguration(path: "boardcards")
}

/// What sharing rules cost, over the SQLite backend.
///
/// - `sync_move_in`: a user added to a board of `size` cards pulls until they are local (the rows
///   the membership moves in, in the next page of the feed). Peer `first_sync`: a new device of a
///   user who is a member already pulls the same cards from the start. Goal: ours ≥ 0.8 of it.
/// - `server_get_filtered_membership`: `GET /posts?userId=<caller>` (10 of 1,000 posts) as 16
///   signed-in users, each reaching its rows through a board membership (`posts` inherit from
///   `boards`, whose `memberships` name the user). Peer `owner_rules`: the same list where each
///   user owns its rows (`{"posts": 600}`). Goal: membership costs ≤ 25% (ours ≥ 0.8 of it).
enum MembershipWorkloads {
    static let sharingRules: JSONValue = [
        "boards": ["members": ["collection": "memberships", "field": "boardId"]],
        "cards": ["parent": ["collection": "boards", "field": "boardId"]],
        "posts": ["parent": ["collection": "boards", "field": "boardId"]],
    ]

    static let moveIn = Workload(
        name: "sync_move_in",
        summary: "a user added to a board pulls its cards (moved in by the membership) into SQLite; peer: first_sync, a member's new device pulling them from the start (SQLite backend)",
        unit: .rowsPerSecond,
        sizes: [WorkloadSize(10_000, quick: true)]
    ) { size in
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-move-in-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        await ServerFleet.shared.removeWhenStopped([directory])
        let cards = (1...size.count).map { id -> JSONValue in
            ["id": .number(JSONNumber(id)), "boardId": 1, "title": .string("card \(id) " + String(repeating: "lorem ", count: 6))]
        }
        // Board 1 is user 1's; user 3 is a member already, user 2 is added and removed.
        let data: JSONValue = [
            "boards": [["id": 1, "name": "launch"]],
            "memberships": [["id": 1, "boardId": 1, "userId": 3, "role": "viewer"]],
            "cards": .array(cards),
        ]
        let secret = Data((0..<48).map { _ in UInt8.random(in: 0...255) })
        let tokens = try await JWTAccessTokens(secret: secret)
        let options = ServerOptions(access: AccessControl(rules: try AccessRules(json: sharingRules), tokens: tokens))
        let server = try await SyncServer.start(data: data, sqlite: directory.appendingPathComponent("server.sqlite").path, options: options)
        let (admin, bob, cy) = (
            try await tokens.accessToken(for: "9", role: Caller.adminRole), try await tokens.accessToken(for: "2", role: nil),
            try await tokens.accessToken(for: "3", role: nil)
        )
        func device(_ token: String, _ name: String) throws -> SyncStore {
            var remoteOptions = RemoteStore.Options()
            remoteOptions.caching = false
            remoteOptions.headers.add("Authorization", "Bearer \(token)")
            let path = directory.appendingPathComponent("\(name).sqlite").path
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            let database = try Database(path: path, models: [MoveInCard.self])
            return SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: remoteOptions), database: database, models: [MoveInCard.self], pullPageSize: 5_000)
        }
        let base = server.baseURL.absoluteString
        let held = StoreBox()
        let ours = Contender.ours(reset: {
            // Bob's device, synced while he is not a member; then he is added (untimed).
            _ = try await Load.send(.DELETE, "\(base)/memberships/2", body: nil, headers: [("Authorization", "Bearer \(admin)")])
            let store = try device(bob, "bob")
            _ = try await store.pull(MoveInCard.self)
            let added = try await Load.send(
                .POST, "\(base)/memberships", body: #"{"id": 2, "boardId": 1, "userId": 2, "role": "viewer"}"#,
                headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")])
            guard added.0 == 201 else { throw BenchmarkError("sync_move_in: the membership was not added (\(added.0))") }
            await held.set(store)
        }) {
            guard let store = await held.store else { throw BenchmarkError("sync_move_in: no store") }
            return try await store.pull(MoveInCard.self).upserted
        }
        let peerHeld = StoreBox()
        let peer = Contender(name: "first_sync", reset: { await peerHeld.set(try device(cy, "cy")) }) {
            guard let store = await peerHeld.store else { throw BenchmarkError("sync_move_in: no store") }
            return try await store.pull(MoveInCard.self).upserted
        }
        return PreparedWorkload(ours: ours, peers: [peer]) {
            try await ours.reset()
            let moved = try await ours.run()
            try await peer.reset()
            let first = try await peer.run()
            guard moved == size.count, first == size.count else {
                throw BenchmarkError("sync_move_in: moved in \(moved), first sync \(first), expected \(size.count)")
            }
        }
    }

    static let getFiltered = Workload(
        name: "server_get_filtered_membership",
        summary: "GET /posts?userId=<the caller> (10 of 1,000 posts), signed in, SQLite backend; ours: rows reached through a board membership; peer: owner_rules (600)",
        unit: .requestsPerSecond, sizes: ServerWorkloads.sizes
    ) { size in
        let servers = try await MembershipServers.shared.start()
        let tokens = servers.tokens
        let request: ServerWorkloads.MakeRequest = { base, worker, _, _ in
            (.GET, "\(base)/posts?userId=\(worker + 1)", nil, [("Authorization", "Bearer \(tokens[worker % tokens.count])")])
        }
        func contender(_ name: String, _ base: String) -> Contender {
            Contender(name: name) { try await Load.run(bases: [base], count: size.count, request: request) }
        }
        let ours = contender(Contender.oursName, servers.membership)
        let peer = contender("owner_rules", servers.owner)
        return PreparedWorkload(ours: ours, peers: [peer]) {
            let (method, url, _, headers) = request(servers.membership, 3, 1, [:])
            let shared = try await Load.send(method, url, body: nil, headers: headers)
            let owned = try await Load.send(method, url.replacingOccurrences(of: servers.membership, with: servers.owner), body: nil, headers: headers)
            guard shared.0 == 200, shared.2 == owned.2 else { throw BenchmarkError("server_get_filtered_membership: the servers answer \(url) differently") }
        }
    }

    /// `sync_subscribe_initial`: a device subscribes to board 1's cards (`size` of the 2×`size`
    /// cards on two boards, no rules) and pulls them, against a whole pull of a collection
    /// holding only those cards: what a subscription costs over the rows it brings (the server
    /// filtering the feed, the holds the device records).
    static let subscribeInitial = Workload(
        name: "sync_subscribe_initial",
        summary: "a subscription's first sync of one board's cards (half the collection) into SQLite; peer: whole_pull of a collection holding just those cards (SQLite backend)",
        unit: .rowsPerSecond,
        sizes: [WorkloadSize(10_000, quick: true)]
    ) { size in
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-subscribe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        await ServerFleet.shared.removeWhenStopped([directory])
        func card(_ id: Int, board: Int) -> JSONValue {
            ["id": .number(JSONNumber(id)), "boardId": .number(JSONNumber(board)), "title": .string("card \(id) " + String(repeating: "lorem ", count: 6))]
        }
        // `cards`: boards 1 and 2 interleaved; `boardcards`: board 1's alone, the same records.
        let data: JSONValue = [
            "cards": .array((1...2 * size.count).map { card($0, board: $0 % 2 == 1 ? 1 : 2) }),
            "boardcards": .array((1...2 * size.count).filter { $0 % 2 == 1 }.map { card($0, board: 1) }),
        ]
        let server = try await SyncServer.start(data: data, sqlite: directory.appendingPathComponent("server.sqlite").path)
        func device(_ name: String, _ type: any SyncedModel.Type) throws -> SyncStore {
            var options = RemoteStore.Options()
            options.caching = false
            let path = directory.appendingPathComponent("\(name).sqlite").path
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            let database = try Database(path: path, models: [type])
            return SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: database, models: [type], pullPageSize: 5_000)
        }
        let held = StoreBox(), peerHeld = StoreBox()
        let ours = Contender.ours(reset: { await held.set(try device("subscriber", MoveInCard.self)) }) {
            guard let store = await held.store else { throw BenchmarkError("sync_subscribe_initial: no store") }
            let board = try await store.subscribe(MoveInCard.self, where: .field(\.boardId, equals: 1))
            return try await store.pull(board).upserted
        }
        let peer = Contender(name: "whole_pull", reset: { await peerHeld.set(try device("whole", BoardOnlyCard.self)) }) {
            guard let store = await peerHeld.store else { throw BenchmarkError("sync_subscribe_initial: no store") }
            return try await store.pull(BoardOnlyCard.self).upserted
        }
        return PreparedWorkload(ours: ours, peers: [peer]) {
            try await ours.reset()
            let subscribed = try await ours.run()
            try await peer.reset()
            let whole = try await peer.run()
            guard subscribed == size.count, whole == size.count else {
                throw BenchmarkError("sync_subscribe_initial: subscribed \(subscribed), whole \(whole), expected \(size.count)")
            }
        }
    }

    static let all = [moveIn, getFiltered, subscribeInitial]
}

/// A store made in a contender's reset, for its run.
private actor StoreBox {
    var store: SyncStore?
    func set(_ store: SyncStore) { self.store = store }
}

/// The two SQLite server processes, started once (through ``ServerFleet``, which stops them):
/// the same posts, reached through memberships or owned.
private actor MembershipServers {
    static let shared = MembershipServers()

    struct Addresses: Sendable {
        let membership: String
        let owner: String
        /// User `n + 1`'s token at index `n`.
        let tokens: [String]
    }

    private var addresses: Addresses?

    func start() async throws -> Addresses {
        if let addresses { return addresses }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-membership-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Post p belongs to user u = (p - 1) % 100 + 1 and sits on board u, of which u is a member.
        guard case .object(var data) = ServerFleet.data(), var posts = data["posts"]?.arrayValue else {
            throw BenchmarkError("server_get_filtered_membership: no posts")
        }
        for index in posts.indices {
            guard case .object(var post) = posts[index] else { continue }
            post["boardId"] = post["userId"] ?? .null
            posts[index] = .object(post)
        }
        data["posts"] = .array(posts)
        let users = 1...ServerWorkloads.userCount
        data["boards"] = .array(users.map { ["id": .number(JSONNumber($0)), "name": .string("board \($0)")] })
        data["memberships"] = .array(users.map { ["id": .number(JSONNumber($0)), "boardId": .number(JSONNumber($0)), "userId": .number(JSONNumber($0)), "role": "viewer"] })
        let (shared, owned) = (directory.appendingPathComponent("membership.sqlite").path, directory.appendingPathComponent("owner.sqlite").path)
        try await SyncServer.importData(.object(data), intoSQLite: shared)
        try await SyncServer.importData(.object(data), intoSQLite: owned)
        let fleet = try await SignedInFleet.launch([(shared, MembershipWorkloads.sharingRules), (owned, ["posts": 600])], in: directory)
        let (membership, owner, tokens) = (fleet.bases[0], fleet.bases[1], fleet.tokens)
        let started = Addresses(membership: membership, owner: owner, tokens: tokens)
        addresses = started
        return started
    }
}
