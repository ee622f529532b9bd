import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncRemote
import ModelSyncSQLite

/// Local-first writes: models are saved to their SQLite table and to a durable outbox in one
/// transaction, and the outbox is replayed to the server later, in order.
///
/// ```swift
/// let sync = SyncStore(remote: api, database: db, models: [Post.self])
/// var post = Post(id: nil, userId: 1, title: "Draft", text: "…")
/// try await sync.save(&post)        // local row + outbox entry; no network; post.id is temporary
/// post.title = "Final"
/// try await sync.save(&post)        // coalesced into the pending create
/// try await sync.push()             // POST /posts with an Idempotency-Key; the real id replaces the temporary one
/// ```
///
/// - Saves and deletes never touch the network. Local queries and live observations see them
///   at once.
/// - The outbox coalesces per row: create + updates → one create; updates → one `PATCH` of the
///   union of changed fields; create + delete → nothing; update + delete → one delete.
/// - A row saved with a nil primary key gets a temporary one (-1, -2, … or `local-…`). When the
///   server assigns the real key, one transaction rewrites the row, the pending entries, the
///   foreign keys of the `BelongsTo` relations of the given models, and the identity map.
/// - Transport errors, 5xx and 429 keep the entry (``startAutomaticPush()`` backs off); 400 /
///   422 park it with the server's field errors, 403 (the rules refuse the row) with its reason;
///   401 pauses the queue until ``resume()``.
public final class SyncStore: Sendable {
    /// The server side.
    public let remote: RemoteStore
    /// The local side: the models' tables and the outbox live in this database.
    public let database: Database
    /// The canonical values of the synced models.
    public let identityMap: IdentityMap
    /// The delays between automatic attempts after a failure.
    public let backoff: SyncBackoff
    /// How many entries a push sends at once. Entries of one row, and a child's entries and
    /// its parent's, always go in order; independent ones go concurrently.
    public let maxConcurrentRequests: Int
    /// The most entries sent in one `POST /_batch` to a server that takes batches
    /// (`modelsync-server`); 1 sends every entry in a request of its own.
    public let maxBatchSize: Int
    /// The most changes one request of a pull asks the feed for (`modelsync-server` gives at
    /// most 10,000); each page is written in one transaction. Larger pages take fewer round
    /// trips; a local write waits for at most one page's transaction.
    public let pullPageSize: Int
    /// Where the store reports pushes, parked entries, pauses and key rewrites.
    public let logger: Logger

    struct State {
        var models: [String: any SyncedModel.Type] = [:]
        var inFlight: Set<Int64> = []
        /// Whether the server answers `POST /_batch`; nil until a push finds out.
        var takesBatches: Bool?
        /// Bumped, inside the transaction, by every change to the outbox other than a push's
        /// own acknowledgements, so that a push knows its window is stale.
        var outboxGeneration = 0
        var pausedStatus: Int?
        /// Bumped by every ``resume()``; a push notes it when it starts, so that a 401 answered
        /// to a request sent before the session refreshed does not pause the queue again.
        var resumptions = 0
        var resumptionsAtPush = 0
        var lastError: String?
        var activity = SyncActivity.idle
        var tablesReady = false
        var configurations: [String: SyncModelConfiguration] = [:]
        var paginations: [String: Pagination] = [:]
        var conflictCount = 0
        var recentConflicts: [SyncConflict] = []
        var observers: [Int: AsyncStream<SyncStatus>.Continuation] = [:]
        /// Bumped by each status publication when it starts, and the newest one delivered.
        var statusGeneration = 0
        var publishedGeneration = 0
        var nextObserver = 0
        var automaticPush: Task<Void, Never>?
        var livePull: Task<Void, Never>?
        /// The models ``startLivePull(_:)`` follows whole, and the collections it follows.
        var liveModels: [any SyncedModel.Type] = []
        var liveCollections: Set<String> = []
        /// Models whose rows no subscription holds have been swept since the last push that
        /// acknowledged anything (``sweepUnheld(_:_:)``).
        var sweptModels: Set<String> = []
        /// Follows the session given to ``use(_:)``.
        var sessionWatch: Task<Void, Never>?
    }

    let state = Locked(State())
    /// One push, pull or clearing of the local data at a time.
    let exchangeGate = SyncExchangeGate()
    private let wakeSignal: AsyncStream<Void>
    let wake: AsyncStream<Void>.Continuation

