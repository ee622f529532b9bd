import ModelSyncCore

/// Which optional protocols a model type conforms to, as the write paths ask on every row.
///
/// A conformance check (`M.self is any Validatable.Type`) goes through the runtime's
/// conformance cache each time; an insert asked three of them and they cost more than binding
/// the row. Each connection keeps the answers by type (it is used by one thread at a time, so
/// without a lock), next to the tables it has checked.
struct ModelTraits {
    let isValidatable: Bool
    let isTimestamped: Bool
    let isSoftDeletable: Bool

    init<M: SQLModel>(_ type: M.Type) {
        isValidatable = type is any Validatable.Type
        isTimestamped = type is any TimestampedModel.Type
        isSoftDeletable = type is any SoftDeletableModel.Type
    }
}

extension SQLModel {
    /// The traits of the model's type, as `db` remembers them.
    static func traits(_ db: SQLiteConnection) -> ModelTraits {
        let type = ObjectIdentifier(Self.self)
        // A loop writes one model: the last answer is checked before hashing.
        if let last = db.lastModelTraits, last.type == type { return last.traits }
        let traits: ModelTraits
        if let known = db.modelTraits[type] {
            traits = known
        } else {
            traits = ModelTraits(Self.self)
            db.modelTraits[type] = traits
        }
        db.lastModelTraits = (type, traits)
        return traits
    }

    /// Checks the model before a write (see ``/ModelSyncCore/Model/validated()``), unless
    /// `validate` is false or the type has no rules.
    func validateForWrite(_ validate: Bool, _ db: SQLiteConnection) throws {
        if validate, Self.traits(db).isValidatable { _ = try validated() }
    }
}
