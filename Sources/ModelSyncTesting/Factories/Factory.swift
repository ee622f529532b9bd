import Foundation
import ModelSync
import ModelSyncCore

/// Builds models for tests: default attributes, named states, sequences, fake values and
/// related models, set through the model's key paths.
///
/// ```swift
/// let users = Factory<User>(seed: 1) { faker in User(name: faker.name(), email: "") }
///     .sequence(\.email) { n in "user\(n)@example.com" }
///     .state("admin") { $0.set(\.isAdmin, true) }
/// let posts = Factory<Post> { faker in Post(userId: 0, title: faker.sentence()) }
///     .set(\.userId) { context in try context.build(users).id ?? 0 }   // an author per post
///
/// let draft = try posts.make()                                  // not saved; author made too
/// let saved = try posts.create(3, in: db)                       // saved, ids assigned
/// let admin = try users.state("admin").set(\.name, "Ada").create(in: db)
/// ```
///
/// A factory is a value: `set`, `sequence` and `state` return a changed copy and leave the
/// original alone, so a per-call override is a `set` before `make`. Setting a key path that
/// already has an attribute replaces it, in its place. Attributes run in the order they were
/// first set, when a model is built, and only if nothing replaced them: a related model is
/// built only for the models that use it. Copies share one sequence counter, so sequences stay
/// unique across states and overrides.
public struct Factory<M>: Sendable {
    private let seed: UInt64
    private let base: @Sendable (inout Faker) throws -> M
    private var attributes: [Attribute] = []
    private var states: [String: @Sendable (Factory) -> Factory] = [:]
    private let counter: Locked<Int>

    /// Creates a factory whose models start as `base` makes them; `base` gets fake values
    /// seeded by `seed` and by the model's position in the sequence.
    public init(seed: UInt64 = 0, _ base: @escaping @Sendable (inout Faker) throws -> M) {
        self.seed = seed
        self.base = base
        self.counter = Locked(0)
    }

    // MARK: Attributes

    /// Sets `keyPath` to `value` on every model.
    public func set<V: Sendable>(_ keyPath: WritableKeyPath<M, V>, _ value: V) -> Factory {
        set(keyPath) { _ in value }
    }

    /// Sets `keyPath` to what `value` returns, computed for each model when it is built; the
    /// closure may build related models through the context.
    public func set<V>(_ keyPath: WritableKeyPath<M, V>, _ value: @escaping @Sendable (inout FactoryContext) throws -> V) -> Factory {
        let path = UncheckedSendable(keyPath)
        var copy = self
        let attribute = Attribute(key: keyPath) { model, context in model[keyPath: path.value] = try value(&context) }
        if let index = copy.attributes.firstIndex(where: { $0.key == attribute.key }) {
            copy.attributes[index] = attribute
        } else {
            copy.attributes.append(attribute)
        }
        return copy
    }

    /// Sets `keyPath` from the model's position in the sequence (1, 2, 3, …): unique e-mail
    /// addresses, increasing numbers.
    public func sequence<V>(_ keyPath: WritableKeyPath<M, V>, _ value: @escaping @Sendable (Int) -> V) -> Factory {
        set(keyPath) { context in value(context.sequence) }
    }

    /// Registers a named state: attributes that `state(_:)` sets over the defaults.
    public func state(_ name: String, _ define: @escaping @Sendable (Factory) -> Factory) -> Factory {
        var copy = self
        copy.states[name] = define
        return copy
    }

    /// This factory with the attributes of the state `name` set over its own.
    ///
    /// - Throws: ``FactoryError/unknownState(_:known:)`` when no state has that name.
    public func state(_ name: String) throws -> Factory {
        guard let define = states[name] else { throw FactoryError.unknownState(name, known: states.keys.sorted()) }
        return define(self)
    }

    // MARK: Building

    /// Builds a model without saving it.
    public func make() throws -> M {
        try build(on: nil)
    }

    /// Builds `count` models without saving them.
    public func make(_ count: Int) throws -> [M] {
        try (0..<max(0, count)).map { _ in try make() }
    }

    /// Builds a model on `connection` (related models the attributes build are created there).
    func build(on connection: SQLiteConnection?) throws -> M {
        let sequence = counter.withLock { value -> Int in
            value += 1
            return value
        }
        var context = FactoryContext(
            sequence: sequence, faker: Faker(seed: seed &+ UInt64(sequence) &* 0x9E37_79B9_7F4A_7C15), connection: connection)
        var model = try base(&context.faker)
        for attribute in attributes { try attribute.apply(&model, &context) }
        return model
    }

    /// One attribute: the key path it sets (to be replaced by key) and how it sets it.
    private struct Attribute: @unchecked Sendable {
        // Key paths are immutable values, only not marked Sendable.
        let key: AnyKeyPath
        let apply: @Sendable (inout M, inout FactoryContext) throws -> Void
    }
}

/// A key path (immutable, but not marked `Sendable`) captured by a `@Sendable` closure.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension Factory where M: SQLModel {
    /// Builds a model and inserts it in one write transaction of `database`; the returned
    /// model has its assigned id.
    public func create(in database: Database) throws -> M {
        try database.write { try create(on: $0) }
    }

    /// Builds and inserts `count` models in one write transaction of `database` (all or none).
    public func create(_ count: Int, in database: Database) throws -> [M] {
        try database.write { connection in try (0..<max(0, count)).map { _ in try create(on: connection) } }
    }

    /// Builds a model and inserts it on `connection`, inside a transaction the caller holds.
    public func create(on connection: SQLiteConnection) throws -> M {
        var model = try build(on: connection)
        try model.insert(connection)
        return model
    }
}

/// What an attribute closure gets while a model is built.
public struct FactoryContext {
    /// The model's position in its factory's sequence: 1 for the first model built by the
    /// factory or any copy of it, then 2, 3, …
    public let sequence: Int
    /// Fake values, seeded by the factory's seed and ``sequence``.
    public var faker: Faker
    /// The connection the model is being created on; nil when it is only made.
    public let connection: SQLiteConnection?

    /// Builds a related model with `factory`: made when this model is made, created on the
    /// same connection (so it has its id) when this model is created.
    public func build<R: SQLModel>(_ factory: Factory<R>) throws -> R {
        if let connection { return try factory.create(on: connection) }
        return try factory.make()
    }
}

/// A factory misused.
public enum FactoryError: Error, Equatable, CustomStringConvertible {
    /// `state(_:)` named a state the factory does not have.
    case unknownState(String, known: [String])

    /// What went wrong, naming the states the factory has.
    public var description: String {
        switch self {
        case .unknownState(let name, let known):
            "the factory has no state '\(name)' (states: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
        }
    }
}

