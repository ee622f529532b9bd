import ModelSyncCore
import ModelSyncJSON
import ModelSyncSQLite

/// The rows an outbox entry touches, to decide which entries may be sent concurrently.
///
/// An entry changes its own row and, through the `BelongsTo` foreign keys in its body, refers
/// to parent rows. Two entries must be sent in queue order when they change the same row or
/// when one refers to the row the other changes; otherwise their order does not matter.
struct OutboxDependencies {
    /// A row, named by its model and its key's JSON text.
    struct Row: Hashable {
        var model: String
        var key: String
    }

    var row: Row
    var references: [Row]

    init(_ entry: OutboxRecord, _ models: [String: any SyncedModel.Type]) throws {
        row = Row(model: entry.model, key: entry.localKey.jsonText)
        guard entry.operation != .delete, let type = models[entry.model] else {
            references = []
            return
        }
        references = Self.foreignKeys(of: type).compactMap { foreignKey in
            guard let value = entry.body[foreignKey.path], value != .null else { return nil }
            return Row(model: foreignKey.parent, key: value.jsonText)
        }
    }

    func conflicts(with other: OutboxDependencies) -> Bool {
        row == other.row || references.contains(other.row) || other.references.contains(row)
    }

    /// The foreign keys of `type` that point at a parent's primary key: the parent's model
    /// name and the key's place in the JSON body.
    static func foreignKeys(of type: any SyncedModel.Type) -> [(parent: String, path: JSONPath)] {
        func open<M: SyncedModel>(_ type: M.Type) -> [(parent: String, path: JSONPath)] {
            M.relations.compactMap { relation in
                guard let belongsTo = relation as? any PrimaryKeyReference, belongsTo.parentKey == nil,
                      let field = M.schema.field(named: belongsTo.foreignKey) else { return nil }
                return (belongsTo.parentModel, JSONPath(parsing: field.jsonKey))
            }
        }
        return open(type)
    }
}

/// A `BelongsTo` relation, seen without its generic parameters.
protocol PrimaryKeyReference {
    /// The owner's property holding the parent's key.
    var foreignKey: String { get }
    /// The parent's property referred to; nil for its primary key.
    var parentKey: String? { get }
    /// The parent's schema name.
    var parentModel: String { get }
}

extension BelongsTo: PrimaryKeyReference {
    var parentModel: String { Parent.schema.name }
}
