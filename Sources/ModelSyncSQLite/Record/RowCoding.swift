import CSQLite
import ModelSyncCore
import ModelSyncJSON

/// Reads the columns of one row into a model. Generated `init(row:)` code calls it with field
/// indices (positions in the model's schema, which are the positions of the selected
/// columns); you do not use it directly.
public struct SQLRowDecoder {
    @usableFromInline let statement: OpaquePointer
    @usableFromInline let table: SQLTable
    /// Where the model's columns start in the row: 0, except when a join selects another
    /// model's columns first (a pivot row after its related model).
    @usableFromInline let columnOffset: Int32

    @usableFromInline
    init(statement: OpaquePointer, table: SQLTable, columnOffset: Int32 = 0) {
        self.statement = statement
        self.table = table
        self.columnOffset = columnOffset
    }

    /// Decodes field `field` from its column (the type is the property's, inferred from the
    /// assignment). The `type` parameter, never passed, lets overload resolution prefer
    /// this form to the JSON one for types that have both.
    @inlinable
    public func decode<T: SQLColumnDecodable>(_ field: Int, as type: T.Type = T.self) throws -> T {
        do {
            return try T.decodeSQL(SQLColumn(statement: statement, index: Int32(truncatingIfNeeded: field) &+ columnOffset))
        } catch let mismatch as SQLColumnMismatch {
            throw mismatchError(field, mismatch)
        }
    }

    /// Decodes field `field` from JSON text (arrays, dictionaries, nested models); `NULL` is
    /// JSON `null`.
    ///
    /// The text is read in the storage format (``/ModelSyncJSON/JSONCodingProfile/storage``). Rows written
    /// before that format existed hold the wire format (model keys, exclusions, transformers,
    /// ISO dates); the storage format requires every key and numeric dates, so such text fails
    /// it and is read again with the wire rules it was written with.
    public func decode<T: JSONDecodable>(_ field: Int, as type: T.Type = T.self) throws -> T {
        let column = SQLColumn(statement: statement, index: Int32(truncatingIfNeeded: field) &+ columnOffset)
        let json: String
        switch column.storageClass {
        case SQLITE_NULL: json = "null"
        case SQLITE_TEXT: json = column.text
        default: throw mismatchError(field, column.mismatch("JSON text for \(T.self)"))
        }
        do {
            return try JSONModelDecoder(options: .storage).decode(T.self, from: json)
        } catch {
            if let legacy = try? JSONModelDecoder().decode(T.self, from: json) { return legacy }
            throw SQLiteError.typeMismatch(
                table: table.name, column: table.schema.fields[field].column, "\(error)", sql: sql)
        }
    }

    /// Decodes field `field` from a column holding `transformer`'s representation
    /// (`@Transform(…, inDatabase: true)`). A value the transformer refuses is a
    /// ``SQLiteError/Kind/typeMismatch(table:column:)`` error with the transformer's as its cause.
    public func decode<X: JSONTransformer>(_ field: Int, using transformer: X) throws -> X.Value {
        try decodeTransformed(field) { try transformer.value(from: $0) }
    }

    /// Decodes an optional field through a transformer of its wrapped type: `NULL` is nil.
    public func decode<X: JSONTransformer>(_ field: Int, using transformer: X) throws -> X.Value? {
        try decodeTransformed(field) { $0.storageClass == SQLITE_NULL ? nil : try transformer.value(from: $0) }
    }

    private func decodeTransformed<T>(_ field: Int, _ read: (SQLColumn) throws -> T) throws -> T {
        do {
            return try read(SQLColumn(statement: statement, index: Int32(truncatingIfNeeded: field) &+ columnOffset))
        } catch let mismatch as SQLColumnMismatch {
            throw mismatchError(field, mismatch)
        } catch let failure as TransformFailure {
            throw transformError(column: table.schema.fields[field].column, failure)
        }
    }

    /// A value that a transformer refused, as a type mismatch of `column`.
    func transformError(column: String, _ failure: TransformFailure) -> SQLiteError {
        var error = SQLiteError.typeMismatch(table: table.name, column: column, "\(failure.error)", sql: sql)
        error.underlyingError = failure.error
        return error
    }

