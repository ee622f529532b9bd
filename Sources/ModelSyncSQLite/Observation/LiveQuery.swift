import Observation

/// The results of a live query as an `@Observable` object for SwiftUI (or any code that uses
/// Observation): ``value`` is the latest committed state, updated on the main actor after each
/// committed transaction that changes a table the fetch reads.
///
/// ```swift
/// let posts = try LiveQuery(Post.where(\.userId == 1).order(.desc(\.id)), in: db)
/// print(posts.value.count)          // the rows now: fetched before `init` returned
/// ```
///
/// - **First value.** `init` fetches synchronously, on the main actor, before it returns (a read
///   transaction on a reader connection; it waits for one if all are busy), so a screen never
///   shows an empty state first. A failing first fetch throws from `init`.
/// - **Updates** come from the ``DatabaseObservation`` it wraps, with its rules: fetched in the
///   background after each commit, only committed states, results equal to the current ones
///   skipped (when `Value` is `Equatable`: otherwise the observation's first background fetch
///   may assign the first value once more). They are assigned on the main actor, so observers
///   see each change there.
/// - **Errors.** A later fetch that throws sets ``error`` and ends the observation (as it ends
///   the sequence); ``value`` keeps the last good results.
/// - **Lifetime.** The observation runs as long as the object lives: when it is deallocated its
///   task is cancelled and the observation unregistered. The task holds the object weakly, so
///   it never keeps it alive.
@MainActor
@Observable
public final class LiveQuery<Value: Sendable> {
    /// The latest results.
    public private(set) var value: Value
    /// The error that ended the observation, or nil while it runs.
    public private(set) var error: (any Error)?
    /// Iterates the observation; cancelled in `deinit`.
    @ObservationIgnored private var task: Task<Void, Never>?

    /// Starts observing: fetches the first value now (see the type's notes), then follows
    /// every committed change.
    ///
    /// ```swift
    /// let count = try LiveQuery(db.observe { try Post.count($0) })
    /// ```
    ///
    /// - Throws: what the first fetch throws.
    public init(_ observation: DatabaseObservation<Value>) throws {
        // On a throw the iterator is dropped, which unregisters the observation.
        let (first, iterator) = try observation.makeAsyncIteratorWithFirstValue()
        value = first
        task = Task { @MainActor [weak self, iterator] in
            var iterator = iterator
            do {
                // On the main actor: the iterator never leaves it.
                while let next = try await iterator.next(isolation: #isolation) {
                    guard let self else { return }
                    self.value = next
                }
            } catch {
                self?.error = error
            }
        }
    }

    /// Starts observing the rows of `query` in `database`: fetches them now, then follows
    /// every committed change of a table the query reads.
    ///
    /// - Throws: what the first fetch throws (a `SQLiteError`).
    public convenience init<Root, Element: Sendable>(_ query: SQLQuery<Root, Element>, in database: Database) throws
    where Value == [Element] {
        try self.init(database.observe(query))
    }

    /// Starts observing a graph in `database` (``GraphQuery``): fetches it
    /// now, then follows every committed change of a table its roots or included relations read.
    ///
    /// - Throws: what the first fetch throws (a `SQLiteError`).
    public convenience init<Root, Element: Sendable>(_ graph: GraphQuery<Root, Element>, in database: Database) throws
    where Value == [Element] {
        try self.init(database.observe(graph))
    }

    deinit {
        task?.cancel()
    }

    /// The task iterating the observation, for tests that await its end.
    package var observationTask: Task<Void, Never>? { task }
}
