import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// A database written by the release before sent entries and keys on every write: its outbox,
/// entries still queued, is upgraded when a store opens it, and the entries are pushed.
@Suite struct OutboxUpgradeTests {
    /// The outbox as that release created it (never edit: it is what apps have on disk).
    static let releasedOutbox = """
        CREATE TABLE modelsync_outbox (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL, local_key TEXT NOT NULL, operation TEXT NOT NULL,
            body TEXT NOT NULL, changed_fields TEXT NOT NULL, base_values TEXT, server_version TEXT, idempotency_key TEXT,
            temporary_key INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL DEFAULT 'pending',
            last_error TEXT, field_errors TEXT
        );
        CREATE INDEX modelsync_outbox_row ON modelsync_outbox(model, local_key);
        CREATE TABLE modelsync_key_rewrites (
            model TEXT NOT NULL, temporary_key TEXT NOT NULL, server_key TEXT NOT NULL, PRIMARY KEY (model, temporary_key)
        ) WITHOUT ROWID;
        CREATE TABLE modelsync_row_versions (model TEXT NOT NULL, key TEXT NOT NULL, version TEXT NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID;
        CREATE TABLE modelsync_cursors (resource TEXT PRIMARY KEY, cursor TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE modelsync_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        """

    @Test func queuedEntriesOfTheReleasedFormatArePushedAfterTheUpgrade() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-outbox-upgrade")
        defer { directory.remove() }
        try await withTestServer(data: ["notes": [["id": 1, "title": "a", "body": "", "stars": 0]], "replies": []]) { server in
            let path = directory.path("app.sqlite")
            do {
                // As the released version left it: a create of a temporary key (sent once, its
                // answer lost), an update without an idempotency key, a row version.
                let database = try Database(path: path, models: [SyncNote.self])
                try await database.write { db in
                    try db.executeScript(Self.releasedOutbox)
                    var offline = SyncNote(id: -1, title: "offline")
                    var edited = SyncNote(id: 1, title: "edited")
                    try offline.insert(db)
                    try edited.save(db)
                    try db.execute("""
                        INSERT INTO modelsync_outbox (model, local_key, operation, body, changed_fields, idempotency_key, temporary_key, attempts)
                        VALUES ('SyncNote', '-1', 'create', '{"id":-1,"title":"offline","body":"","stars":0}', '["id","title","body","stars"]', 'released-key', 1, 1)
                        """)
                    try db.execute("""
                        INSERT INTO modelsync_outbox (model, local_key, operation, body, changed_fields, base_values, server_version)
                        VALUES ('SyncNote', '1', 'update', '{"title":"edited"}', '["title"]', '{"id":1,"title":"a","body":"","stars":0}', '"1"')
                        """)
                    try db.execute(#"INSERT INTO modelsync_row_versions VALUES ('SyncNote', '1', '"1"')"#)
                    try db.execute("INSERT INTO modelsync_counters VALUES ('temporary_key', -1)")
                }
            }
            let sync = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: try Database(path: path, models: [SyncNote.self]), models: [SyncNote.self])
            #expect(try await sync.pendingCount() == 2)
            try await sync.push()
            let records = try await serverRecords(server, "notes")
            #expect(records.values.compactMap { $0["title"]?.stringValue }.sorted() == ["edited", "offline"])
            #expect(try await sync.pendingCount() == 0)
            let local = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            #expect(local.map(\.id) == [1, 2])
            // The upgrade ran once: the format is recorded, and opening again changes nothing.
            let format = try await sync.database.read { db in try db.scalar("SELECT value FROM modelsync_counters WHERE name = 'outbox_format'") }
            #expect(format == .integer(1))
            let again = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: try Database(path: path, models: [SyncNote.self]), models: [SyncNote.self])
            #expect(try await again.pendingCount() == 0)
        }
    }
}
