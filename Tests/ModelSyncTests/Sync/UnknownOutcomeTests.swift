import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import Testing

/// The six sequences of issue #38 in which sync lost, duplicated or resurrected data when the
/// server applied a write and its answer was lost, each on its own. The simulation
/// (`SyncSimulationTests`) finds such sequences; these name them.
@Suite struct UnknownOutcomeTests {
    /// A store whose requests meet `faults` (set per step), against an in-process server.
    struct Fixture {
        let server: TestServer
        let directory: TemporaryDirectory
        let faults = FaultPlan()

        /// `feedWithoutCreateKeys`: as a server whose feed does not name the key a record was
        /// created with, so a pull cannot tell the client's own lost create.
        func store(_ name: String = "app", batch: Int = 1, feedWithoutCreateKeys: Bool = false) throws -> SyncStore {
            let database = try Database(path: directory.path("\(name).sqlite"), models: [SyncNote.self, SyncReply.self])
            var options = RemoteStore.Options()
            options.retry = .none
            let faults = self.faults
            let base: any HTTPTransport = feedWithoutCreateKeys ? FeedWithoutCreateKeys() : AsyncHTTPClientTransport()
            let remote = RemoteStore(baseURL: server.baseURL, transport: FaultyTransport(base: base, decide: { _ in faults.next() }), options: options)
            return SyncStore(remote: remote, database: database, models: [SyncNote.self, SyncReply.self], maxConcurrentRequests: 1, maxBatchSize: batch)
        }

        /// Pushes with the first requests meeting `faults`; the push is expected to fail.
        func pushFailing(_ sync: SyncStore, _ faults: [TransportFault?]) async {
            self.faults.set(faults)
            await #expect(throws: (any Error).self) { try await sync.push() }
            self.faults.set([])
        }
    }

