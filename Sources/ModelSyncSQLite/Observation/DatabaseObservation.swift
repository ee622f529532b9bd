import ModelSyncCore

/// The results of a fetch, kept up to date: an `AsyncSequence` that delivers the current
/// results first, then new results after each committed transaction that changed a table the
/// fetch reads. Make one with ``Database/observe(tables:_:)`` (declared tables), or with
/// `Database.observe(_:)` given a fetch (discovered tables) or a model type (its whole table).
///
/// ```swift
/// for try await posts in db.observe(tables: ["posts"], { db in try Post.all(db, where: "userId = ?", [1]) }) {
///     print(posts.count)
/// }
/// ```
///
/// - Each iteration (`for try await`, or each iterator you make) is an observation of its own,
///   which starts with its first fetch and stops when the iteration ends: the loop exits, the
///   iterator is dropped, or its task is cancelled.
/// - Fetches run in the background after the commit, in a read transaction on a reader
///   connection (file databases), so writers never wait for observers; an in-memory database
///   has only its writer connection, which the fetches then share.
/// - Writes that roll back, and writes to other tables, fetch nothing. Results equal to the last
///   delivered ones (when `Value` is `Equatable`) are not delivered again.
/// - When commits come faster than fetches, one fetch covers several commits: every delivered
///   value is a committed state, and the last one delivered is the latest state. A consumer
///   slower than the results gets the latest one when it reads; those in between are dropped.
/// - A fetch that throws ends the sequence with its error.
public struct DatabaseObservation<Value: Sendable>: AsyncSequence, Sendable {
    /// Each element is the fetch's result.
    public typealias Element = Value

    /// The database observed.
    public let database: Database
    /// The tables that trigger a new fetch when a transaction changes them (lowercased), or nil
    /// when they are discovered from the statements each fetch runs.
    public let tables: Set<String>?
    private let fetch: @Sendable (SQLiteConnection) throws -> Value
    /// Whether each iteration fetches its first value on the thread that starts it.
    public private(set) var fetchesImmediately = false

    init(database: Database, tables: Set<String>?, fetch: @escaping @Sendable (SQLiteConnection) throws -> Value) {
        self.database = database
        self.tables = tables.map { Set($0.map { $0.lowercased() }) }
        self.fetch = fetch
    }

    /// This observation, with the first value fetched at once, on the thread that starts the
    /// iteration (it waits for a read connection meanwhile): the first `next()` returns it
    /// without waiting for a background fetch, and ``startOnMainActor(_:onError:)`` hands it
    /// over before returning, so a screen never shows an empty state first.
    public func immediate() -> DatabaseObservation {
        var copy = self
        copy.fetchesImmediately = true
        return copy
    }

    /// Starts an observation: registers it with the database and schedules its first fetch.
    public func makeAsyncIterator() -> Iterator {
        // Only the latest state matters: a slow consumer gets it, not every state in between.
        let (stream, continuation) = AsyncThrowingStream<Value, any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let center = database.observations
        let id = center.makeID()
        // Called when the consumer stops (loop exit, iterator dropped, task cancelled) and when
        // a fetch fails: the observation is then forgotten.
        continuation.onTermination = { _ in center.unregister(id) }
        let observer = Observer(fetch: fetch, discoversTables: tables == nil, continuation: continuation)
        center.register(id, observer, tables: tables, in: database)
        var iterator = Iterator(base: stream.makeAsyncIterator())
        if fetchesImmediately {
            // After registering: a commit from now on reaches the observation, so the first
            // value is never newer than those the background fetches deliver.
            iterator.immediate = Result { try database.read(fetch) }
        }
        return iterator
    }

    /// Starts an iteration and fetches its first value on the calling thread, after
    /// registering (a commit from now on reaches the observation); the iterator skips a first
    /// background result equal to it. ``LiveQuery`` starts with this.
    func makeAsyncIteratorWithFirstValue() throws -> (first: Value, iterator: Iterator) {
        var background = self
        background.fetchesImmediately = false
        var iterator = background.makeAsyncIterator()
        let first = try database.read(fetch)
        iterator.lastReturned = first
        return (first, iterator)
    }

    /// Starts the observation and calls `onChange` on the main actor with each new value until
    /// the returned task is cancelled; `onError` gets the error that ends it. With
    /// ``immediate()``, `onChange` has the first value before this method returns.
    ///
    /// ```swift
    /// let task = db.observe(Post.self).immediate().startOnMainActor { posts in model.posts = posts }
    /// // later: task.cancel()
    /// ```
    @MainActor
    @discardableResult
    public func startOnMainActor(
        _ onChange: @escaping @MainActor (Value) -> Void,
        onError: @escaping @MainActor (any Error) -> Void = { _ in }
    ) -> Task<Void, Never> {
        var first: Value?
        if fetchesImmediately {
            do {
                let value = try database.read(fetch)
                onChange(value)
                first = value
            } catch {
                onError(error)
                return Task {}
            }
        }
        var background = self
        background.fetchesImmediately = false
        return Task { @MainActor [first] in
            // Registered after the first fetch: a commit meanwhile is in its first result.
            var iterator = background.makeAsyncIterator()
            iterator.lastReturned = first
            do {
                while let value = try await iterator.next() { onChange(value) }
            } catch {
                onError(error)
            }
        }
    }

    /// Delivers the observed results.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Value, any Error>.AsyncIterator
        /// The last result returned. The observer skips results equal to the last one it
        /// yielded, but that one may have been replaced in the buffer before it was read.
        fileprivate var lastReturned: Value?
        /// The first value, fetched when the iteration started (see ``DatabaseObservation/immediate()``).
        fileprivate var immediate: Result<Value, any Error>?

