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
}

/// A model that a ``RemoteStore`` can fetch, list, save and delete.
public protocol RemoteResource: JSONModel {
    /// The model's path and envelopes.
    static var remote: RemoteConfiguration { get }
}

/// Query parameters: names (property names or JSON keys) to values. Arrays repeat the name
/// (`["id": [1, 2]]` → `id=1&id=2`); `null` values are left out.
public typealias RemoteParameters = [String: JSONValue]

extension RemoteResource {
    /// The primary key as it appears in a URL, or nil when the model has none yet.
    func remoteID(encoder: JSONModelEncoder) throws -> String? {
        guard let key = Self.schema.primaryKey.first, let field = Self.schema.field(named: key) else { return nil }
        return try encoder.encodeToValue(self)[JSONPath(parsing: field.jsonKey)].flatMap(urlText)
    }

    /// Maps parameter names given as property names to their JSON keys.
    static func mapToJSONKeys(_ parameters: RemoteParameters) -> RemoteParameters {
        var mapped: RemoteParameters = [:]
        for (name, value) in parameters { mapped[schema.field(named: name)?.jsonKey ?? name] = value }
        return mapped
    }
}

/// A scalar as it appears in a URL: strings as they are, numbers by their text.
func urlText(_ value: JSONValue) -> String? {
    switch value {
    case .string(let string): string
    case .number(let number): number.text
    case .bool(let bool): bool ? "true" : "false"
    case .null, .array, .object: nil
    }
}
