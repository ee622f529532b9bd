import Foundation
import ModelSyncProtocol
import ModelSyncServer

/// A replacement of a schema's data (a reset, an import over it): the sequence went back to
/// `sequence`. Sent as a notification on the schema's channel, `replaced:<sequence>:<id>`, where
/// a commit sends its sequence.
struct DataReplacement: Sendable {
    let sequence: Int
    let id: String

    init(sequence: Int) {
        self.sequence = sequence
        self.id = UUID().uuidString
    }

    init?(payload: String) {
        let parts = payload.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "replaced", let sequence = Int(parts[1]) else { return nil }
        (self.sequence, self.id) = (sequence, String(parts[2]))
    }

    var payload: String { "replaced:\(sequence):\(id)" }
}

/// The open change streams of one server, fed in sequence order, each the changes of the
/// collections it watches.
actor ChangeRelay {
    /// What the relay reads after a commit: the changes after `after`, of `collections` (nil:
    /// all), as the streams were at `generation`.
    struct Plan: Sendable {
        let after: Int
        let collections: Set<String>?
        let generation: Int
    }

    private struct Subscriber {
        let continuation: AsyncStream<SyncChange>.Continuation
        /// Nil: every collection.
        let collections: Set<String>?
    }

    private var subscribers: [Int: Subscriber] = [:]
    private var nextID = 0
    private var finished = false
    /// The last sequence value handed to the streams.
    private(set) var delivered: Int
    /// The collections the streams watch (nil: all), and how often that set grew.
    private var watched: Set<String>? = []
    private var generation = 0
    /// The replacements of the data rewound to, the latest last (a few: a listener that lags
    /// may bring an older one's notification after this server made a newer one).
    private var rewoundReplacements: [String] = []

    /// A relay whose streams get the changes after `delivered`: the sequence read when the
    /// server opened, before it took requests, so that a stream reads what came before from the
    /// feed and every later commit reaches it. (Started from a sequence its connection read when
    /// it connected, a commit after a stream's backlog and before that read reached neither.)
    init(delivered: Int) {
        self.delivered = delivered
    }

    /// A stream of the changes of `collections` (nil: all) from the next read on; the caller
    /// reads what came before (its backlog) after subscribing.
    func subscribe(to collections: Set<String>?) -> (id: Int, changes: AsyncStream<SyncChange>) {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncChange.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = nextID
        nextID += 1
        if finished {
            continuation.finish()
        } else {
            subscribers[id] = Subscriber(continuation: continuation, collections: collections)
            let widened = watched.map { current in collections.map { !$0.isSubset(of: current) } ?? true } ?? false
            if widened {
                // A read planned before did not read these collections: see `deliver(_:as:)`.
                watched = collections.flatMap { watched?.union($0) }
                generation += 1
            }
        }
        return (id, stream)
    }

    func unsubscribe(_ id: Int) {
        subscribers.removeValue(forKey: id)?.continuation.finish()
        var union: Set<String>? = []
        for subscriber in subscribers.values {
            union = subscriber.collections.flatMap { union?.union($0) }
        }
        // Narrowing needs no new generation: a read of more collections than watched is harmless.
        watched = union
    }

    /// What to read after a commit.
    func plan() -> Plan {
        Plan(after: delivered, collections: watched, generation: generation)
    }

    /// Whether the changes up to `sequence` (a notification's payload: the sequence after a
    /// commit) need no read: no stream is open (then the relay moves past them), or they were
    /// read already. False when there are streams to feed, or the payload is not a number.
    func skip(to sequence: Int?) -> Bool {
        guard let sequence else { return false }
        if sequence <= delivered { return true }
        guard subscribers.isEmpty else { return false }
        delivered = sequence
        return true
    }

    /// Hands out changes read as `plan` says, in sequence order, each to the streams watching its
    /// collection, then moves past `through`: the read held every change up to it. False
    /// (nothing handed out) when a stream began to watch a collection the read left out: it must
    /// read again. Handing out the rest would move past that collection's changes, which its
    /// stream's backlog, read once it subscribed, may not hold either.
    ///
    /// `through` is the sequence the read saw in the state row, when no more changes followed:
    /// commits come in sequence order, each after those before it (the state row's lock), so the
    /// read saw every change up to it, of collections nobody watches too, and those read as a
    /// later version. Notifications up to it then need no read.
    func deliver(_ changes: [SyncChange], as plan: Plan, through: Int? = nil) -> Bool {
        guard plan.generation == generation else { return false }
        for change in changes where change.sequence > delivered {
            for subscriber in subscribers.values where subscriber.collections?.contains(change.collection) ?? true {
                subscriber.continuation.yield(change)
            }
            delivered = change.sequence
        }
        if let through { delivered = max(delivered, through) }
        return true
    }

    /// Starts again from the sequence the data went back to. Every stream ends: its client's
    /// cursor may be past the new sequence, and reconnecting with it gets a 410 (read everything
    /// again). A read planned before is not delivered (its plan's generation is gone): it may
    /// have seen the old data's sequence. Once per replacement: the server that made it rewinds
    /// before its notification comes.
    func rewind(_ replacement: DataReplacement) {
        guard !rewoundReplacements.contains(replacement.id) else { return }
        rewoundReplacements = rewoundReplacements.suffix(7) + [replacement.id]
        delivered = replacement.sequence
        generation += 1
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers.removeAll()
        watched = []
    }

    func finish() {
        finished = true
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers.removeAll()
        watched = []
    }
}
