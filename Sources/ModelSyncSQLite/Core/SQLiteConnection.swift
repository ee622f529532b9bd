import CSQLite
import Foundation
import ModelSyncCore

/// One SQLite connection: what `Database.read { }` and `Database.write { }` hand to their
/// closures, and what ActiveRecord operations take (`try post.save(db)`).
///
/// A connection is used by one thread at a time (the ``Database`` guarantees it) and must not
/// escape the closure it was given to. It caches prepared statements by the bytes of their SQL
/// (a bounded, least-recently-used cache), binds every value (SQL text is never built from
/// values) and nests transactions as savepoints.
public final class SQLiteConnection {
    /// The SQLite handle (`sqlite3 *`), for calls this layer does not wrap.
    public let handle: OpaquePointer
    /// The file path, or `:memory:`.
    public let path: String
    private var statements: StatementCache
    private var tableStatements: [TableStatementKey: SQLStatement] = [:]
    /// Multi-row upserts of a model's table (``SQLModel/upsertAll(_:_:)``), by row count: found
    /// without building and hashing their SQL, kilobytes long.
    private var multiRowUpserts: [MultiRowStatementKey: SQLStatement] = [:]
    /// The table statement used last: a loop writing one model reuses it without hashing.
    private var lastTableStatement: (key: TableStatementKey, statement: SQLStatement)?
    private var transactionDepth = 0
    /// The models whose tables this connection has created or checked. Forgotten when a
    /// rollback undoes a schema change (see ``schemaChanges``), and only then.
    /// The tables (lowercased) of the models a ``Database`` prepares at open: a foreign key to
    /// one of them is kept although its table is not created yet.
    var tablesBeingPrepared: Set<String> = []
    var preparedTables: Set<ObjectIdentifier> = [] {
        didSet { lastPreparedTable = nil }
    }
    /// The model found last in `preparedTables`: a loop writing one model compares it
    /// instead of hashing. Forgotten with any change to the set.
    var lastPreparedTable: ObjectIdentifier?
    /// What each model type conforms to (see ``ModelTraits``).
    var modelTraits: [ObjectIdentifier: ModelTraits] = [:]
    /// The last answer of `modelTraits`, checked before hashing.
    var lastModelTraits: (type: ObjectIdentifier, traits: ModelTraits)?
    /// The query `SELECT`s rendered here last (see `renderedSelect(_:)`).
    var recentSelects = RecentSelects()
    /// How many schema-changing statements (`CREATE`, `DROP`, `ALTER`) have run: a rollback
    /// forgets the checked tables only when this moved since its transaction or savepoint began.
    private var schemaChanges = 0
    private var schemaChangesAtOpenEndedBegin = 0
    /// Raised when the async caller's task is cancelled: the next statement fails with
    /// `SQLITE_INTERRUPT` (see ``ConnectionPool``).
    let interruption = InterruptionFlag()
    /// How many reads that are not part of a write run on this (writer) connection: a write
    /// inside one is refused, as it is on a reader.
    var readDepth = 0
    /// Settings shared with the ``Database`` that opened the connection.
    let configuration: DatabaseConfiguration
    /// The authorizer that tells each compiled statement which tables it reads and writes.
    let tableAccess = TableAccessRecorder()
    /// On the writer connection only: the tables changed per transaction (see
    /// ``trackChanges()``).
    var changeTracker: ChangeTracker?
    /// While set, collects the tables read by the statements that run (see
    /// ``recordingReadTables(_:)``).
    var readTableRecorder: Set<String>?
    /// What a failing ``SQLiteScalarFunction`` threw, until its statement's error takes it.
    let functionFailures = FunctionFailureSlot()
    /// Logs each statement when ``DatabaseConfiguration/logger`` is set; kept alive here
    /// because SQLite holds only a pointer to it.
    private let tracer: StatementTracer?

