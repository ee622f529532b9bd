import ModelSyncCore

/// The direction a key path such as `\Post.id.desc` asks for in `order(...)`.
///
/// Every column type has `asc` and `desc` so that an ordering can be written as a key path:
/// `Post.all().order(\.userId, \.id.desc)`. The value itself carries nothing; the query
/// builder recognises the key path.
public struct SQLSortMarker: Sendable, Hashable {
    /// Whether the order is descending.
    public let isDescending: Bool
}

extension SQLColumnEncodable {
    /// Ascending order, as the last component of an ordering key path (`\Post.title.asc`).
    public var asc: SQLSortMarker { SQLSortMarker(isDescending: false) }
    /// Descending order, as the last component of an ordering key path (`\Post.id.desc`).
    public var desc: SQLSortMarker { SQLSortMarker(isDescending: true) }
}

/// The field of each key path of a model, built once per ``SQLTable``: the fields' own key
/// paths, and each followed by `.asc` / `.desc`, so that the builder resolves a key path with
/// one hash lookup instead of comparing it with every field.
struct KeyPathIndex: @unchecked Sendable {  // key paths are immutable; `AnyKeyPath` just is not marked Sendable
    struct Entry {
        /// The field's index in the schema.
        var field: Int
        /// The ordering direction of a `.asc` / `.desc` key path; nil for the field itself.
        var descending: Bool?
    }

    private var entries: [AnyKeyPath: Entry] = [:]

    init(_ schema: ModelSchema) {
        for (index, field) in schema.fields.enumerated() {
            guard let keyPath = field.keyPath else { continue }
            entries[keyPath as AnyKeyPath] = Entry(field: index, descending: nil)
            if let type = type(of: keyPath as AnyKeyPath).valueType as? any SQLColumnEncodable.Type {
                for (marker, descending) in Self.markers(type) {
                    if let path = (keyPath as AnyKeyPath).appending(path: marker) {
                        entries[path] = Entry(field: index, descending: descending)
                    }
                }
            }
        }
    }

    private static func markers<V: SQLColumnEncodable>(_ type: V.Type) -> [(AnyKeyPath, Bool)] {
        [(\V.asc, false), (\V.desc, true)]
    }

    subscript(_ keyPath: AnyKeyPath) -> Entry? { entries[keyPath] }
}

extension SQLTable {
    /// The column node of `keyPath`, or a failure naming it when it is not a stored field
    /// (an `@Ignored` property, a computed one, a path into a nested value).
    func columnNode(_ keyPath: AnyKeyPath) -> (node: SQLNode, descending: Bool?) {
        guard let entry = keyPaths[keyPath] else {
            return (.failure(.unknownColumn(table: name, column: "\(keyPath)")), nil)
        }
        return (.column(table: name, name: schema.fields[entry.field].column), entry.descending)
    }
}
