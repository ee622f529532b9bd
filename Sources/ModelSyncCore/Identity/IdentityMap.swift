import Foundation

/// One canonical value per model type and primary key, for everything decoded or loaded.
///
/// Decoding through a map (`JSONDecodingOptions(identityMap:)`) makes every model with a
/// primary key canonical: the same user inside twenty posts is one entry, and a later payload
/// with only some of the fields is merged into it (absent keys keep their values, `null`
/// clears). Values loaded elsewhere (SQLite rows) go in with ``store(_:)``. Observers of one
/// (type, id) receive every change as an `AsyncStream`.
///
/// ```swift
/// let map = IdentityMap(capacity: 10_000)
/// let decoder = JSONModelDecoder(options: JSONDecodingOptions(identityMap: map))
/// let posts = try decoder.decode([Post].self, from: data)
/// let user = map.value(User.self, id: 7)                 // the canonical user 7
/// for await change in map.changes(of: User.self, id: 7) { … }   // nil when removed
/// ```
///
/// The map holds at most ``capacity`` values and evicts the least recently used one beyond
/// that (evicting notifies no one: the value did not change, it only left memory). It is safe
/// to use from many tasks at once; every operation takes one lock, and decodes through the map
/// take turns, so that two partial payloads of one value never merge into the same old base.
public final class IdentityMap: Sendable {
    typealias Key = IdentityStore.Key

    /// One `changes(of:id:)` stream: how to send it a value and how to end it.
    private struct Observer {
        let send: @Sendable ((any Model)?) -> Void
        let finish: @Sendable () -> Void
    }

    private struct State {
        var values: IdentityStore
        var observers: [Key: [Int: Observer]] = [:]
        var nextObserver = 0
    }

    /// The most values the map holds before it evicts the least recently used.
    public let capacity: Int
    private let state: Locked<State>
    /// Held for a whole decode through the map (recursive: a decode hook may decode again).
    private let mergeLock = NSRecursiveLock()

    /// Runs `body` (a decode through the map) while no other decode through it runs: a merge
    /// reads its base and stores its result under this lock, so no merge is lost.
    package func withMergeLock<T>(_ body: () throws -> T) rethrows -> T {
        mergeLock.lock()
        defer { mergeLock.unlock() }
        return try body()
    }

