import CSQLite
import Foundation
import ModelSyncCore

/// Versioned schema migrations, registered in code and recorded in the database file.
///
/// ```swift
/// var migrations = Migrator()
/// migrations.register("1-create-posts") { db in try Post.createTable(db) }
/// migrations.register("2-add-subtitle") { db in try db.addColumn("subtitle", to: "posts", type: "TEXT") }
/// migrations.registerSQL("3-backfill", "UPDATE posts SET subtitle = '' WHERE subtitle IS NULL")
/// let db = try Database(path: "app.sqlite", models: [Post.self], migrations: migrations)
/// ```
///
/// Each migration runs once, in registration order, in a transaction of its own, with foreign
/// keys checked at the end of it instead of enforced statement by statement (so tables can be
/// rebuilt). A migration that throws is rolled back and leaves the record unchanged; the error
/// is a ``SQLiteError`` of kind ``SQLiteError/Kind/migrationFailed(id:)`` whose
/// ``SQLiteError/underlyingError`` is what the migration threw. The record is the
/// table `modelsync_migrations` in the database itself.
///
/// ## ModelSync's own migrations
///
/// ModelSync keeps bookkeeping of its own in the app's database file (`SyncStore`'s outbox,
/// row versions and feed cursors), made and changed by migrators of its own that record their
/// steps in the same `modelsync_migrations` table. Their ids start with
/// ``reservedPrefix`` (`modelsync:`), followed by the part of ModelSync that owns them
/// (`modelsync:sync/1-outbox-format-1`), so that the two never mix up:
///
/// - your migrator leaves recorded ids that start with `modelsync:` alone: they are neither
///   "unknown migrations" to it nor listed by ``appliedMigrations(_:)``;
/// - your migrator refuses to register an id that starts with `modelsync:`
///   (``SQLiteError/Kind/misuse`` when migrating), so no id of yours can clash with one of
///   ModelSync's, today's or a later release's;
/// - ModelSync's migrators see only their own ids, so your migrations, whatever their ids,
///   never stop theirs.
///
/// Both kinds run on the same file in any order and any number of times: `Database` runs
/// yours when it opens the file, a `SyncStore` runs its own on first use. A database is
/// "brand-new" for ``setUpNewDatabase`` when it has no table at all, ModelSync's included.
public struct Migrator: Sendable {
    /// One registered step.
    struct Migration: Sendable {
        var id: String
        var migrate: @Sendable (SQLiteConnection) throws -> Void
    }

    private(set) var migrations: [Migration] = []
    /// Runs before the first pending migration, in its own transaction.
    public var beforeMigrating: (@Sendable (SQLiteConnection) throws -> Void)?
    /// Runs after the last pending migration, in its own transaction.
    public var afterMigrating: (@Sendable (SQLiteConnection) throws -> Void)?
    /// Runs instead of the migrations on a brand-new, empty database: it creates the current
    /// schema directly, and every registered migration is recorded as applied.
    public var setUpNewDatabase: (@Sendable (SQLiteConnection) throws -> Void)?

    /// The table holding the record of applied migrations.
    public static let recordTable = "modelsync_migrations"

    /// The start of the ids of ModelSync's own migrations: an app's migrator leaves them alone
    /// and may not register such ids (see "ModelSync's own migrations" above).
    public static let reservedPrefix = "modelsync:"

    /// The start of the ids this migrator owns: nil for an app's migrator (every id without
    /// ``reservedPrefix``), `modelsync:<part>/` for one of ModelSync's.
    let namespace: String?

    /// Creates an empty migrator.
    public init() {
        namespace = nil
    }

    /// A migrator of ModelSync's own bookkeeping: its ids start with `modelsync:<part>/`, and
    /// it sees only those among the recorded ids.
    package init(reservedPart part: String) {
        namespace = Self.reservedPrefix + part + "/"
    }

    /// The registered ids, in order.
    public var ids: [String] { migrations.map(\.id) }

    /// Whether a recorded id is this migrator's to know.
    private func owns(_ id: String) -> Bool {
        if let namespace { return id.hasPrefix(namespace) }
        return !id.hasPrefix(Self.reservedPrefix)
    }

    /// Registers a migration; ids must be unique (a repeated id is rejected when migrating).
    public mutating func register(_ id: String, _ migrate: @escaping @Sendable (SQLiteConnection) throws -> Void) {
        migrations.append(Migration(id: id, migrate: migrate))
    }

    /// Registers a migration made of raw SQL (several statements may be separated by `;`).
    public mutating func registerSQL(_ id: String, _ sql: String) {
        register(id) { try $0.executeScript(sql) }
    }

