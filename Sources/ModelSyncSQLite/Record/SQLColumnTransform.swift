import CSQLite
import ModelSyncCore
import ModelSyncJSON

/// A field whose SQLite column holds its transformer's representation:
/// `@Transform(.cents, inDatabase: true) var price: Int` stores `"12.34"`, not `1234`.
///
/// `@Model` lists these in the generated ``SQLModel/sqlTable`` (`SQLTable(schema:transforms:)`),
/// so that the table's DDL, its shape checks and the typed queries see the column's own type;
/// build one yourself only for a table described by hand.
///
/// The representation has its own column form when it is a column type (``SQLColumnCodable``
/// and `FieldValue`: `String`, `Double`, `Bool`, the integers, …); anything else (an array, an
/// object) is stored as JSON text in the storage format, as arrays and nested models are.
public struct SQLColumnTransform: Sendable {
    /// The field's index in the schema.
    public let field: Int
    /// The type the column holds: the transformer's representation, optional when the property is.
    public let columnType: FieldType
    /// The transformer's type: two columns store values alike when their transformers' types match.
    let transformerType: ObjectIdentifier
    /// A property value (`Value`, or `Value?` for an optional property) → its stored form.
    let store: @Sendable (Any) throws -> SQLValue
    /// The column of the current row → the property value. Throws ``SQLColumnMismatch`` for a
    /// value of the wrong storage class, ``TransformFailure`` when the transformer refuses it.
    let read: @Sendable (SQLColumn) throws -> Any

    /// The transform of field `field`, the property at `keyPath` (which types the transformer
    /// against the property).
    public init<Root, X: JSONTransformer>(_ field: Int, _ keyPath: KeyPath<Root, X.Value>, using transformer: X) {
        self.field = field
        self.columnType = X.columnType
        self.transformerType = ObjectIdentifier(X.self)
        self.store = { value in
            guard let value = value as? X.Value else { throw SQLiteError.misuse("\(value) is not a \(X.Value.self)") }
            return try transformer.storedValue(value)
        }
        self.read = { column in try transformer.value(from: column) }
    }

    /// The transform of an optional field whose transformer converts the wrapped type: nil is `NULL`.
    public init<Root, X: JSONTransformer>(_ field: Int, _ keyPath: KeyPath<Root, X.Value?>, using transformer: X) {
        self.field = field
        self.columnType = .optional(X.columnType)
        self.transformerType = ObjectIdentifier(X.self)
        self.store = { value in
            guard let optional = value as? X.Value? else { throw SQLiteError.misuse("\(value) is not a \(X.Value?.self)") }
            guard let value = optional else { return .null }
            return try transformer.storedValue(value)
        }
        self.read = { column -> X.Value? in
            column.storageClass == SQLITE_NULL ? nil : try transformer.value(from: column)
        }
    }
}

/// What a transformer threw while reading a column; ``SQLRowDecoder`` reports it as a
/// ``SQLiteError/Kind/typeMismatch(table:column:)`` with this error as its cause.
struct TransformFailure: Error {
    var error: any Error
}

extension JSONTransformer {
    /// The representation's type as a column decoder when it is stored in its own column form;
    /// nil when it is stored as JSON text.
    static var columnForm: (any SQLColumnDecodable.Type)? {
        guard JSONRepresentation.self is any SQLColumnEncodable.Type, JSONRepresentation.self is any FieldValue.Type else { return nil }
        return JSONRepresentation.self as? any SQLColumnDecodable.Type
    }

    /// The type the column holds: the representation's, or JSON text.
    static var columnType: FieldType {
        let type = (JSONRepresentation.self as? any FieldValue.Type)?.fieldType
        if columnForm != nil, let type { return type }
        // JSON text: an array, a dictionary or a model says so; anything else is a custom type.
        if let type, type.sqlType == "TEXT" { return type }
        return .custom(name: "\(JSONRepresentation.self)")
    }

    /// The stored form of a value: the representation's column value, or its JSON text.
    func storedValue(_ value: Value) throws -> SQLValue {
        let representation: JSONRepresentation
        do {
            representation = try encode(value)
        } catch {
            throw SQLiteError.misuse("\(Self.self) cannot store \(value): \(error)")
        }
        if Self.columnForm != nil, let column = representation as? any SQLColumnEncodable {
            return try column.sqlValue()
        }
        return try jsonColumnValue(representation)
    }

    /// The value of a column holding the representation.
    func value(from column: SQLColumn) throws -> Value {
        let representation: JSONRepresentation
        if let type = Self.columnForm {
            guard let decoded = try type.decodeSQL(column) as? JSONRepresentation else {
                throw column.mismatch("\(JSONRepresentation.self)")
            }
            representation = decoded
        } else {
            let json: String
            switch column.storageClass {
            case SQLITE_NULL: json = "null"
            case SQLITE_TEXT: json = column.text
            default: throw column.mismatch("JSON text for \(JSONRepresentation.self)")
            }
            do {
                representation = try JSONModelDecoder(options: .storage).decode(JSONRepresentation.self, from: json)
            } catch {
                throw TransformFailure(error: error)
            }
        }
        do {
            return try decode(representation)
        } catch {
            throw TransformFailure(error: error)
        }
    }
}

/// A column stored through its transformer, as the query builder sees it: operands bind
/// through the transformer, and what the stored form cannot express fails.
///
/// A class: every ``SQLExpression`` carries an optional one, and a reference keeps
/// expressions (copied at each builder step) one word wide instead of two strings and a
/// transform.
@usableFromInline
final class TransformedColumn: Sendable {
    let table: String
    let column: String
    let transform: SQLColumnTransform

    init(table: String, column: String, transform: SQLColumnTransform) {
        self.table = table
        self.column = column
        self.transform = transform
    }

    /// A value bound as the column stores it.
    func bound(_ value: Any) -> SQLNode {
        SQLNode.bound(value) { try transform.store(value) }
    }

    /// A `Bool` expression on this column as a condition: true where it stores what `true`
    /// becomes.
    @usableFromInline
    func condition(_ node: SQLNode) -> SQLNode {
        .operation(node, "=", bound(true))
    }

    /// The failure of `operation` on this column.
    func failure(_ operation: String) -> SQLNode {
        .failure(
            SQLiteError(
                .transformedColumn(table: table, column: column), code: SQLITE_MISUSE,
                message: "\(table).\(column) holds its transformer's representation; \(operation) would not see the property's values"
            ))
    }

    /// Whether `other` (nil: not such a column) stores values as this column does: through a
    /// transformer of the same type.
    func storesAlike(_ other: TransformedColumn?) -> Bool {
        other?.transform.transformerType == transform.transformerType
    }
}

extension SQLTable {
    /// The column of field `index`, when it is stored through its transformer.
    func transformedColumn(field index: Int) -> TransformedColumn? {
        transformedColumns[index]
    }

    /// A value of field `index` bound as its column stores it.
    func bound(_ value: some SQLColumnEncodable, field index: Int) -> SQLNode {
        transformedColumn(field: index)?.bound(value) ?? .bound(value)
    }

    /// A value of a one-column primary key as its column stores it (through the key's
    /// transformer, if it has one).
    func storedKey(_ key: some SQLColumnEncodable) throws -> SQLValue {
        guard primaryKey.count == 1, let transformed = transformedColumns[primaryKey[0]] else { return try key.sqlValue() }
        return try transformed.transform.store(key)
    }
}
