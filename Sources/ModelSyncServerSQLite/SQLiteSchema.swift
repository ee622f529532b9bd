import Foundation
import ModelSyncSQLite
import ModelSyncServer

/// The tables of a server's SQLite file, all named `modelsync_server_…`:
///
/// - `state`: one row, the last sequence value handed out, the feed's horizon and when the data
///   last changed (seconds);
/// - `resources`: the top-level names in the data's order: collections, singular resources
///   (their value as JSON text) and other values; a collection's highest deleted integer id;
/// - `records`: every collection's records, one row each (the record as JSON text, its id as
///   text, its integer id, its version), in the data's order by `row_id`;
/// - `tombstones`: each deletion (and departure) with, under a sharing rule, the row's shared
///   fields as they were (`fields`, JSON text);
/// - `idempotency_keys`, `accounts`, `refresh_tokens`: the bookkeeping, each pruned
///   or looked up by an index of its own.
///
/// Under sharing rules, the records also have partial expression indexes on the fields the rules
/// name and on the parent keys (`SharingSQL.indexes(for:)`), and under access rules one on the
/// accounts collection's normalized email (`emailIndex(on:)`), made at start.
///
/// The schema is made and moved on by the package's ``/ModelSyncSQLite/Migrator``: each
/// change to it is a migration of its own, appended to ``migrator``.
enum SQLiteSchema {
    static let state = "modelsync_server_state"
    static let resources = "modelsync_server_resources"
    static let records = "modelsync_server_records"
    static let tombstones = "modelsync_server_tombstones"
    static let idempotencyKeys = "modelsync_server_idempotency_keys"
    static let accounts = "modelsync_server_accounts"
    static let refreshTokens = "modelsync_server_refresh_tokens"

    /// The bookkeeping's migrations.
    static var migrator: Migrator {
        var migrator = Migrator(reservedPart: "server")
        for (id, sql) in migrations { migrator.registerSQL(id, sql) }
        return migrator
    }

    /// Each migration's id and SQL, in order (append new ones; never change one that shipped).
    static let migrations: [(id: String, sql: String)] = [
        ("modelsync:server/1-tables", """
            CREATE TABLE \(state) (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                sequence INTEGER NOT NULL, horizon INTEGER NOT NULL, modified INTEGER NOT NULL);
            INSERT INTO \(state) (singleton, sequence, horizon, modified) VALUES (1, 0, 0, CAST(strftime('%s', 'now') AS INTEGER));
            CREATE TABLE \(resources) (
                name TEXT PRIMARY KEY NOT NULL, position INTEGER NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('collection', 'singular', 'value')),
                value TEXT, deleted_id INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE \(records) (
                row_id INTEGER PRIMARY KEY, collection TEXT NOT NULL, id_text TEXT, integer_id INTEGER,
                version INTEGER NOT NULL, record TEXT NOT NULL, created_with TEXT);
            CREATE UNIQUE INDEX modelsync_server_records_id ON \(records) (collection, id_text);
            CREATE INDEX modelsync_server_records_order ON \(records) (collection);
            CREATE INDEX modelsync_server_records_integer_id ON \(records) (collection, integer_id);
            CREATE UNIQUE INDEX modelsync_server_records_version ON \(records) (version);
            CREATE TABLE \(tombstones) (
                sequence INTEGER PRIMARY KEY, collection TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL,
                owner TEXT, departed INTEGER NOT NULL DEFAULT 0);
            CREATE INDEX modelsync_server_tombstones_at ON \(tombstones) (at);
            CREATE TABLE \(idempotencyKeys) (
                key TEXT PRIMARY KEY NOT NULL, collection TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL,
                status INTEGER, version INTEGER, at INTEGER NOT NULL);
            CREATE INDEX modelsync_server_idempotency_keys_at ON \(idempotencyKeys) (at);
            CREATE TABLE \(accounts) (
                email TEXT PRIMARY KEY NOT NULL, collection TEXT NOT NULL, user_id TEXT NOT NULL, password_hash TEXT NOT NULL,
                role TEXT, generation INTEGER NOT NULL DEFAULT 0);
            CREATE INDEX modelsync_server_accounts_user ON \(accounts) (user_id, collection);
            CREATE TABLE \(refreshTokens) (
                hash TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, family TEXT NOT NULL, expires REAL NOT NULL,
                rotated REAL, successor TEXT, sealed_successor TEXT);
            CREATE INDEX modelsync_server_refresh_tokens_family ON \(refreshTokens) (family);
            CREATE INDEX modelsync_server_refresh_tokens_user ON \(refreshTokens) (user_id);
            CREATE INDEX modelsync_server_refresh_tokens_expires ON \(refreshTokens) (expires)
            """),
        // Sharing rules: a tombstone keeps the deleted row's shared fields (JSON text), and the
        // feed looks a deleted parent's up by its id.
        ("modelsync:server/2-tombstone-fields", """
            ALTER TABLE \(tombstones) ADD COLUMN fields TEXT;
            CREATE INDEX modelsync_server_tombstones_id ON \(tombstones) (collection, id)
            """),
    ]

    /// A record's email as registration compares it: the expression `emailIndex(on:)` indexes,
    /// spelled the same (SQLite uses an expression index only for the expression it was made with).
    static let normalizedEmail = "modelsync_email(json_extract(record, '$.email'))"

    /// The partial expression index of `collection`'s records by their normalized email, made at
    /// start under access rules (the accounts collection): registration's check that an email is
    /// free is one indexed lookup, not a scan of the users on the writer. Its expression calls
    /// `modelsync_email`, so every connection that writes the records registers that function.
    static func emailIndex(on collection: String) -> String {
        let name = "modelsync_server_records_email_" + SharingSQL.indexName(collection: collection, field: "email").dropFirst("modelsync_server_records_field_".count)
        return "CREATE INDEX IF NOT EXISTS \(name) ON \(records) (collection, \(normalizedEmail)) WHERE collection = \(SharingSQL.literal(collection))"
    }

    /// The SQL function that normalizes an email as accounts are keyed by it
    /// (``/ModelSyncServer/StoredAccount/normalizedEmail(_:)``): registration compares the
    /// records' emails with it in SQL.
    static let emailFunction = SQLiteScalarFunction("modelsync_email", argumentCount: 1, deterministic: true) { arguments in
        guard case .text(let text) = arguments.first else { return .null }
        return StoredAccount.normalizedEmail(text).map(SQLValue.text) ?? .null
    }
}
