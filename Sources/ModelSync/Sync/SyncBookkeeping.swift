import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncSQLite

// The sync layer's bookkeeping: models stored in the app's own database file, so that a local
// write and its outbox entry commit in one transaction. Their tables are made and changed only
// by `SyncBookkeeping.migrator`; the models map them (no model creates or alters a table).

/// One change waiting in the outbox (`modelsync_outbox`).
///
/// `baseValues` (the row before the first pending change) and `serverVersion` (sent as
/// `If-Match`) serve conflict detection and three-way merges.
///
/// An entry that was ever sent (`sent`) is frozen: the server may have applied it, so its
/// request (body and `Idempotency-Key`) never changes and later local changes queue behind it
/// as entries of their own. Only an answer that says it was not applied (412, 404) turns it
/// into another request, under a new key.
@Model(table: "modelsync_outbox", columns: .snakeCase)
struct OutboxRecord: SQLModel {
    /// The entry's place in the queue (see ``sequence``): nil until it is inserted, then
    /// assigned by SQLite and never reused (`AUTOINCREMENT`).
    @PrimaryKey(autoincrement: true) @Column("sequence") var id: Int64?
    var model: String
    var localKey: JSONValue
    var operation: OutboxOperation
    var body: JSONValue
    var changedFields: [String]
    var baseValues: JSONValue?
    /// The row's server version when the entry's base was taken: sent as `If-Match`.
    var serverVersion: String?
    var idempotencyKey: String?
    var temporaryKey: Bool = false
    var attempts: Int = 0
    var state: OutboxEntryState = .pending
    var lastError: String?
    /// The server's field errors of a parked entry: an object of arrays of messages.
    var fieldErrors: JSONValue?
    /// Whether the entry was ever sent: the server may have applied it.
    var sent: Bool = false
}

/// A row's last known server version (`modelsync_row_versions`), from a response or a pull.
@Model(table: "modelsync_row_versions", withoutRowID: true)
struct RowVersion: SQLModel {
    @PrimaryKey var model: String
    @PrimaryKey var key: JSONValue
    var version: String
}

/// A resource's pull cursor (`modelsync_cursors`): where its next feed request starts.
@Model(table: "modelsync_cursors", withoutRowID: true)
struct PullCursor: SQLModel {
    @PrimaryKey var resource: String
    var cursor: String
}

/// A temporary key the server replaced (`modelsync_key_rewrites`), so that a value still
/// holding the temporary key saves to the real row.
@Model(table: "modelsync_key_rewrites", columns: .snakeCase, withoutRowID: true)
struct KeyRewrite: SQLModel {
    @PrimaryKey var model: String
    @PrimaryKey var temporaryKey: JSONValue
    var serverKey: JSONValue
}

/// A named counter (`modelsync_counters`): `temporary_key`, the last temporary integer key
/// handed out; `outbox_format`, the raw-SQL format of releases before the migrator (kept as it
/// was: see ``SyncBookkeeping/migrator``).
@Model(table: "modelsync_counters", withoutRowID: true)
struct SyncCounter: SQLModel {
    @PrimaryKey var name: String
    var value: Int64
}

extension OutboxOperation: ModelEnum {}
extension OutboxEntryState: ModelEnum {}

extension OutboxRecord {
    /// The entry's place in the queue: entries are sent in this order (0 before it is inserted).
    var sequence: Int64 { id ?? 0 }

    /// A new entry, not sent yet, with a fresh idempotency key (a label of its own: the
    /// memberwise initializer would leave the key nil).
    static func queued(
        model: String, localKey: JSONValue, operation: OutboxOperation, body: JSONValue, changedFields: [String],
        baseValues: JSONValue?, serverVersion: String? = nil, temporaryKey: Bool = false
    ) -> OutboxRecord {
        OutboxRecord(id: nil, model: model, localKey: localKey, operation: operation, body: body, changedFields: changedFields,
                     baseValues: baseValues, serverVersion: serverVersion, idempotencyKey: SyncBookkeeping.newIdempotencyKey(),
                     temporaryKey: temporaryKey)
    }

    var publicEntry: OutboxEntry {
        var errors: [String: [String]] = [:]
        if case .object(let object)? = fieldErrors {
            for (name, messages) in object { errors[name] = messages.arrayValue?.compactMap(\.stringValue) ?? [] }
        }
        return OutboxEntry(sequence: sequence, model: model, localKey: localKey, operation: operation, changedFields: changedFields,
                           state: state, attempts: attempts, lastError: lastError, fieldErrors: errors)
    }

    /// Writes what a coalesced or rebased entry asks for (keeping its place, key and state).
    func saveRequest(_ db: SQLiteConnection) throws {
        try update(db, only: [\.operation, \.body, \.changedFields, \.baseValues], validate: false)
    }