    /// Creates an empty map that holds at most `capacity` values.
    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
        self.state = Locked(State(values: IdentityStore(capacity: capacity)))
    }

    deinit {
        for observers in state.current.observers.values {
            for observer in observers.values { observer.finish() }
        }
    }

    /// How many values the map holds.
    public var count: Int { state.withLock { $0.values.count } }

    /// The canonical value of type `type` with primary key `id`, or nil when the map has none.
    public func value<M: KeyedModel>(_ type: M.Type, id: M.ModelID) -> M? {
        PrimaryKey(id, of: type).flatMap { value(type, key: $0) }
    }

    /// The canonical value of type `type` with key `key` (built from any value with
    /// ``PrimaryKey/init(_:of:)``: `"7"` names the user whose integer id is `7`), or nil.
    public func value<M: Model>(_ type: M.Type, key: PrimaryKey) -> M? {
        state.withLock { $0.values.value(type, for: key) }
    }

    /// The canonical value of type `type` with key `key` as the map holds it, without a cast
    /// (for code that only passes it on, such as merge-aware decoding), or nil.
    public func anyValue(_ type: any Model.Type, key: PrimaryKey) -> (any Model)? {
        state.withLock { $0.values.anyValue(type, for: key) }
    }

    /// Makes `value` the canonical value of its type and key, replacing the one held (use
    /// merge-aware decoding to combine a partial payload with it), and tells the observers when
    /// it differs. Returns `value`. A value without a primary key (nil id) is not stored.
    @discardableResult
    public func store<M: Model>(_ value: M) -> M {
        guard let id = value.identityKey else { return value }
        store(value, key: id)
        return value
    }

    /// Stores `value` under `id`, its primary key as the caller already knows it (decoding
    /// knows it from the payload), like ``store(_:)`` otherwise.
    public func store<M: Model>(_ value: M, key id: PrimaryKey) {
        store(value, key: id, onlyIfHeld: false)
    }

    /// Stores `value` under `id` (with `onlyIfHeld`, only over a held or observed value, in the
    /// same hold of the lock); returns whether it stored it.
    @discardableResult
    private func store<M: Model>(_ value: M, key id: PrimaryKey, onlyIfHeld: Bool) -> Bool {
        // The replaced value leaves the lock in `previous`, so that it is destroyed (its strings
        // released) after the lock is given back.
        return withUnsafeTemporaryAllocation(of: M.self, capacity: 1) { previous in
            let (stored, replaced) = state.withLock { state -> (Bool, Bool) in
                // The key is built only when needed: a plain store into an unobserved map is the
                // decoding path, where every retain counts.
                let observers = state.observers.isEmpty ? nil : state.observers[Key(type: ObjectIdentifier(M.self), id: id)]
                if onlyIfHeld, observers?.isEmpty ?? true, !state.values.contains(Key(type: ObjectIdentifier(M.self), id: id)) {
                    return (false, false)
                }
                let replaced = state.values.set(value, for: id, replacedInto: previous)
                guard let observers, !observers.isEmpty else { return (true, replaced) }
                if replaced, fieldValuesEqual(previous[0], value) == true { return (true, replaced) }
                // Inside the lock, so that observers see changes in the order they were made.
                for observer in observers.values { observer.send(value) }
                return (true, replaced)
            }
            if replaced { previous.deinitializeElement(at: 0) }
            return stored
        }
    }

    /// Stores `value` like ``store(_:)``, but only over a value the map holds or under a key
    /// someone observes; returns whether it stored it. A sync that brings thousands of rows up
    /// to date keeps what the app holds current this way, without pushing the app's working
    /// set out of the map (or paying to build keys, when the map is empty and unobserved).
    @discardableResult
    public func storeIfHeld<M: Model>(_ value: M) -> Bool {
        // An empty, unobserved map (a pull before the app read anything) skips building the key.
        guard !isIdle, let id = value.identityKey else { return false }
        return store(value, key: id, onlyIfHeld: true)
    }

    /// Whether the map holds no value and nobody observes one, so that ``storeIfHeld(_:)``
    /// would store nothing: a caller about to offer many values (a sync's page) asks once.
    package var isIdle: Bool {
        state.withLock { $0.values.count == 0 && $0.observers.isEmpty }
    }

    /// Removes the value of type `type` with primary key `id` and returns it; its observers
    /// receive nil.
    @discardableResult
    public func remove<M: KeyedModel>(_ type: M.Type, id: M.ModelID) -> M? {
        PrimaryKey(id, of: type).flatMap { remove(type, key: $0) }
    }

    /// Removes the value of type `type` with key `key` and returns it; its observers receive nil.
    @discardableResult
    public func remove<M: Model>(_ type: M.Type, key id: PrimaryKey) -> M? {
        state.withLock { state in
            let removed = state.values.removeValue(type, for: id)
            // Observers hear of it even when eviction already dropped the value.
            state.observers[Key(type: ObjectIdentifier(type), id: id)]?.values.forEach { $0.send(nil) }
            return removed
        }
    }

    /// Removes every value; the observers of each receive nil.
    public func removeAll() {
        state.withLock { state in
            for observers in state.observers.values { observers.values.forEach { $0.send(nil) } }
            state.values.removeAll()
        }
    }

    /// Every value, from the least to the most recently used (the order in which a saved map
    /// is loaded back, so that recency survives a restart).
    public var values: [any Model] {
        state.withLock { $0.values.values }
    }

    /// Every change of the value of type `type` with primary key `id` from now on: the new
    /// canonical value, or nil when it is removed. An equal value (for `Equatable` models)
    /// stored again is not a change. The stream ends when the consumer stops iterating or the map
    /// is gone.
    public func changes<M: KeyedModel>(of type: M.Type, id: M.ModelID) -> AsyncStream<M?> {
        guard let key = PrimaryKey(id, of: type) else { return AsyncStream { $0.finish() } }
        return changes(of: type, key: key)
    }

    /// Every change of the value of type `type` with key `key` from now on, as
    /// ``changes(of:id:)``.
    public func changes<M: Model>(of type: M.Type, key id: PrimaryKey) -> AsyncStream<M?> {
        let (stream, continuation) = AsyncStream.makeStream(of: M?.self)
        let key = Key(type: ObjectIdentifier(type), id: id)
        let observer = state.withLock { state in
            defer { state.nextObserver += 1 }
            state.observers[key, default: [:]][state.nextObserver] = Observer(
                send: { continuation.yield($0 as? M) },
                finish: { continuation.finish() })
            return state.nextObserver
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                state.observers[key]?[observer] = nil
                if state.observers[key]?.isEmpty == true { state.observers[key] = nil }
            }
        }
        return stream
    }
}
