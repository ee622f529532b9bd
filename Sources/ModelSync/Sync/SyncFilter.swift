import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncRemote
import ModelSyncSQLite

/// Which rows of a model a subscription holds (``SyncStore/subscribe(_:where:ttl:)``), in the
/// terms of the server's list filters: the same query filters the feed
/// (`GET /cards?_since=<cursor>&boardId=5`) and, against a server without a feed, the list.
///
/// ```swift
/// let board = try await sync.subscribe(Card.self, where: .field(\.boardId, equals: 7) && .field(\.done, equals: false))
/// ```
///
/// Conditions combine with `&&`; ``field(_:isOneOf:)`` is an "or" over one field's values. A
/// value is sent as its JSON text (a string as it is, a number as written, `true`/`false`), and
/// the server compares as its filters do: numerically when both sides are numbers, else by text.
public struct SyncFilter<M: SyncedModel>: Sendable, Hashable {
    /// One query parameter of the filter: a field's JSON key with its comparison suffix
    /// (`boardId`, `views_gte`, `title_like`, `q`) and the value.
    public struct Parameter: Sendable, Hashable, Comparable {
        /// The parameter's name.
        public var name: String
        /// The parameter's value.
        public var value: String

        public static func < (lhs: Parameter, rhs: Parameter) -> Bool {
            // By bytes: the filter's identity must not depend on Unicode equivalence.
            lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
                || lhs.name.utf8.elementsEqual(rhs.name.utf8) && lhs.value.utf8.lexicographicallyPrecedes(rhs.value.utf8)
        }
    }

    /// The parameters, sorted: two filters with the same parameters are the same subscription.
    public private(set) var parameters: [Parameter]
    /// Why the filter cannot be sent (a key path that is no stored field, a value that is no
    /// scalar); ``SyncStore/subscribe(_:where:ttl:)`` throws it.
    let problem: String?

    private init(_ parameters: [Parameter], problem: String? = nil) {
        self.parameters = parameters.sorted()
        self.problem = problem
    }

    /// The field's value equals `value`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, equals value: V) -> SyncFilter {
        condition(keyPath, "", [value])
    }

    /// The field's value is one of `values`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, isOneOf values: [V]) -> SyncFilter {
        values.isEmpty ? SyncFilter([], problem: "isOneOf needs at least one value") : condition(keyPath, "", values)
    }

    /// The field's value differs from `value`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, notEqualTo value: V) -> SyncFilter {
        condition(keyPath, "_ne", [value])
    }

    /// The field's value is at least `value`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, atLeast value: V) -> SyncFilter {
        condition(keyPath, "_gte", [value])
    }

    /// The field's value is at most `value`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, atMost value: V) -> SyncFilter {
        condition(keyPath, "_lte", [value])
    }

    /// The field's value is above `value`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, above value: V) -> SyncFilter {
        condition(keyPath, "_gt", [value])
    }

    /// The field's value is below `value`.
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, below value: V) -> SyncFilter {
        condition(keyPath, "_lt", [value])
    }

    /// The field's text matches `pattern`, a regular expression matched anywhere unless anchored,
    /// ignoring case (the server's `_like`; see docs/PROTOCOL.md for the syntax it takes).
    public static func field<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, matches pattern: String) -> SyncFilter {
        guard let key = jsonKey(keyPath) else { return unknownField() }
        if serverReadsOtherwise(key) { return unfilterable(key) }
        return SyncFilter([Parameter(name: key + "_like", value: pattern)])
    }

    /// A string or number of the record contains `text`, ignoring case (the server's `q`).
    public static func search(_ text: String) -> SyncFilter {
        SyncFilter([Parameter(name: "q", value: text)])
    }

    /// Both filters hold.
    public static func && (lhs: SyncFilter, rhs: SyncFilter) -> SyncFilter {
        SyncFilter(lhs.parameters + rhs.parameters, problem: lhs.problem ?? rhs.problem)
    }

    /// The filter as a query string (`boardId=7&done=false`), its parts percent-encoded.
    public var query: String {
        parameters.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    private static func condition<V: JSONEncodable>(_ keyPath: KeyPath<M, V>, _ suffix: String, _ values: [V]) -> SyncFilter {
        guard let key = jsonKey(keyPath) else { return unknownField() }
        if serverReadsOtherwise(key) { return unfilterable(key) }
        var parameters: [Parameter] = []
        let encoder = JSONModelEncoder()
        for value in values {
            guard let json = try? encoder.encodeToValue(value), let text = Self.text(of: json) else {
                return SyncFilter([], problem: "the value of \(key) is no string, number or boolean")
            }
            parameters.append(Parameter(name: key + suffix, value: text))
        }
        return SyncFilter(parameters)
    }

    private static func jsonKey(_ keyPath: AnyKeyPath) -> String? {
        M.schema.field(for: keyPath)?.jsonKey
    }

    /// The server reads some names as something else: `_page`, `q`, `views_gte`. A filter on
    /// such a field would be taken for that, and hold other rows than asked (all of them, for a
    /// parameter the server ignores), so it is refused.
    private static func serverReadsOtherwise(_ key: String) -> Bool {
        key.hasPrefix("_") || key == "q" || ["_gte", "_lte", "_gt", "_lt", "_ne", "_like"].contains { key.hasSuffix($0) }
    }

    private static func unknownField() -> SyncFilter {
        SyncFilter([], problem: "a key path of \(M.schema.name) that is no stored field")
    }

    private static func unfilterable(_ key: String) -> SyncFilter {
        SyncFilter([], problem: "the server's list filters read the field name \(key) as a parameter of their own")
    }

    /// A scalar as the server's filters compare it: as in a URL, and `null` as written.
    private static func text(of value: JSONValue) -> String? {
        value == .null ? "null" : urlText(value)
    }

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryUnreserved) ?? text
    }
}

/// What a filter's query leaves unencoded: RFC 3986's unreserved characters (a `+` or `&` in a
/// value would change its meaning).
private let queryUnreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
