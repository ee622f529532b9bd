import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// Conflicts: the outbox sends `If-Match`, and a 412 (or a 404 for an edited record) goes
/// through the model's policy. "Another client" is a plain RemoteStore on the same server.
@Suite struct ConflictTests {
    /// A note created through the sync store and pushed, so that its version is known; then
    /// `other` changes it on the server and `local` changes it locally.
    func conflict(
        policy: ConflictPolicy<SyncNote>?,
        other: @escaping @Sendable (RemoteStore, SyncNote) async throws -> Void,
        local: (inout SyncNote) -> Void,
        check: @escaping (SyncStore, TestServer, SyncNote, PushSummary) async throws -> Void
    ) async throws {
        try await withSyncFixture { sync, server, _ in
            if let policy { sync.configure(SyncNote.self, conflicts: policy) }
            var note = SyncNote(id: nil, title: "A", body: "base", stars: 1)
            try await sync.save(&note)
            try await sync.push()
            // The pushed row, under the key the server gave it.
            note = try #require(try await sync.database.read { db in try SyncNote.all(db).first })
            let otherClient = RemoteStore(baseURL: server.baseURL)
            try await other(otherClient, note)
            local(&note)
            try await sync.save(&note)
            let summary = try await sync.push()
            try await check(sync, server, note, summary)
        }
    }

    static func edit(_ change: @escaping @Sendable (inout SyncNote) -> Void) -> @Sendable (RemoteStore, SyncNote) async throws -> Void {
        { remote, note in
            var theirs = try await remote.fetch(SyncNote.self, id: note.id ?? 0)
            change(&theirs)
            try await remote.save(&theirs)
        }
    }

    func localRow(_ sync: SyncStore, _ id: Int?) async throws -> SyncNote? {
        try await sync.database.read { db in try SyncNote.find(id ?? 0, db) }
    }

