import CSQLite
import Foundation
import ModelSyncCore

/// A value as SQLite stores it: one of its five storage classes.
public enum SQLValue: Sendable, Hashable, CustomStringConvertible {
    /// `NULL`.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob([UInt8])

    /// Text compares by its UTF-8 bytes, as SQLite's `BINARY` collation does: `"é"` and
    /// `"e\u{301}"` are two values (two ids, two keys), though Swift's `String` equates them.
    public static func == (lhs: SQLValue, rhs: SQLValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.integer(let left), .integer(let right)): left == right
        case (.real(let left), .real(let right)): left == right
        case (.text(let left), .text(let right)): left.isIdentical(to: right)
        case (.blob(let left), .blob(let right)): left == right
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let value): hasher.combine(1); hasher.combine(value)
        case .real(let value): hasher.combine(2); hasher.combine(value)
        case .text(let value): hasher.combine(3); hasher.combine(ExactText(value))
        case .blob(let value): hasher.combine(4); hasher.combine(value)
        }
    }

    /// The value as a SQL literal, for `DEFAULT` clauses in generated DDL (statements that
    /// cannot take bound parameters). Text is quoted with doubled quotes, blobs as `X'…'`.
    public var sqlLiteral: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): value.isFinite ? "\(value)" : "NULL"
        case .text(let value): quoteLiteral(value)
        case .blob(let bytes): "X'" + bytes.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): "INTEGER \(value)"
        case .real(let value): "REAL \(value)"
        case .text(let value): "TEXT \(quoteLiteral(value))"
        case .blob(let bytes): "BLOB (\(bytes.count) bytes)"
        }
    }

    /// Binds the value to parameter `index` (1-based) of a prepared statement.
    @inlinable
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .null: sqlite3_bind_null(statement, index)
        case .integer(let value): sqlite3_bind_int64(statement, index, value)
        case .real(let value): sqlite3_bind_double(statement, index, value)
        case .text(let value): bindText(value, statement, index)
        case .blob(let bytes): bindBlob(bytes, statement, index)
        }
    }

    /// Reads column `index` (0-based) of the current row.
    init(statement: OpaquePointer, column index: Int32) {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: self = .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: self = .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT: self = .text(columnText(statement, index))
        case SQLITE_BLOB: self = .blob(columnBlob(statement, index))
        default: self = .null
        }
    }
}

// Not `ExpressibleByNilLiteral`: `value != nil` on a `SQLValue?` would then compare with
// `.null` instead of testing for a value.
extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByBooleanLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

/// `'text'` with inner quotes doubled.
func quoteLiteral(_ text: String) -> String {
    "'" + text.replacingASCII(UInt8(ascii: "'"), with: "''") + "'"
}

/// `"name"` with inner double quotes doubled: every identifier ModelSync writes into SQL goes
/// through this, so table and column names can be anything, keywords included.
public func quoteIdentifier(_ name: String) -> String {
    // By bytes (see `replacingASCII`); a name without a quote is returned as it is, which
    // matters as queries quote their table and columns each time they render.
    "\"" + name.replacingASCII(UInt8(ascii: "\""), with: "\"\"") + "\""
}

/// ``quoteIdentifier(_:)`` for a name that may come from outside: throws
/// ``SQLiteError/Kind-swift.enum/invalidIdentifier(name:)`` for one holding NUL, which SQLite's
/// tokenizer reads as the end of the statement ("unrecognized token").
func checkedIdentifier(_ name: String) throws -> String {
    try checkIdentifier(name)
    return quoteIdentifier(name)
}

/// Throws ``SQLiteError/Kind-swift.enum/invalidIdentifier(name:)`` when `name` holds NUL.
func checkIdentifier(_ name: String) throws {
    if name.utf8.contains(0) { throw SQLiteError.invalidIdentifier(name) }
}

// SQLITE_TRANSIENT: SQLite copies the bytes before the bind call returns.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

@usableFromInline
func bindText(_ text: String, _ statement: OpaquePointer, _ index: Int32) -> Int32 {
    var text = text
    return text.withUTF8 { bytes in
        // A nil pointer would bind NULL; an empty string is text.
        guard bytes.count > 0 else { return sqlite3_bind_text(statement, index, "", 0, sqliteTransient) }
        return bytes.withMemoryRebound(to: CChar.self) {
            sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), sqliteTransient)
        }
    }
}

@usableFromInline
func bindBlob(_ bytes: some ContiguousBytes, _ statement: OpaquePointer, _ index: Int32) -> Int32 {
    bytes.withUnsafeBytes { buffer in
        // A zero-length blob is a blob, not NULL.
        guard let base = buffer.baseAddress, buffer.count > 0 else { return sqlite3_bind_zeroblob(statement, index, 0) }
        return sqlite3_bind_blob(statement, index, base, Int32(buffer.count), sqliteTransient)
    }
}

@usableFromInline
func columnText(_ statement: OpaquePointer, _ index: Int32) -> String {
    guard let pointer = sqlite3_column_text(statement, index) else { return "" }
    let count = Int(sqlite3_column_bytes(statement, index))
    return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
}

@usableFromInline
func columnBlob(_ statement: OpaquePointer, _ index: Int32) -> [UInt8] {
    let count = Int(sqlite3_column_bytes(statement, index))
    guard count > 0, let pointer = sqlite3_column_blob(statement, index) else { return [] }
    return Array(UnsafeRawBufferPointer(start: pointer, count: count))
}

extension SQLValue {
    /// The text, when the value is text.
    public var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The integer, when the value is an integer.
    public var integerValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }
}
