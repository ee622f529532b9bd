import CSQLite
import Foundation
import ModelSyncCore
import ModelSyncJSON

/// A type stored in one SQLite column in its own format: the standard types, optionals and
/// enums with raw values. Arrays, dictionaries, nested models and other ``/ModelSyncJSON/JSONDecodable``
/// types are stored as JSON text instead, with no conformance needed.
///
/// Refining the JSON protocols makes the overloads of ``SQLRowDecoder`` and
/// ``SQLRowEncoder`` unambiguous: the column form wins whenever a type has one.
public protocol SQLColumnDecodable: JSONDecodable {
    /// Reads the value from a column of the current row.
    static func decodeSQL(_ column: SQLColumn) throws -> Self
}

/// The writing side of ``SQLColumnDecodable``.
public protocol SQLColumnEncodable: JSONEncodable {
    /// The value as SQLite stores it.
    func sqlValue() throws -> SQLValue
}

/// Both directions.
public typealias SQLColumnCodable = SQLColumnDecodable & SQLColumnEncodable

/// One column of the current row of a statement, as column decoders see it.
public struct SQLColumn {
    /// The statement, positioned on a row.
    public let statement: OpaquePointer
    /// The 0-based column index.
    public let index: Int32

    @inlinable
    public init(statement: OpaquePointer, index: Int32) {
        self.statement = statement
        self.index = index
    }

    /// `SQLITE_INTEGER`, `SQLITE_FLOAT`, `SQLITE_TEXT`, `SQLITE_BLOB` or `SQLITE_NULL`.
    @inlinable public var storageClass: Int32 { sqlite3_column_type(statement, index) }
    /// The value as an integer (only meaningful for `SQLITE_INTEGER`).
    @inlinable public var int64: Int64 { sqlite3_column_int64(statement, index) }
    /// The value as a double.
    @inlinable public var double: Double { sqlite3_column_double(statement, index) }
    /// The value as text.
    @inlinable public var text: String { columnText(statement, index) }
    /// The value as bytes.
    @inlinable public var bytes: [UInt8] { columnBlob(statement, index) }
    /// The value, whatever its storage class.
    public var value: SQLValue { SQLValue(statement: statement, column: index) }

    /// The error for a value that is not a `expected`.
    public func mismatch(_ expected: String) -> SQLColumnMismatch {
        SQLColumnMismatch(expected: expected, found: value)
    }
}

/// A stored value that a column decoder could not accept. ``SQLRowDecoder`` turns it into a
/// ``SQLiteError`` naming the table and column.
public struct SQLColumnMismatch: Error {
    /// The Swift type wanted.
    public var expected: String
    /// What the column held.
    public var found: SQLValue
}

// MARK: - Integers and Bool

extension SQLColumnDecodable where Self: FixedWidthInteger {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> Self {
        guard column.storageClass == SQLITE_INTEGER, let value = Self(exactly: column.int64) else {
            throw column.mismatch("\(Self.self)")
        }
        return value
    }
}

extension SQLColumnEncodable where Self: FixedWidthInteger {
    @inlinable
    public func sqlValue() throws -> SQLValue {
        guard let value = Int64(exactly: self) else {
            throw SQLiteError(code: SQLITE_RANGE, message: "\(self) does not fit in a SQLite integer")
        }
        return .integer(value)
    }
}

extension Int: SQLColumnCodable {}
extension Int8: SQLColumnCodable {}
extension Int16: SQLColumnCodable {}
extension Int32: SQLColumnCodable {}
extension Int64: SQLColumnCodable {}
extension UInt: SQLColumnCodable {}
extension UInt8: SQLColumnCodable {}
extension UInt16: SQLColumnCodable {}
extension UInt32: SQLColumnCodable {}
extension UInt64: SQLColumnCodable {}

extension Bool: SQLColumnCodable {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> Bool {
        guard column.storageClass == SQLITE_INTEGER else { throw column.mismatch("Bool") }
        return column.int64 != 0
    }

    @inlinable
    public func sqlValue() throws -> SQLValue { .integer(self ? 1 : 0) }
}

// MARK: - Floating point

extension Double: SQLColumnCodable {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> Double {
        switch column.storageClass {
        case SQLITE_FLOAT, SQLITE_INTEGER: return column.double
        default: throw column.mismatch("Double")
        }
    }

    @inlinable
    public func sqlValue() throws -> SQLValue { .real(self) }
}

extension Float: SQLColumnCodable {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> Float {
        Float(try Double.decodeSQL(column))
    }

    @inlinable
    public func sqlValue() throws -> SQLValue { .real(Double(self)) }
}

// MARK: - Text and blobs

extension String: SQLColumnCodable {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> String {
        guard column.storageClass == SQLITE_TEXT else { throw column.mismatch("String") }
        return column.text
    }

    @inlinable
    public func sqlValue() throws -> SQLValue { .text(self) }
}

extension Data: SQLColumnCodable {
    public static func decodeSQL(_ column: SQLColumn) throws -> Data {
        guard column.storageClass == SQLITE_BLOB else { throw column.mismatch("Data") }
        return Data(column.bytes)
    }

    public func sqlValue() throws -> SQLValue { .blob([UInt8](self)) }
}

