import Foundation
import ModelSync
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
            let records = await serverRecords(server, "notes")
            #expect(rows.count == records.count)
            for row in rows {
                let id = try #require(row.id)
                let record = try #require(records[id])
                #expect(record["title"]?.stringValue == row.title && record["stars"]?.intValue == row.stars)
            }
            #expect(rows.map(\.title) == ["Two", "Three"])
            #expect(rows.allSatisfy { ($0.id ?? 0) > 0 })
        }
    }

    @Test func coalescesEachRowsChangesIntoOneRequest() async throws {
        try await withSyncFixture(data: ["notes": [["id": 1, "title": "A", "body": "", "stars": 0],
                                                   ["id": 2, "title": "B", "body": "", "stars": 0]], "replies": []]) { sync, server, _ in
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
            #expect(writes.map(\.method) == ["POST", "PATCH", "DELETE"])
            #expect(writes[0].header("Idempotency-Key") != nil)
            let records = await serverRecords(server, "notes")
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
            let serverReplies = await serverRecords(server, "replies")
            #expect(serverReplies.values.first?["noteId"]?.intValue == realID)
            #expect(sync.identityMap.value(SyncNote.self, id: temporary) == nil)
            #expect(sync.identityMap.value(SyncNote.self, id: realID)?.title == "parent")

            // The app's value still holds the temporary key: saving it goes to the real row.
            note.title = "renamed"
            try await sync.save(&note)
            #expect(note.id == realID)
            try await sync.push()
            #expect(await serverRecords(server, "notes")[realID]?["title"]?.stringValue == "renamed")
            #expect(await serverRecords(server, "notes").count == 2)
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
            #expect(await serverRecords(server, "notes").values.map { $0["title"]?.stringValue } == ["before restart"])
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
            #expect(await serverRecords(server, "notes").count == 1)
        }
    }

    @Test func validationFailuresParkTheEntryWithFieldErrors() async throws {
        try await withSyncFixture { sync, server, _ in
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
            #expect(Set(await serverRecords(server, "notes").values.compactMap { $0["title"]?.stringValue }) == ["good", "fixed"])
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
            #expect(await serverRecords(server, "notes").count == 1)
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

    @Test(.timeLimit(.minutes(1))) func automaticPushSendsAfterALocalChange() async throws {
        try await withSyncFixture { sync, server, _ in
            var updates = sync.statusUpdates().makeAsyncIterator()
            sync.startAutomaticPush()
            defer { sync.stopAutomaticPush() }
            var note = SyncNote(id: nil, title: "auto")
            try await sync.save(&note)
            // Every change publishes a status; the one after the push finds the record.
            while let status = await updates.next() {
                let records = await serverRecords(server, "notes")
                if status.pendingCount == 0 && status.activity == .idle && records.count == 1 { break }
            }
            #expect(await serverRecords(server, "notes").count == 1)
        }
    }
}