    /// Opens a connection. `readOnly` opens the file read-only; a missing file is created
    /// unless `readOnly` is set.
    init(path: String, readOnly: Bool, configuration: DatabaseConfiguration) throws {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let result = sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK, let handle else {
            let error = SQLiteError(result: result, handle: handle, sql: nil)
            sqlite3_close_v2(handle)
            throw error
        }
        self.handle = handle
        self.path = path
        self.configuration = configuration
        self.statements = StatementCache(capacity: configuration.statementCacheSize)
        self.tracer = configuration.logger.map { StatementTracer(logger: $0, literalLimit: 256) }
        tracer?.install(on: handle)
        sqlite3_extended_result_codes(handle, 1)
        // Every identifier ModelSync writes is double-quoted: one that names no column must
        // fail ("no such column"), not read as a string.
        modelsync_disable_dqs_dml(handle)
        tableAccess.install(on: handle)
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds(configuration.busyTimeout))
        // Every stored property is set: a throw from here on runs `deinit`, which closes the
        // handle (closing it here as well would close it twice).
        // Reading the schema makes a file that is not a database fail here, at open.
        try execute("PRAGMA foreign_keys = \(configuration.foreignKeys ? "ON" : "OFF")")
        // Rows that `REPLACE` deletes (clashing on any unique key) fire delete triggers only
        // with recursive triggers on; a full-text index's triggers rely on them.
        try execute("PRAGMA recursive_triggers = ON")
        _ = try scalar("SELECT count(*) FROM sqlite_master")
        for function in configuration.functions {
            try add(function: function)
        }
        for hook in configuration.openHooks {
            try hook(self)
        }
    }

    /// `seconds` as SQLite's busy timeout: clamped to what an `Int32` of milliseconds holds, and
    /// zero (fail at once) when negative or not a number.
    static func busyTimeoutMilliseconds(_ seconds: Double) -> Int32 {
        let milliseconds = seconds * 1000
        guard milliseconds > 0 else { return 0 }  // also NaN
        return milliseconds >= Double(Int32.max) ? Int32.max : Int32(milliseconds)
    }

    deinit {
        statements.removeAll()
        tableStatements.removeAll()
        multiRowUpserts.removeAll()
        lastTableStatement = nil
        recentSelects.removeAll()
        // A statement a cursor still holds keeps the handle open past this point (close_v2),
        // and must not call back into what goes with this object: the tracer, the authorizer
        // (a schema change re-prepares the statement) and the change hooks (the handle rolls
        // back an open transaction when it finally closes).
        if tracer != nil { sqlite3_trace_v2(handle, 0, nil, nil) }
        sqlite3_set_authorizer(handle, nil, nil)
        if changeTracker != nil { ChangeTracker.uninstall(from: handle) }
        sqlite3_close_v2(handle)
    }

    // MARK: - Statements

    /// Runs `body` with the cached prepared statement for `sql`, `arguments` bound; the
    /// statement is reset afterwards.
    public func withStatement<T>(_ sql: String, _ arguments: [SQLValue] = [], _ body: (SQLStatement) throws -> T) throws -> T {
        try withUnboundStatement(sql) { statement in
            try statement.bind(arguments)
            return try body(statement)
        }
    }

    /// Runs `body` with a statement prepared on this connection earlier, leaving the binding
    /// to it.
    func withUnbound<T>(_ statement: SQLStatement, _ body: (SQLStatement) throws -> T) throws -> T {
        try use(statement, body)
    }

    /// Runs `body` with the cached prepared statement for `sql`, leaving the binding to it.
    func withUnboundStatement<T>(_ sql: String, _ body: (SQLStatement) throws -> T) throws -> T {
        try use(statement(for: sql), body)
    }

    /// Runs `body` with the cached prepared statement of a model's table, leaving the binding
    /// to it.
    func withUnboundStatement<T>(_ kind: SQLTable.Statement, of table: SQLTable, _ body: (SQLStatement) throws -> T) throws -> T {
        let key = TableStatementKey(table: ObjectIdentifier(table), kind: kind)
        if let last = lastTableStatement, last.key == key, !last.statement.isInUse {
            return try use(last.statement, body)
        }
        if let cached = tableStatements[key], !cached.isInUse {
            lastTableStatement = (key, cached)
            return try use(cached, body)
        }
        let statement = try statement(for: table.sql(kind))
        tableStatements[key] = statement
        lastTableStatement = (key, statement)
        return try use(statement, body)
    }

    /// Runs `body` with the cached multi-row upsert of `rows` rows of a model's table, leaving
    /// the binding to it.
    func withUnboundUpsert<T>(rows: Int, of table: SQLTable, _ body: (SQLStatement) throws -> T) throws -> T {
        let key = MultiRowStatementKey(table: ObjectIdentifier(table), rows: rows)
        if let cached = multiRowUpserts[key], !cached.isInUse { return try use(cached, body) }
        let statement = try statement(for: table.multiRowUpsertSQL(rows: rows))
        multiRowUpserts[key] = statement
        return try use(statement, body)
    }

    private func use<T>(
        _ statement: SQLStatement, checkingInterruption: Bool = true, _ body: (SQLStatement) throws -> T
    ) throws -> T {
        // `sqlite3_interrupt` only stops a running statement: a cancelled body also stops at
        // the next one. Rollbacks still run.
        if checkingInterruption, interruption.isRaised {
            throw SQLiteError(.sqlite, code: SQLITE_INTERRUPT, message: "interrupted", sql: statement.sql)
        }
        if statement.changesSchema { schemaChanges += 1 }
        // Recorded before the statement runs: an autocommit write commits while it steps.
        changeTracker?.recordWrites(of: statement)
        recordReads(of: statement)
        statement.isInUse = true
        // A failure whose statement error never came through here (a cursor's) is not this one's.
        functionFailures.failure = nil
        defer {
            statement.reset()
            statement.isInUse = false
            changeTracker?.statementEnded(inTransaction: isInTransaction)
        }
        do {
            return try body(statement)
        } catch let error as SQLiteError where functionFailures.failure != nil {
            throw attachingFunctionFailure(error)
        }
    }

    /// Adds the tables `statement` reads to those an observation is recording, if any.
    /// Every statement that runs outside ``use(_:_:)`` (a cursor's) must call it too, or
    /// the observation misses its tables and never refreshes.
    func recordReads(of statement: SQLStatement) {
        if readTableRecorder != nil { readTableRecorder?.formUnion(statement.readTables) }
    }

    /// The cached statement for `sql`, or a fresh one when the cached one is in use.
    func statement(for sql: String) throws -> SQLStatement {
        if let cached = statements[sql] {
            return cached.isInUse ? try SQLStatement(sql: sql, connection: handle, access: tableAccess) : cached
        }
        let statement = try SQLStatement(sql: sql, connection: handle, access: tableAccess)
        statements.insert(statement)
        return statement
    }

    /// How many models' tables the connection has checked (for tests).
    package var checkedTableCount: Int { preparedTables.count }

    /// The number of statements in the cache (for tests).
    package var cachedStatementCount: Int { statements.count }

    /// Runs one statement with bound arguments.
    public func execute(_ sql: String, _ arguments: [SQLValue] = []) throws {
        try withStatement(sql, arguments) { try $0.run() }
    }

    /// Runs a statement that undoes work (`ROLLBACK`, `ROLLBACK TO`, `RELEASE` after it): it
    /// runs even when the body was interrupted.
    private func executeUndo(_ sql: String) throws {
        try use(statement(for: sql), checkingInterruption: false) { try $0.run() }
    }

    /// Runs several statements separated by semicolons, without arguments (schema scripts).
    public func executeScript(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        // sqlite3_exec compiles and runs each statement in turn: its writes are recorded as
        // they are compiled, in the transaction they run in.
        tableAccess.reset()
        tableAccess.liveTracker = changeTracker
        if interruption.isRaised { throw SQLiteError(.sqlite, code: SQLITE_INTERRUPT, message: "interrupted", sql: sql) }
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        tableAccess.liveTracker = nil
        if tableAccess.changesSchema { schemaChanges += 1 }
        changeTracker?.statementEnded(inTransaction: isInTransaction)
        if readTableRecorder != nil { readTableRecorder?.formUnion(tableAccess.reads) }
        guard result == SQLITE_OK else {
            var error = SQLiteError(result: result, handle: handle, sql: sql)
            if let message {
                error.message = String(cString: message)
                sqlite3_free(message)
            }
            throw attachingFunctionFailure(error)
        }
    }

    /// Every row of a query, as values.
    public func rows(_ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        try withStatement(sql, arguments) { statement in
            var rows: [[SQLValue]] = []
            while try statement.step() { rows.append(statement.row()) }
            return rows
        }
    }

    /// The first column of the first row, or nil when there is no row.
    public func scalar(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLValue? {
        try withStatement(sql, arguments) { try $0.step() ? $0.value(at: 0) : nil }
    }

    /// The most parameters (`?`) one statement may have on this connection (SQLite's
    /// `SQLITE_LIMIT_VARIABLE_NUMBER`): ``SQLModel/insertAll(_:_:onConflict:validate:)`` puts as
    /// many rows in each statement as fit. Setting it lowers the limit for this connection
    /// (SQLite never raises it beyond the maximum it was built with).
    public var parameterLimit: Int {
        get { Int(sqlite3_limit(handle, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) }
        set { sqlite3_limit(handle, SQLITE_LIMIT_VARIABLE_NUMBER, Int32(clamping: max(1, newValue))) }
    }

    /// The rowid of the last row inserted on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The number of rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    // MARK: - Transactions

    /// Whether a transaction is open on this connection.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a transaction: `BEGIN IMMEDIATE` at the outermost level, a savepoint
    /// when nested. An error rolls back (the savepoint only, when nested) and is rethrown.
    /// `deferred` starts the outermost transaction without taking the write lock (reads).
    public func transaction<T>(deferred: Bool = false, _ body: () throws -> T) throws -> T {
        let depth = transactionDepth
        let savepoint = "modelsync_\(depth)"
        // The tables changed before the savepoint, to put back if it is rolled back.
        let changedBefore = depth == 0 ? nil : changeTracker?.pending
        let schemaChangesBefore = schemaChanges
        if depth == 0 {
            try execute(deferred || configuration.readOnly ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE")
        } else {
            try execute("SAVEPOINT \(savepoint)")
        }
        transactionDepth += 1
        defer { transactionDepth = depth }
        do {
            let result = try body()
            try execute(depth == 0 ? "COMMIT" : "RELEASE \(savepoint)")
            return result
        } catch {
            // A schema change inside the rolled-back part is undone: check tables anew. Data
            // changes leave the checks true.
            if schemaChanges != schemaChangesBefore { preparedTables.removeAll() }
            if depth == 0 {
                // SQLite may already have rolled back (e.g. after SQLITE_FULL).
                if isInTransaction { try? executeUndo("ROLLBACK") }
            } else {
                try? executeUndo("ROLLBACK TO \(savepoint)")
                try? executeUndo("RELEASE \(savepoint)")
                if let changedBefore { changeTracker?.restorePending(changedBefore) }
            }
            throw error
        }
    }

    /// Opens a transaction that outlives any one call (a test's rollback scope): `transaction`
    /// calls made while it is open become savepoints inside it.
    package func beginOpenEndedTransaction() throws {
        guard transactionDepth == 0, !isInTransaction else { throw SQLiteError.misuse("a transaction is already open") }
        try execute("BEGIN IMMEDIATE")
        transactionDepth = 1
        schemaChangesAtOpenEndedBegin = schemaChanges
    }

    /// Rolls back the transaction opened by ``beginOpenEndedTransaction()``, and everything
    /// committed inside it.
    package func rollbackOpenEndedTransaction() throws {
        transactionDepth = 0
        if schemaChanges != schemaChangesAtOpenEndedBegin { preparedTables.removeAll() }
        if isInTransaction { try executeUndo("ROLLBACK") }
    }

    // MARK: - Schema

    /// Whether a table (or view) named `name` exists.
    public func tableExists(_ name: String) throws -> Bool {
        try scalar("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?", [.text(name)]) != nil
    }

    /// The columns of a table, in order (empty when the table does not exist).
    public func columns(of table: String) throws -> [ColumnInfo] {
        try rows("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", [.text(table)]).map { row in
            ColumnInfo(
                name: row[0].textValue ?? "",
                type: row[1].textValue ?? "",
                isNotNull: row[2] == .integer(1),
                defaultSQL: row[3].textValue,
                primaryKeyPosition: Int(row[4].integerValue ?? 0)
            )
        }
    }

    /// The names of a table's indexes.
    public func indexes(of table: String) throws -> [String] {
        try rows("SELECT name FROM pragma_index_list(?)", [.text(table)]).compactMap { $0[0].textValue }
    }
}

/// A model table's multi-row statement, as a cache key.
private struct MultiRowStatementKey: Hashable {
    var table: ObjectIdentifier
    var rows: Int
}

/// A model table's statement, as a cache key.
private struct TableStatementKey: Hashable {
    var table: ObjectIdentifier
    var kind: SQLTable.Statement
}
