/// A model with a primary key, whose ids are typed by the key's own type.
///
/// `@Model` adds the conformance to every model with a primary key (a field named `id`, or
/// the fields marked `@PrimaryKey`) and declares ``ModelID`` as the key field's type without
/// its optional: `Int` for `var id: Int?`, `UUID` for `var id: UUID`. A composite key's id is a
/// ``PrimaryKey`` with one component per key field. APIs that look a model up by id take a
/// `ModelID`, so `map.value(User.self, id: "7")` does not compile for an integer key.
///
/// ```swift
/// let user = map.value(User.self, id: 7)                                   // User.ModelID == Int
/// let membership = try suite.fetch(Membership.self, id: PrimaryKey(3, 7))
/// ```
public protocol KeyedModel: Model {
    /// The type of the model's primary key: the key field's type, not optional; a
    /// ``PrimaryKey`` for a composite key.
    associatedtype ModelID: Sendable
}
