import Foundation
import ModelSync
import ModelSyncTesting
import ModelSyncServer
import ModelSyncServerPostgres
import Testing

/// A server with stories by two authors, a SQLite file and a cached store over both.
struct CacheFixture {
    static let data = data(thirdSlug: "three")

    static func data(thirdSlug: String) -> JSONValue {
        [
        "stories": [
            ["id": 1, "title": "One", "slug": "one", "author": ["id": 7, "name": "Ann", "bio": "Writes"]],
            ["id": 2, "title": "Two", "slug": "two", "author": ["id": 7, "name": "Ann", "bio": "Writes"]],
            ["id": 3, "title": "Three", "slug": .string(thirdSlug), "author": ["id": 8, "name": "Bo"]],
        ],
        ]
    }

    let server: TestServer
    let scratch: ScratchDirectory
    let database: Database
    let store: CachedStore

    var path: String { scratch.file("cache.sqlite").path }

    /// Runs `body` with a fresh server, database file and store, in the caller's isolation;
    /// shuts the server down after.
    static func run(
        data: JSONValue = data, writesThrough: Bool = true, isolation: isolated (any Actor)? = #isolation,
        _ body: (CacheFixture) async throws -> Void
    ) async throws {
        let server = try await TestServer.start(data: data)
        let scratch = try ScratchDirectory()
        do {
            let database = try Database(path: scratch.file("cache.sqlite").path, models: [Story.self])
            var options = RemoteStore.Options()
            options.retry = RetryPolicy(maxAttempts: 1)
            let remote = RemoteStore(baseURL: server.baseURL, options: options)
            let store = CachedStore(remote: remote, database: database, writesThrough: writesThrough)
            try await body(CacheFixture(server: server, scratch: scratch, database: database, store: store))
            await server.shutdown()
        } catch {
            await server.shutdown()
            throw error
        }
    }

    func rows() throws -> [Story] {
        try database.read { try Story.all($0, order: "id") }
    }
}

@Suite struct CachedStoreTests {
    @Test func remoteResultsAreWrittenThroughAndMadeCanonical() async throws {
        try await CacheFixture.run { fixture in
            let result = try await fixture.store.list(Story.self, policy: .remoteOnly)
            #expect(result.source == .remote && !result.isFallback)
            #expect(result.value.map(\.id) == [1, 2, 3])
            #expect(try fixture.rows() == result.value)
            // Both stories by Ann share one canonical author.
            #expect(fixture.store.identityMap.value(Author.self, id: 7) == result.value[0].author)
            #expect(fixture.store.identityMap.count == 5)

            // A reopened database file holds the rows.
            let reopened = try Database(path: fixture.path, models: [Story.self])
            #expect(try await reopened.read { try Story.find(2, $0) }?.title == "Two")
        }
    }

    @Test func withoutWriteThroughTheDatabaseIsLeftAlone() async throws {
        try await CacheFixture.run(writesThrough: false) { fixture in
            _ = try await fixture.store.fetch(Story.self, id: 1, policy: .remoteOnly)
            #expect(try fixture.rows().isEmpty)
            #expect(fixture.store.identityMap.value(Story.self, id: 1)?.title == "One")
        }
    }

    @Test func oneResponseIsWrittenInOneTransaction() async throws {
        try await CacheFixture.run { fixture in
            // A trigger refuses the third story: its row fails, and so does the whole response.
            try await fixture.database.write {
                try $0.execute("CREATE TRIGGER refuse_three BEFORE INSERT ON stories WHEN NEW.title = 'Three' BEGIN SELECT RAISE(ABORT, 'refused'); END")
            }
            await #expect(throws: SQLiteError.self) { try await fixture.store.list(Story.self, policy: .remoteOnly) }
            let rows = try fixture.rows()
            #expect(rows.isEmpty)
        }
    }

    @Test func aRowHoldingAUniqueValueTheServerGaveAnotherRecordIsReplaced() async throws {
        try await CacheFixture.run { fixture in
            // A stale cached story holds the slug the server now gives story 2.
            try await fixture.database.write { try Story(id: 9, title: "Stale", slug: "two").upsert($0) }
            let result = try await fixture.store.list(Story.self, policy: .remoteOnly)
            #expect(result.value.map(\.id) == [1, 2, 3])
            #expect(try fixture.rows() == result.value)
        }
        // Within one response, the later record keeps the value.
        try await CacheFixture.run(data: CacheFixture.data(thirdSlug: "one")) { fixture in
            let result = try await fixture.store.list(Story.self, policy: .remoteOnly)
            #expect(result.value.map(\.id) == [1, 2, 3])
            #expect(try fixture.rows().map(\.id) == [2, 3])
        }
    }

    @Test func cacheOnlyReadsTheMapThenTheDatabaseAndNeverTheServer() async throws {
        try await CacheFixture.run { fixture in
            await #expect(throws: NotCachedError.self) { try await fixture.store.fetch(Story.self, id: 1, policy: .cacheOnly) }
            _ = try await fixture.store.list(Story.self, policy: .remoteOnly)
            fixture.server.clearRecordedRequests()

            #expect(try await fixture.store.fetch(Story.self, id: 1, policy: .cacheOnly).value.title == "One")
            fixture.store.identityMap.removeAll()
            let fromDisk = try await fixture.store.fetch(Story.self, id: 3, policy: .cacheOnly)
            #expect(fromDisk.source == .cache && fromDisk.value.author?.name == "Bo")
            #expect(fixture.store.identityMap.value(Story.self, id: 3) == fromDisk.value)
            let ann = try await fixture.store.list(Story.self, policy: .cacheOnly, cached: { try Story.all($0, where: "id < ?", [3]) })
            #expect(ann.value.map(\.id) == [1, 2])
            #expect(fixture.server.recordedRequests.isEmpty)
        }
    }