        init(base: AsyncThrowingStream<Value, any Error>.AsyncIterator) {
            self.base = base
        }

        /// The next results; nil once the task is cancelled.
        public mutating func next() async throws -> Value? {
            if let first = immediate {
                immediate = nil
                let value = try first.get()
                lastReturned = value
                return value
            }
            while let value = try await base.next() {
                if let lastReturned, fieldValuesEqual(lastReturned, value) == true { continue }
                lastReturned = value
                return value
            }
            return nil
        }
    }
}

/// Fetches and delivers for one observation. The center never runs two fetches of one observer
/// at once, and hands it from batch to batch under its lock, so `last` and `undelivered` need
/// no lock of their own.
private final class Observer<Value: Sendable>: ObservationFetching, @unchecked Sendable {
    let fetch: @Sendable (SQLiteConnection) throws -> Value
    let discoversTables: Bool
    let continuation: AsyncThrowingStream<Value, any Error>.Continuation
    /// The last result delivered, and a result fetched but not delivered yet.
    private var last: Value?
    private var undelivered: Value?

    init(fetch: @escaping @Sendable (SQLiteConnection) throws -> Value, discoversTables: Bool, continuation: AsyncThrowingStream<Value, any Error>.Continuation) {
        self.fetch = fetch
        self.discoversTables = discoversTables
        self.continuation = continuation
    }

    func fetch(_ connection: SQLiteConnection) -> FetchOutcome {
        let value: Value
        var tables: Set<String>?
        do {
            if discoversTables {
                (value, tables) = try connection.recordingReadTables { try fetch(connection) }
            } else {
                value = try fetch(connection)
            }
        } catch {
            fail(error)
            return .failed
        }
        if let last, fieldValuesEqual(last, value) == true { return .fetched(tables: tables) }
        last = value
        undelivered = value
        return .fetched(tables: tables)
    }

    func deliver() -> Bool {
        guard let value = undelivered else { return true }
        undelivered = nil
        if case .terminated = continuation.yield(value) { return false }
        return true
    }

    func fail(_ error: any Error) {
        continuation.finish(throwing: error)
    }
}

extension Database {
    /// Observes the results of `fetch`, fetched again after each committed transaction that
    /// changed one of `tables` (names as in the schema; case does not matter). Use it when the
    /// tables are known, or the fetch reads through ``SQLiteConnection/handle`` directly.
    ///
    /// ```swift
    /// for try await posts in db.observe(tables: ["posts"], { db in try Post.all(db, where: "userId = ?", [1]) }) {
    ///     print(posts.count)
    /// }
    /// ```
    public func observe<Value: Sendable>(
        tables: Set<String>,
        _ fetch: @escaping @Sendable (SQLiteConnection) throws -> Value
    ) -> DatabaseObservation<Value> {
        DatabaseObservation(database: self, tables: tables, fetch: fetch)
    }

    /// Observes the results of `fetch`, fetched again after each committed transaction that
    /// changed a table it read. The tables are discovered on every fetch from the statements it
    /// runs through the connection (SQLite's authorizer reports the tables a statement reads,
    /// views and subqueries included), so a fetch that reads different tables at different
    /// times is followed correctly.
    ///
    /// ```swift
    /// for try await count in db.observe({ db in try Post.count(db, where: "userId = ?", [1]) }) {
    ///     print(count)
    /// }
    /// ```
    public func observe<Value: Sendable>(
        _ fetch: @escaping @Sendable (SQLiteConnection) throws -> Value
    ) -> DatabaseObservation<Value> {
        DatabaseObservation(database: self, tables: nil, fetch: fetch)
    }

    /// Observes every row of a model's table, as ``SQLModel/all(_:where:_:order:limit:)``
    /// returns them.
    ///
    /// ```swift
    /// for try await posts in db.observe(Post.self) { print(posts.count) }
    /// ```
    public func observe<M: SQLModel & Sendable>(_ type: M.Type) -> DatabaseObservation<[M]> {
        observe(tables: [M.sqlTable.name]) { try M.all($0) }
    }

    /// Observes the rows of a query, fetched again after each committed transaction that changed
    /// a table it reads (its own, or one of its subqueries').
    ///
    /// ```swift
    /// for try await posts in db.observe(Post.where(\.userId == 1).order(.desc(\.id))) { print(posts.count) }
    /// ```
    public func observe<Root, Element: Sendable>(_ query: SQLQuery<Root, Element>) -> DatabaseObservation<[Element]> {
        // The authorizer finds the tables, raw statements (`SQLQuery.query(sql:)`) included.
        observe { try query.fetchAll($0) }
    }

    /// Observes a graph: the root models with what they include, fetched again after each
    /// committed transaction that changed a table the roots or any included relation read
    /// (a graph's elements are tuples, so every such change is delivered).
    ///
    /// ```swift
    /// for try await shelves in db.observe(Writer.order(\.name).including(Writer.books)) {
    ///     print(shelves.map { writer, books in "\(writer.name): \(books.count)" })
    /// }
    /// ```
    public func observe<Root, Element: Sendable>(_ graph: GraphQuery<Root, Element>) -> DatabaseObservation<[Element]> {
        observe { try graph.fetchAll($0) }
    }

    /// The number of observations running (each iteration of a ``DatabaseObservation`` that has
    /// not ended). For tests and diagnostics.
    package var activeObservationCount: Int { observations.count }

    /// How many times so far a commit changed a table that a running observation reads. Counted
    /// when the commit's write returns, so tests can tell, without waiting, that a write
    /// concerned no observation.
    package var observationNotificationCount: Int { observations.notifications }
}
