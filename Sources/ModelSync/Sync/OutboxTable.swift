import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncSQLite

/// The sync bookkeeping tables, in the app's own database file so that a local write and its
/// outbox entry commit in one transaction.
///
/// `base_values` (the row before the first pending change) and `server_version` (sent as
/// `If-Match`) serve conflict detection and three-way merges; `modelsync_row_versions` holds
/// each row's last known server version and `modelsync_cursors` each resource's pull cursor.
///
/// An entry that was ever sent (`sent`) is frozen: the server may have applied it, so its
/// request (body and `Idempotency-Key`) never changes and later local changes queue behind it
/// as entries of their own. Only an answer that says it was not applied (412, 404) turns it
/// into another request, under a new key.
enum OutboxTable {
    static let schema = """
        CREATE TABLE IF NOT EXISTS modelsync_outbox (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            model TEXT NOT NULL,
            local_key TEXT NOT NULL,
            operation TEXT NOT NULL,
            body TEXT NOT NULL,
            changed_fields TEXT NOT NULL,
            base_values TEXT,
            server_version TEXT,
            idempotency_key TEXT,
            temporary_key INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'pending',
            last_error TEXT,
            field_errors TEXT
        );
        CREATE INDEX IF NOT EXISTS modelsync_outbox_row ON modelsync_outbox(model, local_key);
        CREATE TABLE IF NOT EXISTS modelsync_key_rewrites (
            model TEXT NOT NULL, temporary_key TEXT NOT NULL, server_key TEXT NOT NULL,
            PRIMARY KEY (model, temporary_key)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS modelsync_row_versions (
            model TEXT NOT NULL, key TEXT NOT NULL, version TEXT NOT NULL, PRIMARY KEY (model, key)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS modelsync_cursors (resource TEXT PRIMARY KEY, cursor TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS modelsync_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        """

    /// The changes to the tables above, in order; the counter `outbox_format` says how many a
    /// database has. Released steps are never edited: a database written by any earlier
    /// version, entries still queued, takes the steps it lacks.
    static let migrations: [String] = [
        // 1: every entry has an idempotency key, and an entry ever sent is marked so (entries
        // that failed before may have been applied: they count as sent).
        """
        ALTER TABLE modelsync_outbox ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
        UPDATE modelsync_outbox SET sent = 1 WHERE attempts > 0;
        UPDATE modelsync_outbox SET idempotency_key = lower(hex(randomblob(16))) WHERE idempotency_key IS NULL;
        """,
    ]

    /// Creates the tables and brings them to the current format, in the caller's transaction.
    static func prepare(_ db: SQLiteConnection) throws {
        try db.executeScript(schema)
        let format: Int64
        if case .integer(let value)? = try db.scalar("SELECT value FROM modelsync_counters WHERE name = 'outbox_format'") { format = value } else { format = 0 }
        guard format < migrations.count else { return }
        for step in migrations.dropFirst(Int(max(format, 0))) { try db.executeScript(step) }
        try db.execute("INSERT OR REPLACE INTO modelsync_counters (name, value) VALUES ('outbox_format', ?)", [.integer(Int64(migrations.count))])
    }

    /// One row of `modelsync_outbox`.
    struct Row: Sendable {
        var sequence: Int64
        var model: String
        var localKey: JSONValue
        var operation: OutboxOperation
        var body: JSONValue
        var changedFields: [String]
        var baseValues: JSONValue?
        var idempotencyKey: String?
        var temporaryKey: Bool
        var attempts: Int
        var state: OutboxEntryState
        var lastError: String?
        var fieldErrors: [String: [String]]
        /// The row's server version when the entry's base was taken: sent as `If-Match`.
        var serverVersion: String? = nil
        /// Whether the entry was ever sent: the server may have applied it.
        var sent = false

        var publicEntry: OutboxEntry {
            OutboxEntry(sequence: sequence, model: model, localKey: localKey, operation: operation, changedFields: changedFields,
                        state: state, attempts: attempts, lastError: lastError, fieldErrors: fieldErrors)
        }
    }

    static let columns = "sequence, model, local_key, operation, body, changed_fields, base_values, idempotency_key, temporary_key, attempts, state, last_error, field_errors, server_version, sent"

    static func text(_ value: JSONValue) -> String { String(decoding: value.jsonBytes(), as: UTF8.self) }

