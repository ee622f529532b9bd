/// One broken rule: the fields it concerns and its message.
public struct ValidationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The property names the failure concerns: one for a field rule, the named ones for a
    /// whole-model rule (none when that rule names no field).
    public let fields: [String]
    /// The JSON keys of ``fields``, in the same order.
    public let jsonKeys: [String]
    /// The rule's message.
    public let message: String

    /// Creates a failure; server-side field errors can be expressed this way too.
    public init(fields: [String], jsonKeys: [String]? = nil, message: String) {
        self.fields = fields
        self.jsonKeys = jsonKeys ?? fields
        self.message = message
    }

    public var description: String {
        fields.isEmpty ? message : "\(fields.joined(separator: ", ")): \(message)"
    }
}

/// A model broke one or more of its rules. Lists every failure, in rule order, and answers by
/// field: `error["title"]`, `error[\Post.title]`.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The model type's name.
    public let model: String
    /// Every failure, in the order the rules were declared.
    public let failures: [ValidationFailure]
    /// For a batch save (`saveAll`), the position of the invalid model in the batch.
    public var batchIndex: Int?

    /// Creates an error from its failures.
    public init(model: String, failures: [ValidationFailure]) {
        self.model = model
        self.failures = failures
    }

    /// The property names with at least one failure, in order of first failure.
    public var fields: [String] {
        var seen = Set<String>()
        return failures.flatMap(\.fields).filter { seen.insert($0).inserted }
    }

    /// The messages of the failures that concern the property `field` (empty when it is valid).
    public subscript(field: String) -> [String] {
        failures.filter { $0.fields.contains(field) }.map(\.message)
    }

    /// The messages of the failures that concern the property at `keyPath` (`error[\Post.title]`).
    public subscript<M: Model, V>(keyPath: KeyPath<M, V>) -> [String] {
        self[M.schema.fieldName(for: keyPath)]
    }

    /// The messages of every failure, by property name.
    public var messagesByField: [String: [String]] {
        Dictionary(grouping: failures.flatMap { failure in failure.fields.map { ($0, failure.message) } }, by: \.0)
            .mapValues { $0.map(\.1) }
    }

    public var description: String {
        let row = batchIndex.map { " (batch row \($0))" } ?? ""
        return "\(model)\(row) is invalid: " + failures.map(\.description).joined(separator: "; ")
    }
}

extension ModelSchema {
    /// The property name of `keyPath`: its field's name, or for a property the schema does not
    /// map (`@Ignored`, computed) the last component of the key path's text.
    func fieldName(for keyPath: AnyKeyPath) -> String {
        if let field = field(for: keyPath) { return field.name }
        let text = keyPath.debugDescription
        return text.firstIndex(of: ".").map { String(text[text.index(after: $0)...]) } ?? text
    }

    /// The JSON key of the property `name` (the name itself when the schema does not map it).
    func jsonKey(forField name: String) -> String {
        field(named: name)?.jsonKey ?? name
    }
}
