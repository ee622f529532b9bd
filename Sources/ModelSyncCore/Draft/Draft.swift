/// An editing view of a model value that tracks its changes, validates it and can undo it.
///
/// ```swift
/// var draft = Draft(editing: post)         // .clean
/// draft.title = ""                         // .dirty; draft.changedFields == ["title"]
/// draft.validate()                         // false: .invalid; draft.errors(for: \.title)
/// draft.undo()                             // .clean again, post's values back
/// draft.title = "Hello again"
/// let edited = try draft.commit()          // valid: .clean, and the result to keep
/// ```
///
/// A draft holds its own copy of the model: the caller's value changes only when it takes
/// ``model`` or the result of ``commit()``.
///
/// ## States
///
/// | from | event | to |
/// |---|---|---|
/// | — | ``init(new:)`` | ``State/empty`` |
/// | — | ``init(editing:)`` | ``State/clean`` |
/// | any | a change that makes some field differ from the baseline | ``State/dirty`` |
/// | any | a change that makes every field equal to the baseline again | the baseline's state (`empty` or `clean`) |
/// | any | ``validate()`` / ``commit()``, valid | ``State/clean``; the current values become the baseline |
/// | any | ``validate()`` / ``commit()``, invalid | ``State/invalid``, with ``validationError``; the baseline stays |
/// | any | ``undo()`` | the baseline's values and state (`empty` or `clean`) |
///
/// The baseline is the last clean state, or the new model's values while it has never been
/// valid. A field differs from it when its value is `Equatable` and unequal, or, for other
/// types, when it has been set since. Setting a field to the value it already holds changes
/// nothing. Properties that the schema does not map (`@Ignored`) can be set and are reported,
/// but never make the draft dirty. A model type that is not ``Validatable`` is always valid.
///
/// Every change (including each field that ``undo()`` restores) is reported to the
/// ``observeChanges()`` streams and ``onChange(_:)`` handlers. Copies of a draft share these observers.
@dynamicMemberLookup
public struct Draft<M: Model>: Sendable {
    /// Where a draft stands; see the table in ``Draft``.
    public enum State: Sendable, Hashable {
        /// A new model, unchanged since the draft was created (or since ``Draft/undo()``).
        case empty
        /// The values were valid when last validated, and are unchanged since.
        case clean
        /// Some field differs from the last clean (or empty) values.
        case dirty
        /// The last validation failed; ``Draft/validationError`` lists why.
        case invalid
    }

    /// The model with every change applied; take it when done (or use ``commit()``).
    public private(set) var model: M
    /// Where the draft stands.
    public private(set) var state: State
    /// The failures of the last validation, while the draft is ``State/invalid``.
    public private(set) var validationError: ValidationError?

    private var baseline: M
    private var baselineState: State
    /// Fields of non-`Equatable` types set since the baseline.
    private var touched: Set<String> = []
    private let observers = ChangeObservers()

    /// A draft of a new model, in the ``State/empty`` state: `model` holds its initial values.
    public init(new model: M) {
        self.init(model, state: .empty)
    }

    /// A draft of a loaded (or otherwise valid) model, in the ``State/clean`` state.
    public init(editing model: M) {
        self.init(model, state: .clean)
    }

    private init(_ model: M, state: State) {
        self.model = model
        self.baseline = model
        self.state = state
        self.baselineState = state
    }

    // MARK: Reading and changing

    /// Reads any property of the model (`draft.id`).
    public subscript<V>(dynamicMember keyPath: KeyPath<M, V>) -> V {
        model[keyPath: keyPath]
    }

    /// Reads or changes a property of the model (`draft.title = "Hello"`); see ``set(_:to:)``.
    public subscript<V: Sendable>(dynamicMember keyPath: WritableKeyPath<M, V>) -> V {
        get { model[keyPath: keyPath] }
        set { set(keyPath, to: newValue) }
    }

    /// Changes the property at `keyPath` and reports the change. Setting an `Equatable` value
    /// equal to the current one does nothing.
    public mutating func set<V: Sendable>(_ keyPath: WritableKeyPath<M, V>, to newValue: V) {
        let oldValue = model[keyPath: keyPath]
        let equal = fieldValuesEqual(oldValue, newValue)
        if equal == true { return }
        model[keyPath: keyPath] = newValue
        let field = M.schema.field(for: keyPath)
        if let field {
            if equal == nil { touched.insert(field.name) }
            validationError = nil
            state = changes.isEmpty ? baselineState : .dirty
        }
        let name = field?.name ?? M.schema.fieldName(for: keyPath)
        observers.send(FieldChange(field: name, jsonKey: field?.jsonKey ?? name, oldValue: oldValue, newValue: newValue))
    }

