import CSQLite

/// A prepared statement. Obtain one through ``SQLiteConnection/withStatement(_:_:_:)``, which
/// takes it from the connection's cache, binds the arguments and resets it afterwards.
public final class SQLStatement {
    /// The compiled statement; valid until the statement is deinitialised.
    public let handle: OpaquePointer
    /// The statement's SQL text.
    public let sql: String
    private let connection: OpaquePointer
    /// Set while a caller uses the (cached) statement, so that a re-entrant use of the same
    /// SQL gets a statement of its own.
    var isInUse = false
    /// The tables the statement reads and writes (lowercased), as the connection's authorizer
    /// saw them while compiling it: what observations track.
    let readTables: Set<String>
    let writtenTables: Set<String>
    /// Whether the statement changes the schema (`CREATE`, `DROP`, `ALTER`).
    let changesSchema: Bool
    /// The ``ChangeTracker`` generation in which the writes were last recorded.
    var recordedGeneration = -1

    /// Compiles `sql`; `access` (the connection's authorizer recorder) tells which tables it
    /// touches.
    init(sql: String, connection: OpaquePointer, access: TableAccessRecorder? = nil) throws {
        var statement: OpaquePointer?
        access?.reset()
        let result = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw SQLiteError(result: result == SQLITE_OK ? SQLITE_MISUSE : result, handle: connection, sql: sql)
        }
        self.handle = statement
        self.sql = sql
        self.connection = connection
        self.readTables = access?.reads ?? []
        self.writtenTables = access?.writes ?? []
        self.changesSchema = access?.changesSchema ?? false
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `arguments` to parameters 1, 2, …
    public func bind(_ arguments: [SQLValue]) throws {
        let count = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count == count else {
            throw SQLiteError.misuse("expected \(count) arguments, got \(arguments.count)", sql: sql)
        }
        for (index, value) in arguments.enumerated() {
            try check(value.bind(to: handle, at: Int32(index + 1)))
        }
    }

    /// Advances to the next row: `true` when a row is available, `false` when done.
    public func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw error(result)
        }
    }

    /// Runs the statement to completion, ignoring any rows.
    public func run() throws {
        while try step() {}
    }

    /// The number of result columns.
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The name of result column `index`.
    public func columnName(_ index: Int) -> String {
        sqlite3_column_name(handle, Int32(index)).map { String(cString: $0) } ?? ""
    }

    /// The value of column `index` of the current row.
    public func value(at index: Int) -> SQLValue {
        SQLValue(statement: handle, column: Int32(index))
    }

    /// The current row as values.
    public func row() -> [SQLValue] {
        (0..<columnCount).map(value(at:))
    }

    /// Makes the statement ready to run again with new bindings.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Throws the connection's error for `result` unless it is `SQLITE_OK`.
    @inline(__always)
    func check(_ result: Int32) throws {
        if result != SQLITE_OK { throw error(result) }
    }

    func error(_ result: Int32) -> SQLiteError {
        SQLiteError(result: result, handle: connection, sql: sql)
    }
}
