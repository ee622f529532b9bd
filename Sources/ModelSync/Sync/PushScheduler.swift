/// Chooses which outbox entries a push may send at the same time.
///
/// Two entries depend on each other when they change the same row, or when one's body points
/// (through a `BelongsTo` foreign key) at the other's row (``OutboxDependencies``): a child
/// waits for its parent's create (and its real key), a parent's delete waits for its children's
/// writes. A parked entry holds back the same. Independent entries go out concurrently; each
/// row's changes stay in order.
///
/// A value with no I/O: the push reads the head of the queue into it and asks it, each time a
/// request may start, for the next entries (``SyncStore/startIndependentEntries(limit:_:)``).
struct PushScheduler {
    /// How many entries of the queue's head one read takes.
    static let windowSize = 256

    /// The head of the queue as the push last read it, oldest first, with what each entry
    /// depends on.
    var entries: [(row: OutboxRecord, dependencies: OutboxDependencies)] = []
    /// The outbox generation the entries were read at (-1: not read yet).
    var generation = -1
    /// Whether the read stopped at ``windowSize``: more entries may follow.
    var truncated = false
    /// Entries of `entries` acknowledged (or failed) since the read.
    var finished: Set<Int64> = []

    /// What a push does next.
    enum Choice {
        /// Start these entries (oldest first). Empty: none can start until one in flight
        /// finishes.
        case start([OutboxRecord])
        /// Every entry read has started or finished, and more may follow: read the queue on.
        case readOn
    }

    /// Up to `limit` of the oldest pending entries, not in flight, that depend on no earlier
    /// unfinished entry (a parked or in-flight entry holds back what depends on it).
    func next(limit: Int, inFlight: Set<Int64>) -> Choice {
        var earlier: [OutboxDependencies] = []
        var started: [OutboxRecord] = []
        var waiting = false
        for (entry, dependencies) in entries where !finished.contains(entry.sequence) {
            guard started.count < limit else { break }
            if entry.state == .pending, !inFlight.contains(entry.sequence) {
                if earlier.contains(where: { $0.conflicts(with: dependencies) }) { waiting = true } else { started.append(entry) }
            }
            earlier.append(dependencies)
        }
        if started.isEmpty && !waiting && truncated { return .readOn }
        return .start(started)
    }

    /// Whether every entry read has finished: nothing of this read is left to start.
    var isExhausted: Bool { entries.allSatisfy { finished.contains($0.row.sequence) } }

    /// Records that the entry `sequence` was acknowledged or failed: it holds nothing back.
    mutating func finish(_ sequence: Int64) {
        finished.insert(sequence)
    }
}
