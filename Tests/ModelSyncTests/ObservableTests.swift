import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Observation
import Testing

/// One change, reported by Observation: `read` is tracked now, and the returned event happens
/// when a property it read is about to change (`withObservationTracking`'s `onChange`).
@MainActor
func nextChange(_ read: () -> Void) -> ObservedChange {
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    withObservationTracking(read) {
        continuation.yield()
        continuation.finish()
    }
    return ObservedChange(stream: stream)
}

struct ObservedChange {
    let stream: AsyncStream<Void>

    /// Returns once the change has been reported. Properties are set right after `onChange`,
    /// in the same main-actor job, so a main-actor caller resuming here sees the new values.
    func happened() async {
        for await _ in stream {}
    }
}

private struct Refused: Error {}

/// The bundled server on a free port for `body`, run in the caller's isolation (a main-actor
/// test's closure stays on the main actor); shut down after.
func withServer(
    data: JSONValue = SyncServer.sampleData, isolation: isolated (any Actor)? = #isolation,
    _ body: (TestServer) async throws -> Void
) async throws {
    let server = try await TestServer.start(data: data)
    do {
        try await body(server)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}

/// Numbers calls, 1, 2, …, across tasks.
private actor Calls {
    private var count = 0

    func next() -> Int {
        count += 1
        return count
    }
}

@Suite("Observable: LiveQuery", .timeLimit(.minutes(5)))
struct LiveQueryTests {
    private func insert(_ id: Int, _ title: String, in db: Database) async throws {
        try await db.write { db in
            var story = Story(id: id, title: title, slug: "s\(id)")
            try story.insert(db)
        }
    }

    @MainActor
    @Test("has the current rows as soon as it is made", arguments: TestStorage.allCases)
    func firstValueAtOnce(store: TestStorage) async throws {
        let db = try store.open(models: [Story.self])
        try await insert(1, "One", in: db)
        let stories = try LiveQuery(Story.order(\.id), in: db)
        #expect(stories.value.map(\.title) == ["One"])
        #expect(stories.error == nil)
        #expect(db.activeObservationCount == 1)
    }

    @MainActor
    @Test("tells its observers when a committed insert changes the rows", arguments: TestStorage.allCases)
    func changesOnInsert(store: TestStorage) async throws {
        let db = try store.open(models: [Story.self])
        let stories = try LiveQuery(Story.order(\.id), in: db)
        #expect(stories.value.isEmpty)

        var change = nextChange { _ = stories.value }
        try await insert(1, "One", in: db)
        await change.happened()
        MainActor.assertIsolated()
        #expect(stories.value.map(\.title) == ["One"])

        change = nextChange { _ = stories.value }
        try await insert(2, "Two", in: db)
        await change.happened()
        #expect(stories.value.map(\.title) == ["One", "Two"])
    }

    @MainActor
    @Test("a fetch that fails later sets error and keeps the last rows")
    func laterFailureSetsError() async throws {
        let db = try TestStorage.memory.open(models: [Story.self])
        let stories = try LiveQuery(db.observe(tables: ["stories"]) { db in
            let rows = try Story.all(db)
            if rows.count > 1 { throw Refused() }
            return rows
        })
        let change = nextChange { _ = stories.error }
        try await insert(1, "One", in: db)
        try await insert(2, "Two", in: db)
        await change.happened()
        #expect(stories.error is Refused)
        #expect(stories.value.count <= 1)
        await stories.observationTask?.value
        #expect(db.activeObservationCount == 0)
    }

    @MainActor
    @Test("a first fetch that fails throws and leaves no observation behind")
    func firstFailureThrows() throws {
        let db = try TestStorage.memory.open(models: [Story.self])
        #expect(throws: Refused.self) {
            _ = try LiveQuery(db.observe(tables: ["stories"]) { _ -> Int in throw Refused() })
        }
        #expect(db.activeObservationCount == 0)
    }

    @MainActor
    @Test("stops observing when it is deallocated", arguments: TestStorage.allCases)
    func stopsWhenDeallocated(store: TestStorage) async throws {
        let db = try store.open(models: [Story.self])
        var stories: LiveQuery<[Story]>? = try LiveQuery(Story.order(\.id), in: db)
        weak let released = stories
        let task = try #require(stories?.observationTask)
        // Once an update has arrived, the object's task is running its loop.
        let change = nextChange { _ = stories?.value }
        try await insert(1, "One", in: db)
        await change.happened()
        #expect(db.activeObservationCount == 1)

        stories = nil
        #expect(released == nil)                   // the task did not keep it alive
        await task.value                           // cancelled by deinit: it ends …
        #expect(db.activeObservationCount == 0)    // … and the observation is unregistered
        try await insert(2, "Two", in: db)
        #expect(db.activeObservationCount == 0)
    }
}

