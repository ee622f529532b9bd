import Foundation
@testable import ModelSync
import ModelSyncCore
import ModelSyncServer
import ModelSyncTesting
import Testing

@Suite struct SyncStoreTests {
    @Test func savesLocallyWithoutTheNetworkThenPushReplaysInOrder() async throws {
        try await withSyncFixture { sync, server, _ in
            var first = SyncNote(id: nil, title: "One")
            var second = SyncNote(id: nil, title: "Two")
            try await sync.save(&first)
            try await sync.save(&second)
            // Offline: nothing reached the server, the rows are local with temporary keys.
            #expect(writeRequests(server).isEmpty)
            #expect(first.id == -1 && second.id == -2)
            let local = try await sync.database.read { db in try SyncNote.all(db) }
            #expect(Set(local.map(\.title)) == ["One", "Two"])
            #expect(try await sync.pendingCount() == 2)

            second.stars = 5
            try await sync.save(&second)
            try await sync.delete(first)
            var third = SyncNote(id: nil, title: "Three")
            try await sync.save(&third)

            let summary = try await sync.push()
            #expect(summary.sent == 2)
            #expect(try await sync.pendingCount() == 0)
            // The server's data equals the local table.
            let rows = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            let records = try await serverRecords(server, "notes")
            #expect(rows.count == records.count)
            for row in rows {
                let id = try #require(row.id)
                let record = try #require(records[id])
                #expect(record["title"]?.stringValue == row.title && record["stars"]?.intValue == row.stars)
            }
            #expect(Set(rows.map(\.title)) == ["Two", "Three"])
            #expect(rows.allSatisfy { ($0.id ?? 0) > 0 })
        }
    }

    @Test func coalescesEachRowsChangesIntoOneRequest() async throws {
        // No batches: every entry is a request of its own, counted in the server's log.
        try await withSyncFixture(data: ["notes": [["id": 1, "title": "A", "body": "", "stars": 0],
                                                   ["id": 2, "title": "B", "body": "", "stars": 0]], "replies": []],
                                  maxBatchSize: 1) { sync, server, _ in
            // Rows the app already has from the server.
            try await sync.database.write { db in
                try SyncNote(id: 1, title: "A").upsert(db)
                try SyncNote(id: 2, title: "B").upsert(db)
            }
            // create + updates → one POST with the latest values
            var created = SyncNote(id: nil, title: "new")
            try await sync.save(&created)
            created.title = "newer"
            try await sync.save(&created)
            created.stars = 3
            try await sync.save(&created)
            // create + delete → nothing
            var ghost = SyncNote(id: nil, title: "ghost")
            try await sync.save(&ghost)
            try await sync.delete(ghost)
            // updates → one PATCH of the union of the changed fields
            var a = SyncNote(id: 1, title: "A2")
            try await sync.save(&a)
            a.stars = 9
            try await sync.save(&a)
            // update + delete → one DELETE
            var b = SyncNote(id: 2, title: "B2")
            try await sync.save(&b)
            try await sync.delete(b)

            #expect(try await sync.pendingCount() == 3)
            try await sync.push()
            let writes = writeRequests(server)
            // Three rows, independent of each other: sent concurrently, in any order.
            #expect(writes.map(\.method).sorted() == ["DELETE", "PATCH", "POST"])
            #expect(writes.first { $0.method == "POST" }?.header("Idempotency-Key") != nil)
            let records = try await serverRecords(server, "notes")
            #expect(records.count == 2)
            #expect(records[1]?["title"]?.stringValue == "A2" && records[1]?["stars"]?.intValue == 9)
            let createdRecord = try #require(records.values.first { $0["title"]?.stringValue == "newer" })
            #expect(createdRecord["stars"]?.intValue == 3)
        }
    }

    @Test func rewritesTemporaryKeysInRowsEntriesAndChildren() async throws {
        try await withSyncFixture(data: ["notes": [["id": 40, "title": "existing"]], "replies": []]) { sync, server, _ in
            var note = SyncNote(id: nil, title: "parent")
            try await sync.save(&note)
            let temporary = try #require(note.id)
            var reply = SyncReply(id: nil, noteId: temporary, text: "child")
            try await sync.save(&reply)
            #expect(sync.identityMap.value(SyncNote.self, id: temporary) != nil)

            try await sync.push()
            let notes = try await sync.database.read { db in try SyncNote.all(db) }
            let replies = try await sync.database.read { db in try SyncReply.all(db) }
            let realID = try #require(notes.first?.id)
            #expect(realID == 41)
            #expect(replies.first?.noteId == realID)
            // The child was sent after its parent, carrying the parent's real id.
            let serverReplies = try await serverRecords(server, "replies")
            #expect(serverReplies.values.first?["noteId"]?.intValue == realID)
            #expect(sync.identityMap.value(SyncNote.self, id: temporary) == nil)
            #expect(sync.identityMap.value(SyncNote.self, id: realID)?.title == "parent")

            // The app's value still holds the temporary key: saving it goes to the real row.
            note.title = "renamed"
            try await sync.save(&note)
            #expect(note.id == realID)
            try await sync.push()
            #expect(try await serverRecords(server, "notes")[realID]?["title"]?.stringValue == "renamed")
            #expect(try await serverRecords(server, "notes").count == 2)
        }
    }

