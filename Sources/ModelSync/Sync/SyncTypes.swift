import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

/// A model that ``SyncStore`` can keep in a local table and send to the server.
public typealias SyncedModel = RemoteResource & SQLModel

/// What an outbox entry asks the server to do.
public enum OutboxOperation: String, Sendable, Hashable {
    /// `POST` the whole value (with an `Idempotency-Key`).
    case create
    /// `PATCH` the changed fields.
    case update
    /// `DELETE` the record.
    case delete
}

/// Where an outbox entry stands.
public enum OutboxEntryState: String, Sendable, Hashable {
    /// Waiting to be sent (or being sent).
    case pending
    /// Refused by the server (400 / 422): kept, not sent again until ``SyncStore/retry(_:)``.
    case parked
}

/// One change waiting in the outbox, as the app sees it (``SyncStore/parkedEntries()``,
/// ``SyncStatus/parked``).
public struct OutboxEntry: Sendable, Hashable {
    /// The entry's place in the queue: entries are sent in this order.
    public var sequence: Int64
    /// The model's schema name (`Post`).
    public var model: String
    /// The row's primary key, as JSON (a temporary key is a negative number or a `local-…`
    /// string until the server assigns the real one).
    public var localKey: JSONValue
    /// What the server is asked to do.
    public var operation: OutboxOperation
    /// The JSON keys the entry changes.
    public var changedFields: [String]
    /// Where the entry stands.
    public var state: OutboxEntryState
    /// How many times sending it failed.
    public var attempts: Int
    /// The last failure, as text.
    public var lastError: String?
    /// The server's field errors, by property name, for a parked entry.
    public var fieldErrors: [String: [String]]
}

/// Whether the pusher is sending.
public enum SyncActivity: Sendable, Hashable {
    /// Nothing is being sent.
    case idle
    /// Entries are being sent.
    case pushing
    /// Changes are being pulled from the server.
    case pulling
}

/// A snapshot of the outbox, delivered by ``SyncStore/statusUpdates()``.
public struct SyncStatus: Sendable, Hashable {
    /// Entries waiting to be sent (parked ones excluded).
    public var pendingCount: Int
    /// Whether entries are being sent now.
    public var activity: SyncActivity
    /// Whether the queue is paused after a 401 (see ``SyncStore/resume()``).
    public var isPaused: Bool
    /// The last failure to send, as text; nil after a push that emptied the queue.
    public var lastError: String?
    /// Entries the server refused, waiting for the app to fix or discard them.
    public var parked: [OutboxEntry]
    /// How many conflicts this store resolved since it was created.
    public var conflictCount: Int
    /// The latest resolved conflicts (at most ``recentConflictLimit``), oldest first, each with
    /// the local and the server's values.
    public var conflicts: [SyncConflict]

    /// How many resolved conflicts ``conflicts`` keeps.
    public static let recentConflictLimit = 100

    /// The status of an empty, idle outbox.
    public init(
        pendingCount: Int = 0, activity: SyncActivity = .idle, isPaused: Bool = false, lastError: String? = nil, parked: [OutboxEntry] = [],
        conflictCount: Int = 0, conflicts: [SyncConflict] = []
    ) {
        self.pendingCount = pendingCount
        self.activity = activity
        self.isPaused = isPaused
        self.lastError = lastError
        self.parked = parked
        self.conflictCount = conflictCount
        self.conflicts = conflicts
    }
}

/// What one ``SyncStore/push()`` did.
public struct PushSummary: Sendable, Hashable {
    /// Entries the server acknowledged.
    public var sent: Int = 0
    /// Entries parked by this push (400 / 403 / 422).
    public var parked: Int = 0
    /// Entries still pending afterwards.
    public var remaining: Int = 0
    /// Conflicts (412, or an edit of a record deleted on the server) resolved by the policy.
    public var conflicts: Int = 0
}

/// Errors of the sync layer.
public enum SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The model has no single-column, top-level primary key, which sync needs.
    case unsupportedKey(model: String)
    /// The outbox names a model type the store was not given (pass it in `models:`).
    case unknownModel(String)
    /// The queue is paused after a 401; ``SyncStore/resume()`` restarts it.
    case paused(status: Int)
    /// No outbox entry has this sequence.
    case noSuchEntry(Int64)
    /// A stored outbox value could not be read.
    case corruptEntry(sequence: Int64, reason: String)
    /// Sending failed and the entry stays queued; `underlying` is the failure.
    case willRetry(sequence: Int64, underlying: String)
    /// The server's change feed answered something a pull cannot use (nothing was changed).
    case unexpectedFeed(model: String, reason: String)
    /// The server does not speak this package's sync protocol version; it names the ones it
    /// does. The queue is paused: nothing is sent until the app (or the server) is updated.
    case unsupportedProtocol(serverSupports: [Int])

    public var description: String {
        switch self {
        case .unsupportedKey(let model): "\(model): sync needs a single top-level primary key"
        case .unknownModel(let model): "the outbox names \(model), which the SyncStore was not given"
        case .paused(let status): "sync paused after HTTP \(status); call resume()"
        case .noSuchEntry(let sequence): "no outbox entry \(sequence)"
        case .corruptEntry(let sequence, let reason): "outbox entry \(sequence) cannot be read: \(reason)"
        case .willRetry(let sequence, let underlying): "outbox entry \(sequence) stays queued: \(underlying)"
        case .unexpectedFeed(let model, let reason): "pulling \(model): \(reason)"
        case .unsupportedProtocol(let versions):
            "the server does not speak sync protocol \(SyncProtocol.version); it speaks \(versions.map(String.init).joined(separator: ", "))"
        }
    }
}
