import Foundation
import ModelSyncCore

/// One live observation, as the ``ObservationCenter`` drives it.
protocol ObservationFetching: AnyObject, Sendable {
    /// Whether the observation learns its tables from each fetch (rather than declaring them).
    var discoversTables: Bool { get }
    /// Fetches on `connection` (inside a read transaction) and keeps the result for
    /// ``deliver()`` unless it equals the last one delivered.
    func fetch(_ connection: SQLiteConnection) -> FetchOutcome
    /// Delivers the result kept by the last ``fetch(_:)``, if any; false when the consumer is
    /// gone.
    func deliver() -> Bool
    /// Ends the observation with `error`.
    func fail(_ error: any Error)
}

/// What a fetch found out.
enum FetchOutcome {
    /// Fetched; with the tables the fetch read when the observation discovers them.
    case fetched(tables: Set<String>?)
    /// The fetch threw: the observation ended with the error.
    case failed
}

/// The live observations of one ``Database``: which tables each reads, and when each must fetch
/// again.
///
/// After a commit, ``databaseDidCommit(changing:in:)`` marks the observations whose tables the
/// transaction changed and fetches them in the background, in batches that each run in one read
/// transaction (on a reader for a file database). An observation is in at most one batch at a
/// time: a commit that lands while it fetches marks it to fetch once more afterwards, so no
/// commit is missed and changes that come faster than fetches are coalesced.
final class ObservationCenter: Sendable {
    private enum Phase {
        /// Up to date with the last commit it was told about.
        case idle
        /// In a batch that has not started yet: that batch will see every commit until then.
        case scheduled
        /// In a running batch; `changedMeanwhile` when a commit since may not be in its snapshot.
        case fetching(changedMeanwhile: Bool)
    }

    private struct Entry {
        let observer: any ObservationFetching
        /// The tables it reads; nil when unknown yet (or while a discovering fetch runs): then
        /// every commit concerns it.
        var tables: Set<String>?
        var phase: Phase
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 0
        /// How many times a commit concerned an observation (for tests and diagnostics).
        var notifications = 0
    }

    private let state = Locked(State())
    /// How many batches may fetch at once.
    private let concurrentFetches: Int

    init(concurrentFetches: Int) {
        self.concurrentFetches = max(1, concurrentFetches)
    }

    /// The number of registered observations.
    var count: Int { state.withLock { $0.entries.count } }

    /// How many times, so far, a commit changed a table an observation reads: each time made it
    /// fetch again, or fetch once more after a fetch it was running.
    var notifications: Int { state.withLock { $0.notifications } }

    /// An identifier for an observation about to register (so that its termination handler can
    /// be set up before its first fetch can end it).
    func makeID() -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// Registers `observer` (reading `tables`, or discovering them when nil) and schedules its
    /// first fetch.
    func register(_ id: Int, _ observer: any ObservationFetching, tables: Set<String>?, in database: Database) {
        state.withLock { $0.entries[id] = Entry(observer: observer, tables: tables, phase: .scheduled) }
        dispatch([id], in: database)
    }

    /// Forgets an observation (its consumer stopped, or it failed). A batch running it finishes
    /// its fetch and drops the result.
    func unregister(_ id: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// Called after transactions that changed `tables` committed, outside the writer's lock.
    func databaseDidCommit(changing tables: Set<String>, in database: Database) {
        let due: [Int] = state.withLock { state in
            var due: [Int] = []
            for (id, entry) in state.entries where entry.tables.map({ !$0.isDisjoint(with: tables) }) ?? true {
                state.notifications += 1
                switch entry.phase {
                case .idle:
                    state.entries[id]?.phase = .scheduled
                    due.append(id)
                case .scheduled, .fetching(changedMeanwhile: true):
                    break
                case .fetching(changedMeanwhile: false):
                    state.entries[id]?.phase = .fetching(changedMeanwhile: true)
                }
            }
            return due
        }
        guard !due.isEmpty else { return }
        // Split into up to `concurrentFetches` batches of about equal size.
        let batches = min(concurrentFetches, due.count)
        for batch in 0..<batches {
            dispatch(Array(due[(due.count * batch / batches)..<(due.count * (batch + 1) / batches)]), in: database)
        }
    }

    private func dispatch(_ ids: [Int], in database: Database) {
        DispatchQueue.global().async { self.refresh(ids, in: database) }
    }

    /// Fetches a batch in one read transaction, then schedules again those that a commit
    /// concerned meanwhile.
    private func refresh(_ ids: [Int], in database: Database) {
        database.trackChanges()
        // Marked as fetching before the read transaction takes its snapshot: a commit from now
        // on may be missing from it, and sets `changedMeanwhile`.
        let batch: [(id: Int, observer: any ObservationFetching)] = state.withLock { state in
            ids.compactMap { id in
                guard let entry = state.entries[id], case .scheduled = entry.phase else { return nil }
                state.entries[id]?.phase = .fetching(changedMeanwhile: false)
                // The tables it reads may change with this fetch: until it ends, any commit counts.
                if entry.observer.discoversTables { state.entries[id]?.tables = nil }
                return (id, entry.observer)
            }
        }
        guard !batch.isEmpty else { return }
        var outcomes: [FetchOutcome] = []
        outcomes.reserveCapacity(batch.count)
        do {
            try database.read { connection in
                for member in batch {
                    let outcome = member.observer.fetch(connection)
                    outcomes.append(outcome)
                    guard case .fetched(let tables) = outcome else { continue }
                    // The tables are known before the consumer sees the results: from then on,
                    // only commits to them concern the observation.
                    if let tables { state.withLock { $0.entries[member.id]?.tables = tables } }
                    if !member.observer.deliver() { unregister(member.id) }
                }
            }
        } catch {
            // No read transaction could be had (no reader could open, or BEGIN failed).
            for member in batch[outcomes.count...] { member.observer.fail(error) }
        }
        let again: [Int] = state.withLock { state in
            var again: [Int] = []
            for (member, outcome) in zip(batch, outcomes) {
                guard let entry = state.entries[member.id], case .fetched = outcome else { continue }
                if case .fetching(changedMeanwhile: true) = entry.phase {
                    state.entries[member.id]?.phase = .scheduled
                    again.append(member.id)
                } else {
                    state.entries[member.id]?.phase = .idle
                }
            }
            return again
        }
        if !again.isEmpty { dispatch(again, in: database) }
    }
}
