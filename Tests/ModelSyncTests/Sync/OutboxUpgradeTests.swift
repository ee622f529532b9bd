import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

/// Databases written by earlier releases, entries still queued: their bookkeeping is upgraded
/// when a store opens them, and the entries are pushed.
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

    /// The bookkeeping of the last release of raw SQL (`outbox_format` 1), as it made and wrote
    /// it: its statements, copied (never edit: it is what apps have on disk).
    enum Format1Release {
        static let step1 = """
            ALTER TABLE modelsync_outbox ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
            UPDATE modelsync_outbox SET sent = 1 WHERE attempts > 0;
            UPDATE modelsync_outbox SET idempotency_key = lower(hex(randomblob(16))) WHERE idempotency_key IS NULL;
            """
        static let recordFormat = "INSERT OR REPLACE INTO modelsync_counters (name, value) VALUES ('outbox_format', ?)"
        static let nextTemporaryKey = """
            INSERT INTO modelsync_counters (name, value) VALUES ('temporary_key', -1)
            ON CONFLICT (name) DO UPDATE SET value = value - 1
            """
        static let insert = """
            INSERT INTO modelsync_outbox (model, local_key, operation, body, changed_fields, base_values, idempotency_key, temporary_key, server_version)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        static let markSent = "UPDATE modelsync_outbox SET sent = 1 WHERE sent = 0 AND sequence IN (?)"
        static let failed = "UPDATE modelsync_outbox SET attempts = attempts + 1, last_error = ? WHERE sequence = ?"
        static let setVersion = "INSERT OR REPLACE INTO modelsync_row_versions (model, key, version) VALUES (?, ?, ?)"
        static let setCursor = "INSERT OR REPLACE INTO modelsync_cursors (resource, cursor) VALUES (?, ?)"

        /// What that release's `prepare` ran on a file of the release before (on a new file it
        /// ran the same tables' `CREATE … IF NOT EXISTS` first: the same tables).
        static func prepare(_ db: SQLiteConnection) throws {
            try db.executeScript(OutboxUpgradeTests.releasedOutbox)
            try db.executeScript(step1)
            try db.execute(recordFormat, [.integer(1)])
        }

        /// An entry as that release's `insert` wrote it; returns its sequence.
        static func queue(
            _ operation: String, key: String, body: String, fields: String, base: String? = nil, idempotencyKey: String,
            temporary: Bool = false, version: String? = nil, _ db: SQLiteConnection
        ) throws -> Int64 {
            try db.execute(insert, [
                .text("SyncNote"), .text(key), .text(operation), .text(body), .text(fields), base.map(SQLValue.text) ?? .null,
                .text(idempotencyKey), .integer(temporary ? 1 : 0), version.map(SQLValue.text) ?? .null,
            ])
            return db.lastInsertRowID
        }
    }

    /// The current release's format, with entries of every kind still queued: a create under a
    /// temporary key, an update, a delete, and a create that was sent and whose answer was lost
    /// (the server applied it). After the upgrade they are pushed, the sent one exactly once.
    @Test func queuedEntriesOfTheLastRawSQLReleaseArePushedAfterTheUpgrade() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-outbox-upgrade")
        defer { directory.remove() }
        let data: JSONValue = ["notes": [["id": 1, "title": "a", "body": "", "stars": 0], ["id": 2, "title": "b", "body": "", "stars": 0]], "replies": []]
        try await withTestServer(data: data) { server in
            let path = directory.path("app.sqlite")
            // The sent create reached the server; its answer did not reach the client.
            let api = RemoteStore(baseURL: server.baseURL)
            var headers = HeaderFields()
            headers["Idempotency-Key"] = "sent-create-key"
            let sentBody = Array(#"{"title":"sent","body":"","stars":0}"#.utf8)
            _ = try await api.send(RemoteRequest(method: .post, url: try await api.resourceURL(for: SyncNote.self), body: sentBody),
                                   options: RequestOptions(headers: headers))
            do {
                let database = try Database(path: path, models: [SyncNote.self])
                try await database.write { db in
                    try Format1Release.prepare(db)
                    try db.execute(Format1Release.setVersion, [.text("SyncNote"), .text("1"), .text(#""1""#)])
                    try db.execute(Format1Release.setVersion, [.text("SyncNote"), .text("2"), .text(#""2""#)])
                    try db.execute(Format1Release.setCursor, [.text("SyncNote"), .text("2")])
                    var offline = SyncNote(id: -1, title: "offline")
                    var sent = SyncNote(id: -2, title: "sent")
                    var edited = SyncNote(id: 1, title: "edited")
                    try offline.insert(db)
                    try sent.insert(db)
                    try edited.save(db)
                    try db.execute(Format1Release.nextTemporaryKey)
                    _ = try Format1Release.queue(
                        "create", key: "-1", body: #"{"id":-1,"title":"offline","body":"","stars":0}"#, fields: #"["id","title","body","stars"]"#,
                        idempotencyKey: "offline-create-key", temporary: true, db)
                    _ = try Format1Release.queue(
                        "update", key: "1", body: #"{"title":"edited"}"#, fields: #"["title"]"#, base: #"{"id":1,"title":"a","body":"","stars":0}"#,
                        idempotencyKey: "update-key", version: #""1""#, db)
                    _ = try Format1Release.queue(
                        "delete", key: "2", body: "{}", fields: "[]", base: #"{"id":2,"title":"b","body":"","stars":0}"#,
                        idempotencyKey: "delete-key", version: #""2""#, db)
                    try db.execute(Format1Release.nextTemporaryKey)
                    let sentCreate = try Format1Release.queue(
                        "create", key: "-2", body: #"{"id":-2,"title":"sent","body":"","stars":0}"#, fields: #"["id","title","body","stars"]"#,
                        idempotencyKey: "sent-create-key", temporary: true, db)
                    try db.execute(Format1Release.markSent, [.integer(sentCreate)])
                    try db.execute(Format1Release.failed, [.text("the answer was lost"), .integer(sentCreate)])
                }
            }

            let sync = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: try Database(path: path, models: [SyncNote.self]), models: [SyncNote.self])
            #expect(try await sync.pendingCount() == 4)
            try await sync.push()
            #expect(try await sync.pendingCount() == 0)
            let records = try await serverRecords(server, "notes")
            #expect(records.keys.sorted() == [1, 3, 4])
            #expect(records.values.compactMap { $0["title"]?.stringValue }.sorted() == ["edited", "offline", "sent"])
            // The cursor was kept: a pull reads on from it, and changes nothing the push did.
            try await sync.pull(SyncNote.self)
            let local = try await sync.database.read { db in try SyncNote.all(db, order: "id") }
            #expect(local.map(\.id) == [1, 3, 4])
            #expect(local.map(\.title) == ["edited", "sent", "offline"])
            // A new temporary key follows the release's counter.
            var draft = SyncNote(id: nil, title: "draft")
            try await sync.save(&draft)
            #expect(draft.id == -3)

            // The upgrade is recorded as the sync layer's migration, the old counter is left as
            // it was, and opening the file again changes nothing.
            let applied = try await sync.database.read { db in
                try db.rows("SELECT id FROM modelsync_migrations ORDER BY rowid").compactMap { $0[0].textValue }
            }
            #expect(applied == ["modelsync:sync/1-outbox-format-1", "modelsync:sync/2-subscriptions"])
            let format = try await sync.database.read { db in try db.scalar("SELECT value FROM modelsync_counters WHERE name = 'outbox_format'") }
            #expect(format == .integer(1))
            let again = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: try Database(path: path, models: [SyncNote.self]), models: [SyncNote.self])
            #expect(try await again.pendingCount() == 1)
        }
    }

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
