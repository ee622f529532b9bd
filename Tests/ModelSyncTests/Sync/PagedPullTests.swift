import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// Pulls of more than one feed page: the next page is fetched while the current one is
/// written, every page commits on its own, and a pull that fails part-way keeps what it
/// committed and resumes from there.
@Suite struct PagedPullTests {
    /// 2,500 notes: three pages of the feed at 1,000 a page.
    static let seed: JSONValue = [
        "notes": .array((1...2_500).map { id in ["id": .number(JSONNumber(id)), "title": .string("note \(id)"), "body": "", "stars": 0] }),
        "replies": [],
    ]

    func feedRequests(_ server: TestServer) -> [String] {
        server.recordedRequests.filter { $0.method == "GET" && $0.uri.contains("_since=") }.map(\.uri)
    }

    @Test func aPullOfManyPagesStoresEveryRowOnce() async throws {
        try await withSyncFixture(data: Self.seed, pullPageSize: 1_000) { sync, server, _ in
            let summary = try await sync.pull(SyncNote.self)
            #expect(summary.upserted == 2_500 && summary.deleted == 0 && summary.requests == 3 && !summary.fullResync)
            let rows = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            #expect(rows.map(\.id) == (1...2_500).map(Optional.some))
            #expect(rows.last?.title == "note 2500")
            // Every page asked once, each after the cursor the page before it gave.
            let requests = feedRequests(server)
            #expect(requests.count == 3 && Set(requests).count == 3)
            // Nothing changed since: one request, nothing applied.
            let again = try await sync.pull(SyncNote.self)
            #expect(again.upserted == 0 && again.requests == 1)
        }
    }

    @Test func aPageWhoseWriteFailsKeepsTheEarlierPagesAndTheNextPullResumes() async throws {
        try await withSyncFixture(data: Self.seed, pullPageSize: 1_000) { sync, server, _ in
            let table = quoteIdentifier(SyncNote.sqlTable.name)
            // The second page cannot be written: its transaction rolls back, the first stays.
            try await sync.database.write { db in
                try db.execute("CREATE TRIGGER refuse_1500 BEFORE INSERT ON \(table) WHEN NEW.id = 1500 BEGIN SELECT RAISE(ABORT, 'refused'); END")
            }
            await #expect(throws: SQLiteError.self) { try await sync.pull(SyncNote.self) }
            let kept = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            #expect(kept.map(\.id) == (1...1_000).map(Optional.some))

            try await sync.database.write { db in try db.execute("DROP TRIGGER refuse_1500") }
            let before = feedRequests(server).count
            let resumed = try await sync.pull(SyncNote.self)
            // From the first page's cursor: the other two pages only.
            #expect(resumed.upserted == 1_500 && resumed.requests == 2)
            #expect(!feedRequests(server).dropFirst(before).contains { $0.contains("_since=0&") })
            let rows = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            #expect(rows.map(\.id) == (1...2_500).map(Optional.some))
        }
    }
}