@Suite("Observable: LoadableResource", .timeLimit(.minutes(5)))
struct LoadableResourceTests {
    @MainActor
    @Test("shows the cached value at once, then refreshes: isLoading, then the server's value")
    func cachedThenRefreshed() async throws {
        try await CacheFixture.run { fixture in
            try await fixture.database.write { db in
                var story = Story(id: 1, title: "Cached", slug: "one")
                try story.insert(db)
            }
            let story = LoadableResource(fixture.store, Story.self, id: 1)
            #expect(story.value?.title == "Cached")
            #expect(!story.isLoading && story.error == nil)

            let loading = nextChange { _ = story.isLoading }
            let refresh = Task { await story.refresh() }
            await loading.happened()
            #expect(story.isLoading)
            #expect(story.value?.title == "Cached")

            let loaded = nextChange { _ = story.value }
            await loaded.happened()
            #expect(story.value?.title == "One")
            #expect(!story.isLoading && story.error == nil)
            await refresh.value
            #expect(try fixture.rows().first?.title == "One")   // written through
        }
    }

    @MainActor
    @Test("a list over a cache: the cached rows at once, the server's after a refresh")
    func cachedList() async throws {
        try await CacheFixture.run { fixture in
            let empty = LoadableResource(fixture.store, list: Story.self)
            #expect(empty.value == [])
            await empty.refresh()
            #expect(empty.value?.map(\.id) == [1, 2, 3])

            let reopened = LoadableResource(fixture.store, list: Story.self, cached: { try Story.order(.desc(\.id)).fetchAll($0) })
            #expect(reopened.value?.map(\.id) == [3, 2, 1])
        }
    }

    @MainActor
    @Test("a failing server sets error and keeps the value")
    func failureSetsError() async throws {
        try await CacheFixture.run { fixture in
            let story = LoadableResource(fixture.store, Story.self, id: 2)
            #expect(story.value == nil)
            await story.refresh()
            #expect(story.value?.title == "Two")

            fixture.server.inject(Fault(.status(500), times: nil))
            let failed = nextChange { _ = story.error }
            await story.refresh()
            await failed.happened()
            let error = try #require(story.error as? RemoteError)
            guard let status = error.statusError else {
                Issue.record("expected a status error, got \(error)")
                return
            }
            #expect(status.status == 500)
            #expect(story.value?.title == "Two" && !story.isLoading)

            fixture.server.clearFaults()
            await story.refresh()
            #expect(story.error == nil)
        }
    }

    @MainActor
    @Test("over a RemoteStore: empty, then the server's value")
    func remoteOnly() async throws {
        try await withServer(data: CacheFixture.data) { server in
            let api = RemoteStore(baseURL: server.baseURL)
            let story = LoadableResource(api, Story.self, id: 3)
            #expect(story.value == nil)
            await story.refresh()
            #expect(story.value?.title == "Three")
            let missing = LoadableResource(api, Story.self, id: 99)
            await missing.refresh()
            #expect((missing.error as? RemoteError) != nil && missing.value == nil)
            let all = LoadableResource(api, list: Story.self, parameters: ["_sort": "id"])
            await all.refresh()
            #expect(all.value?.count == 3)
        }
    }

    @MainActor
    @Test("the latest of overlapping refreshes wins")
    func overlappingRefreshes() async throws {
        let (started, firstStarted) = AsyncStream<Void>.makeStream()
        let (gate, openGate) = AsyncStream<Void>.makeStream()
        let calls = Calls()
        let resource = LoadableResource<String> {
            guard await calls.next() == 1 else { return "second" }
            firstStarted.finish()
            for await _ in gate {}                          // the first refresh finishes last
            return "first"
        }
        let first = Task { await resource.refresh() }
        for await _ in started {}
        #expect(resource.isLoading)
        await resource.refresh()                            // the second, finished: the latest
        #expect(resource.value == "second" && !resource.isLoading)
        openGate.finish()
        await first.value                                   // superseded: changes nothing
        #expect(resource.value == "second" && !resource.isLoading && resource.error == nil)
    }

    @MainActor
    @Test("is released when no one holds it")
    func deallocates() async throws {
        try await CacheFixture.run { fixture in
            var story: LoadableResource<Story>? = LoadableResource(fixture.store, Story.self, id: 1)
            weak let released = story
            await story?.refresh()
            #expect(story?.value?.title == "One")
            story = nil
            #expect(released == nil)
        }
    }
}
