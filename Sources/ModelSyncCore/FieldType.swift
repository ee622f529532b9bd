import Foundation

/// The type of a model field, as the storage layers need to know it.
public indirect enum FieldType: Sendable, Equatable, CustomStringConvertible {
    case bool
    case integer(bitWidth: Int, isSigned: Bool)
    case double
    case float
    case string
    case date
    case url
    case uuid
    case data
    case decimal
    case optional(FieldType)
    case array(FieldType)
    /// A dictionary with `String` keys.
    case dictionary(FieldType)
    /// Another model, nested.
    case model(ModelReference)
    /// An enum stored as its raw value.
    case enumeration(name: String, rawType: FieldType)
    /// A type that brings its own JSON conversion (see `JSONCodable`).
    case custom(name: String)

    /// Whether the field may hold nil.
    public var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }

    /// The type with one level of optionality removed.
    public var nonOptional: FieldType {
        if case .optional(let wrapped) = self { return wrapped }
        return self
    }

    public var description: String {
        switch self {
        case .bool: "Bool"
        case .integer(let bits, let signed): (signed ? "Int" : "UInt") + (bits == Int.bitWidth ? "" : "\(bits)")
        case .double: "Double"
        case .float: "Float"
        case .string: "String"
        case .date: "Date"
        case .url: "URL"
        case .uuid: "UUID"
        case .data: "Data"
        case .decimal: "Decimal"
        case .optional(let wrapped): "\(wrapped)?"
        case .array(let element): "[\(element)]"
        case .dictionary(let value): "[String: \(value)]"
        case .model(let reference): reference.name
        case .enumeration(let name, _): name
        case .custom(let name): name
        }
    }
}

/// A nested model type, resolved lazily so that recursive models (`var replies: [Comment]`)
/// do not recurse while their schemas are built.
public struct ModelReference: Sendable, Equatable {
    /// The model type's name.
    public let name: String
    private let resolve: @Sendable () -> ModelSchema

    /// Creates a reference to a model's schema.
    public init(name: String, schema: @escaping @Sendable () -> ModelSchema) {
        self.name = name
        self.resolve = schema
    }

    /// The referenced model's schema.
    public var schema: ModelSchema { resolve() }

    public static func == (lhs: ModelReference, rhs: ModelReference) -> Bool { lhs.name == rhs.name }
}

/// A type that can be the type of a model field. ModelSync provides it for the standard types;
/// enums with raw values get it by declaring the conformance (`enum Role: String, ModelEnum`),
/// models get it from `@Model`.
public protocol FieldValue: Sendable {
    /// How the storage layers see this type.
    static var fieldType: FieldType { get }
}

extension FieldValue where Self: RawRepresentable, RawValue: FieldValue {
    public static var fieldType: FieldType {
        .enumeration(name: String(describing: Self.self), rawType: RawValue.fieldType)
    }
}

extension Bool: FieldValue { public static var fieldType: FieldType { .bool } }
extension Double: FieldValue { public static var fieldType: FieldType { .double } }
extension Float: FieldValue { public static var fieldType: FieldType { .float } }
extension String: FieldValue { public static var fieldType: FieldType { .string } }
extension Date: FieldValue { public static var fieldType: FieldType { .date } }
extension URL: FieldValue { public static var fieldType: FieldType { .url } }
extension UUID: FieldValue { public static var fieldType: FieldType { .uuid } }
extension Data: FieldValue { public static var fieldType: FieldType { .data } }
extension Decimal: FieldValue { public static var fieldType: FieldType { .decimal } }

extension FieldValue where Self: FixedWidthInteger {
    public static var fieldType: FieldType { .integer(bitWidth: bitWidth, isSigned: isSigned) }
}

extension Int: FieldValue {}
extension Int8: FieldValue {}
extension Int16: FieldValue {}
extension Int32: FieldValue {}
extension Int64: FieldValue {}
extension UInt: FieldValue {}
extension UInt8: FieldValue {}
extension UInt16: FieldValue {}
extension UInt32: FieldValue {}
extension UInt64: FieldValue {}

extension Optional: FieldValue where Wrapped: FieldValue {
    public static var fieldType: FieldType { .optional(Wrapped.fieldType) }
}

extension Array: FieldValue where Element: FieldValue {
    public static var fieldType: FieldType { .array(Element.fieldType) }
}

/// A set is described as an array of its elements: that is its JSON form.
extension Set: FieldValue where Element: FieldValue {
    public static var fieldType: FieldType { .array(Element.fieldType) }
}

extension Dictionary: FieldValue where Key == String, Value: FieldValue {
    public static var fieldType: FieldType { .dictionary(Value.fieldType) }
}
