import ModelSyncCore

/// The field of each key path of a model, built once per ``SQLTable``, so that the builder
/// resolves a key path with one hash lookup instead of comparing it with every field.
struct KeyPathIndex: @unchecked Sendable {  // key paths are immutable; `AnyKeyPath` just is not marked Sendable
    /// The field's index in the schema, by its key path.
    private var fields: [AnyKeyPath: Int] = [:]

    init(_ schema: ModelSchema) {
        for (index, field) in schema.fields.enumerated() {
            guard let keyPath = field.keyPath else { continue }
            fields[keyPath as AnyKeyPath] = index
        }
    }

    subscript(_ keyPath: AnyKeyPath) -> Int? { fields[keyPath] }
}

extension SQLTable {
    /// The column node of `keyPath`, or a failure naming it when it is not a stored field
    /// (an `@Ignored` property, a computed one, a path into a nested value).
    func columnNode(_ keyPath: AnyKeyPath) -> SQLNode {
        guard let field = keyPaths[keyPath] else {
            return .failure(.unknownColumn(table: name, column: "\(keyPath)"))
        }
        return .column(table: name, name: schema.fields[field].column)
    }
}