    /// Replaces everything the entry asks for, keeping its place in the queue: a conflict's
    /// resolution turns an entry into another request, with a new idempotency key, not sent yet.
    mutating func rewrite(_ db: SQLiteConnection) throws {
        idempotencyKey = SyncBookkeeping.newIdempotencyKey()
        (state, fieldErrors, sent) = (.pending, nil, false)
        try update(db, only: [
            \.operation, \.body, \.changedFields, \.baseValues, \.idempotencyKey, \.temporaryKey, \.serverVersion, \.state, \.fieldErrors, \.sent,
        ], validate: false)
    }
}

/// The bookkeeping's queries and its migrations.
enum SyncBookkeeping {
    /// The bookkeeping models, whose tables ``migrator`` makes.
    static let models: [any SQLModel.Type] = [OutboxRecord.self, RowVersion.self, PullCursor.self, KeyRewrite.self, SyncCounter.self]

    // MARK: Migrations

    /// The bookkeeping tables' migrations: ids under `modelsync:sync/` (see `Migrator`'s
    /// "ModelSync's own migrations"), recorded beside the app's. Released steps are never
    /// edited: a database written by any earlier release, entries still queued, takes the
    /// steps it lacks. A later change of a model is a new step here.
    static let migrator: Migrator = {
        var migrator = Migrator(reservedPart: "sync")
        // 1: the tables as the releases before the migrator made them (`outbox_format` 1),
        // from nothing or from their own older format, by the very statements they ran. A file
        // those releases wrote is already there; an older release opening the file later
        // finds its format counter as it left it. Raw SQL, as every step: a step must do
        // forever what it did when released, and the models change with later releases.
        migrator.register("modelsync:sync/1-outbox-format-1") { db in
            try db.executeScript(Format1.schema)
            let format: Int64
            if case .integer(let value)? = try db.scalar("SELECT value FROM modelsync_counters WHERE name = 'outbox_format'") { format = value } else { format = 0 }
            guard format < Format1.steps.count else { return }
            for step in Format1.steps.dropFirst(Int(max(format, 0))) { try db.executeScript(step) }
            try db.execute("INSERT OR REPLACE INTO modelsync_counters (name, value) VALUES ('outbox_format', ?)", [.integer(Int64(Format1.steps.count))])
        }
        // 2: subscriptions (``SyncStore/subscribe(_:where:ttl:)``) and the rows each holds.
        migrator.register("modelsync:sync/2-subscriptions") { db in
            try db.executeScript(SubscriptionBookkeeping.schema)
        }
        return migrator
    }()

    /// The raw SQL of the releases before the migrator: frozen, it is what apps have on disk.
    enum Format1 {
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

        /// Counted by `modelsync_counters.outbox_format`.
        static let steps: [String] = [
            // 1: every entry has an idempotency key, and an entry ever sent is marked so (entries
            // that failed before may have been applied: they count as sent).
            """
            ALTER TABLE modelsync_outbox ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
            UPDATE modelsync_outbox SET sent = 1 WHERE attempts > 0;
            UPDATE modelsync_outbox SET idempotency_key = lower(hex(randomblob(16))) WHERE idempotency_key IS NULL;
            """,
        ]
    }

    // MARK: Outbox

    /// A row's entries, oldest first: read for every save and acknowledgement, so prepared once.
    private static let rowEntries = Result {
        try OutboxRecord.preparedQuery(String.self, JSONValue.self) { model, key in
            OutboxRecord.where { $0.model == model && $0.localKey == key }.order(\.id)
        }
    }

