import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// Pulls: deletions, additions and changes reach the local table; pending local changes stay
/// on top. These run against the bundled server and against servers without a change feed.
@Suite struct PullTests {
    static let seed: JSONValue = ["notes": [["id": 1, "title": "one", "body": "", "stars": 0],
                                            ["id": 2, "title": "two", "body": "", "stars": 0],
                                            ["id": 3, "title": "three", "body": "", "stars": 0]], "replies": []]

    func titles(_ sync: SyncStore) async throws -> [Int: String] {
        let rows = try await sync.database.read { db in try SyncNote.all(db) }
        return Dictionary(uniqueKeysWithValues: rows.compactMap { row in row.id.map { ($0, row.title) } })
    }

    /// With the bundled server's change feed, and without it (as against json-server).
    static let servers = [ServerOptions(), ServerOptions(servesSyncExtensions: false)]

    /// A pull updates the values the app holds in the identity map and takes in no others.
    @Test func aPullUpdatesHeldValuesOnly() async throws {
        try await withSyncFixture(data: Self.seed) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            sync.identityMap.store(try #require(try await sync.database.read { db in try SyncNote.find(1, db) }))
            let other = RemoteStore(baseURL: server.baseURL)
            for id in [1, 2] {
                var note = try await other.fetch(SyncNote.self, id: id)
                note.title += " (server)"
                try await other.save(&note)
            }
            #expect(try await sync.pull(SyncNote.self).upserted == 2)
            #expect(sync.identityMap.value(SyncNote.self, id: 1)?.title == "one (server)")
            #expect(sync.identityMap.value(SyncNote.self, id: 2) == nil && sync.identityMap.count == 1)
        }
    }

    @Test(arguments: servers) func aPullBringsChangesAndDeletionsAndKeepsPendingEdits(_ options: ServerOptions) async throws {
        try await withSyncFixture(data: Self.seed, serverOptions: options) { sync, server, _ in
            let first = try await sync.pull(SyncNote.self)
            #expect(first.fullResync == !options.servesSyncExtensions)
            #expect(try await titles(sync) == [1: "one", 2: "two", 3: "three"])

            // Another client: deletes 2, renames 3, adds one.
            let other = RemoteStore(baseURL: server.baseURL)
            try await other.delete(SyncNote(id: 2, title: "two"))
            var three = try await other.fetch(SyncNote.self, id: 3)
            three.title = "three (server)"
            try await other.save(&three)
            var added = SyncNote(id: nil, title: "four")
            try await other.save(&added)
            // Meanwhile, offline: an edit of 3's stars and a new note.
            var local = SyncNote(id: 3, title: "three", stars: 7)
            try await sync.save(&local)
            var created = SyncNote(id: nil, title: "local")
            try await sync.save(&created)

            let summary = try await sync.pull(SyncNote.self)
            #expect(summary.deleted == 1)
            // The delta holds only what changed; a full reconcile reads everything.
            #expect(summary.fullResync == !options.servesSyncExtensions)
            if options.servesSyncExtensions { #expect(summary.upserted == 2) }
            let rows = try await sync.database.read { db in try SyncNote.all(db) }
            let byTitle = Dictionary(uniqueKeysWithValues: rows.map { ($0.title, $0) })
            #expect(Set(byTitle.keys) == ["one", "three (server)", "four", "local"])
            // The pending edit stays on top of the server's new record.
            #expect(byTitle["three (server)"]?.stars == 7)
            #expect(sync.identityMap.value(SyncNote.self, id: 2) == nil)

            // Pushing then makes the server equal the local table.
            try await sync.push()
            let records = try await serverRecords(server, "notes")
            let pushed = try await sync.database.read { db in try SyncNote.all(db) }
            #expect(records.count == pushed.count)
            for row in pushed {
                let id = try #require(row.id)
                let record = try #require(records[id])
                #expect(record["title"]?.stringValue == row.title && record["stars"]?.intValue == row.stars)
            }
        }
    }

    @Test(arguments: servers) func aPulledDeletionOfALocallyEditedRowGoesThroughThePolicy(_ options: ServerOptions) async throws {
        try await withSyncFixture(data: Self.seed, serverOptions: options) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            try await RemoteStore(baseURL: server.baseURL).delete(SyncNote(id: 1, title: "one"))
            var edited = SyncNote(id: 1, title: "edited")
            try await sync.save(&edited)
            let summary = try await sync.pull(SyncNote.self)
            // Merge: the server's delete wins; the pending edit goes with the row.
            #expect(summary.conflicts == 1)
            #expect(try await titles(sync)[1] == nil)
            #expect(try await sync.pendingCount() == 0)
        }
    }