/// Dates are stored as seconds since 1970 (`REAL`), so they sort and compare in SQL.
extension Date: SQLColumnCodable {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> Date {
        switch column.storageClass {
        case SQLITE_FLOAT, SQLITE_INTEGER: return Date(timeIntervalSince1970: column.double)
        default: throw column.mismatch("Date")
        }
    }

    @inlinable
    public func sqlValue() throws -> SQLValue { .real(timeIntervalSince1970) }
}

extension URL: SQLColumnCodable {
    public static func decodeSQL(_ column: SQLColumn) throws -> URL {
        guard column.storageClass == SQLITE_TEXT, let url = URL(string: column.text) else { throw column.mismatch("URL") }
        return url
    }

    public func sqlValue() throws -> SQLValue { .text(absoluteString) }
}

extension UUID: SQLColumnCodable {
    public static func decodeSQL(_ column: SQLColumn) throws -> UUID {
        guard column.storageClass == SQLITE_TEXT, let uuid = UUID(uuidString: column.text) else { throw column.mismatch("UUID") }
        return uuid
    }

    public func sqlValue() throws -> SQLValue { .text(uuidString) }
}

/// The locale Decimal text is parsed in (made once, not per row).
private let posixLocale = Locale(identifier: "en_US_POSIX")

/// Decimals are stored as text, so no digit is lost.
extension Decimal: SQLColumnCodable {
    public static func decodeSQL(_ column: SQLColumn) throws -> Decimal {
        switch column.storageClass {
        case SQLITE_TEXT:
            guard let value = Decimal(string: column.text, locale: posixLocale) else {
                throw column.mismatch("Decimal")
            }
            return value
        case SQLITE_INTEGER: return Decimal(column.int64)
        case SQLITE_FLOAT: return Decimal(column.double)
        default: throw column.mismatch("Decimal")
        }
    }

    public func sqlValue() throws -> SQLValue { .text(description) }
}

// MARK: - Any JSON

/// A ``/ModelSyncJSON/JSONValue`` field is a `TEXT` column of its JSON text (`NULL` for JSON
/// `null`), as any value stored as JSON is; having a column form, it can also be compared
/// and set in queries. Two values compare equal when their texts are equal: the same JSON
/// written the same way (`1` and `1.0` differ).
extension JSONValue: SQLColumnCodable {
    public static func decodeSQL(_ column: SQLColumn) throws -> JSONValue {
        switch column.storageClass {
        case SQLITE_NULL:
            return .null
        case SQLITE_TEXT:
            guard let value = try? JSONValue(parsing: column.text) else { throw column.mismatch("JSON text") }
            return value
        default:
            throw column.mismatch("JSON text")
        }
    }

    public func sqlValue() throws -> SQLValue {
        switch self {
        case .null: return .null
        // A number's JSON is the text it holds (as `jsonBytes` writes it): keys stored as JSON
        // (the sync bookkeeping's, a row each) skip the writer.
        case .number(let number): return .text(number.text)
        default: return .text(String(decoding: jsonBytes(), as: UTF8.self))
        }
    }
}

// MARK: - Optionals and enums

extension Optional: SQLColumnDecodable where Wrapped: SQLColumnDecodable {
    @inlinable
    public static func decodeSQL(_ column: SQLColumn) throws -> Wrapped? {
        column.storageClass == SQLITE_NULL ? nil : try Wrapped.decodeSQL(column)
    }
}

extension Optional: SQLColumnEncodable where Wrapped: SQLColumnEncodable {
    @inlinable
    public func sqlValue() throws -> SQLValue {
        guard let self else { return .null }
        return try self.sqlValue()
    }
}

/// Enums with raw values (`ModelEnum`) are stored as their raw value.
extension SQLColumnDecodable where Self: RawRepresentable, RawValue: SQLColumnDecodable {
    public static func decodeSQL(_ column: SQLColumn) throws -> Self {
        guard let value = Self(rawValue: try RawValue.decodeSQL(column)) else { throw column.mismatch("\(Self.self)") }
        return value
    }
}

extension SQLColumnEncodable where Self: RawRepresentable, RawValue: SQLColumnEncodable {
    public func sqlValue() throws -> SQLValue { try rawValue.sqlValue() }
}

// MARK: - Column types

extension FieldType {
    /// The declared SQL type of a column holding this type: `INTEGER`, `REAL`, `TEXT` or
    /// `BLOB`. Arrays, dictionaries, nested models and custom types are JSON `TEXT`.
    public var sqlType: String {
        switch self {
        case .bool, .integer: "INTEGER"
        case .double, .float, .date: "REAL"
        case .string, .url, .uuid, .decimal, .array, .dictionary, .model, .custom: "TEXT"
        case .data: "BLOB"
        case .optional(let wrapped): wrapped.sqlType
        case .enumeration(_, let rawType): rawType.sqlType
        }
    }
}

/// The SQL value of any field value: its column form, or JSON text.
func sqlValue(of value: Any) throws -> SQLValue? {
    if let value = value as? any SQLColumnEncodable { return try value.sqlValue() }
    if let value = value as? any JSONEncodable { return try jsonColumnValue(value) }
    return nil
}

/// JSON text for a value stored as JSON, in the storage format (property names, every field,
/// full-precision dates; see ``JSONCodingProfile/storage``); NULL for nil.
func jsonColumnValue(_ value: some JSONEncodable) throws -> SQLValue {
    value.isJSONNull ? .null : .text(try JSONModelEncoder(options: .storage).encodeToString(value))
}
