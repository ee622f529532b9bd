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

/// Which rules a run follows: the model's JSON mapping for APIs, or the exact form in which
/// ModelSync stores values as JSON text (arrays, dictionaries and nested models in SQLite).
public enum JSONCodingProfile: Sendable, Equatable {
    /// The wire format: keys from `@JSON` and key strategies, `decodeExcluding` and
    /// `encodeExcluding`, transformers, date strategies and hooks all apply. The default.
    case wire
    /// The storage format: every property under its own name, nothing excluded, no transformers
    /// (a transformed property is stored as its own type when that type is JSON-codable), no
    /// `willDecode` or `didEncode` hooks, dates as full-precision seconds since 1970 (as SQLite
    /// columns hold them). Decoding requires every key, so a value in another format fails
    /// instead of decoding to defaults. Use ``JSONDecodingOptions/storage`` and
    /// ``JSONEncodingOptions/storage``.
    case storage
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
    /// The wire format (the default) or the storage format.
    public var profile: JSONCodingProfile = .wire
    /// The nesting limit unless one is given (``maxDepth``).
    public static let defaultMaxDepth = 512
    /// From this input size on, a root array decodes element by element instead of through a
    /// tape of the whole document (tests lower it to check that both paths agree). Measured
    /// with `modelsync-bench json_decode`: the whole-document tape is faster for documents of
    /// 1.3 and 12.8 MiB; element by element, peak memory falls by a third at 128 MiB, where
    /// the tape's fresh pages dominate.
    var elementByElementMinimumBytes = 32 << 20

    /// The storage format (see ``JSONCodingProfile/storage``): strict, dates as seconds since 1970.
    public static var storage: JSONDecodingOptions {
        var options = JSONDecodingOptions(mode: .strict, dateStrategy: .secondsSince1970)
        options.profile = .storage
        return options
    }

    /// Creates options; every parameter has the default described on its property.
    public init(
        mode: JSONDecodingMode = .lenient,
        keyStrategy: KeyStrategy? = nil,
        dateStrategy: JSONDateStrategy = .iso8601,
        dropsInvalidElements: Bool = false,
        maxDepth: Int = JSONDecodingOptions.defaultMaxDepth,
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
    /// The wire format (the default) or the storage format.
    public var profile: JSONCodingProfile = .wire

    /// The storage format (see ``JSONCodingProfile/storage``): dates as seconds since 1970.
    public static var storage: JSONEncodingOptions {
        var options = JSONEncodingOptions(dateStrategy: .secondsSince1970)
        options.profile = .storage
        return options
    }

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
