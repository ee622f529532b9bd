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
///
/// A struct over a private code, as postgres-nio's `PSQLError` is, not an enum: a new kind of
/// failure is then a new ``Code`` value, which breaks no caller's exhaustive `switch`. Compare
/// ``code`` with the static members (`error.code == .paused`), and read the failure's data from
/// the properties (``status``, ``sequence``, …), each nil where the code has none.
public struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``SyncError``; compare it with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unsupportedKey, unknownModel, paused, noSuchEntry, corruptEntry, willRetry, unexpectedFeed, unsupportedProtocol
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The model has no single-column, top-level primary key, which sync needs (``model``).
        public static let unsupportedKey = Code(.unsupportedKey)
        /// The outbox names a model type the store was not given (pass it in `models:`) (``model``).
        public static let unknownModel = Code(.unknownModel)
        /// The queue is paused after a 401; ``SyncStore/resume()`` restarts it (``status``).
        public static let paused = Code(.paused)
        /// No outbox entry has this sequence (``sequence``).
        public static let noSuchEntry = Code(.noSuchEntry)
        /// A stored outbox value could not be read (``sequence``, ``reason``).
        public static let corruptEntry = Code(.corruptEntry)
        /// Sending failed and the entry stays queued (``sequence``; ``reason``: the failure).
        public static let willRetry = Code(.willRetry)
        /// The server's change feed answered something a pull cannot use; nothing was changed
        /// (``model``, ``reason``).
        public static let unexpectedFeed = Code(.unexpectedFeed)
        /// The server does not speak this package's sync protocol version; it names the ones it
        /// does (``serverVersions``). The queue is paused: nothing is sent until the app (or the
        /// server) is updated.
        public static let unsupportedProtocol = Code(.unsupportedProtocol)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The model, for ``Code/unsupportedKey``, ``Code/unknownModel`` and ``Code/unexpectedFeed``.
    public let model: String?
    /// The HTTP status the queue paused after, for ``Code/paused``.
    public let status: Int?
    /// The outbox entry, for ``Code/noSuchEntry``, ``Code/corruptEntry`` and ``Code/willRetry``.
    public let sequence: Int64?
    /// Why: what could not be read (``Code/corruptEntry``), the failure the entry stays queued
    /// after (``Code/willRetry``), what the feed answered (``Code/unexpectedFeed``).
    public let reason: String?
    /// The protocol versions the server speaks, for ``Code/unsupportedProtocol``.
    public let serverVersions: [Int]?

    private init(
        _ code: Code, model: String? = nil, status: Int? = nil, sequence: Int64? = nil, reason: String? = nil, serverVersions: [Int]? = nil
    ) {
        (self.code, self.model, self.status, self.sequence, self.reason, self.serverVersions) = (code, model, status, sequence, reason, serverVersions)
    }

    /// The model has no single-column, top-level primary key, which sync needs.
    public static func unsupportedKey(model: String) -> SyncError { SyncError(.unsupportedKey, model: model) }
    /// The outbox names a model type the store was not given.
    public static func unknownModel(_ model: String) -> SyncError { SyncError(.unknownModel, model: model) }
    /// The queue is paused after `status` (a 401).
    public static func paused(status: Int) -> SyncError { SyncError(.paused, status: status) }
    /// No outbox entry has this sequence.
    public static func noSuchEntry(_ sequence: Int64) -> SyncError { SyncError(.noSuchEntry, sequence: sequence) }
    /// A stored outbox value could not be read.
    public static func corruptEntry(sequence: Int64, reason: String) -> SyncError { SyncError(.corruptEntry, sequence: sequence, reason: reason) }
    /// Sending failed and the entry stays queued; `underlying` is the failure.
    public static func willRetry(sequence: Int64, underlying: String) -> SyncError { SyncError(.willRetry, sequence: sequence, reason: underlying) }
    /// The server's change feed answered something a pull cannot use.
    public static func unexpectedFeed(model: String, reason: String) -> SyncError { SyncError(.unexpectedFeed, model: model, reason: reason) }
    /// The server does not speak this package's sync protocol version.
    public static func unsupportedProtocol(serverSupports versions: [Int]) -> SyncError { SyncError(.unsupportedProtocol, serverVersions: versions) }

    public var description: String {
        let (model, sequence, reason) = (model ?? "?", sequence.map(String.init) ?? "?", reason ?? "?")
        return switch code {
        case .unsupportedKey: "\(model): sync needs a single top-level primary key"
        case .unknownModel: "the outbox names \(model), which the SyncStore was not given"
        case .paused: "sync paused after HTTP \(status.map(String.init) ?? "?"); call resume()"
        case .noSuchEntry: "no outbox entry \(sequence)"
        case .corruptEntry: "outbox entry \(sequence) cannot be read: \(reason)"
        case .willRetry: "outbox entry \(sequence) stays queued: \(reason)"
        case .unexpectedFeed: "pulling \(model): \(reason)"
        case .unsupportedProtocol:
            "the server does not speak sync protocol \(SyncProtocol.version); it speaks \((serverVersions ?? []).map(String.init).joined(separator: ", "))"
        default: "sync error \(code)"
        }
    }
}