    /// Creates a store over `remote` and `database`. List in `models` every type whose changes
    /// may be in the outbox (so that entries left by an earlier run can be sent) and whose
    /// foreign keys must follow temporary keys; types passed to ``save(_:)`` are added too.
    public init(
        remote: RemoteStore, database: Database, models: [any SyncedModel.Type] = [], identityMap: IdentityMap = IdentityMap(),
        backoff: SyncBackoff = SyncBackoff(), maxConcurrentRequests: Int = 8, maxBatchSize: Int = 100, pullPageSize: Int = 5_000,
        logger: Logger = Logger(label: "modelsync.sync")
    ) {
        self.maxBatchSize = max(1, maxBatchSize)
        self.pullPageSize = max(1, pullPageSize)
        self.logger = logger
        self.maxConcurrentRequests = maxConcurrentRequests
        self.remote = remote
        self.database = database
        self.identityMap = identityMap
        self.backoff = backoff
        (wakeSignal, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        state.withLock { state in
            for model in models { state.models[model.schema.name] = model }
        }
    }

    deinit {
        state.withLock { state in
            state.automaticPush?.cancel()
            state.livePull?.cancel()
            state.sessionWatch?.cancel()
        }
        wake.finish()
    }

    // MARK: Local writes

    /// Saves `model` to its table and queues the change, in one transaction; no network.
    ///
    /// A nil primary key is replaced by a temporary one, written back into `model`. A model
    /// still holding a temporary key the server has since replaced is saved under the real one.
    ///
    /// - Throws: ``/ModelSyncCore/ValidationError`` when the model is invalid (nothing is
    ///   written); ``SyncError/unsupportedKey(model:)``; a `SQLiteError`.
    public func save<M: SyncedModel>(_ model: inout M) async throws {
        _ = try model.validated()
        let key = try SyncKey(M.self)
        register(M.self)
        let encoder = remote.options.encoder
        let decoder = remote.options.decoder
        let value = model
        let json = try encoder.encodeToValue(model)
        try await prepareBookkeeping()
        let saved: M = try await database.write { db in
            var json = json
            var row = value
            var keyValue = json[key.path] ?? .null
            var temporary = false
            if keyValue == .null {
                temporary = true
                keyValue = try key.temporaryKey(db)
                json[key.path] = keyValue
                if let decoded = try? decoder.decode(M.self, from: json.jsonBytes()) {
                    row = decoded
                } else {
                    // A key type of its own, which the schema cannot tell: the other form.
                    keyValue = keyValue.stringValue == nil
                        ? .string("local-" + UUID().uuidString.lowercased()) : .number(JSONNumber(try SyncBookkeeping.nextTemporaryKey(db)))
                    json[key.path] = keyValue
                    row = try decoder.decode(M.self, from: json.jsonBytes())
                }
            } else if let serverKey = try SyncBookkeeping.rewrittenKey(model: key.model, keyValue, db) {
                keyValue = serverKey
                json[key.path] = serverKey
                row = try decoder.decode(M.self, from: json.jsonBytes())
            }
            let before = try M.find(key: [keyValue.primaryKeySQLValue(model: key.model)], db).map(encoder.encodeToValue)
            try row.upsert(db, validate: false)
            try self.recordSave(key: key, keyValue, before: before, after: json, temporary: temporary, db)
            return row
        }
        model = saved
        identityMap.store(saved)
        changed()
    }

    /// Deletes `model`'s row and queues the delete, in one transaction; no network. Deleting a
    /// row whose create is still queued drops both: the server never hears of it.
    ///
    /// - Throws: ``/ModelSyncRemote/RemoteError/missingID(model:)`` for a model without a key;
    ///   a `SQLiteError`, or the relations' delete rules.
    public func delete<M: SyncedModel>(_ model: M) async throws {
        let key = try SyncKey(M.self)
        register(M.self)
        let encoder = remote.options.encoder
        let givenKey = try encoder.encodeToValue(model)[key.path] ?? .null
        guard givenKey != .null else { throw RemoteError.missingID(model: key.model) }
        try await prepareBookkeeping()
        let keyValue = try await database.write { db in
            let keyValue = try SyncBookkeeping.rewrittenKey(model: key.model, givenKey, db) ?? givenKey
            let before = try M.find(key: [keyValue.primaryKeySQLValue(model: key.model)], db)
            if let before { try before.delete(db) }
            try self.recordDelete(key: key, keyValue, before: before.map(encoder.encodeToValue), db)
            return keyValue
        }
        if let key = keyValue.identityKey(of: M.self) { identityMap.remove(M.self, key: key) }
        changed()
    }

    // MARK: Coalescing

    /// The row's queued entries that may still change: all but the ones being sent or ever sent
    /// (except `including`, an entry whose sending is being resolved).
    func openEntries(_ key: SyncKey, _ keyValue: JSONValue, _ db: SQLiteConnection, including: Int64? = nil) throws -> [OutboxRecord] {
        // The caller changes these entries: one step with reading what is in flight, so that a
        // push either started an entry before (and it is left alone) or sees the change.
        let inFlight = state.withLock { state in
            state.outboxGeneration += 1
            return state.inFlight
        }
        return try SyncBookkeeping.entries(model: key.model, keyValue, db)
            .filter { (!inFlight.contains($0.sequence) && !$0.sent) || $0.sequence == including }
    }

    private func recordSave(key: SyncKey, _ keyValue: JSONValue, before: JSONValue?, after: JSONValue, temporary: Bool, _ db: SQLiteConnection) throws {
        let open = try openEntries(key, keyValue, db)
        let allFields = after.objectValue?.keys ?? []
        guard let before else {
            if var deleted = open.last, deleted.operation == .delete {
                // Deleted and saved again under the same key: the server's record is replaced.
                deleted.operation = .update
                deleted.body = after
                deleted.changedFields = allFields
                return try deleted.saveRequest(db)
            }
            var entry = OutboxRecord.queued(
                model: key.model, localKey: keyValue, operation: .create, body: after, changedFields: allFields, baseValues: nil,
                temporaryKey: temporary)
            return try entry.insert(db, validate: false)
        }
        let beforeFields = before.objectValue?.keys ?? []
        let changedFields = (allFields + beforeFields.filter { !allFields.contains($0) }).filter { before[$0] != after[$0] }
        guard !changedFields.isEmpty else { return }
        if var pending = open.last, pending.operation != .delete {
            pending.changedFields += changedFields.filter { !pending.changedFields.contains($0) }
            if pending.operation == .create {
                pending.body = after
            } else {
                for field in changedFields { pending.body[field] = after[field] ?? .null }
            }
            return try pending.saveRequest(db)
        }
        var body = JSONValue.object(JSONObject())
        for field in changedFields { body[field] = after[field] ?? .null }
        var entry = OutboxRecord.queued(
            model: key.model, localKey: keyValue, operation: .update, body: body, changedFields: changedFields, baseValues: before,
            serverVersion: try SyncBookkeeping.version(model: key.model, keyValue, db))
        try entry.insert(db, validate: false)
    }

    private func recordDelete(key: SyncKey, _ keyValue: JSONValue, before: JSONValue?, _ db: SQLiteConnection) throws {
        let open = try openEntries(key, keyValue, db)
        if open.contains(where: { $0.operation == .create }) {
            // The create was never sent, so the server never saw the row: nothing to send. (A
            // create ever sent is not open: the delete queues behind it.)
            for entry in open { try entry.delete(db) }
            return
        }
        if var last = open.last {
            for entry in open.dropLast() { try entry.delete(db) }
            last.operation = .delete
            last.body = .object(JSONObject())
            last.changedFields = []
            return try last.saveRequest(db)
        }
        var entry = OutboxRecord.queued(
            model: key.model, localKey: keyValue, operation: .delete, body: .object(JSONObject()), changedFields: [], baseValues: before,
            serverVersion: try SyncBookkeeping.version(model: key.model, keyValue, db))
        try entry.insert(db, validate: false)
    }

    // MARK: Bookkeeping

    func register<M: SyncedModel>(_ type: M.Type) {
        state.withLock { state in
            if state.models[M.schema.name] == nil { state.models[M.schema.name] = M.self }
        }
    }

    /// Brings the bookkeeping tables up to date (``SyncBookkeeping/migrator``) and checks the
    /// models against them, once per store: before the first transaction that uses them (a
    /// migration runs outside transactions), so that no push or pull pays for the check.
    func prepareBookkeeping() async throws {
        guard !state.withLock({ $0.tablesReady }) else { return }
        try await database.migrate(SyncBookkeeping.migrator, checking: SyncBookkeeping.models)
        state.withLock { $0.tablesReady = true }
    }

    /// Tells a running push that the outbox changed under it (call inside the transaction).
    func outboxChanged() {
        state.withLock { $0.outboxGeneration += 1 }
    }

    /// Wakes the automatic pusher and tells the status observers.
    func changed() {
        wake.yield()
        publishStatus()
    }

    // MARK: Status

    /// The outbox's status now, then after every change, newest first when the reader lags.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            defer { state.nextObserver += 1 }
            state.observers[state.nextObserver] = continuation
            return state.nextObserver
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.observers.removeValue(forKey: id) } }
        publishStatus()
        return stream
    }

    /// The outbox's status now.
    public func status() async throws -> SyncStatus {
        try await prepareBookkeeping()
        let (pending, parked) = try await database.write { db in
            (try SyncBookkeeping.pendingCount(db), try SyncBookkeeping.parked(db).map(\.publicEntry))
        }
        return state.withLock { state in
            SyncStatus(pendingCount: pending, activity: state.activity, isPaused: state.pausedStatus != nil,
                       lastError: state.lastError, parked: parked, conflictCount: state.conflictCount, conflicts: state.recentConflicts)
        }
    }

    private func publishStatus() {
        guard let generation = state.withLock({ state -> Int? in
            guard !state.observers.isEmpty else { return nil }
            state.statusGeneration += 1
            return state.statusGeneration
        }) else { return }
        Task {
            guard let status = try? await self.status() else { return }
            // The tasks read the status in any order: one read before a later change must not
            // reach the observers after that change's status, or they keep a stale one.
            self.state.withLock { state in
                guard generation > state.publishedGeneration else { return }
                state.publishedGeneration = generation
                for observer in state.observers.values { observer.yield(status) }
            }
        }
    }

    /// The entries the server refused (400 / 422), oldest first.
    public func parkedEntries() async throws -> [OutboxEntry] {
        try await status().parked
    }

    /// The parked entry of `model`'s row, if the server refused its change: the app shows its
    /// ``OutboxEntry/fieldErrors`` beside the row.
    public func parkedEntry<M: SyncedModel>(for model: M) async throws -> OutboxEntry? {
        let key = try SyncKey(M.self)
        let keyValue = try remote.options.encoder.encodeToValue(model)[key.path] ?? .null
        return try await parkedEntries().first { $0.model == key.model && $0.localKey == keyValue }
    }

    /// How many entries wait to be sent (parked ones excluded).
    public func pendingCount() async throws -> Int {
        try await status().pendingCount
    }
}