    @Test func mergeKeepsBothSidesOfDifferentFields() async throws {
        try await conflict(policy: nil, other: Self.edit { $0.title = "server title" }, local: { $0.body = "local body"; $0.stars = 5 }) { sync, server, note, summary in
            #expect(summary.conflicts == 1)
            let record = try #require(try await serverRecords(server, "notes")[note.id ?? 0])
            #expect(record["title"]?.stringValue == "server title" && record["body"]?.stringValue == "local body" && record["stars"]?.intValue == 5)
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "server title" && row?.body == "local body")
            let status = try await sync.status()
            #expect(status.conflictCount == 1)
            #expect(status.conflicts.first?.server?["title"]?.stringValue == "server title")
            #expect(status.conflicts.first?.local?["body"]?.stringValue == "local body")
            // The resolved PATCH was conditional on the server's new version.
            let patches = server.recordedRequests.filter { $0.method == "PATCH" }
            #expect(patches.count == 2 && patches.allSatisfy { $0.header("If-Match") != nil })
        }
    }

    @Test func mergeGivesAFieldChangedOnBothSidesToTheResolver() async throws {
        try await conflict(policy: nil, other: Self.edit { $0.title = "server" }, local: { $0.title = "local" }) { sync, server, note, _ in
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["title"]?.stringValue == "server")
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "server")
        }
        try await conflict(policy: .merge { $0.local }, other: Self.edit { $0.title = "server" }, local: { $0.title = "local" }) { sync, server, note, _ in
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["title"]?.stringValue == "local")
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "local")
        }
    }

    @Test func serverWinsDropsTheLocalChange() async throws {
        try await conflict(policy: .serverWins, other: Self.edit { $0.title = "server" }, local: { $0.body = "local" }) { sync, server, note, summary in
            #expect(summary.conflicts == 1 && summary.sent == 0)
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "server" && row?.body == "base")
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["body"]?.stringValue == "base")
            let pending = try await sync.pendingCount()
            #expect(pending == 0)
        }
    }

    @Test func clientWinsOverwritesTheServer() async throws {
        try await conflict(policy: .clientWins, other: Self.edit { $0.title = "server"; $0.stars = 9 }, local: { $0.title = "local" }) { sync, server, note, _ in
            let record = try await serverRecords(server, "notes")[note.id ?? 0]
            #expect(record?["title"]?.stringValue == "local" && record?["stars"]?.intValue == 1)
        }
    }

    @Test func aCustomResolverSeesAllThreeVersions() async throws {
        let policy = ConflictPolicy<SyncNote>.custom { base, local, server in
            guard var server, let local, let base else { return server }
            server.stars = server.stars + local.stars - base.stars
            return server
        }
        try await conflict(policy: policy, other: Self.edit { $0.stars += 10 }, local: { $0.stars += 2 }) { sync, server, note, _ in
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["stars"]?.intValue == 13)
            let row = try await localRow(sync, note.id)
            #expect(row?.stars == 13)
        }
    }

    @Test func anEditOfARecordDeletedOnTheServer() async throws {
        let delete: @Sendable (RemoteStore, SyncNote) async throws -> Void = { remote, note in try await remote.delete(note) }
        // Merge (the default): the server's delete wins.
        try await conflict(policy: nil, other: delete, local: { $0.title = "edited" }) { sync, server, note, summary in
            #expect(summary.conflicts == 1)
            let row = try await localRow(sync, note.id)
            #expect(row == nil)
            #expect(try await serverRecords(server, "notes").isEmpty)
            let pending = try await sync.pendingCount()
            #expect(pending == 0)
        }
        // Client wins: the record is created again, under its key.
        try await conflict(policy: .clientWins, other: delete, local: { $0.title = "edited" }) { sync, server, note, _ in
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["title"]?.stringValue == "edited")
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "edited")
        }
    }

    /// The row's server version as the store knows it (nil: none).
    func rowVersion(_ sync: SyncStore, _ id: Int?) async throws -> SQLValue? {
        try await sync.database.read { db in
            try db.scalar("SELECT version FROM modelsync_row_versions WHERE model = ? AND key = ?", [.text(SyncNote.schema.name), .text(String(id ?? 0))])
        }
    }

    /// Issue #48: under `.clientWins`, an edit of a record another client deleted creates it
    /// again, and the server's feed then holds the deletion and, after it, the record. The pull
    /// that brought both deleted the row for the deletion, then took the record for the echo of
    /// the re-create (the row's version as the page started) and never stored it: the winner
    /// ended with no row and no version, its cursor past both.
    @Test func aRecordCreatedAgainAfterADeleteSurvivesThePullOfTheDeletionAndTheRecord() async throws {
        let delete: @Sendable (RemoteStore, SyncNote) async throws -> Void = { remote, note in try await remote.delete(note) }
        try await conflict(policy: .clientWins, other: delete, local: { $0.title = "edited" }) { sync, server, note, _ in
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["title"]?.stringValue == "edited")
            let version = try #require(try await rowVersion(sync, note.id))
            let pulled = try await sync.pull(SyncNote.self)
            #expect(pulled.conflicts == 0)
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "edited")
            #expect(try await rowVersion(sync, note.id) == version)
            // Nothing is left to bring: the row is the server's.
            let again = try await sync.pull(SyncNote.self)
            #expect(again.upserted == 0 && again.deleted == 0)
            #expect(try await localRow(sync, note.id)?.title == "edited")
        }
    }

    /// Two clients under `.clientWins` edit a record that a third deletes, and both create it
    /// again under its key. The second create meets the first's record (409): a conflict with
    /// that record, resolved by the policy, not a failure retried forever.
    @Test func twoCreatesAgainOfOneDeletedRecordMeetInThePolicy() async throws {
        try await withSyncFixture { first, server, directory in
            let second = SyncStore(
                remote: RemoteStore(baseURL: server.baseURL),
                database: try Database(path: directory.path("second.sqlite"), models: [SyncNote.self, SyncReply.self]),
                models: [SyncNote.self, SyncReply.self])
            for sync in [first, second] { sync.configure(SyncNote.self, conflicts: .clientWins) }
            var note = SyncNote(id: nil, title: "A", body: "base")
            try await first.save(&note)
            try await first.push()
            try await second.pull(SyncNote.self)
            note = try #require(try await first.database.read { db in try SyncNote.all(db).first })
            var theirs = note
            note.title = "first"
            try await first.save(&note)
            theirs.body = "second"
            try await second.save(&theirs)
            try await RemoteStore(baseURL: server.baseURL).delete(note)
            // The second learns of the deletion first: its edit becomes a create, not sent yet.
            try await second.pull(SyncNote.self)
            try await first.push()
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["title"]?.stringValue == "first")
            let summary = try await second.push()
            #expect(summary.conflicts == 1)
            let record = try #require(try await serverRecords(server, "notes")[note.id ?? 0])
            #expect(record["title"]?.stringValue == "A" && record["body"]?.stringValue == "second")
            try await first.pull(SyncNote.self)
            try await second.pull(SyncNote.self)
            for sync in [first, second] {
                #expect(try await sync.pendingCount() == 0)
                let row = try await localRow(sync, note.id)
                #expect(row?.title == "A" && row?.body == "second")
            }
        }
    }

    @Test func aLocalDeleteOfARecordEditedOnTheServer() async throws {
        try await withSyncFixture { sync, server, _ in
            var note = SyncNote(id: nil, title: "A")
            try await sync.save(&note)
            try await sync.push()
            note = try #require(try await sync.database.read { db in try SyncNote.all(db).first })
            try await Self.edit { $0.title = "kept" }(RemoteStore(baseURL: server.baseURL), note)
            try await sync.delete(note)
            let summary = try await sync.push()
            // Merge: the server's edit wins over the local delete; the row comes back.
            #expect(summary.conflicts == 1)
            #expect(try await serverRecords(server, "notes")[note.id ?? 0]?["title"]?.stringValue == "kept")
            let row = try await localRow(sync, note.id)
            #expect(row?.title == "kept")
        }
    }
}