    /// The ids of the migrations recorded as applied in `db`, in the order they ran; those of
    /// ModelSync's own migrations (``reservedPrefix``) are left out.
    public func appliedMigrations(_ db: SQLiteConnection) throws -> [String] {
        guard try db.tableExists(Self.recordTable) else { return [] }
        return try db.rows("SELECT id FROM \(quoteIdentifier(Self.recordTable)) ORDER BY rowid").compactMap { $0[0].textValue }.filter(owns)
    }

    /// Runs the pending migrations on `database`'s writer connection.
    public func migrate(_ database: Database) throws {
        try database.writeWithoutTransaction { try migrate($0) }
    }

    /// Runs the pending migrations on `db`, which must not be in a transaction.
    public func migrate(_ db: SQLiteConnection) throws {
        // ModelSync's own steps create plain tables (no foreign keys to suspend), so they may
        // also run as savepoints of an open transaction: a test's rollback scope that uses a
        // `SyncStore`.
        guard !db.isInTransaction || namespace != nil else { throw SQLiteError.misuse("migrations cannot run inside a transaction") }
        let duplicates = Dictionary(grouping: ids, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        guard duplicates.isEmpty else { throw SQLiteError.misuse("migration ids registered twice: \(duplicates.joined(separator: ", "))") }
        let foreign = ids.filter { !owns($0) }
        guard foreign.isEmpty else {
            throw SQLiteError.misuse(
                namespace == nil
                    ? "migration ids starting with '\(Self.reservedPrefix)' are ModelSync's own: \(foreign.joined(separator: ", "))"
                    : "migration ids outside '\(namespace ?? "")': \(foreign.joined(separator: ", "))")
        }

        let isNew = try db.scalar("SELECT count(*) FROM sqlite_master") == .integer(0)
        try db.transaction { try createRecordTable(db) }
        let applied = try appliedMigrations(db)
        let unknown = applied.filter { !ids.contains($0) }
        guard unknown.isEmpty else {
            throw SQLiteError(
                .unknownMigrations(ids: unknown), code: SQLITE_ERROR,
                message: "the database has migrations this build does not know: \(unknown.joined(separator: ", "))")
        }

        if isNew, let setUpNewDatabase {
            try step("setUpNewDatabase", db) { db in
                try setUpNewDatabase(db)
                for id in ids { try record(id, db) }
            }
            return
        }
        let pending = migrations.filter { !applied.contains($0.id) }
        guard !pending.isEmpty else { return }
        if let beforeMigrating { try step("beforeMigrating", db, beforeMigrating) }
        for migration in pending {
            try step(migration.id, db) { db in
                try migration.migrate(db)
                try record(migration.id, db)
            }
        }
        if let afterMigrating { try step("afterMigrating", db, afterMigrating) }
    }

    /// One transaction with foreign keys enforced at its end, any failure wrapped as a
    /// migration error.
    private func step(_ id: String, _ db: SQLiteConnection, _ body: (SQLiteConnection) throws -> Void) throws {
        let enforcesForeignKeys = try db.scalar("PRAGMA foreign_keys") == .integer(1)
        if enforcesForeignKeys { try db.execute("PRAGMA foreign_keys = OFF") }
        defer { if enforcesForeignKeys { try? db.execute("PRAGMA foreign_keys = ON") } }
        do {
            try db.transaction {
                try body(db)
                if enforcesForeignKeys, let violation = try db.rows("PRAGMA foreign_key_check").first {
                    throw SQLiteError(
                        code: SQLITE_CONSTRAINT, extendedCode: 787,  // SQLITE_CONSTRAINT_FOREIGNKEY
                        message: "foreign key violation in table \(violation[0].textValue ?? "?")")
                }
            }
        } catch {
            let underlying = error as? SQLiteError
            throw SQLiteError(
                .migrationFailed(id: id), code: underlying?.code ?? SQLITE_ERROR, extendedCode: underlying?.extendedCode,
                message: "migration '\(id)' failed and was rolled back: \(underlying?.message ?? String(describing: error))",
                sql: underlying?.sql, underlyingError: error)
        }
    }

    private func createRecordTable(_ db: SQLiteConnection) throws {
        try db.execute(
            "CREATE TABLE IF NOT EXISTS \(quoteIdentifier(Self.recordTable)) (id TEXT PRIMARY KEY NOT NULL, applied_at REAL NOT NULL)")
    }

    private func record(_ id: String, _ db: SQLiteConnection) throws {
        try db.execute(
            "INSERT INTO \(quoteIdentifier(Self.recordTable)) (id, applied_at) VALUES (?, ?)",
            [.text(id), .real(Date().timeIntervalSince1970)])
    }
}

// MARK: - Helpers for migrations

extension SQLiteConnection {
    /// `ALTER TABLE … ADD COLUMN`. A `NOT NULL` column needs a default.
    public func addColumn(_ name: String, to table: String, type: String, notNull: Bool = false, default value: SQLValue? = nil) throws {
        var definition = "\(try checkedIdentifier(name)) \(type)"
        if notNull { definition += " NOT NULL" }
        if let value { definition += " DEFAULT \(value.sqlLiteral)" }
        try execute("ALTER TABLE \(try checkedIdentifier(table)) ADD COLUMN \(definition)")
    }