    static func decode(_ values: [SQLValue]) throws -> Row {
        guard values.count == 15, case .integer(let sequence) = values[0] else {
            throw SyncError.corruptEntry(sequence: -1, reason: "unexpected columns")
        }
        func string(_ index: Int) -> String? { if case .text(let text) = values[index] { return text } else { return nil } }
        func integer(_ index: Int) -> Int64 { if case .integer(let value) = values[index] { return value } else { return 0 } }
        func json(_ index: Int) throws -> JSONValue? {
            guard let text = string(index) else { return nil }
            do { return try JSONValue(parsing: text) } catch { throw SyncError.corruptEntry(sequence: sequence, reason: "\(error)") }
        }
        guard let model = string(1), let key = try json(2), let operation = string(3).flatMap(OutboxOperation.init(rawValue:)),
              let body = try json(4), let state = string(10).flatMap(OutboxEntryState.init(rawValue:))
        else { throw SyncError.corruptEntry(sequence: sequence, reason: "missing or unknown column value") }
        var fieldErrors: [String: [String]] = [:]
        if case .object(let object)? = try json(12) {
            for (name, messages) in object { fieldErrors[name] = messages.arrayValue?.compactMap(\.stringValue) ?? [] }
        }
        return Row(
            sequence: sequence, model: model, localKey: key, operation: operation, body: body,
            changedFields: try json(5)?.arrayValue?.compactMap(\.stringValue) ?? [], baseValues: try json(6),
            idempotencyKey: string(7), temporaryKey: integer(8) != 0, attempts: Int(integer(9)), state: state,
            lastError: string(11), fieldErrors: fieldErrors, serverVersion: string(13), sent: integer(14) != 0)
    }

    static func entries(_ db: SQLiteConnection, where condition: String, _ arguments: [SQLValue] = [], limit: Int? = nil) throws -> [Row] {
        try db.rows("SELECT \(columns) FROM modelsync_outbox WHERE \(condition) ORDER BY sequence" + (limit.map { " LIMIT \($0)" } ?? ""), arguments).map(decode)
    }

    /// The oldest entries, pending and parked, up to `limit` beyond the parked ones: a parked
    /// entry holds back its row's later changes and its children's.
    static func queue(_ db: SQLiteConnection, limit: Int) throws -> [Row] {
        guard case .integer(let parked)? = try db.scalar("SELECT count(*) FROM modelsync_outbox WHERE state = 'parked'") else { return [] }
        return try entries(db, where: "1", limit: Int(parked) + limit)
    }

