import Foundation

/// A model's primary-key value, normalised so that the same id compares equal whichever way it
/// arrived: from a model, from JSON (`7` or `"7"` for an `Int` key) or from a caller.
///
/// Integers are kept as `Int64`, UUIDs as their canonical text, everything else as text.
/// Composite keys have one component per key field, in declaration order.
public struct PrimaryKey: Hashable, Sendable, CustomStringConvertible {
    /// One field of the key.
    public enum Component: Hashable, Sendable {
        /// An integer key value.
        case integer(Int64)
        /// Any other key value, as text.
        case text(String)
    }

    // The first component apart, so that the usual single-field key allocates nothing.
    private let first: Component
    private let rest: [Component]

    /// The key's components, one per primary-key field.
    public var components: [Component] { [first] + rest }

    /// Creates a key from its components, one per key field in declaration order:
    /// `PrimaryKey(3, 7)`, `PrimaryKey("fr", 12)`.
    public init(_ first: Component, _ rest: Component...) {
        self.first = first
        self.rest = rest
    }

    /// Creates a key from its components; nil when there are none.
    public init?(_ components: [Component]) {
        guard let first = components.first else { return nil }
        self.first = first
        self.rest = Array(components.dropFirst())
    }

    /// The key of a single value: an integer, a string, a UUID, a `PrimaryKey` (taken as it is)
    /// or anything else by its description. Nil when the value is nil.
    public init?(_ value: Any) {
        if let key = value as? PrimaryKey {
            self = key
            return
        }
        guard let component = Component(value) else { return nil }
        self.init(component)
    }

    public var description: String {
        components.map { component in
            switch component {
            case .integer(let value): String(value)
            case .text(let value): value
            }
        }.joined(separator: ", ")
    }
}

extension PrimaryKey.Component: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    /// An integer component written as a literal: the `3` of `PrimaryKey(3, 7)`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A text component written as a literal: the `"fr"` of `PrimaryKey("fr", 12)`.
    public init(stringLiteral value: String) { self = .text(value) }
}

extension PrimaryKey {
    // Written out rather than synthesised: the usual single-field key compares and hashes its
    // first component only, without going through the empty array of the others.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.first == rhs.first && (lhs.rest.isEmpty ? rhs.rest.isEmpty : lhs.rest == rhs.rest)
    }

    public func hash(into hasher: inout Hasher) {
        first.hash(into: &hasher)
        for component in rest { component.hash(into: &hasher) }
    }
}

extension PrimaryKey.Component {
    /// Text components are equal when their UTF-8 bytes are: `"é"` and `"e\u{301}"` are two
    /// ids to a server or a database, so they are two identities here too.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let left), .integer(let right)): left == right
        case (.text(let left), .text(let right)): left.isIdentical(to: right)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .integer(let value):
            hasher.combine(0)
            hasher.combine(value)
        case .text(let value):
            hasher.combine(1)
            hasher.combine(ExactText(value))
        }
    }

    /// The component's value: an `Int64` or a `String`.
    package var value: any Sendable {
        switch self {
        case .integer(let value): value
        case .text(let value): value
        }
    }

    /// The component for a field value, unwrapping optionals; nil when the value is nil.
    init?(_ value: Any) {
        guard let present = unwrapped(value) else { return nil }
        switch present {
        case let integer as any BinaryInteger:
            self = Int64(exactly: integer).map(Self.integer) ?? .text(String(describing: integer))
        case let text as String:
            self = .text(text)
        case let uuid as UUID:
            self = .text(uuid.uuidString)
        default:
            self = .text(String(describing: present))
        }
    }

    /// The component as a value of a field of type `type` would be: an integer for a text
    /// field becomes its text, text for an integer or UUID field is parsed (see
    /// ``init(text:as:)``), so that an id names one identity whichever way the caller wrote it.
    func normalized(as type: FieldType) -> Self {
        switch (self, type.nonOptional) {
        case (.integer, .integer), (.integer, .enumeration(_, .integer)): self
        case (.integer(let value), _): .text(String(value))
        case (.text(let text), _): Self(text: text, as: type)
        }
    }

    /// The component for a key written as text (in JSON, a URL…) for a field of type `type`:
    /// integer fields parse it, UUID fields normalise it, others keep it.
    package init(text: String, as type: FieldType) {
        switch type.nonOptional {
        case .integer:
            self = Int64(text).map(Self.integer) ?? .text(text)
        case .uuid:
            self = .text(UUID(uuidString: text)?.uuidString ?? text)
        default:
            self = .text(text)
        }
    }
}

extension PrimaryKey {
    /// The key of a `type` value whose primary key is `id` (a value of the key field, or a
    /// ``PrimaryKey`` taken as it is), normalised by the key field's type as the model's own
    /// ``Model/identityKey`` is: `"7"` names the user whose integer id is `7`, and `7` the one
    /// whose text id is `"7"`. Nil when `id` is nil.
    public init?<M: Model>(_ id: Any, of type: M.Type) {
        if let key = id as? PrimaryKey {
            self = key
            return
        }
        guard let component = Component(id) else { return nil }
        // A composite key arrives as a PrimaryKey; one value can only name a single-field key.
        // (Counted, not filtered: this runs on every lookup by id.)
        var keyField: FieldSchema?
        var keyFieldCount = 0
        for field in M.schema.fields where field.isPrimaryKey {
            keyField = field
            keyFieldCount += 1
        }
        guard keyFieldCount == 1, let keyField else {
            self.init(component)
            return
        }
        self.init(component.normalized(as: keyField.type))
    }
}

extension Model {
    /// The value of the model's primary key, or nil when the model has none (no key field, or
    /// a key that is still nil because the server or SQLite has not assigned it).
    public var identityKey: PrimaryKey? {
        let fields = Self.schema.fields
        var components: [PrimaryKey.Component] = []
        for index in fields.indices where fields[index].isPrimaryKey {
            guard let keyPath = fields[index].keyPath, let component = PrimaryKey.Component(fieldValue(at: keyPath) as Any) else {
                return nil
            }
            components.append(component)
        }
        return PrimaryKey(components)
    }

    /// The value at one of the model's key paths, seen as `Any` (nil when the key path is not
    /// one of this type's).
    package func fieldValue(at keyPath: AnyKeyPath) -> Any? {
        self[keyPath: keyPath]
    }
}