/// The delays between automatic push attempts after a failure: doubling from `initial` up to
/// `maximum`.
public struct SyncBackoff: Sendable, Hashable {
    /// The first delay.
    public var initial: Duration
    /// The longest delay.
    public var maximum: Duration

    /// Creates a policy.
    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = maximum
    }
}

/// How sync finds a model's primary key: in its JSON, its table and the outbox.
struct SyncKey: Sendable {
    var model: String
    var path: JSONPath
    var table: String
    var column: String
    /// The key's type, from the schema: a temporary key takes the same form.
    var type: FieldType

    init<M: SyncedModel>(_ type: M.Type) throws {
        guard M.schema.primaryKey.count == 1, let field = M.schema.field(named: M.schema.primaryKey[0]) else {
            throw SyncError.unsupportedKey(model: M.schema.name)
        }
        model = M.schema.name
        path = JSONPath(parsing: field.jsonKey)
        table = M.schema.table
        column = field.column
        self.type = field.type.nonOptional
    }

    /// A new temporary key: -1, -2, … for an integer key (servers assign positive ids),
    /// `local-<uuid>` for a text key, a fresh UUID for a UUID key; a number for any other.
    func temporaryKey(_ db: SQLiteConnection) throws -> JSONValue {
        switch type {
        case .string: .string("local-" + UUID().uuidString.lowercased())
        case .uuid: .string(UUID().uuidString.lowercased())
        default: .number(JSONNumber(try SyncBookkeeping.nextTemporaryKey(db)))
        }
    }