    static func insert(_ row: Row, _ db: SQLiteConnection) throws {
        try db.execute(
            """
            INSERT INTO modelsync_outbox (model, local_key, operation, body, changed_fields, base_values, idempotency_key, temporary_key, server_version)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(row.model), .text(text(row.localKey)), .text(row.operation.rawValue), .text(text(row.body)),
             .text(text(.array(row.changedFields.map(JSONValue.string)))), row.baseValues.map { .text(text($0)) } ?? .null,
             row.idempotencyKey.map(SQLValue.text) ?? .null, .integer(row.temporaryKey ? 1 : 0), row.serverVersion.map(SQLValue.text) ?? .null])
    }

    /// Replaces everything an entry asks for, keeping its place in the queue: a conflict's
    /// resolution turns an entry into another request, with a new idempotency key, not sent yet.
    static func rewrite(_ row: Row, _ db: SQLiteConnection) throws {
        try db.execute(
            """
            UPDATE modelsync_outbox SET operation = ?, body = ?, changed_fields = ?, base_values = ?, idempotency_key = ?,
                temporary_key = ?, server_version = ?, state = 'pending', field_errors = NULL, sent = 0 WHERE sequence = ?
            """,
            [.text(row.operation.rawValue), .text(text(row.body)), .text(text(.array(row.changedFields.map(JSONValue.string)))),
             row.baseValues.map { .text(text($0)) } ?? .null, .text(newIdempotencyKey()),
             .integer(row.temporaryKey ? 1 : 0), row.serverVersion.map(SQLValue.text) ?? .null, .integer(row.sequence)])
    }

    // MARK: Server versions

    /// The server version of a row, as last seen in a response or a pull.
    static func version(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> String? {
        guard case .text(let version)? = try db.scalar(
            "SELECT version FROM modelsync_row_versions WHERE model = ? AND key = ?", [.text(model), .text(text(key))]) else { return nil }
        return version
    }

    /// The server versions of the rows among `keys` (JSON texts) that have one, in one statement.
    static func versions(model: String, keys: [String], _ db: SQLiteConnection) throws -> [String: String] {
        var versions: [String: String] = [:]
        let list = JSONValue.array(keys.map(JSONValue.string))
        for row in try db.rows(
            "SELECT key, version FROM modelsync_row_versions WHERE model = ? AND key IN (SELECT value FROM json_each(?))", [.text(model), .text(text(list))]) {
            if case .text(let key) = row[0], case .text(let version) = row[1] { versions[key] = version }
        }
        return versions
    }

    /// Records a row's server version; nil forgets it (the record is gone).
    static func setVersion(_ version: String?, model: String, _ key: JSONValue, _ db: SQLiteConnection) throws {
        if let version {
            try db.execute("INSERT OR REPLACE INTO modelsync_row_versions (model, key, version) VALUES (?, ?, ?)",
                           [.text(model), .text(text(key)), .text(version)])
        } else {
            try db.execute("DELETE FROM modelsync_row_versions WHERE model = ? AND key = ?", [.text(model), .text(text(key))])
        }
    }

    /// The stored pull cursor of a resource.
    static func cursor(_ resource: String, _ db: SQLiteConnection) throws -> String? {
        guard case .text(let cursor)? = try db.scalar("SELECT cursor FROM modelsync_cursors WHERE resource = ?", [.text(resource)]) else { return nil }
        return cursor
    }

    static func setCursor(_ cursor: String?, _ resource: String, _ db: SQLiteConnection) throws {
        if let cursor {
            try db.execute("INSERT OR REPLACE INTO modelsync_cursors (resource, cursor) VALUES (?, ?)", [.text(resource), .text(cursor)])
        } else {
            try db.execute("DELETE FROM modelsync_cursors WHERE resource = ?", [.text(resource)])
        }
    }

    /// A fresh `Idempotency-Key`.
    static func newIdempotencyKey() -> String { UUID().uuidString.lowercased() }

    /// Marks entries as sent, before their request leaves: from then on they are frozen.
    static func markSent(_ sequences: [Int64], _ db: SQLiteConnection) throws {
        guard !sequences.isEmpty else { return }
        let placeholders = Array(repeating: "?", count: sequences.count).joined(separator: ", ")
        try db.execute("UPDATE modelsync_outbox SET sent = 1 WHERE sent = 0 AND sequence IN (\(placeholders))", sequences.map(SQLValue.integer))
    }

    /// Whether a row has an entry that was sent and not yet answered for certain.
    static func hasSentEntry(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> Bool {
        try db.scalar("SELECT 1 FROM modelsync_outbox WHERE model = ? AND local_key = ? AND sent = 1 LIMIT 1", [.text(model), .text(text(key))]) != nil
    }

    static func replace(_ row: Row, _ db: SQLiteConnection) throws {
        try db.execute(
            "UPDATE modelsync_outbox SET operation = ?, body = ?, changed_fields = ?, base_values = ? WHERE sequence = ?",
            [.text(row.operation.rawValue), .text(text(row.body)), .text(text(.array(row.changedFields.map(JSONValue.string)))),
             row.baseValues.map { .text(text($0)) } ?? .null, .integer(row.sequence)])
    }

    static func delete(_ sequence: Int64, _ db: SQLiteConnection) throws {
        try db.execute("DELETE FROM modelsync_outbox WHERE sequence = ?", [.integer(sequence)])
    }

    static func pendingCount(_ db: SQLiteConnection) throws -> Int {
        guard case .integer(let count)? = try db.scalar("SELECT count(*) FROM modelsync_outbox WHERE state = 'pending'") else { return 0 }
        return Int(count)
    }

    /// The next temporary integer key: -1, -2, … (servers assign positive ids).
    static func nextTemporaryKey(_ db: SQLiteConnection) throws -> Int64 {
        try db.execute("""
            INSERT INTO modelsync_counters (name, value) VALUES ('temporary_key', -1)
            ON CONFLICT (name) DO UPDATE SET value = value - 1
            """)
        guard case .integer(let value)? = try db.scalar("SELECT value FROM modelsync_counters WHERE name = 'temporary_key'") else {
            throw SyncError.corruptEntry(sequence: -1, reason: "temporary key counter missing")
        }
        return value
    }

    /// The server key a temporary key was rewritten to, if it was.
    static func rewrittenKey(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> JSONValue? {
        guard case .text(let text)? = try db.scalar(
            "SELECT server_key FROM modelsync_key_rewrites WHERE model = ? AND temporary_key = ?", [.text(model), .text(Self.text(key))])
        else { return nil }
        return try JSONValue(parsing: text)
    }
}

extension JSONValue {
    /// The value as a SQL primary-key value: integers and strings only.
    func primaryKeySQLValue(model: String) throws -> SQLValue {
        if let integer = intValue { return .integer(Int64(integer)) }
        if let string = stringValue { return .text(string) }
        throw SyncError.unsupportedKey(model: model)
    }
}