    @Test func remoteElseCacheFallsBackWhenTheServerIsGone() async throws {
        try await CacheFixture.run { fixture in
            let online = try await fixture.store.fetch(Story.self, id: 2, policy: .remoteElseCache)
            #expect(online.source == .remote)

            await fixture.server.shutdown()
            let offline = try await fixture.store.fetch(Story.self, id: 2, policy: .remoteElseCache)
            #expect(offline.value == online.value)
            #expect(offline.source == .cache && offline.isFallback)
            guard offline.networkError?.code == .transport else {
                Issue.record("expected a transport failure, got \(String(describing: offline.networkError))")
                return
            }
            // Nothing cached: the network error itself.
            await #expect(throws: RemoteError.self) { try await fixture.store.fetch(Story.self, id: 3, policy: .remoteElseCache) }
            let list = try await fixture.store.list(Story.self, policy: .remoteElseCache)
            #expect(list.isFallback && list.value.map(\.id) == [2])
        }
    }

    @Test func remoteElseCacheFallsBackOnServerErrorsButNotOnAnswers() async throws {
        try await CacheFixture.run { fixture in
            _ = try await fixture.store.fetch(Story.self, id: 1, policy: .remoteOnly)
            fixture.server.inject(Fault(.status(503)))
            let unavailable = try await fixture.store.fetch(Story.self, id: 1, policy: .remoteElseCache)
            #expect(unavailable.isFallback && unavailable.networkError?.status == 503)

            // A 404 is the server's answer, not a network failure.
            fixture.server.inject(Fault(.status(404)))
            let error = await #expect(throws: RemoteError.self) { try await fixture.store.fetch(Story.self, id: 1, policy: .remoteElseCache) }
            #expect(error?.status == 404)
        }
    }

    @Test func cachedThenFreshDeliversTwoValuesAndTheFreshOneReplacesTheCached() async throws {
        try await CacheFixture.run { fixture in
            var first: [CacheUpdate<Story>] = []
            for try await update in fixture.store.fetchCachedThenFresh(Story.self, id: 1) { first.append(update) }
            #expect(first.count == 2)
            guard case .notCached = first.first, case .fresh(let fresh) = first.last else {
                Issue.record("expected .notCached then .fresh, got \(first)")
                return
            }
            #expect(fresh.title == "One")

            // The server's copy changes; the cache still has the old one.
            var edited = fresh
            edited.title = "One, edited"
            try await fixture.store.remote.save(&edited)
            var second: [CacheUpdate<Story>] = []
            for try await update in fixture.store.fetchCachedThenFresh(Story.self, id: 1) { second.append(update) }
            guard case .cached(let cached) = second.first, case .fresh(let newer) = second.last, second.count == 2 else {
                Issue.record("expected .cached then .fresh, got \(second)")
                return
            }
            #expect(cached.title == "One")
            #expect(newer.title == "One, edited")
            #expect(fixture.store.identityMap.value(Story.self, id: 1)?.title == "One, edited")
            #expect(try await fixture.database.read { try Story.find(1, $0) }?.title == "One, edited")
        }
    }

    @Test func cachedThenFreshWhoseNetworkPartFailsDeliversTheCachedValueThenTheError() async throws {
        try await CacheFixture.run { fixture in
            _ = try await fixture.store.list(Story.self, policy: .remoteOnly)
            fixture.server.inject(Fault(.dropConnection))

            var updates: [CacheUpdate<[Story]>] = []
            let error = await #expect(throws: RemoteError.self) {
                for try await update in fixture.store.listCachedThenFresh(Story.self) { updates.append(update) }
            }
            #expect(updates.count == 1)
            #expect(updates.first?.value?.map(\.id) == [1, 2, 3])
            guard error?.code == .transport else {
                Issue.record("expected a transport failure, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func aCacheThatCannotBeReadDoesNotKeepTheFreshValueAway() async throws {
        try await CacheFixture.run { fixture in
            let unreadable: @Sendable (SQLiteConnection) throws -> [Story] = { db in
                try Story.all(db, where: "no_such_column = 1")
            }
            var updates: [CacheUpdate<[Story]>] = []
            for try await update in fixture.store.listCachedThenFresh(Story.self, cached: unreadable) { updates.append(update) }
            #expect(updates.count == 2)
            guard case .notCached = updates.first, case .fresh(let fresh) = updates.last else {
                Issue.record("expected .notCached then .fresh, got \(updates)")
                return
            }
            #expect(fresh.map(\.id) == [1, 2, 3])
        }
    }

    @Test func cachedThenFreshWithoutADatabaseStillWorksForOneModel() async throws {
        let server = try await TestServer.start(data: CacheFixture.data)
        var options = RemoteStore.Options()
        options.retry = RetryPolicy(maxAttempts: 1)
        let store = CachedStore(remote: RemoteStore(baseURL: server.baseURL, options: options))
        _ = try await store.fetch(Story.self, id: 3)
        await server.shutdown()

        var updates: [CacheUpdate<Story>] = []
        await #expect(throws: RemoteError.self) {
            for try await update in store.fetchCachedThenFresh(Story.self, id: 3) { updates.append(update) }
        }
        #expect(updates.first?.value?.title == "Three")
        await #expect(throws: NotCachedError.self) { try await store.list(Story.self, policy: .cacheOnly) }
    }
}