    // MARK: Changes

    /// The fields that differ from the baseline (the last clean or empty values), in schema
    /// order, each with its baseline value as `oldValue` and its current value as `newValue`.
    public var changes: [FieldChange] {
        M.schema.fields.compactMap { field in
            guard let keyPath: AnyKeyPath = field.keyPath,
                  let old = baseline[keyPath: keyPath] as? any FieldValue,
                  let new = model[keyPath: keyPath] as? any FieldValue
            else { return nil }
            let changed = fieldValuesEqual(old, new).map { !$0 } ?? touched.contains(field.name)
            return changed ? FieldChange(field: field.name, jsonKey: field.jsonKey, oldValue: old, newValue: new) : nil
        }
    }

    /// The property names of ``changes``: what a partial update (a PATCH) must send.
    public var changedFields: [String] { changes.map(\.field) }

    /// The JSON keys of ``changes``.
    public var changedJSONKeys: [String] { changes.map(\.jsonKey) }

    /// Whether some field differs from the baseline.
    public var isDirty: Bool { !changes.isEmpty }

    // MARK: Validating and undoing

    /// Validates the model with its type's rules: valid makes the draft ``State/clean`` with the
    /// current values as the new baseline; invalid makes it ``State/invalid`` with
    /// ``validationError``. Returns whether the model is valid.
    @discardableResult
    public mutating func validate() -> Bool {
        (try? commit()) != nil
    }

    /// Validates like ``validate()`` and returns the valid model for the caller to keep.
    ///
    /// - Throws: ``ValidationError`` listing every failure (the draft is then
    ///   ``State/invalid``).
    public mutating func commit() throws(ValidationError) -> M {
        do throws(ValidationError) {
            let valid = try model.validated()
            baseline = valid
            baselineState = .clean
            state = .clean
            touched = []
            validationError = nil
            return valid
        } catch {
            validationError = error
            state = .invalid
            throw error
        }
    }

    /// The messages of the last validation's failures that concern the property at `keyPath`
    /// (empty unless the draft is ``State/invalid``).
    public func errors<V>(for keyPath: KeyPath<M, V>) -> [String] {
        validationError?[keyPath] ?? []
    }

    /// Returns to the baseline: the last clean values (or the new model's initial values) and
    /// that state. Each field restored is reported as a change.
    public mutating func undo() {
        let reverted = changes
        model = baseline
        state = baselineState
        touched = []
        validationError = nil
        for change in reverted {
            observers.send(FieldChange(field: change.field, jsonKey: change.jsonKey, oldValue: change.newValue, newValue: change.oldValue))
        }
    }

    // MARK: Observing

    /// A stream of every change made from now on, by this draft or its copies. It finishes when
    /// the last copy of the draft is gone.
    public func observeChanges() -> AsyncStream<FieldChange> {
        observers.stream()
    }

    /// Calls `handler` with every change made from now on, by this draft or its copies.
    public func onChange(_ handler: @escaping @Sendable (FieldChange) -> Void) {
        observers.add(handler)
    }
}

/// The observers of a draft and of its copies: handlers and stream continuations.
private final class ChangeObservers: Sendable {
    private struct Registry {
        var handlers: [@Sendable (FieldChange) -> Void] = []
        var streams: [Int: AsyncStream<FieldChange>.Continuation] = [:]
        var nextStream = 0
    }

    private let registry = Locked(Registry())

    deinit {
        for continuation in registry.current.streams.values { continuation.finish() }
    }

    func add(_ handler: @escaping @Sendable (FieldChange) -> Void) {
        registry.withLock { $0.handlers.append(handler) }
    }

    func stream() -> AsyncStream<FieldChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: FieldChange.self)
        let id = registry.withLock { registry in
            defer { registry.nextStream += 1 }
            registry.streams[registry.nextStream] = continuation
            return registry.nextStream
        }
        continuation.onTermination = { [weak self] _ in
            self?.registry.withLock { $0.streams[id] = nil }
        }
        return stream
    }

    func send(_ change: FieldChange) {
        // Handlers run outside the lock, so that they may register others.
        let (handlers, streams) = registry.withLock { ($0.handlers, Array($0.streams.values)) }
        for handler in handlers { handler(change) }
        for continuation in streams { continuation.yield(change) }
    }
}
