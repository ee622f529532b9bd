import ModelSyncCore

/// A type that decodes itself from a node of a parsed JSON document.
///
/// ModelSync conforms the standard types (numbers, `Bool`, `String`, `Date`, `URL`, `UUID`,
/// `Data`, `Decimal`, optionals, arrays, dictionaries); `@Model` conforms models; enums with raw
/// values get it by declaring the conformance. A custom type implements ``decodeJSON(_:_:)``
/// with the context's helpers, e.g. `try context.value(node)` for a ``JSONValue``.
public protocol JSONDecodable {
    /// Decodes a value from the document node `node`.
    static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Self
    /// The value lenient decoding uses when a key is missing or `null` and the property has no
    /// declared default; `nil` when the type has no sensible zero (then decoding fails).
    static var jsonZeroValue: Self? { get }
    /// Whether JSON `null` is a value of this type (true only for optionals).
    static var isJSONNullable: Bool { get }
}

/// A type that writes itself as JSON.
public protocol JSONEncodable {
    /// Writes the value into the context's writer.
    func encodeJSON(to context: inout JSONEncodingContext) throws
    /// Whether the value is nil, so that encoders can omit it when asked to.
    var isJSONNull: Bool { get }
}

/// A type that converts both ways.
public typealias JSONCodable = JSONDecodable & JSONEncodable

extension JSONDecodable {
    public static var jsonZeroValue: Self? { nil }
    public static var isJSONNullable: Bool { false }
}

extension JSONEncodable {
    public var isJSONNull: Bool { false }
}

/// How forgiving decoding is.
public enum JSONDecodingMode: Sendable, Equatable {
    /// Accepts numbers in strings, strings from numbers, `"true"`/`1` for `Bool`, a single value
    /// where an array is expected, and the zero value for missing keys and `null`; records every
    /// such step in the ``DecodeReport``. The default, because real API data drifts.
    case lenient
    /// Accepts only values of exactly the declared shape.
    case strict
}

/// Options for decoding.
public struct JSONDecodingOptions: Sendable {
    /// Lenient (the default) or strict.
    public var mode: JSONDecodingMode
    /// Replaces every model's own key strategy for fields without an explicit `@JSON` key.
    public var keyStrategy: KeyStrategy?
    /// How `Date` values are read, for models that do not set their own `dates:`.
    public var dateStrategy: JSONDateStrategy
    /// Drop array elements that fail to decode (recording each in the report) instead of
    /// failing the whole array.
    public var dropsInvalidElements: Bool
    /// The deepest nesting of arrays and objects accepted.
    public var maxDepth: Int
    /// Decode through this identity map (nil: none, the default): every model with a primary
    /// key is merged into the map's canonical value (keys absent from the payload keep the
    /// canonical value's fields, `null` clears them) and the result becomes canonical.
    public var identityMap: IdentityMap?

    /// Creates options; every parameter has the default described on its property.
    public init(
        mode: JSONDecodingMode = .lenient,
        keyStrategy: KeyStrategy? = nil,
        dateStrategy: JSONDateStrategy = .iso8601,
        dropsInvalidElements: Bool = false,
        maxDepth: Int = 512,
        identityMap: IdentityMap? = nil
    ) {
        self.mode = mode
        self.keyStrategy = keyStrategy
        self.dateStrategy = dateStrategy
        self.dropsInvalidElements = dropsInvalidElements
        self.maxDepth = maxDepth
        self.identityMap = identityMap
    }
}

/// How `nil` properties are written.
public enum JSONNilEncoding: Sendable, Equatable {
    /// `"key": null` (the default: the output always has the same keys).
    case null
    /// The key is left out.
    case omit
}

/// Options for encoding.
public struct JSONEncodingOptions: Sendable {
    /// Whether nil properties are written as `null` or left out.
    public var nilEncoding: JSONNilEncoding
    /// Replaces every model's own key strategy for fields without an explicit `@JSON` key.
    public var keyStrategy: KeyStrategy?
    /// How `Date` values are written, for models that do not set their own `dates:`.
    public var dateStrategy: JSONDateStrategy
    /// Newlines and two-space indentation instead of compact output.
    public var prettyPrinted: Bool

    /// Creates options; every parameter has the default described on its property.
    public init(
        nilEncoding: JSONNilEncoding = .null,
        keyStrategy: KeyStrategy? = nil,
        dateStrategy: JSONDateStrategy = .iso8601,
        prettyPrinted: Bool = false
    ) {
        self.nilEncoding = nilEncoding
        self.keyStrategy = keyStrategy
        self.dateStrategy = dateStrategy
        self.prettyPrinted = prettyPrinted
    }
}
