/// A model type with validation rules of its own.
///
/// ```swift
/// extension Post: Validatable {
///     static let validator = Validator<Post> {
///         Validate(\.title, .required("Enter a title"), .length(...80))
///         Validate(\.rating, .range(0...5))
///         Validate("A published post needs a text", fields: \.publishedAt, \.text) { post in
///             post.publishedAt == nil || !post.text.isEmpty
///         }
///     }
/// }
/// ```
///
/// A validator is typed by its model (`Validator<Post>`), so rules are never shared across
/// types. Saving paths call ``Model/validated()``, which runs it.
public protocol Validatable: Model {
    /// The rules of this type.
    static var validator: Validator<Self> { get }
}

/// The rules of one model type, run in declaration order.
public struct Validator<M: Model>: Sendable {
    /// The rules, in declaration order.
    public let rules: [Validate<M>]

    /// Creates a validator from rules listed in a builder block.
    public init(@ValidationRulesBuilder<M> _ rules: () -> [Validate<M>]) {
        self.rules = rules()
    }

    /// Creates a validator from an array of rules.
    public init(rules: [Validate<M>]) {
        self.rules = rules
    }

    /// Every failure of `model`, in rule order; empty when it is valid.
    public func failures(of model: M) -> [ValidationFailure] {
        rules.flatMap { $0.failures(of: model) }
    }

    /// Throws a ``ValidationError`` listing every failure when `model` breaks a rule.
    public func validate(_ model: M) throws(ValidationError) {
        let failures = failures(of: model)
        if !failures.isEmpty { throw ValidationError(model: M.schema.name, failures: failures) }
    }
}

/// One rule of a ``Validator``: checks of one property, or a test of the whole model.
public struct Validate<M: Model>: Sendable {
    private let evaluate: @Sendable (M) -> [ValidationFailure]

    /// Checks the property at `keyPath`; each failing check is a failure of that field.
    ///
    /// ```swift
    /// Validate(\.email, .required(), .email("Not an email address"))
    /// ```
    public init<V>(_ keyPath: KeyPath<M, V> & Sendable, _ checks: Check<V>...) {
        let name = M.schema.fieldName(for: keyPath)
        let jsonKey = M.schema.jsonKey(forField: name)
        evaluate = { model in
            let value = model[keyPath: keyPath]
            return checks.filter { !$0.passes(value) }.map {
                ValidationFailure(fields: [name], jsonKeys: [jsonKey], message: $0.message)
            }
        }
    }

    /// A whole-model rule: fails with `message`, concerning the properties at `fields`, when
    /// `test` returns false for the model.
    ///
    /// ```swift
    /// Validate("Ends before it starts", fields: \.startsAt, \.endsAt) { $0.startsAt <= $0.endsAt }
    /// ```
    public init(_ message: String, fields: PartialKeyPath<M>..., test: @escaping @Sendable (M) -> Bool) {
        let names = fields.map { M.schema.fieldName(for: $0) }
        let failure = ValidationFailure(fields: names, jsonKeys: names.map { M.schema.jsonKey(forField: $0) }, message: message)
        evaluate = { model in test(model) ? [] : [failure] }
    }

    /// The failures of `model` under this rule.
    public func failures(of model: M) -> [ValidationFailure] { evaluate(model) }
}

/// Collects the rules of a ``Validator`` block, with `if`, `for` and `#available` allowed.
@resultBuilder
public enum ValidationRulesBuilder<M: Model> {
    public static func buildExpression(_ rule: Validate<M>) -> [Validate<M>] { [rule] }
    public static func buildBlock(_ rules: [Validate<M>]...) -> [Validate<M>] { rules.flatMap { $0 } }
    public static func buildOptional(_ rules: [Validate<M>]?) -> [Validate<M>] { rules ?? [] }
    public static func buildEither(first rules: [Validate<M>]) -> [Validate<M>] { rules }
    public static func buildEither(second rules: [Validate<M>]) -> [Validate<M>] { rules }
    public static func buildArray(_ rules: [[Validate<M>]]) -> [Validate<M>] { rules.flatMap { $0 } }
    public static func buildLimitedAvailability(_ rules: [Validate<M>]) -> [Validate<M>] { rules }
}

extension Model {
    /// Every failure of this model under its type's ``Validatable/validator`` (none for a type
    /// that is not ``Validatable``).
    public var validationFailures: [ValidationFailure] {
        guard let validatable = Self.self as? any Validatable.Type else { return [] }
        return failures(as: validatable)
    }

    private func failures<V: Validatable>(as type: V.Type) -> [ValidationFailure] {
        viewed(as: type) { V.validator.failures(of: $0) }
    }

    /// This model, after checking it against its type's rules: the hook that saving paths call
    /// so that an invalid model is written nowhere. A type that is not ``Validatable`` always
    /// passes.
    ///
    /// - Throws: ``ValidationError`` listing every failure.
    public func validated() throws(ValidationError) -> Self {
        let failures = validationFailures
        if !failures.isEmpty { throw ValidationError(model: Self.schema.name, failures: failures) }
        return self
    }
}

