/// A nested model that may arrive either as an object or as a bare id (`"author": 7`).
///
/// Decoding (in ModelSyncJSON) makes an object ``resolved(_:)``; a bare id becomes the
/// canonical value when the identity map in use knows it, and stays ``unresolved(_:)``
/// otherwise. ``resolved(in:)`` tries again later, against a map that may know it by then.
///
/// ```swift
/// @Model struct Post {
///     var id: Int
///     var author: Reference<User>
/// }
/// post.author.value?.name                   // nil while unresolved
/// map.value(of: post.author)?.name          // the canonical user, now
/// ```
public enum Reference<M: Model>: Sendable {
    /// The referenced model's value.
    case resolved(M)
    /// Only the referenced model's primary key.
    case unresolved(PrimaryKey)

    /// The model, when resolved.
    public var value: M? {
        if case .resolved(let model) = self { return model }
        return nil
    }

    /// The referenced model's primary key (nil for a resolved model that has none yet).
    public var key: PrimaryKey? {
        switch self {
        case .resolved(let model): model.identityKey
        case .unresolved(let key): key
        }
    }

    /// The reference resolved against `map`: the map's canonical value when it has one, else
    /// the reference as it is.
    public func resolved(in map: IdentityMap) -> Reference<M> {
        map.value(of: self).map(Reference.resolved) ?? self
    }
}

extension Reference: FieldValue {
    public static var fieldType: FieldType { .custom(name: "Reference<\(M.self)>") }
}

extension Reference: Equatable where M: Equatable {}

extension IdentityMap {
    /// The canonical value that `reference` points to, or nil when the map has none.
    public func value<M: Model>(of reference: Reference<M>) -> M? {
        reference.key.flatMap { value(M.self, key: $0) }
    }
}
