import ModelSyncCore
import ModelSyncRemote
import ModelSyncSQLite
import Observation

/// A value read from a server, as an `@Observable` object for SwiftUI (or any code that uses
/// Observation): ``value``, ``isLoading``, ``error`` and ``refresh()``.
///
/// ```swift
/// let post = LoadableResource(cache, Post.self, id: 1)   // the cached post at once, if any
/// await post.refresh()                                    // isLoading, then value or error
/// ```
///
/// - **At once.** Made over a ``CachedStore``, it reads the cache (the identity map, then the
///   database) synchronously in `init`, so a cached value is shown before any request. Over a
///   `RemoteStore` it starts empty.
/// - **Refreshing** is explicit: ``refresh()`` (from SwiftUI's `.task { }` or `.refreshable { }`)
///   sets ``isLoading``, fetches off the main actor, then sets ``value`` (and clears ``error``)
///   or sets ``error`` and keeps the value it had. Over a ``CachedStore`` the fetch goes to the
///   server (``CachePolicy/remoteOnly``) and is written through to the cache.
/// - **Main actor.** Every property changes on the main actor. The object starts no task of its
///   own: a refresh runs in the caller's task, so it ends with it.
@MainActor
@Observable
public final class LoadableResource<Value: Sendable> {
    /// The latest value: the server's after a successful refresh, the cached one before, nil
    /// when neither exists yet.
    public private(set) var value: Value?
    /// Whether the latest refresh is running (an earlier one still running is superseded).
    public private(set) var isLoading = false
    /// The error of the last refresh (or of the cache read in `init`), nil after a success.
    public private(set) var error: (any Error)?

    private let fetch: @Sendable () async throws -> Value
    /// Counts refreshes, so that only the latest one's result is kept.
    @ObservationIgnored private var generation = 0

    /// A resource that `fetch` refreshes, starting with `cached` (nil: nothing to show yet).
    ///
    /// ```swift
    /// let count = LoadableResource(cached: nil) { try await api.list(Post.self).count }
    /// ```
    public init(cached: Value? = nil, fetch: @escaping @Sendable () async throws -> Value) {
        self.value = cached
        self.fetch = fetch
    }

    /// The collection: the cached rows at once (`cached` run on the store's database, every row
    /// by default; nothing without a database), the server's after each ``refresh()``, written
    /// through to the cache.
    public convenience init<M: RemoteResource & SQLModel>(
        _ store: CachedStore, list type: M.Type, parameters: RemoteParameters = [:],
        cached query: @escaping @Sendable (SQLiteConnection) throws -> [M] = { try M.all($0) },
        options call: RequestOptions = RequestOptions()
    ) where Value == [M] {
        self.init(cachedBy: { try store.cachedListNow(query) }) {
            try await store.list(M.self, parameters: parameters, policy: .remoteOnly, cached: query, options: call).value
        }
    }

    /// The collection from `store`, without a cache: empty until the first ``refresh()``.
    public convenience init<M: RemoteResource>(
        _ store: RemoteStore, list type: M.Type, parameters: RemoteParameters = [:], options call: RequestOptions = RequestOptions()
    ) where Value == [M] {
        self.init { try await store.list(M.self, parameters: parameters, options: call) }
    }

    /// Starts with what `cache` reads now; a cache that cannot be read (a locked or mismatched
    /// database) shows nothing and sets ``error``, which the next successful refresh clears.
    fileprivate convenience init(cachedBy cache: () throws -> Value?, fetch: @escaping @Sendable () async throws -> Value) {
        let cached = Result { try cache() }
        self.init(cached: try? cached.get(), fetch: fetch)
        if case .failure(let failure) = cached { error = failure }
    }

    /// Fetches the value again: ``isLoading`` is true meanwhile; then ``value`` is the result
    /// and ``error`` nil, or ``error`` is the failure and ``value`` stays. When refreshes
    /// overlap, only the latest one counts: ``isLoading`` follows it, and an earlier one that
    /// ends later changes nothing. A refresh whose task is cancelled changes nothing but
    /// ``isLoading``.
    public func refresh() async {
        generation += 1
        let current = generation
        isLoading = true
        let result: Result<Value, any Error>
        do {
            result = .success(try await fetch())
        } catch {
            result = .failure(error)
        }
        guard current == generation else { return }
        isLoading = false
        switch result {
        case .success(let fresh):
            value = fresh
            error = nil
        case .failure(let failure):
            // A view that went away cancelled its task: that is not the resource's failure.
            if Task.isCancelled { return }
            error = failure
        }
    }
}

extension LoadableResource where Value: RemoteResource & SQLModel & KeyedModel, Value.ModelID: SQLColumnEncodable & CustomStringConvertible {
    /// The model with this id (typed by the model's key): the cached one at once (the identity
    /// map, then the database), the server's after each ``refresh()``, written through to the
    /// cache.
    public convenience init(
        _ store: CachedStore, _ type: Value.Type, id: Value.ModelID, options call: RequestOptions = RequestOptions()
    ) {
        self.init(cachedBy: { try store.cachedValueNow(Value.self, id: id) }) {
            try await store.fetch(Value.self, id: id, policy: .remoteOnly, options: call).value
        }
    }
}

extension LoadableResource where Value: RemoteResource {
    /// The model with this id from `store`, without a cache: empty until the first
    /// ``refresh()``.
    public convenience init(
        _ store: RemoteStore, _ type: Value.Type, id: some CustomStringConvertible & Sendable, options call: RequestOptions = RequestOptions()
    ) {
        self.init { try await store.fetch(Value.self, id: id, options: call) }
    }
}
