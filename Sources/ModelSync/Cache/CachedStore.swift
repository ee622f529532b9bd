import ModelSyncCore
import ModelSyncJSON
import ModelSyncRemote
import ModelSyncSQLite

/// Reads models from a server with a cache beside it: the identity map, and optionally a
/// SQLite database that remote results are written through to.
///
/// ```swift
/// let cache = CachedStore(remote: api, database: db)
/// let post = try await cache.fetch(Post.self, id: 1, policy: .remoteElseCache)
/// if post.isFallback { print("offline:", post.networkError!) }
/// for try await update in cache.fetchCachedThenFresh(Post.self, id: 1) {
///     print(update)                          // .cached(…) or .notCached, then .fresh(…)
/// }
/// ```
///
/// Every response is decoded through ``identityMap``, so models met in it (nested ones too)
/// merge into their canonical values. With a ``database`` and ``writesThrough`` on, the models
/// of each response are saved to their table in one transaction (without validation: the
/// server's data is stored as it is). A row whose unique key (other than its primary key) a
/// cached row already holds replaces that row, which the server no longer has under that key
/// (`upsert(_:onConflict:)` with `.replace`).
public final class CachedStore: Sendable {
    /// The server side.
    public let remote: RemoteStore
    /// The database side, if any.
    public let database: Database?
    /// The canonical values of everything read.
    public let identityMap: IdentityMap
    /// Whether remote results are saved to the database.
    public let writesThrough: Bool
    private let decoder: JSONModelDecoder

    /// Creates a store over `remote`, `database` and `identityMap`.
    public init(remote: RemoteStore, database: Database? = nil, identityMap: IdentityMap = IdentityMap(), writesThrough: Bool = true) {
        self.remote = remote
        self.database = database
        self.identityMap = identityMap
        self.writesThrough = writesThrough
        var decoder = remote.options.decoder
        decoder.options.identityMap = identityMap
        self.decoder = decoder
    }

    // MARK: One model

    /// The model with this id (typed by the model's key), read under `policy`.
    ///
    /// - Throws: ``NotCachedError`` when the cache must answer and holds nothing; a
    ///   ``/ModelSyncRemote/RemoteError`` from the server (under `.remoteElseCache`, only when
    ///   it is not a network failure or the cache holds nothing); a `SQLiteError` from the
    ///   database.
    public func fetch<M: RemoteResource & SQLModel & KeyedModel>(
        _ type: M.Type, id: M.ModelID, policy: CachePolicy = .remoteElseCache, options call: RequestOptions = RequestOptions()
    ) async throws -> CachedResult<M> where M.ModelID: SQLColumnEncodable & CustomStringConvertible {
        try await read(policy, remote: { try await self.fetchRemote(M.self, id: id, call) }, cached: { try await self.cachedValue(M.self, id: id) }) {
            NotCachedError(model: M.schema.name, id: id.description)
        }
    }

    /// The cached model with this id (or ``CacheUpdate/notCached``), then the server's.
    /// When the network part fails, the stream delivers the cached value and then throws.
    public func fetchCachedThenFresh<M: RemoteResource & SQLModel & KeyedModel>(
        _ type: M.Type, id: M.ModelID, options call: RequestOptions = RequestOptions()
    ) -> AsyncThrowingStream<CacheUpdate<M>, any Error> where M.ModelID: SQLColumnEncodable & CustomStringConvertible {
        cachedThenFresh(remote: { try await self.fetchRemote(M.self, id: id, call) }, cached: { try await self.cachedValue(M.self, id: id) })
    }

    // MARK: Collections

    /// The collection, read under `policy`. The cache's answer is `cached` run on the database
    /// (every row of the table by default; pass the query that matches `parameters`).
    ///
    /// - Throws: as ``fetch(_:id:policy:options:)``; a cache read without a database throws
    ///   ``NotCachedError``.
    public func list<M: RemoteResource & SQLModel>(
        _ type: M.Type, parameters: RemoteParameters = [:], policy: CachePolicy = .remoteElseCache,
        cached query: @escaping @Sendable (SQLiteConnection) throws -> [M] = { try M.all($0) },
        options call: RequestOptions = RequestOptions()
    ) async throws -> CachedResult<[M]> {
        try await read(policy, remote: { try await self.listRemote(M.self, parameters, call) }, cached: { try await self.cachedList(query) }) {
            NotCachedError(model: M.schema.name, id: nil)
        }
    }

    /// The cached collection (or ``CacheUpdate/notCached`` without a database), then the
    /// server's. When the network part fails, the stream delivers the cached value and then
    /// throws.
    public func listCachedThenFresh<M: RemoteResource & SQLModel>(
        _ type: M.Type, parameters: RemoteParameters = [:],
        cached query: @escaping @Sendable (SQLiteConnection) throws -> [M] = { try M.all($0) },
        options call: RequestOptions = RequestOptions()
    ) -> AsyncThrowingStream<CacheUpdate<[M]>, any Error> {
        cachedThenFresh(remote: { try await self.listRemote(M.self, parameters, call) }, cached: { try await self.cachedList(query) })
    }

