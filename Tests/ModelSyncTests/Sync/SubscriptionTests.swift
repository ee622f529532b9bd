import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// A model whose field names the server's list filters read as their own parameters.
@Model
struct OddlyNamedCard: SQLModel {
    var id: Int?
    @JSON("_rank") var rank: Int
    var q: String
    @JSON("views_gte") var views: Int
}

extension OddlyNamedCard: RemoteResource { static let remote = RemoteConfiguration(path: "oddcards") }

/// Partial sync: a device holds the cards of the boards it subscribes to. Rows arrive and leave
/// with the filter, overlapping subscriptions share rows, unsubscribing removes only what
/// nothing else keeps, and a subscription past its time to live ends.
@Suite struct SubscriptionTests {
    static let seed: JSONValue = [
        "cards": [
            ["id": 1, "boardId": 1, "title": "a"], ["id": 2, "boardId": 2, "title": "b"], ["id": 3, "boardId": 1, "title": "c"],
            ["id": 4, "boardId": 2, "title": "d"], ["id": 5, "boardId": 3, "title": "e"],
        ],
    ]

    func withDevice(_ body: (SyncStore, TestServer) async throws -> Void) async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-subscriptions")
        defer { directory.remove() }
        try await withTestServer(data: Self.seed) { server in
            let database = try Database(path: directory.path("device.sqlite"), models: [BoardCard.self])
            let store = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: database, models: [BoardCard.self], pullPageSize: 2)
            try await body(store, server)
        }
    }

    func held(_ store: SyncStore) async throws -> [Int] {
        try await store.database.read { db in try BoardCard.all(db, order: "id").compactMap(\.id) }
    }

    func patch(_ server: TestServer, _ id: Int, _ body: String) async throws {
        _ = try await RemoteStore(baseURL: server.baseURL).send(RemoteRequest(
            method: .patch, url: server.baseURL.appending(path: "cards/\(id)"), headers: ["Content-Type": "application/json"], body: Array(body.utf8)))
    }

    @Test(.timeLimit(.minutes(5))) func aSubscriptionHoldsItsRowsAsTheyComeAndGo() async throws {
        try await withDevice { store, server in
            let board = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1))
            #expect(board.id == "BoardCard?boardId=1")
            #expect(!board.hasSynced)
            try await store.waitForFirstSync(board)
            #expect(try await held(store) == [1, 3])
            #expect(try await store.subscriptions().map(\.hasSynced) == [true])

            // Card 3 leaves board 1 and card 4 joins it: the next pull follows.
            try await patch(server, 3, #"{"boardId": 2}"#)
            try await patch(server, 4, #"{"boardId": 1}"#)
            let summary = try await store.pull(board)
            #expect(!summary.fullResync)
            #expect(try await held(store) == [1, 4])

            try await store.unsubscribe(board)
            #expect(try await held(store).isEmpty)
            #expect(try await store.subscriptions().isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(5))) func overlappingSubscriptionsKeepWhatEitherHolds() async throws {
        try await withDevice { store, server in
            let both = try await store.subscribe(BoardCard.self, where: .field(\.boardId, isOneOf: [1, 2]))
            let second = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 2) && .field(\.title, notEqualTo: "zzz"))
            #expect(try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 2) && .field(\.title, notEqualTo: "zzz")) == second)
            try await store.pullSubscriptions()
            #expect(try await held(store) == [1, 2, 3, 4])

            // A local edit of card 1, not sent: its row stays when its subscription ends.
            var card = try #require(try await store.database.read { db in try BoardCard.find(key: [1], db) })
            card.title = "mine"
            try await store.save(&card)
            try await store.unsubscribe(both)
            #expect(try await held(store) == [1, 2, 4])

            // Card 2 leaves board 2 for board 3: no subscription holds it now.
            try await patch(server, 2, #"{"boardId": 3}"#)
            try await store.pullSubscriptions()
            #expect(try await held(store) == [1, 4])
        }
    }

    /// A card this device creates on a board it does not subscribe to leaves it once the server
    /// has it and the subscriptions are current; one created on its board stays throughout, even
    /// while a subscription that does not hold it pulls first.
    @Test(.timeLimit(.minutes(5))) func aRowCreatedOutsideEverySubscriptionGoesOnceSent() async throws {
        try await withDevice { store, _ in
            _ = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 3))
            _ = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1))
            try await store.pullSubscriptions()
            var inside = BoardCard(boardId: 1, title: "mine")
            var outside = BoardCard(boardId: 2, title: "elsewhere")
            try await store.save(&inside)
            try await store.save(&outside)
            #expect(try await store.push().sent == 2)
            func titles() async throws -> [String] {
                try await store.database.read { db in try BoardCard.all(db, order: "id").map(\.title) }
            }
            // Board 3's subscription pulls first: it does not hold the new card, board 1's is
            // about to; no single pull may drop it.
            for subscription in try await store.subscriptions().reversed() {
                try await store.pull(subscription)
                #expect(try await titles().contains("mine"))
            }
            try await store.pullSubscriptions()
            #expect(try await titles() == ["a", "c", "e", "mine"])
        }
    }

    /// Against a server without a feed, a model pulled whole keeps its rows beside a subscription.
    @Test(.timeLimit(.minutes(5))) func aModelPulledWholeFromAServerWithoutAFeedKeepsItsRows() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-subscriptions-nofeed")
        defer { directory.remove() }
        try await withTestServer(data: Self.seed, options: ServerOptions(servesSyncExtensions: false)) { server in
            let database = try Database(path: directory.path("device.sqlite"), models: [BoardCard.self])
            let store = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: database, models: [BoardCard.self])
            #expect(try await store.pull(BoardCard.self).fullResync)
            let board = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1))
            try await store.pullSubscriptions()
            try await store.unsubscribe(board)
            #expect(try await held(store) == [1, 2, 3, 4, 5])
        }
    }

    @Test(.timeLimit(.minutes(5))) func aModelPulledWholeKeepsItsRows() async throws {
        try await withDevice { store, _ in
            let board = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1))
            try await store.pull(board)
            try await store.pull(BoardCard.self)
            try await store.unsubscribe(board)
            #expect(try await held(store) == [1, 2, 3, 4, 5])
        }
    }

    @Test(.timeLimit(.minutes(5))) func aSubscriptionPastItsTimeToLiveEnds() async throws {
        try await withDevice { store, _ in
            let lasting = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 2), ttl: .seconds(3_600))
            let brief = try await store.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1), ttl: .zero)
            #expect(lasting.expiresAt != nil)
            try await store.pull(brief)
            try await store.pull(lasting)
            #expect(try await held(store) == [1, 2, 3, 4])
            // Its time to live was none: the next listing ends it, and its rows go.
            #expect(try await store.subscriptions().map(\.id) == [lasting.id])
            #expect(try await held(store) == [2, 4])
            await #expect(throws: SyncFilterError.self) { try await store.waitForFirstSync(brief) }
        }
    }

    /// Under sharing rules a subscription holds only what its user may read: Bob's subscription
    /// to board 1's cards is empty until Ann adds him, then brings them, and empties when she
    /// removes him.
    @Test(.timeLimit(.minutes(5))) func aSubscriptionHoldsOnlyWhatItsUserMayRead() async throws {
        let access = AccessControl(rules: try AccessRules(json: SharingSyncTests.rules), tokens: PlainTokens())
        let directory = try TemporaryDirectory(prefix: "modelsync-subscriptions-shared")
        defer { directory.remove() }
        var seed = SharingSyncTests.seed
        seed["cards"] = [["id": 1, "boardId": 1, "title": "Ship it"], ["id": 2, "boardId": 1, "title": "Tell people"], ["id": 3, "boardId": 2, "title": "Other"]]
        seed["boards"] = [["id": 1, "ownerId": "ann", "name": "Launch"], ["id": 2, "ownerId": "ann", "name": "Other"]]
        try await withTestServer(data: seed, options: ServerOptions(access: access)) { server in
            func device(_ user: String) throws -> SyncStore {
                var options = RemoteStore.Options()
                options.headers.add("Authorization", "Bearer user:\(user)")
                let database = try Database(path: directory.path("\(user).sqlite"), models: SharingSyncTests.models)
                return SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: database, models: SharingSyncTests.models)
            }
            let (ann, bob) = (try device("ann"), try device("bob"))
            let launch = try await bob.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1))
            try await bob.waitForFirstSync(launch)
            #expect(try await held(bob).isEmpty)

            var membership = BoardMembership(boardId: 1, userId: "bob", role: "viewer")
            try await ann.save(&membership)
            #expect(try await ann.push().sent == 1)
            #expect(try await bob.pull(launch).fullResync == false)
            #expect(try await held(bob) == [1, 2])

            try await ann.delete(membership)
            #expect(try await ann.push().sent == 1)
            try await bob.pull(launch)
            #expect(try await held(bob).isEmpty)

            // Bob signs in on Ann's device, which holds board 1's cards: its cursor is Ann's (410),
            // so the subscription reads again from the beginning and what Bob may not read goes.
            let annsLaunch = try await ann.subscribe(BoardCard.self, where: .field(\.boardId, equals: 1))
            try await ann.pull(annsLaunch)
            #expect(try await held(ann) == [1, 2])
            var options = RemoteStore.Options()
            options.headers.add("Authorization", "Bearer user:bob")
            let switched = SyncStore(remote: RemoteStore(baseURL: server.baseURL, options: options), database: ann.database, models: SharingSyncTests.models)
            #expect(try await switched.pull(annsLaunch).fullResync)
            #expect(try await held(switched).isEmpty)
            #expect(try await switched.subscriptions().map(\.hasSynced) == [true])
        }
    }

    /// The README's example, verbatim but for the model's name.
    @Test(.timeLimit(.minutes(5))) func readmeExample() async throws {
        typealias Card = BoardCard
        try await withDevice { sync, _ in
            let board = try await sync.subscribe(Card.self, where: .field(\.boardId, equals: 7), ttl: .seconds(7 * 86_400))
            try await sync.waitForFirstSync(board)   // board 7's cards are local
            try await sync.pullSubscriptions()       // later: each subscription's changes (startLivePull follows them too)
            try await sync.unsubscribe(board)        // its rows go, unless something else keeps them
            #expect(try await held(sync).isEmpty)
        }
    }

    @Test func aFilterNamesStoredFieldsAndScalars() async throws {
        #expect(SyncFilter<BoardCard>.field(\.boardId, equals: 7).query == "boardId=7")
        #expect(SyncFilter<CardComment>.field(\.authorId, equals: nil).query == "authorId=null")
        #expect((SyncFilter<BoardCard>.field(\.title, matches: "^a+b") && .search("x y")).query == "q=x%20y&title_like=%5Ea%2Bb")
        try await withDevice { store, _ in
            await #expect(throws: SyncFilterError.self) { try await store.subscribe(BoardCard.self, where: .field(\.boardId, isOneOf: [])) }
            // The server would read these as `_`-parameters, a search and a comparison: the
            // subscription would hold other rows than asked.
            await #expect(throws: SyncFilterError.self) { try await store.subscribe(OddlyNamedCard.self, where: .field(\.rank, equals: 1)) }
            await #expect(throws: SyncFilterError.self) { try await store.subscribe(OddlyNamedCard.self, where: .field(\.q, equals: "x")) }
            await #expect(throws: SyncFilterError.self) { try await store.subscribe(OddlyNamedCard.self, where: .field(\.views, matches: "1")) }
        }
    }
}
