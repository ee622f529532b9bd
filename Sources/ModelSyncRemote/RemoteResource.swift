import Foundation
import ModelSyncCore
import ModelSyncJSON

/// Where a model lives on a REST server, and how its JSON is wrapped.
///
/// ```swift
/// extension Post: RemoteResource {
///     static let remote = RemoteConfiguration(path: "posts")
/// }
/// ```
public struct RemoteConfiguration: Sendable {
    /// The collection path below the base URL, e.g. `posts` or `api/v2/posts`.
    public var path: String
    /// The base URL of this resource, evaluated on every request; nil uses the store's.
    public var baseURL: (@Sendable () async throws -> URL)?
    /// The envelope key of a single item in responses and request bodies, e.g. `data`.
    public var itemKey: JSONPath
    /// The envelope key of a list in responses, e.g. `results` or `data.items`.
    public var listKey: JSONPath
    /// Property names whose values a model sends as query parameters when it is fetched,
    /// saved or deleted, below call parameters and above the store's defaults. (Creating a
    /// child under a parent leaves them out: the parent's URL says the same.)
    public var parameterProperties: [String]

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - path: The collection path below the base URL.
    ///   - baseURL: A base URL for this resource only.
    ///   - itemKey: The envelope of single items (empty: none).
    ///   - listKey: The envelope of lists (empty: none).
    ///   - parameterProperties: Properties sent as query parameters (see ``parameterProperties``).
    public init(
        path: String, baseURL: URL? = nil, itemKey: JSONPath = JSONPath(), listKey: JSONPath = JSONPath(),
        parameterProperties: [String] = []
    ) {
        self.path = path
        if let baseURL {
            self.baseURL = { baseURL }
        }
        self.itemKey = itemKey
        self.listKey = listKey
        self.parameterProperties = parameterProperties
    }

    /// Creates a configuration whose base URL is looked up on every request (a server chosen at
    /// run time, a region, a test server).
    public init(
        path: String, baseURLProvider: @escaping @Sendable () async throws -> URL,
        itemKey: JSONPath = JSONPath(), listKey: JSONPath = JSONPath(), parameterProperties: [String] = []
    ) {
        self.init(path: path, itemKey: itemKey, listKey: listKey, parameterProperties: parameterProperties)
        self.baseURL = baseURLProvider
    }

    /// ``path`` as path segments (`api/v2/posts` → `["api", "v2", "posts"]`), for
    /// ``RemoteResource/remotePath(for:)``.
    public var pathSegments: [String] { path.split(separator: "/").map(String.init) }
}

/// A model that a ``RemoteStore`` can fetch, list, save and delete.
public protocol RemoteResource: JSONModel {
    /// The model's path and envelopes.
    static var remote: RemoteConfiguration { get }

    /// The path of the record with `id` below the base URL, as path segments: by default the
    /// collection's segments and then the id (`["posts", "1"]`; a composite id's parts joined by
    /// `,`: `["order-lines", "7,3"]`).
    ///
    /// Implement it for a record that lives elsewhere, e.g. a line under its order:
    ///
    /// ```swift
    /// static func remotePath(for id: RemoteID) throws -> [String] {
    ///     ["orders", id.parts[0], "lines", id.parts[1]]      // /orders/7/lines/3
    /// }
    /// ```
    ///
    /// Each segment is sent as exactly one path segment, percent-encoded as ids are (a `/` or a
    /// `..` never leaves it). The store calls it only with an id of one non-empty part per
    /// primary-key field (one part for a model without a primary key), so `id.parts` can be
    /// indexed by the key's fields. An error thrown here fails the call before anything is sent;
    /// an empty segment fails it with ``RemoteError/invalidURL(_:)``.
    static func remotePath(for id: RemoteID) throws -> [String]
}

extension RemoteResource {
    /// The collection's segments and then the id, its parts joined by `,` (see
    /// ``RemoteID/joined(separator:)``).
    public static func remotePath(for id: RemoteID) throws -> [String] {
        remote.pathSegments + [try id.joined(separator: ",")]
    }
}

/// A record's id as it goes into a URL: one part, or one per field of a composite primary key,
/// in the key's order.
///
/// ```swift
/// try await api.fetch(OrderLine.self, id: RemoteID(7, 3))   // GET /order-lines/7,3
/// ```
///
/// The ``RemoteStore`` calls that take an `id:` take a `RemoteID` as well as a plain value
/// (which is an id of one part).
public struct RemoteID: Sendable, Hashable, CustomStringConvertible {
    /// The parts as text, in primary-key order.
    public var parts: [String]

    /// An id from its parts, in primary-key order: `RemoteID(7, 3)`, `RemoteID("2024/intro")`.
    public init(_ parts: any CustomStringConvertible...) {
        self.parts = parts.map(\.description)
    }

    /// An id from its parts as text.
    public init(parts: [String]) {
        self.parts = parts
    }

    /// The parts joined by `separator`, as one segment. One part is returned as it is.
    ///
    /// - Throws: ``RemoteError/invalidURL(_:)`` when a part of a composite id holds
    ///   `separator`: the joined text would read as other parts.
    public func joined(separator: String) throws -> String {
        guard parts.count > 1 else { return parts.first ?? "" }
        // By bytes: `","` followed by a combining mark is another Character to Swift, but a
        // server splitting the segment on "," still sees the comma.
        if !separator.isEmpty, let part = parts.first(where: { $0.utf8.firstRange(of: separator.utf8) != nil }) {
            throw RemoteError.invalidURL("the id part \"\(part)\" holds the separator \"\(separator)\"")
        }
        return parts.joined(separator: separator)
    }

    public var description: String { parts.joined(separator: ",") }
}

/// Query parameters: names (property names or JSON keys) to values. Arrays repeat the name
/// (`["id": [1, 2]]` → `id=1&id=2`); `null` values are left out.
public typealias RemoteParameters = [String: JSONValue]

extension RemoteResource {
    /// The primary key as it appears in a URL (a part per key field), or nil when the model has
    /// none or lacks a value for one of its fields.
    func remoteID(encoder: JSONModelEncoder) throws -> RemoteID? {
        let key = Self.schema.primaryKey
        guard !key.isEmpty else { return nil }
        let json = try encoder.encodeToValue(self)
        var parts: [String] = []
        for name in key {
            guard let field = Self.schema.field(named: name), let part = json[JSONPath(parsing: field.jsonKey)].flatMap(urlText) else { return nil }
            parts.append(part)
        }
        return RemoteID(parts: parts)
    }

    /// Maps parameter names given as property names to their JSON keys.
    static func mapToJSONKeys(_ parameters: RemoteParameters) -> RemoteParameters {
        var mapped: RemoteParameters = [:]
        for (name, value) in parameters { mapped[schema.field(named: name)?.jsonKey ?? name] = value }
        return mapped
    }
}

/// A scalar as it appears in a URL: strings as they are, numbers by their text.
package func urlText(_ value: JSONValue) -> String? {
    switch value {
    case .string(let string): string
    case .number(let number): number.text
    case .bool(let bool): bool ? "true" : "false"
    case .null, .array, .object: nil
    }
}