    @Test func aCursorOlderThanTheTombstonesStartsOver() async throws {
        let options = ServerOptions(feedLimits: FeedLimits(tombstoneCapacity: 1))
        try await withSyncFixture(data: Self.seed, serverOptions: options) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            let other = RemoteStore(baseURL: server.baseURL)
            try await other.delete(SyncNote(id: 1, title: "one"))
            try await other.delete(SyncNote(id: 2, title: "two"))
            let summary = try await sync.pull(SyncNote.self)
            #expect(summary.fullResync && summary.deleted == 2)
            #expect(try await titles(sync) == [3: "three"])
            // Back on the feed afterwards.
            try await other.delete(SyncNote(id: 3, title: "three"))
            let next = try await sync.pull(SyncNote.self)
            #expect(!next.fullResync && next.deleted == 1)
        }
    }

    @Test func pulledRowsCarryVersionsSoEditsAreConditional() async throws {
        try await withSyncFixture(data: Self.seed) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            var note = SyncNote(id: 2, title: "mine")
            try await sync.save(&note)
            try await sync.push()
            let patch = try #require(server.recordedRequests.last { $0.method == "PATCH" })
            #expect(patch.header("If-Match") == #""2""#)
        }
    }

    /// A page's rows without local changes are written together, in a few statements: around a
    /// row that is rebased and a deletion in the same page, every row ends as if written at its
    /// turn, each with its version (the edits that follow are conditional on it, and the next
    /// pull finds nothing new).
    @Test func aPageWritesItsRowsAroundRebasesAndDeletions() async throws {
        try await withSyncFixture(data: Self.seed) { sync, server, _ in
            try await sync.pull(SyncNote.self)
            var pending = SyncNote(id: 2, title: "two", stars: 5)
            try await sync.save(&pending)
            // The feed's order: 1 (stored), 2 (rebased), 3 (deleted), 4 (stored).
            let other = RemoteStore(baseURL: server.baseURL)
            for (id, title) in [(1, "one (server)"), (2, "two (server)")] {
                var note = try await other.fetch(SyncNote.self, id: id)
                note.title = title
                try await other.save(&note)
            }
            try await other.delete(SyncNote(id: 3, title: "three"))
            var added = SyncNote(id: nil, title: "four")
            try await other.save(&added)

            let summary = try await sync.pull(SyncNote.self)
            // 2's title and its pending stars merge (a conflict the policy resolved).
            #expect(summary.upserted == 3 && summary.deleted == 1 && summary.conflicts == 1)
            let rows = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            #expect(rows.map(\.title) == ["one (server)", "two (server)", "four"])
            #expect(rows.map(\.stars) == [0, 5, 0])
            // Each row's version came with it, in the feed's order; the deleted row's went.
            let versions = try await sync.database.read { db in
                try db.rows("SELECT key, version FROM modelsync_row_versions WHERE model = ? ORDER BY version", [.text(SyncNote.schema.name)])
            }
            #expect(versions.map { $0[0] } == [.text("1"), .text("2"), .text("4")])
            #expect(Set(versions.map { $0[1] }).count == 3)

            // Edits of the stored rows go through without a conflict.
            for var row in rows where row.id != 2 {
                row.body = "edited"
                try await sync.save(&row)
            }
            let pushed = try await sync.push()
            #expect(pushed.sent == 3 && pushed.conflicts == 0)
            // The echoes of those writes are recognised by version.
            #expect(try await sync.pull(SyncNote.self).upserted == 0)
        }
    }

    @Test(.timeLimit(.minutes(5))) func aLivePullFollowsTheServer() async throws {
        try await withSyncFixture(data: Self.seed) { sync, server, _ in
            var updates = sync.database.observe(SyncNote.self).makeAsyncIterator()
            sync.startLivePull([SyncNote.self])
            defer { sync.stopLivePull() }
            // The first pull brings the three notes.
            while let rows = try await updates.next(), rows.count != 3 {}
            var added = SyncNote(id: nil, title: "from elsewhere")
            try await RemoteStore(baseURL: server.baseURL).save(&added)
            while let rows = try await updates.next(), !rows.contains(where: { $0.title == "from elsewhere" }) {}
        }
    }

    /// A server reset takes its sequence back past the client's cursors: the live pull is told
    /// (410), reads everything again, and follows the server from there.
    @Test(.timeLimit(.minutes(5))) func aLivePullStartsOverAfterTheServerIsReset() async throws {
        try await withSyncFixture(data: Self.seed) { sync, server, _ in
            var updates = sync.database.observe(SyncNote.self).makeAsyncIterator()
            sync.startLivePull([SyncNote.self])
            defer { sync.stopLivePull() }
            let remote = RemoteStore(baseURL: server.baseURL)
            for title in ["four", "five"] {
                var note = SyncNote(id: nil, title: title)
                try await remote.save(&note)
            }
            while let rows = try await updates.next(), rows.count != 5 {}
            try await server.reset()
            while let rows = try await updates.next(), Set(rows.map(\.title)) != ["one", "two", "three"] {}
            var after = SyncNote(id: nil, title: "after the reset")
            try await remote.save(&after)
            while let rows = try await updates.next(), !rows.contains(where: { $0.title == "after the reset" }) {}
        }
    }
}