    // MARK: Policies

    private func read<Value: Sendable>(
        _ policy: CachePolicy,
        remote: () async throws -> Value,
        cached: () async throws -> Value?,
        notCached: () -> NotCachedError
    ) async throws -> CachedResult<Value> {
        switch policy {
        case .remoteOnly:
            return CachedResult(value: try await remote(), source: .remote, networkError: nil)
        case .cacheOnly:
            guard let value = try await cached() else { throw notCached() }
            return CachedResult(value: value, source: .cache, networkError: nil)
        case .remoteElseCache:
            do {
                return CachedResult(value: try await remote(), source: .remote, networkError: nil)
            } catch let error as RemoteError where error.isNetworkFailure {
                guard let value = try await cached() else { throw error }
                return CachedResult(value: value, source: .cache, networkError: error)
            }
        }
    }

    private func cachedThenFresh<Value: Sendable>(
        remote: @escaping @Sendable () async throws -> Value,
        cached: @escaping @Sendable () async throws -> Value?
    ) -> AsyncThrowingStream<CacheUpdate<Value>, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    // A cache that cannot be read (a locked or mismatched database) must not
                    // keep the fresh value from arriving: it counts as no cached value.
                    let cachedValue = try? await cached()
                    continuation.yield(cachedValue.flatMap { $0 }.map(CacheUpdate.cached) ?? .notCached)
                    continuation.yield(.fresh(try await remote()))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Reading each side

    private func fetchRemote<M: RemoteResource & SQLModel>(
        _ type: M.Type, id: some CustomStringConvertible & Sendable, _ call: RequestOptions
    ) async throws -> M {
        var call = call
        call.decoder = call.decoder ?? decoder
        let value = try await remote.fetch(M.self, id: id, options: call)
        try await writeThrough([value])
        return value
    }

    private func listRemote<M: RemoteResource & SQLModel>(_ type: M.Type, _ parameters: RemoteParameters, _ call: RequestOptions) async throws -> [M] {
        var call = call
        call.decoder = call.decoder ?? decoder
        let values = try await remote.list(M.self, parameters: parameters, options: call)
        try await writeThrough(values)
        return values
    }

    /// The identity map's value, else the database row (which then becomes canonical).
    private func cachedValue<M: SQLModel>(_ type: M.Type, id: some SQLColumnEncodable & Sendable) async throws -> M? {
        if let known = mapValue(M.self, id: id) { return known }
        guard let database, let row = try await database.read({ db in try M.find(id, db) }) else { return nil }
        return canonical(row)
    }

    private func cachedList<M: SQLModel>(_ query: @escaping @Sendable (SQLiteConnection) throws -> [M]) async throws -> [M]? {
        guard let database else { return nil }
        return try await database.read(query).map(canonical)
    }

    /// ``cachedValue(_:id:)`` on the calling thread, for a value shown at once
    /// (``LoadableResource``).
    func cachedValueNow<M: SQLModel>(_ type: M.Type, id: some SQLColumnEncodable & Sendable) throws -> M? {
        if let known = mapValue(M.self, id: id) { return known }
        return try database?.read { db in try M.find(id, db) }.map(canonical)
    }

    /// ``cachedList(_:)`` on the calling thread, for a value shown at once (``LoadableResource``).
    func cachedListNow<M: SQLModel>(_ query: @Sendable (SQLiteConnection) throws -> [M]) throws -> [M]? {
        try database?.read(query).map(canonical)
    }

    /// The identity map's value for an id as a caller wrote it (`"7"` for an integer key too).
    private func mapValue<M: SQLModel>(_ type: M.Type, id: some Sendable) -> M? {
        PrimaryKey(id, of: type).flatMap { identityMap.value(type, key: $0) }
    }

    /// A row loaded from the database, as the identity map knows it: the map's value when it
    /// has one (at least as fresh as the row), else the row, stored.
    private func canonical<M: Model>(_ row: M) -> M {
        row.identityKey.flatMap { identityMap.value(M.self, key: $0) } ?? identityMap.store(row)
    }

    /// Saves one response's models to their table, in one transaction.
    private func writeThrough<M: SQLModel>(_ values: [M]) async throws {
        guard writesThrough, let database, !values.isEmpty else { return }
        try await database.write { db in
            // The server's values win over stale rows that hold one of their unique keys
            // (those rows are deleted): one clash no longer fails the whole response.
            for value in values { try value.upsert(db, onConflict: .replace, validate: false) }
        }
    }
}