    /// The key as one URL path segment.
    static func urlSegment(_ key: JSONValue) -> String? {
        if let integer = key.intValue { return String(integer) }
        return key.stringValue
    }
}

/// Guards the synced tables and the bookkeeping while the store exchanges data with the server
/// (a push, a pull) or clears them: one at a time, a later caller waits for the running one.
actor SyncExchangeGate {
    private var running = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard running else { running = true; return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { running = false } else { waiters.removeFirst().resume() }
    }

    /// How many callers wait for the running one (tests order work on it).
    var queued: Int { waiters.count }
}

extension SyncStore {
    /// Runs `body` alone (one push, pull or clearing at a time), with the status showing `activity`.
    func exclusively<T: Sendable>(_ activity: SyncActivity, _ body: () async throws -> T) async throws -> T {
        await exchangeGate.acquire()
        state.withLock { $0.activity = activity }
        changed()
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        // Idle before the gate opens, so that the next holder's activity is not overwritten.
        state.withLock { $0.activity = .idle }
        changed()
        await exchangeGate.release()
        return try result.get()
    }

    var wakeUps: AsyncStream<Void> { wakeSignal }
}

extension JSONValue {
    /// The key as the identity map takes it, normalised by `type`'s key field.
    func identityKey<M: Model>(of type: M.Type) -> PrimaryKey? {
        if let integer = intValue { return PrimaryKey(integer, of: type) }
        return stringValue.flatMap { PrimaryKey($0, of: type) }
    }
}
