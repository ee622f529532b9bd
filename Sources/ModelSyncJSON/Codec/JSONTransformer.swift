import Foundation
import ModelSyncCore

/// A two-way conversion between a property's type and a JSON representation, applied with
/// `@Transform(...)` on one property.
///
/// ```swift
/// struct Cents: JSONTransformer {               // "12.34" in JSON, 1234 in Swift
///     func decode(_ json: String) throws -> Int { ... }
///     func encode(_ value: Int) throws -> String { ... }
/// }
/// extension JSONTransformer where Self == Cents { static var cents: Cents { Cents() } }
/// ```
/// An error thrown by `decode` becomes a ``JSONError`` at the property's path. With
/// `@Transform(.cents, inDatabase: true)` the representation is also what a SQLite column holds
/// (see ``Transform(_:inDatabase:)``).
public protocol JSONTransformer: Sendable {
    /// The property's type.
    associatedtype Value
    /// The type as it stands in JSON.
    associatedtype JSONRepresentation: JSONCodable
    /// JSON → property.
    func decode(_ json: JSONRepresentation) throws -> Value
    /// Property → JSON.
    func encode(_ value: Value) throws -> JSONRepresentation
}

/// `Date` ⇄ milliseconds since 1970 (a JSON number).
public struct MillisecondsSince1970Transformer: JSONTransformer {
    public init() {}
    public func decode(_ json: Double) throws -> Date { Date(timeIntervalSince1970: json / 1000) }
    public func encode(_ value: Date) throws -> Double { (value.timeIntervalSince1970 * 1000).rounded() }
}

/// `Date` ⇄ seconds since 1970 (a JSON number).
public struct SecondsSince1970Transformer: JSONTransformer {
    public init() {}
    public func decode(_ json: Double) throws -> Date { Date(timeIntervalSince1970: json) }
    public func encode(_ value: Date) throws -> Double { value.timeIntervalSince1970 }
}

/// `Date` ⇄ ISO 8601 text. Decoding accepts fractional seconds and offsets; encoding writes UTC
/// with `fractionalDigits` digits of fraction.
public struct ISO8601Transformer: JSONTransformer {
    /// Digits of fractional seconds written (0 to 9).
    public let fractionalDigits: Int
    public init(fractionalDigits: Int = 0) { self.fractionalDigits = min(max(fractionalDigits, 0), 9) }

    public func decode(_ json: String) throws -> Date {
        guard let date = ISO8601.parse(json) else {
            throw JSONError(.invalidValue("\"\(json)\" is not an ISO 8601 date"))
        }
        return date
    }

    public func encode(_ value: Date) throws -> String { ISO8601.format(value, fractionalDigits: fractionalDigits) }
}

/// `URL` ⇄ its string. (`URL` properties decode without it; use it on a `URL` stored under a
/// custom representation, or as a model for your own transformers.)
public struct URLTransformer: JSONTransformer {
    public init() {}
    public func decode(_ json: String) throws -> URL {
        guard !json.isEmpty, let url = URL(string: json) else {
            throw JSONError(.invalidValue("\"\(json)\" is not a URL"))
        }
        return url
    }

    public func encode(_ value: URL) throws -> String { value.absoluteString }
}

/// A transformer from two closures.
public struct ClosureTransformer<Value, JSONRepresentation: JSONCodable>: JSONTransformer {
    private let decodeBody: @Sendable (JSONRepresentation) throws -> Value
    private let encodeBody: @Sendable (Value) throws -> JSONRepresentation

    /// Creates a transformer from its two directions.
    public init(
        decode: @escaping @Sendable (JSONRepresentation) throws -> Value,
        encode: @escaping @Sendable (Value) throws -> JSONRepresentation
    ) {
        self.decodeBody = decode
        self.encodeBody = encode
    }

    public func decode(_ json: JSONRepresentation) throws -> Value { try decodeBody(json) }
    public func encode(_ value: Value) throws -> JSONRepresentation { try encodeBody(value) }
}

extension JSONTransformer where Self == MillisecondsSince1970Transformer {
    /// `Date` ⇄ milliseconds since 1970.
    public static var millisecondsSince1970: Self { Self() }
}

extension JSONTransformer where Self == SecondsSince1970Transformer {
    /// `Date` ⇄ seconds since 1970.
    public static var secondsSince1970: Self { Self() }
}

extension JSONTransformer where Self == ISO8601Transformer {
    /// `Date` ⇄ ISO 8601, whole seconds on output.
    public static var iso8601: Self { Self() }
    /// `Date` ⇄ ISO 8601, milliseconds on output.
    public static var iso8601WithFractionalSeconds: Self { Self(fractionalDigits: 3) }
}

extension JSONTransformer where Self == URLTransformer {
    /// `URL` ⇄ string.
    public static var url: Self { Self() }
}

extension JSONTransformer {
    /// A transformer from two closures: `.custom(decode: { ... }, encode: { ... })`.
    public static func custom<V, R: JSONCodable>(
        decode: @escaping @Sendable (R) throws -> V,
        encode: @escaping @Sendable (V) throws -> R
    ) -> Self where Self == ClosureTransformer<V, R> {
        ClosureTransformer(decode: decode, encode: encode)
    }
}
