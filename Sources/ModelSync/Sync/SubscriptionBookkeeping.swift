import Foundation
import ModelSyncJSON
import ModelSyncSQLite

/// The subscriptions and the rows each holds, in the synced database beside the outbox: a row
/// pulled by a subscription is held by it until the row leaves its filter, is deleted, or the
/// subscription ends. A row no subscription holds (and no whole-collection pull keeps, and no
/// pending change needs) is removed from the device.
enum SubscriptionBookkeeping {
    /// Migration 2 of ``SyncBookkeeping/migrator``: frozen once released.
    static let schema = """
        CREATE TABLE IF NOT EXISTS modelsync_subscriptions (
            id TEXT PRIMARY KEY, model TEXT NOT NULL, filter TEXT NOT NULL,
            ttl REAL, expires_at REAL, synced INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS modelsync_subscription_rows (
            subscription TEXT NOT NULL, model TEXT NOT NULL, key NOT NULL, stale INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (subscription, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS modelsync_subscription_rows_key ON modelsync_subscription_rows(model, key);
        """

    /// The pull cursor's resource of a subscription (``SyncBookkeeping/cursor(_:_:)``): apart
    /// from the model's own, which a whole-collection pull keeps.
    static func cursorResource(_ id: String) -> String { "subscription:" + id }

    static func all(_ db: SQLiteConnection) throws -> [SyncSubscription] {
        try db.rows("SELECT id, model, filter, ttl, expires_at, synced FROM modelsync_subscriptions ORDER BY id").map(SyncSubscription.init(row:))
    }

    static func find(_ id: String, _ db: SQLiteConnection) throws -> SyncSubscription? {
        try db.rows("SELECT id, model, filter, ttl, expires_at, synced FROM modelsync_subscriptions WHERE id = ?", [.text(id)]).first
            .map(SyncSubscription.init(row:))
    }

    /// Adds the subscription, or renews its time to live when it exists.
    static func upsert(_ subscription: SyncSubscription, _ db: SQLiteConnection) throws {
        try db.execute("""
            INSERT INTO modelsync_subscriptions (id, model, filter, ttl, expires_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET ttl = excluded.ttl, expires_at = excluded.expires_at
            """, [.text(subscription.id), .text(subscription.model), .text(subscription.filter),
                  subscription.timeToLive.map { .real($0) } ?? .null, subscription.expiresAt.map { .real($0.timeIntervalSince1970) } ?? .null])
    }

    static func setSynced(_ id: String, _ db: SQLiteConnection) throws {
        try db.execute("UPDATE modelsync_subscriptions SET synced = 1 WHERE id = ? AND synced = 0", [.text(id)])
    }

    // Keys are stored as the row's primary-key value (an integer or a text, no affinity), so
    // that they compare with the table's column exactly.

    /// The subscription holds the row (again: no longer stale).
    static func hold(_ id: String, model: String, key: SQLValue, _ db: SQLiteConnection) throws {
        try db.execute("""
            INSERT INTO modelsync_subscription_rows (subscription, model, key) VALUES (?, ?, ?)
            ON CONFLICT (subscription, key) DO UPDATE SET stale = 0 WHERE stale <> 0
            """, [.text(id), .text(model), key])
    }

    /// The subscription no longer holds the row; false when it did not hold it.
    @discardableResult
    static func release(_ id: String, key: SQLValue, _ db: SQLiteConnection) throws -> Bool {
        try db.execute("DELETE FROM modelsync_subscription_rows WHERE subscription = ? AND key = ?", [.text(id), key])
        return db.changes > 0
    }

    /// The row is deleted: no subscription holds it.
    static func releaseEverywhere(model: String, key: SQLValue, _ db: SQLiteConnection) throws {
        try db.execute("DELETE FROM modelsync_subscription_rows WHERE model = ? AND key = ?", [.text(model), key])
    }

    /// Whether any subscription holds the row.
    static func isHeld(model: String, key: SQLValue, _ db: SQLiteConnection) throws -> Bool {
        try db.scalar("SELECT 1 FROM modelsync_subscription_rows WHERE model = ? AND key = ? LIMIT 1", [.text(model), key]) != nil
    }

    /// The keys of `table`'s rows that no subscription of `model` holds.
    static func unheld(model: String, table: String, column: String, _ db: SQLiteConnection) throws -> [SQLValue] {
        let (table, column) = (quoteIdentifier(table), quoteIdentifier(column))
        return try db.rows("""
            SELECT \(column) FROM \(table) AS row WHERE NOT EXISTS (
                SELECT 1 FROM modelsync_subscription_rows WHERE model = ? AND key = row.\(column))
            """, [.text(model)]).compactMap(\.first)
    }

    /// Marks every row the subscription holds as stale, before it reads everything again: those
    /// the read does not hold again go (``releaseStale(_:_:)``).
    static func markStale(_ id: String, _ db: SQLiteConnection) throws {
        try db.execute("UPDATE modelsync_subscription_rows SET stale = 1 WHERE subscription = ?", [.text(id)])
    }

    /// Releases the rows still stale, returning their keys.
    static func releaseStale(_ id: String, _ db: SQLiteConnection) throws -> [SQLValue] {
        let keys = try db.rows("SELECT key FROM modelsync_subscription_rows WHERE subscription = ? AND stale = 1", [.text(id)]).compactMap(\.first)
        try db.execute("DELETE FROM modelsync_subscription_rows WHERE subscription = ? AND stale = 1", [.text(id)])
        return keys
    }

    /// Removes the subscription, its cursor and its holds, returning the keys it held.
    static func remove(_ id: String, _ db: SQLiteConnection) throws -> [SQLValue] {
        let keys = try db.rows("SELECT key FROM modelsync_subscription_rows WHERE subscription = ?", [.text(id)]).compactMap(\.first)
        try db.execute("DELETE FROM modelsync_subscription_rows WHERE subscription = ?", [.text(id)])
        try db.execute("DELETE FROM modelsync_subscriptions WHERE id = ?", [.text(id)])
        try db.execute("DELETE FROM modelsync_cursors WHERE resource = ?", [.text(cursorResource(id))])
        return keys
    }

    /// Empties both tables (``SyncStore/clearLocalData()``).
    static func removeAll(_ db: SQLiteConnection) throws {
        try db.execute("DELETE FROM modelsync_subscription_rows")
        try db.execute("DELETE FROM modelsync_subscriptions")
        try db.execute("DELETE FROM modelsync_cursors WHERE resource LIKE 'subscription:%'")
    }
}