    private var sql: String? { sqlite3_sql(statement).map { String(cString: $0) } }

    @usableFromInline
    func mismatchError(_ field: Int, _ mismatch: SQLColumnMismatch) -> SQLiteError {
        SQLiteError.typeMismatch(
            table: table.name, column: table.schema.fields[field].column,
            "expected \(mismatch.expected), found \(mismatch.found)", sql: sql)
    }
}

/// Binds the fields of one model to a statement's parameters. Generated `bind(to:)` code calls
/// it with field indices; field `i` is bound to parameter `?(i+1)`, and the statement's SQL
/// decides which parameters it uses. You do not use it directly.
public struct SQLRowEncoder {
    @usableFromInline let statement: OpaquePointer
    @usableFromInline let table: SQLTable
    /// Fields from this one on have no parameter in the statement (e.g. a `DELETE` by key).
    @usableFromInline let parameterCount: Int
    /// Where the model's parameters start: 0, except in a multi-row `INSERT`, where row `r`
    /// binds field `i` to parameter `r × fields + i + 1`.
    @usableFromInline let parameterOffset: Int
    /// The field of the table's optional rowid key, -1 when it has none.
    @usableFromInline let optionalRowIDKey: Int
    /// Whether that key was bound `NULL`: an `INSERT` then had SQLite assign it. Recorded while
    /// binding, because reading the key through its key path to ask beforehand costs more than
    /// the insert.
    @usableFromInline private(set) var boundNilRowIDKey = false

    @usableFromInline
    init(statement: OpaquePointer, table: SQLTable) {
        self.statement = statement
        self.table = table
        self.parameterCount = Int(sqlite3_bind_parameter_count(statement))
        self.parameterOffset = 0
        self.optionalRowIDKey = table.optionalRowIDKey
    }

    /// The encoder of row `row` of a multi-row `INSERT` that binds every field of each row.
    init(statement: OpaquePointer, table: SQLTable, row: Int) {
        self.statement = statement
        self.table = table
        self.parameterCount = table.schema.fields.count
        self.parameterOffset = row * table.schema.fields.count
        self.optionalRowIDKey = table.optionalRowIDKey
    }

    /// Binds field `field`.
    @inlinable
    public mutating func encode<T: SQLColumnEncodable>(_ value: T, _ field: Int) throws {
        guard field < parameterCount else { return }
        try bind(value.sqlValue(), field)
    }

    /// Binds field `field` as JSON text (arrays, dictionaries, nested models); nil is `NULL`.
    public mutating func encode<T: JSONEncodable>(_ value: T, _ field: Int) throws {
        guard field < parameterCount else { return }
        try bind(jsonColumnValue(value), field)
    }

    /// Binds field `field` as `transformer`'s representation (`@Transform(…, inDatabase: true)`).
    public mutating func encode<X: JSONTransformer>(_ value: X.Value, _ field: Int, using transformer: X) throws {
        guard field < parameterCount else { return }
        try bind(transformer.storedValue(value), field)
    }

    /// Binds an optional field through a transformer of its wrapped type: nil is `NULL`.
    public mutating func encode<X: JSONTransformer>(_ value: X.Value?, _ field: Int, using transformer: X) throws {
        guard field < parameterCount else { return }
        try bind(value.map(transformer.storedValue) ?? .null, field)
    }

    @inlinable
    mutating func bind(_ value: SQLValue, _ field: Int) throws {
        if field == optionalRowIDKey, case .null = value { boundNilRowIDKey = true }
        let result = value.bind(to: statement, at: Int32(truncatingIfNeeded: parameterOffset &+ field &+ 1))
        if result != SQLITE_OK { throw bindError(result) }
    }

    @usableFromInline
    func bindError(_ result: Int32) -> SQLiteError {
        SQLiteError(result: result, handle: sqlite3_db_handle(statement), sql: sqlite3_sql(statement).map { String(cString: $0) })
    }
}