    @Test func independentRowsGoConcurrentlyWhileChildrenWaitForTheirParents() async throws {
        try await withSyncFixture(data: ["notes": [["id": 7, "title": "old parent"]], "replies": [["id": 70, "noteId": 7, "text": "moved"]]]) { sync, server, _ in
            try await sync.database.write { db in
                try SyncNote(id: 7, title: "old parent").upsert(db)
                try SyncReply(id: 70, noteId: 7, text: "moved").upsert(db)
            }
            var parents: [SyncNote] = []
            for index in 0..<20 {
                var note = SyncNote(id: nil, title: "note \(index)")
                try await sync.save(&note)
                parents.append(note)
                for reply in 0..<3 {
                    var child = SyncReply(id: nil, noteId: try #require(note.id), text: "reply \(index).\(reply)")
                    try await sync.save(&child)
                }
            }
            // An existing reply moves under a parent created offline; the app holds its value.
            var moved = SyncReply(id: 70, noteId: try #require(parents[0].id), text: "moved")
            try await sync.save(&moved)
            #expect(sync.identityMap.value(SyncReply.self, id: 70)?.noteId == parents[0].id)

            let summary = try await sync.push()
            #expect(summary.sent == 81 && summary.remaining == 0)
            let notes = try await serverRecords(server, "notes")
            let replies = try await serverRecords(server, "replies")
            #expect(notes.count == 21 && replies.count == 61)
            // Every reply reached the server with its own parent's real id.
            for reply in replies.values {
                let parent = try #require(reply["noteId"]?.intValue)
                #expect(notes[parent] != nil)
            }
            let titles = Dictionary(uniqueKeysWithValues: notes.map { ($0.key, $0.value["title"]?.stringValue ?? "") })
            for reply in replies.values where reply["text"]?.stringValue != "moved" {
                let text = try #require(reply["text"]?.stringValue)
                let index = text.dropFirst("reply ".count).split(separator: ".")[0]
                #expect(titles[try #require(reply["noteId"]?.intValue)] == "note \(index)")
            }
            // The local tables equal the server's, and the held child follows its parent's real key.
            let localReplies = try await sync.database.read { db in try SyncReply.all(db) }
            #expect(localReplies.count == 61)
            for reply in localReplies { #expect(replies[try #require(reply.id)]?["noteId"]?.intValue == reply.noteId) }
            let realParent = try #require(replies[70]?["noteId"]?.intValue)
            #expect(realParent > 7 && sync.identityMap.value(SyncReply.self, id: 70)?.noteId == realParent)
        }
    }

    @Test func aRefusedParentHoldsBackItsChildren() async throws {
        try await withSyncFixture { sync, server, _ in
            var note = SyncNote(id: nil, title: "refused")
            try await sync.save(&note)
            var reply = SyncReply(id: nil, noteId: try #require(note.id), text: "waits")
            try await sync.save(&reply)
            server.inject(Fault(.status(422), times: 1))
            let summary = try await sync.push()
            // The child is not sent with its parent's temporary key.
            #expect(summary.parked == 1 && summary.sent == 0 && summary.remaining == 1)
            #expect(writeRequests(server).count == 1)
            let parked = try #require(try await sync.parkedEntries().first)
            try await sync.retry(parked)
            try await sync.push()
            let notes = try await serverRecords(server, "notes")
            let replies = try await serverRecords(server, "replies")
            #expect(notes.count == 1 && replies.values.first?["noteId"]?.intValue == notes.keys.first)
        }
    }

    @Test func theOutboxSurvivesReopeningTheDatabase() async throws {
        try await withSyncFixture { sync, server, directory in
            var note = SyncNote(id: nil, title: "before restart")
            try await sync.save(&note)
            let reopened = try Database(path: directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
            let restarted = SyncStore(remote: sync.remote, database: reopened, models: [SyncNote.self, SyncReply.self])
            #expect(try await restarted.pendingCount() == 1)
            try await restarted.push()
            #expect(try await serverRecords(server, "notes").values.map { $0["title"]?.stringValue } == ["before restart"])
        }
    }

    @Test func transientFailuresKeepTheEntry() async throws {
        try await withSyncFixture { sync, server, _ in
            var note = SyncNote(id: nil, title: "retry me")
            try await sync.save(&note)
            server.inject(Fault(.status(503), times: 10))
            await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(try await sync.pendingCount() == 1)
            #expect(try await sync.status().lastError != nil)
            server.clearFaults()
            try await sync.push()
            #expect(try await serverRecords(server, "notes").count == 1)
        }
    }

    @Test func validationFailuresParkTheEntryWithFieldErrors() async throws {
        // One request at a time, so that the injected refusal meets the first entry.
        try await withSyncFixture(maxConcurrentRequests: 1, maxBatchSize: 1) { sync, server, _ in
            var bad = SyncNote(id: nil, title: "bad")
            try await sync.save(&bad)
            var good = SyncNote(id: nil, title: "good")
            try await sync.save(&good)
            server.inject(Fault(.status(422, body: ["errors": ["title": ["is taken"]]]), times: 1))
            let summary = try await sync.push()
            #expect(summary.parked == 1 && summary.sent == 1)
            let parked = try #require(try await sync.parkedEntry(for: bad))
            #expect(parked.fieldErrors["title"] == ["is taken"])
            #expect(try await sync.pendingCount() == 0)

            // Fix and retry.
            bad.title = "fixed"
            try await sync.save(&bad)
            try await sync.retry(parked)
            try await sync.push()
            #expect(Set(try await serverRecords(server, "notes").values.compactMap { $0["title"]?.stringValue }) == ["good", "fixed"])
        }
    }

    @Test func discardingARefusedUpdateRevertsToTheServerState() async throws {
        try await withSyncFixture(data: ["notes": [["id": 1, "title": "server", "body": "", "stars": 0]], "replies": []]) { sync, server, _ in
            try await sync.database.write { db in try SyncNote(id: 1, title: "server").upsert(db) }
            var note = SyncNote(id: 1, title: "refused")
            try await sync.save(&note)
            server.inject(Fault(.status(400), times: 1))
            try await sync.push()
            let parked = try #require(try await sync.parkedEntries().first)
            try await sync.discard(parked)
            let row = try await sync.database.read { db in try SyncNote.find(1, db) }
            #expect(row?.title == "server")
            #expect(try await sync.parkedEntries().isEmpty)
        }
    }

    @Test func unauthorizedPausesUntilResumed() async throws {
        try await withSyncFixture { sync, server, _ in
            var note = SyncNote(id: nil, title: "token")
            try await sync.save(&note)
            server.inject(Fault(.status(401), times: 1))
            await #expect(throws: SyncError.paused(status: 401)) { try await sync.push() }
            #expect(try await sync.status().isPaused)
            await #expect(throws: SyncError.paused(status: 401)) { try await sync.push() }
            sync.resume()
            try await sync.push()
            #expect(try await serverRecords(server, "notes").count == 1)
        }
    }

    @Test func statusUpdatesReportPendingCount() async throws {
        try await withSyncFixture { sync, _, _ in
            var updates = sync.statusUpdates().makeAsyncIterator()
            var note = SyncNote(id: nil, title: "watched")
            try await sync.save(&note)
            // Updates arrive newest first; wait for the one that counts the save.
            while let status = await updates.next(), status.pendingCount != 1 {}
            try await sync.push()
            while let status = await updates.next(), !(status.pendingCount == 0 && status.activity == .idle) {}
        }
    }

    @Test(.timeLimit(.minutes(5))) func automaticPushSendsAfterALocalChange() async throws {
        try await withSyncFixture { sync, server, _ in
            var updates = sync.statusUpdates().makeAsyncIterator()
            sync.startAutomaticPush()
            defer { sync.stopAutomaticPush() }
            var note = SyncNote(id: nil, title: "auto")
            try await sync.save(&note)
            // Every change publishes a status; the one after the push finds the record.
            while let status = await updates.next() {
                let records = try await serverRecords(server, "notes")
                if status.pendingCount == 0 && status.activity == .idle && records.count == 1 { break }
            }
            #expect(try await serverRecords(server, "notes").count == 1)
        }
    }
}

@Suite struct SyncBatchTests {
    @Test func independentEntriesGoInOneBatch() async throws {
        try await withSyncFixture(data: ["notes": [["id": 1, "title": "A", "body": "", "stars": 0]], "replies": []]) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            for index in 0..<5 {
                var note = SyncNote(id: nil, title: "new \(index)")
                try await sync.save(&note)
            }
            var edited = SyncNote(id: 1, title: "A2")
            try await sync.save(&edited)
            server.clearRecordedRequests()
            let summary = try await sync.push()
            #expect(summary.sent == 6)
            #expect(writeRequests(server).map(\.uri) == ["/_batch"])
            let records = try await serverRecords(server, "notes")
            #expect(records.count == 6 && records[1]?["title"]?.stringValue == "A2")
            let rows = try await sync.database.read { db in try SyncNote.all(db) }
            #expect(rows.allSatisfy { ($0.id ?? 0) > 0 } && rows.count == 6)
        }
    }

    @Test func aConflictInsideABatchGoesToThePolicy() async throws {
        try await withSyncFixture(data: ["notes": [["id": 1, "title": "A", "body": "", "stars": 0],
                                                   ["id": 2, "title": "B", "body": "", "stars": 0]], "replies": []]) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            var theirs = try await RemoteStore(baseURL: server.baseURL).fetch(SyncNote.self, id: 1)
            theirs.title = "server"
            try await RemoteStore(baseURL: server.baseURL).save(&theirs)
            var first = SyncNote(id: 1, title: "A", stars: 4)
            var second = SyncNote(id: 2, title: "B2")
            try await sync.save(&first)
            try await sync.save(&second)
            let summary = try await sync.push()
            #expect(summary.conflicts == 1 && summary.sent == 2)
            let records = try await serverRecords(server, "notes")
            #expect(records[1]?["title"]?.stringValue == "server" && records[1]?["stars"]?.intValue == 4)
            #expect(records[2]?["title"]?.stringValue == "B2")
        }
    }

    @Test func aServerWithoutBatchesGetsOneRequestPerEntry() async throws {
        try await withSyncFixture(serverOptions: ServerOptions(servesSyncExtensions: false)) { sync, server, _ in
            for index in 0..<3 {
                var note = SyncNote(id: nil, title: "n\(index)")
                try await sync.save(&note)
            }
            try await sync.push()
            #expect(writeRequests(server).map(\.uri).sorted() == ["/_batch", "/notes", "/notes", "/notes"])
            var more = SyncNote(id: nil, title: "later")
            var other = SyncNote(id: nil, title: "later too")
            try await sync.save(&more)
            try await sync.save(&other)
            server.clearRecordedRequests()
            try await sync.push()
            // Remembered: no second try.
            #expect(writeRequests(server).map(\.uri) == ["/notes", "/notes"])
            #expect(try await serverRecords(server, "notes").count == 5)
        }
    }

    /// Clearing the local data (a sign-out) waits for a pull in flight: run beside it, the pull
    /// would store the last user's rows after the clear.
    @Test(.timeLimit(.minutes(5))) func clearingLocalDataWaitsForAPullInFlight() async throws {
        let data: JSONValue = ["notes": [["id": 1, "title": "one", "body": "", "stars": 0]], "replies": []]
        let directory = try TemporaryDirectory(prefix: "modelsync-sync")
        defer { directory.remove() }
        try await withTestServer(data: data) { server in
            let transport = HeldTransport()
            let database = try Database(path: directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
            let sync = SyncStore(remote: RemoteStore(baseURL: server.baseURL, transport: transport), database: database, models: [SyncNote.self, SyncReply.self])
            var arrivals = transport.arrivals.stream.makeAsyncIterator()
            let pull = Task { try await sync.pull(SyncNote.self) }
            await arrivals.next()
            let cleared = Locked(false)
            let clear = Task {
                try await sync.clearLocalData()
                cleared.withLock { $0 = true }
            }
            // The clear is queued behind the pull (or, without the gate, already done).
            while await sync.exchangeGate.queued == 0, !cleared.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            transport.release()
            _ = try await pull.value
            try await clear.value
            #expect(try await database.read { db in try SyncNote.all(db) }.isEmpty)
            let bookkeeping = try await database.read { db in
                try ["modelsync_row_versions", "modelsync_cursors"].map { try db.scalar("SELECT count(*) FROM \($0)") }
            }
            #expect(bookkeeping.allSatisfy { $0 == .integer(0) })
        }
    }
}

/// Holds the first request at the transport until released, telling when it arrived.
private final class HeldTransport: HTTPTransport {
    private let inner = AsyncHTTPClientTransport()
    private let held = Locked<(first: Bool, waiter: CheckedContinuation<Void, Never>?, released: Bool)>((true, nil, false))
    let arrivals = AsyncStream<Void>.makeStream()

    func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        let hold = held.withLock { state in
            defer { state.first = false }
            return state.first
        }
        if hold {
            await withCheckedContinuation { continuation in
                let go = held.withLock { state in
                    if state.released { return true }
                    state.waiter = continuation
                    return false
                }
                if go { continuation.resume() }
                arrivals.continuation.yield()
            }
        }
        return try await inner.send(request)
    }

    func release() {
        held.withLock { state in
            state.released = true
            return state.waiter.take()
        }?.resume()
    }
}