    /// Adds the column of a model's property, as the model declares it (type, nullability,
    /// default; a unique property also gets a unique index).
    public func addColumn<M: SQLModel>(_ property: PartialKeyPath<M>, of model: M.Type) throws {
        for statement in M.sqlTable.addColumnStatements(try M.fieldIndex(property)) { try execute(statement) }
    }

    /// `ALTER TABLE … RENAME COLUMN`: indexes, triggers and views follow the new name.
    public func renameColumn(_ name: String, to newName: String, in table: String) throws {
        try execute("ALTER TABLE \(try checkedIdentifier(table)) RENAME COLUMN \(try checkedIdentifier(name)) TO \(try checkedIdentifier(newName))")
    }

    /// `ALTER TABLE … DROP COLUMN`. SQLite refuses to drop a column that is part of a key, a
    /// unique constraint or an index; use ``rebuildTable(_:from:mapping:)`` for those.
    public func dropColumn(_ name: String, from table: String) throws {
        try execute("ALTER TABLE \(try checkedIdentifier(table)) DROP COLUMN \(try checkedIdentifier(name))")
    }

    /// `ALTER TABLE … RENAME TO`.
    public func renameTable(_ name: String, to newName: String) throws {
        try execute("ALTER TABLE \(try checkedIdentifier(name)) RENAME TO \(try checkedIdentifier(newName))")
    }

    /// Rebuilds a table as the model now declares it, for changes SQLite cannot make in place
    /// (a column's type, constraints or key; dropping an indexed column). Creates the new
    /// table, copies the rows, drops the old table, renames the new one and recreates the
    /// old table's indexes and triggers on the columns that still exist, and the model's
    /// indexes.
    ///
    /// - Parameters:
    ///   - model: the model whose table is rebuilt.
    ///   - oldTable: the table to copy from; the model's own table by default.
    ///   - mapping: SQL expressions over the old table's columns for new columns, by new
    ///     column name (`["full_name": "first || ' ' || last"]`). Other new columns are copied
    ///     from the old column of the same name, or get their default.
    public func rebuildTable<M: SQLModel>(_ model: M.Type, from oldTable: String? = nil, mapping: [String: String] = [:]) throws {
        let table = M.sqlTable
        let source = oldTable ?? table.name
        let oldColumns = Set(try columns(of: source).map { ExactText($0.name) })
        guard !oldColumns.isEmpty else { throw SQLiteError.misuse("no table named '\(source)' to rebuild") }
        let saved = try rows(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL",
            [.text(source)]
        ).compactMap { $0[0].textValue }
        let temporary = "modelsync_rebuild_\(table.name)"
        try transaction {
            try execute(M.createTableSQL(named: temporary))
            var targets: [String] = []
            var expressions: [String] = []
            for field in M.schema.fields {
                if let expression = mapping[field.column] {
                    expressions.append(expression)
                } else if oldColumns.contains(ExactText(field.column)) {
                    expressions.append(quoteIdentifier(field.column))
                } else {
                    continue
                }
                targets.append(quoteIdentifier(field.column))
            }
            if !targets.isEmpty {
                try execute(
                    "INSERT INTO \(quoteIdentifier(temporary)) (\(targets.joined(separator: ", "))) "
                        + "SELECT \(expressions.joined(separator: ", ")) FROM \(quoteIdentifier(source))")
            }
            try execute("DROP TABLE \(quoteIdentifier(source))")
            try renameTable(temporary, to: table.name)
            for sql in saved {
                // An index or trigger on a column that no longer exists goes with it.
                do { try executeScript(sql) } catch let error as SQLiteError where error.message.contains("no such column") {}
            }
            for index in table.indexes { try execute(index.sql) }
        }
    }
}
