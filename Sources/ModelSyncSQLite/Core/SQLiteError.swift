import CSQLite

/// Every failure of the SQLite layer: a result code from SQLite (with its extended code and
/// message), or a failure ModelSync detects itself (a stored value of the wrong type, a table
/// that does not match its model, a failing migration). Carries the SQL that was running.
///
/// Nothing in the SQLite layer traps on bad data: a corrupt file, a locked database, a
/// constraint violation or a column of the wrong type is always one of these.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, beyond SQLite's result code.
    public enum Kind: Sendable, Equatable {
        /// SQLite returned an error code (see ``SQLiteError/code``).
        case sqlite
        /// A stored value cannot become the property's type (`NULL` in a non-optional column,
        /// text in an integer column, a value out of range, JSON that does not decode).
        case typeMismatch(table: String, column: String)
        /// A table does not have the columns its model needs; `differences` says which.
        case schemaMismatch(table: String, differences: [String])
        /// A migration failed; its transaction was rolled back.
        case migrationFailed(id: String)
        /// The database file has migrations recorded that this build does not know.
        case unknownMigrations(ids: [String])
        /// A row that should exist does not (a refresh or an update of a deleted row).
        case rowNotFound(table: String)
        /// The API was used in a way it does not support (e.g. a model without a primary key).
        case misuse
        /// A query names a column that the model does not map (a key path of an `@Ignored`
        /// property) or that the table does not have (a raw column name, a stale table).
        case unknownColumn(table: String, column: String)
        /// Two model types with the same name in different namespaces (`A.User`, `B.User`)
        /// both default to the table `table`; `types` are their full names. Name one table
        /// with `@Model(table:)`.
        case tableNameClash(table: String, types: [String])
        /// A ``SQLiteScalarFunction`` named `name` threw while the statement ran; the thrown
        /// error is the ``SQLiteError/underlyingError``.
        case functionFailed(name: String)
        /// A `write` was started inside a `read` (see ``Database/write(_:)-53tgv``).
        case writeInsideRead
        /// A query does with a column that holds its transformer's representation
        /// (`@Transform(…, inDatabase: true)`) what that form cannot express: arithmetic, a
        /// pattern, an aggregate, or a comparison with an expression stored another way.
        case transformedColumn(table: String, column: String)
        /// A table, column or other name holds a character SQL cannot express in an identifier
        /// (NUL, where SQLite's tokenizer stops): `name` is the whole identifier.
        case invalidIdentifier(name: String)
    }

    /// What went wrong.
    public var kind: Kind
    /// SQLite's primary result code (`SQLITE_CONSTRAINT` = 19, `SQLITE_BUSY` = 5, …); for
    /// errors ModelSync detects itself, the closest one (`SQLITE_MISMATCH`, `SQLITE_SCHEMA`,
    /// `SQLITE_MISUSE`, `SQLITE_NOTFOUND`, `SQLITE_ERROR`).
    public var code: Int32
    /// SQLite's extended result code (`SQLITE_CONSTRAINT_UNIQUE` = 2067, …), or `code`.
    public var extendedCode: Int32
    /// The message, from SQLite or from ModelSync.
    public var message: String
    /// The SQL statement that failed, if one was running.
    public var sql: String?
    /// In a batch, the position of the model that failed (0-based).
    public var batchIndex: Int?
    /// The error that caused this one, when it came from outside SQLite: what a migration's
    /// body threw (a ``SQLiteError`` of its own is kept here too), so callers can match it.
    public var underlyingError: (any Error & Sendable)? {
        get { cause?.error }
        set { cause = newValue.map(UnderlyingError.init) }
    }
    private var cause: UnderlyingError?

    /// SQLite's primary result code, by name: `error.resultCode == .busy`.
    public var resultCode: SQLiteResultCode { SQLiteResultCode(rawValue: code) }
    /// SQLite's extended result code, by name: `error.extendedResultCode == .constraintUnique`.
    public var extendedResultCode: SQLiteResultCode { SQLiteResultCode(rawValue: extendedCode) }

    /// Creates an error.
    public init(
        _ kind: Kind = .sqlite,
        code: Int32,
        extendedCode: Int32? = nil,
        message: String,
        sql: String? = nil,
        batchIndex: Int? = nil,
        underlyingError: (any Error & Sendable)? = nil
    ) {
        self.cause = underlyingError.map(UnderlyingError.init)
        self.kind = kind
        self.code = code
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
        self.batchIndex = batchIndex
    }

    /// The error SQLite reports on `handle` for result `result`.
    init(result: Int32, handle: OpaquePointer?, sql: String?) {
        let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(result))
        let extended = handle.map { sqlite3_extended_errcode($0) } ?? result
        // The handle's extended code belongs to the last call on it; keep it only when it
        // refines this result.
        let refined = extended & 0xFF == result & 0xFF ? extended : result
        self.init(.sqlite, code: result & 0xFF, extendedCode: refined, message: message, sql: sql)
    }

    /// A stored value of the wrong type.
    static func typeMismatch(table: String, column: String, _ message: String, sql: String?) -> SQLiteError {
        SQLiteError(
            .typeMismatch(table: table, column: column), code: SQLITE_MISMATCH,
            message: "\(table).\(column): \(message)", sql: sql)
    }

    /// A column the model or its table does not have.
    static func unknownColumn(table: String, column: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(
            .unknownColumn(table: table, column: column), code: SQLITE_ERROR,
            message: "no column '\(column)' in \(table)", sql: sql)
    }

    /// An identifier that SQL cannot express.
    static func invalidIdentifier(_ name: String) -> SQLiteError {
        SQLiteError(
            .invalidIdentifier(name: name), code: SQLITE_MISUSE,
            message: "the name \(name.debugDescription) holds a NUL character, which no SQL identifier can")
    }

    /// A misuse of the API.
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(.misuse, code: SQLITE_MISUSE, message: message, sql: sql)
    }

    /// Whether this is a constraint violation (unique, not null, foreign key, check, primary key).
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }

    /// Holds the cause while keeping `SQLiteError` `Equatable`: causes compare by their
    /// reflected description, as errors in general are not `Equatable`.
    private struct UnderlyingError: Sendable, Equatable {
        let error: any Error & Sendable
        static func == (lhs: Self, rhs: Self) -> Bool {
            String(reflecting: lhs.error) == String(reflecting: rhs.error)
        }
    }

    public var description: String {
        var text = "SQLite error \(code)"
        if extendedCode != code { text += "/\(extendedCode)" }
        text += ": \(message)"
        if let batchIndex { text += " (batch row \(batchIndex))" }
        if let sql { text += " — SQL: \(sql)" }
        if let underlyingError, !(underlyingError is SQLiteError) { text += " (caused by \(String(reflecting: underlyingError)))" }
        return text
    }
}