    /// The entries of a row, oldest first.
    static func entries(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> [OutboxRecord] {
        try rowEntries.get().fetchAll(db, model, key)
    }

    /// The oldest entries, pending and parked, up to `limit` beyond the parked ones: a parked
    /// entry holds back its row's later changes and its children's.
    static func queue(_ db: SQLiteConnection, limit: Int) throws -> [OutboxRecord] {
        let parked = try OutboxRecord.where(\.state == .parked).fetchCount(db)
        return try OutboxRecord.all().order(\.id).limit(parked + limit).fetchAll(db)
    }

    /// The parked entries, oldest first.
    static func parked(_ db: SQLiteConnection) throws -> [OutboxRecord] {
        try OutboxRecord.where(\.state == .parked).order(\.id).fetchAll(db)
    }

    static func pendingCount(_ db: SQLiteConnection) throws -> Int {
        try OutboxRecord.where(\.state == .pending).fetchCount(db)
    }

    /// This model's creates that were sent and not acknowledged.
    static func sentCreates(model: String, _ db: SQLiteConnection) throws -> [OutboxRecord] {
        try OutboxRecord.where { $0.model == model && $0.operation == .create && $0.sent == true }.order(\.id).fetchAll(db)
    }

    /// The keys (as JSON text) of a model's rows that have entries.
    static func keysWithEntries(model: String, _ db: SQLiteConnection) throws -> Set<String> {
        Set(try OutboxRecord.where(\.model == model).select(\.localKey).distinct().fetchAll(db).map(\.jsonText))
    }

    /// The entries of a model whose body holds `value` at `path`.
    static func entries(model: String, holding value: SQLValue, at path: JSONPath, _ db: SQLiteConnection) throws -> [OutboxRecord] {
        // SQLite's JSON path of the key, for `json_extract`: the query builder has no JSON path
        // expressions, and reading every entry of the model to look would cost more.
        let sqlPath = "$" + path.components.map { component in
            switch component {
            case .key(let name): ".\"" + name.replacingASCII(UInt8(ascii: "\""), with: "\\\"") + "\""
            case .index(let index): "[\(index)]"
            }
        }.joined()
        return try OutboxRecord.where { $0.model == model && .sql("json_extract(\"body\", ?) = ?", [.text(sqlPath), value]) }
            .order(\.id).fetchAll(db)
    }

    /// Whether a row has an entry that was sent and not yet answered for certain.
    static func hasSentEntry(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> Bool {
        try OutboxRecord.where { $0.model == model && $0.localKey == key && $0.sent == true }.exists(db)
    }

    /// Marks entries as sent, before their request leaves: from then on they are frozen.
    static func markSent(_ sequences: [Int64], _ db: SQLiteConnection) throws {
        guard !sequences.isEmpty else { return }
        try OutboxRecord.where { $0.sent == false && $0.id.in(sequences.map(Optional.some)) }.updateAll(db, .set(\.sent, to: true))
    }

    /// Sets the server version the entries of a row are based on; returns how many changed.
    @discardableResult
    static func setServerVersion(_ version: String?, model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> Int {
        try OutboxRecord.where { $0.model == model && $0.localKey == key }.updateAll(db, .set(\.serverVersion, to: version))
    }

    /// A fresh `Idempotency-Key`.
    static func newIdempotencyKey() -> String { UUID().uuidString.lowercased() }

    /// The next temporary integer key: -1, -2, … (servers assign positive ids).
    static func nextTemporaryKey(_ db: SQLiteConnection) throws -> Int64 {
        let last = try SyncCounter.find("temporary_key", db)?.value ?? 0
        try SyncCounter(name: "temporary_key", value: last - 1).upsert(db, validate: false)
        return last - 1
    }

    // MARK: Server versions, cursors, key rewrites

    /// The server version of a row, as last seen in a response or a pull.
    static func version(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> String? {
        try RowVersion.find(key: [.text(model), key.sqlValue()], db)?.version
    }

    /// Whether any row of `model` has a known server version (none before its first pull or push).
    static func hasVersions(model: String, _ db: SQLiteConnection) throws -> Bool {
        try RowVersion.where(\.model == model).exists(db)
    }

    /// The server versions of the rows among `keys` that have one, by key's JSON text.
    static func versions(model: String, keys: [JSONValue], _ db: SQLiteConnection) throws -> [String: String] {
        var versions: [String: String] = [:]
        guard !keys.isEmpty else { return versions }
        for row in try RowVersion.where({ $0.model == model && $0.key.in(keys) }).fetchAll(db) { versions[row.key.jsonText] = row.version }
        return versions
    }

    /// Records a row's server version; nil forgets it (the record is gone).
    static func setVersion(_ version: String?, model: String, _ key: JSONValue, _ db: SQLiteConnection) throws {
        if let version {
            try RowVersion(model: model, key: key, version: version).upsert(db, validate: false)
        } else {
            try RowVersion.where { $0.model == model && $0.key == key }.deleteAll(db)
        }
    }

    /// Defers foreign-key checks to the commit for the rest of the transaction (SQLite turns
    /// the pragma off at every commit and rollback). Setting a flag pragma expires every
    /// prepared statement of the connection, so that each compiles again at its next use: a
    /// pull that set it for each deleted row compiled its upserts again after every deletion.
    /// Hence it is set only when off, once a transaction.
    static func deferForeignKeys(_ db: SQLiteConnection) throws {
        guard try db.scalar("PRAGMA defer_foreign_keys") != .integer(1) else { return }
        try db.execute("PRAGMA defer_foreign_keys = ON")
    }

    /// The stored pull cursor of a resource.
    static func cursor(_ resource: String, _ db: SQLiteConnection) throws -> String? {
        try PullCursor.find(resource, db)?.cursor
    }

    static func setCursor(_ cursor: String, _ resource: String, _ db: SQLiteConnection) throws {
        try PullCursor(resource: resource, cursor: cursor).upsert(db, validate: false)
    }

    /// The server key a temporary key was rewritten to, if it was.
    static func rewrittenKey(model: String, _ key: JSONValue, _ db: SQLiteConnection) throws -> JSONValue? {
        try KeyRewrite.find(key: [.text(model), key.sqlValue()], db)?.serverKey
    }
}

extension JSONValue {
    /// The value's JSON text: how bookkeeping stores and compares keys.
    var jsonText: String {
        // A number's text is its JSON (most keys): no writer.
        if case .number(let number) = self { return number.text }
        return String(decoding: jsonBytes(), as: UTF8.self)
    }

    /// The value as a SQL primary-key value: integers and strings only.
    func primaryKeySQLValue(model: String) throws -> SQLValue {
        if let integer = intValue { return .integer(Int64(integer)) }
        if let string = stringValue { return .text(string) }
        throw SyncError.unsupportedKey(model: model)
    }
}