    func withFixture(_ data: JSONValue = ["notes": [], "replies": []], _ body: (Fixture) async throws -> Void) async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-unknown-outcome")
        defer { directory.remove() }
        try await withTestServer(data: data) { server in try await body(Fixture(server: server, directory: directory)) }
    }

    func localNotes(_ sync: SyncStore) async throws -> [SyncNote] {
        try await sync.database.read { db in try SyncNote.all(db, order: "id") }
    }

    @Test(arguments: [1, 100]) func aLostCreateAnswerThenAPullThenTheRetryHoldsEachRecordOnce(batch: Int) async throws {
        try await withFixture { fixture in
            let sync = try fixture.store(batch: batch)
            var first = SyncNote(id: nil, title: "first")
            var second = SyncNote(id: nil, title: "second")
            try await sync.save(&first)
            try await sync.save(&second)
            await fixture.pushFailing(sync, [.loseAnswer])
            try await sync.pull(SyncNote.self)
            try await sync.push()
            let server = try await serverRecords(fixture.server, "notes")
            let local = try await localNotes(sync)
            #expect(server.count == 2)
            #expect(local.map(\.id) == server.keys.sorted().map(Optional.some))
            #expect(local.allSatisfy { ($0.id ?? 0) > 0 })
            #expect(try await sync.pendingCount() == 0)
            // A later pull changes nothing: no second copy comes back.
            let pulled = try await sync.pull(SyncNote.self)
            #expect(pulled.upserted == 0 && pulled.deleted == 0)
            #expect(try await localNotes(sync).count == 2)
        }
    }

    /// Issue #48, found by the simulation under an edits-win custom policy: a delete whose answer
    /// was lost, and meanwhile another client's policy created the record again (its edit won
    /// over the delete). The pull leaves the row alone while the delete's outcome is unknown, so
    /// it is past the record created again; the delete's replayed acknowledgement must read the
    /// record as it is now, or the client never holds it.
    @Test func aReplayedDeleteOfARecordCreatedAgainMeanwhileBringsTheRecordBack() async throws {
        try await withFixture(["notes": [["id": 1, "title": "shared", "body": "", "stars": 0]], "replies": []]) { fixture in
            let deleter = try fixture.store("deleter")
            let editor = try fixture.store("editor")
            editor.configure(SyncNote.self, conflicts: .clientWins)
            try await deleter.pull(SyncNote.self)
            try await editor.pull(SyncNote.self)
            var note = try #require(try await localNotes(editor).first)
            note.title = "edited"
            try await editor.save(&note)
            try await deleter.delete(note)
            await fixture.pushFailing(deleter, [.loseAnswer])
            // The edit meets the deletion: created again.
            try await editor.push()
            #expect(try await serverRecords(fixture.server, "notes")[1]?["title"]?.stringValue == "edited")
            try await deleter.pull(SyncNote.self)
            try await deleter.push()
            #expect(try await localNotes(deleter).map(\.title) == ["edited"])
            #expect(try await deleter.pendingCount() == 0)
            try await deleter.pull(SyncNote.self)
            #expect(try await localNotes(deleter).map(\.title) == ["edited"])
        }
    }

    /// Against a server whose feed does not name create keys, the pull stores the server's copy
    /// of the lost create, and children of it; the create's acknowledgement then merges the local
    /// row into the copy without deleting it, so the children stay.
    @Test func aPulledCopyOfALostCreateKeepsItsChildren() async throws {
        try await withFixture { fixture in
            let sync = try fixture.store(feedWithoutCreateKeys: true)
            var note = SyncNote(id: nil, title: "draft")
            try await sync.save(&note)
            await fixture.pushFailing(sync, [.loseAnswer])
            note.title = "final"
            try await sync.save(&note)
            // Another device replies to the new note; this one pulls both.
            _ = try await RemoteStore(baseURL: fixture.server.baseURL).send(RemoteRequest(
                method: .post, url: fixture.server.baseURL.appendingPathComponent("replies"), body: Array(#"{"noteId": 1, "text": "hi"}"#.utf8)))
            try await sync.pull(SyncNote.self)
            try await sync.pull(SyncReply.self)
            #expect(try await localNotes(sync).count == 2)  // the copy and the local row, until the push
            try await sync.push()
            let notes = try await localNotes(sync)
            #expect(notes.map(\.id) == [1] && notes.first?.title == "final")
            #expect(try await sync.database.read { db in try SyncReply.all(db) }.map(\.text) == ["hi"])
            #expect(try await serverRecords(fixture.server, "notes")[1]?["title"]?.stringValue == "final")
            #expect(try await sync.pendingCount() == 0)
        }
    }

    @Test func anEditAfterALostCreateAnswerArrives() async throws {
        try await withFixture { fixture in
            let sync = try fixture.store()
            var note = SyncNote(id: nil, title: "draft")
            try await sync.save(&note)
            await fixture.pushFailing(sync, [.loseAnswer])
            note.title = "final"
            try await sync.save(&note)
            try await sync.push()
            let server = try await serverRecords(fixture.server, "notes")
            #expect(server.count == 1 && server.values.first?["title"]?.stringValue == "final")
            #expect(try await sync.parkedEntries().isEmpty)
            #expect(try await sync.pendingCount() == 0)
        }
    }

    @Test func aDeleteAfterALostCreateAnswerDeletesOnTheServer() async throws {
        try await withFixture { fixture in
            let sync = try fixture.store()
            var note = SyncNote(id: nil, title: "short-lived")
            try await sync.save(&note)
            await fixture.pushFailing(sync, [.loseAnswer])
            try await sync.delete(note)
            try await sync.push()
            #expect(try await serverRecords(fixture.server, "notes").isEmpty)
            try await sync.pull(SyncNote.self)
            #expect(try await localNotes(sync).isEmpty)
        }
    }

    @Test func moreEditsAfterALostUpdateAnswerKeepTheNewestAndReportNoConflict() async throws {
        try await withFixture(["notes": [["id": 1, "title": "a", "body": "", "stars": 0]], "replies": []]) { fixture in
            let sync = try fixture.store()
            try await sync.pull(SyncNote.self)
            var note = try #require(try await localNotes(sync).first)
            note.title = "b"
            try await sync.save(&note)
            await fixture.pushFailing(sync, [.loseAnswer])
            note.title = "c"
            try await sync.save(&note)
            try await sync.push()
            #expect(try await serverRecords(fixture.server, "notes")[1]?["title"]?.stringValue == "c")
            #expect(try await sync.status().conflictCount == 0)

            // The same with a delete after the lost answer: the delete lands, nothing comes back.
            note.title = "d"
            try await sync.save(&note)
            await fixture.pushFailing(sync, [.loseAnswer])
            try await sync.delete(note)
            try await sync.push()
            try await sync.pull(SyncNote.self)
            #expect(try await serverRecords(fixture.server, "notes").isEmpty)
            #expect(try await localNotes(sync).isEmpty)
            #expect(try await sync.status().conflictCount == 0)
        }
    }

    @Test func anEditOfADeletedRecordNeverLandsOnANewOne() async throws {
        try await withFixture(["notes": [["id": 1, "title": "a", "body": "", "stars": 0], ["id": 2, "title": "b", "body": "", "stars": 0]], "replies": []]) { fixture in
            let (a, b) = (try fixture.store("a"), try fixture.store("b"))
            try await a.pull(SyncNote.self)
            try await b.pull(SyncNote.self)
            var stale = try #require(try await localNotes(b).last)
            stale.body = "edited offline"
            try await b.save(&stale)
            try await a.delete(try #require(try await localNotes(a).last))
            try await a.push()
            var fresh = SyncNote(id: nil, title: "new")
            try await a.save(&fresh)
            try await a.push()
            #expect(try await serverRecords(fixture.server, "notes").keys.sorted() == [1, 3])
            try await b.push()
            // The edit met a deleted record (the policy decides about it); the new record is untouched.
            #expect(try await serverRecords(fixture.server, "notes")[3]?["body"]?.stringValue == "")
        }
    }

    @Test func aPullBetweenALostAnswerAndItsRetryReportsNoConflict() async throws {
        try await withFixture(["notes": [["id": 1, "title": "a", "body": "", "stars": 0]], "replies": []]) { fixture in
            let sync = try fixture.store()
            try await sync.pull(SyncNote.self)
            var note = try #require(try await localNotes(sync).first)
            note.stars = 5
            try await sync.save(&note)
            await fixture.pushFailing(sync, [.loseAnswer])
            try await sync.pull(SyncNote.self)
            try await sync.push()
            try await sync.pull(SyncNote.self)
            #expect(try await sync.status().conflictCount == 0)
            #expect(try await localNotes(sync).first?.stars == 5)
            #expect(try await serverRecords(fixture.server, "notes")[1]?["stars"]?.intValue == 5)
        }
    }

    @Test func aPullDoesNotWriteBackTheClientsOwnWrites() async throws {
        try await withFixture { fixture in
            let sync = try fixture.store(batch: 100)
            for index in 0..<5 {
                var note = SyncNote(id: nil, title: "note \(index)")
                try await sync.save(&note)
            }
            try await sync.push()
            var notes = try await localNotes(sync)
            notes[0].title = "edited"
            try await sync.save(&notes[0])
            try await sync.delete(notes[1])
            try await sync.push()
            // The feed brings the five creates, the edit and the delete back: each at the version
            // the row already has, so none is written again.
            let pulled = try await sync.pull(SyncNote.self)
            #expect(pulled.upserted == 0 && pulled.deleted == 0 && pulled.conflicts == 0)
            #expect(try await localNotes(sync).map(\.title) == ["edited", "note 2", "note 3", "note 4"])
        }
    }

    @Test func anotherWritersChangeAfterALostAnswerIsNotLost() async throws {
        try await withFixture(["notes": [["id": 1, "title": "a", "body": "", "stars": 0]], "replies": []]) { fixture in
            let (mine, theirs) = (try fixture.store("mine"), try fixture.store("theirs"))
            try await mine.pull(SyncNote.self)
            try await theirs.pull(SyncNote.self)
            var note = try #require(try await localNotes(mine).first)
            note.stars = 5
            try await mine.save(&note)
            await fixture.pushFailing(mine, [.loseAnswer])
            var other = try #require(try await localNotes(theirs).first)
            other.title = "theirs"
            try await theirs.save(&other)
            try await theirs.push()
            // The pull skips the row while its write's outcome is unknown; the retry's replay
            // then reads the record as it is now, so the other writer's title arrives.
            try await mine.pull(SyncNote.self)
            try await mine.push()
            let local = try #require(try await localNotes(mine).first)
            #expect(local.title == "theirs" && local.stars == 5)
        }
    }
}

/// A server that speaks another protocol version refuses every request with the versions it
/// speaks (as `modelsync-server` does): the store pauses instead of parking the entry.
/// The bundled server as one whose change feed does not carry `createdWith`.
private struct FeedWithoutCreateKeys: HTTPTransport {
    let base = AsyncHTTPClientTransport()

    func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        var response = try await base.send(request)
        guard request.url.query?.contains("_since") == true, var page = try? SyncFeedPage(json: JSONValue(parsing: response.body)) else { return response }
        for index in page.changes.indices { page.changes[index].createdWith = nil }
        response.body = page.json.jsonBytes()
        return response
    }
}

private struct OtherProtocolServer: HTTPTransport {
    func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        RemoteResponse(status: 400, headers: ["Content-Type": "application/json"], body: Array(#"{"error":"version 1 is not spoken here","supportedVersions":[2]}"#.utf8))
    }
}

/// Answers 401, after the session refreshed while the request was on its way (`refreshed`
/// resumes the store, as `SyncStore.use(_:)` does on a refresh).
private struct RefusedAfterARefresh: HTTPTransport {
    let refreshed: @Sendable () -> Void
    func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        refreshed()
        return RemoteResponse(status: 401, headers: ["Content-Type": "application/json"], body: Array(#"{"error":"expired"}"#.utf8))
    }
}

/// A 401 that answers a token the session has since replaced is no reason to stop: the entry
/// stays queued for the next push (with the new token), and the outbox is not paused.
@Suite struct StaleCredentialTests {
    @Test func aRefusalOfTheTokenBeforeARefreshDoesNotPauseTheQueue() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-stale-401")
        defer { directory.remove() }
        let database = try Database(path: directory.path("app.sqlite"), models: [SyncNote.self])
        let store = Locked<SyncStore?>(nil)
        let sync = SyncStore(
            remote: RemoteStore(baseURL: try #require(URL(string: "http://127.0.0.1:9")), transport: RefusedAfterARefresh { store.withLock { $0 }?.resume() }),
            database: database, models: [SyncNote.self], maxBatchSize: 1)
        store.withLock { $0 = sync }
        var note = SyncNote(id: nil, title: "waits")
        try await sync.save(&note)
        await #expect(throws: SyncError.self) { try await sync.push() }
        let status = try await sync.status()
        #expect(!status.isPaused && status.pendingCount == 1)
    }
}

@Suite struct ProtocolVersionTests {
    @Test func aServerOfAnotherProtocolVersionPausesTheQueue() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-protocol-version")
        defer { directory.remove() }
        let database = try Database(path: directory.path("app.sqlite"), models: [SyncNote.self])
        let sync = SyncStore(
            remote: RemoteStore(baseURL: try #require(URL(string: "http://127.0.0.1:9")), transport: OtherProtocolServer()),
            database: database, models: [SyncNote.self], maxBatchSize: 1)
        var note = SyncNote(id: nil, title: "waits")
        try await sync.save(&note)
        await #expect(throws: SyncError.unsupportedProtocol(serverSupports: [2])) { try await sync.push() }
        let status = try await sync.status()
        #expect(status.isPaused && status.parked.isEmpty && status.pendingCount == 1)
    }
}
