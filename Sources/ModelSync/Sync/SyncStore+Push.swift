import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    // MARK: Replay

    /// Sends the queued entries in order until the queue is empty, one push at a time.
    ///
    /// Each acknowledgement is applied in one transaction: the server's fields into the row
    /// (unless newer local changes are queued for it), a temporary key rewritten, the entry
    /// deleted. A 400 / 422 parks the entry and the push goes on with other rows.
    ///
    /// - Throws: ``SyncError/paused(status:)`` after a 401 / 403 (the queue stays paused until
    ///   ``resume()``); ``SyncError/willRetry(sequence:underlying:)`` when an entry failed with a
    ///   transport error, 5xx or 429 and stays queued; a `SQLiteError`.
    @discardableResult
    public func push() async throws -> PushSummary {
        try await withPushGate(.pushing) { try await pushQueued() }
    }

    private func pushQueued() async throws -> PushSummary {
        var summary = PushSummary()
        // The first failure that stops the push (a retryable error, a pause); entries already
        // sent are still awaited, so that their acknowledgements are applied.
        var stop: (any Error)?
        let width = min(max(1, maxConcurrentRequests), PushWindow.size / 2)
        var window = PushWindow()
        try await withThrowingTaskGroup(of: [(OutboxRecord, Result<SendOutcome, any Error>)].self) { group in
            // Requests (or batches) in flight.
            var running = 0
            while true {
                if stop == nil, let status = state.withLock({ $0.pausedStatus }) { stop = SyncError.paused(status: status) }
                // A server that takes batches gets the independent entries in batches, two in
                // flight (one when `maxConcurrentRequests` is 1); any other gets them one per
                // request, `width` in flight.
                let batching = maxBatchSize > 1 && state.withLock({ $0.takesBatches }) != false
                if stop == nil && running < (batching ? min(2, width) : width) {
                    let started: [OutboxRecord]
                    do {
                        started = try await startIndependentEntries(limit: batching ? maxBatchSize : width - running, &window)
                    } catch {
                        stop = error
                        started = []
                    }
                    if batching && started.count > 1 {
                        running += 1
                        group.addTask { await self.sendBatch(started) }
                    } else {
                        for entry in started {
                            running += 1
                            group.addTask { [(entry, await self.sendAlone(entry))] }
                        }
                    }
                }
                guard running > 0, let outcomes = try await group.next() else { break }
                running -= 1
                for (entry, result) in outcomes {
                    window.finished.insert(entry.sequence)
                    state.withLock { _ = $0.inFlight.remove(entry.sequence) }
                    let failure: any Error
                    switch result {
                    case .success(.acknowledged):
                        summary.sent += 1
                        continue
                    case .success(.conflictResolved):
                        // The entry was rewritten against the server's record; it goes again if needed.
                        summary.conflicts += 1
                        continue
                    case .failure(let error):
                        failure = error
                    }
                    do {
                        if try await handleFailure(failure, of: entry) { summary.parked += 1 } else if stop == nil {
                            stop = SyncError.willRetry(sequence: entry.sequence, underlying: "\(failure)")
                        }
                    } catch {
                        if stop == nil { stop = error }
                    }
                }
            }
        }
        if let stop {
            logger.debug("push stopped; entries stay queued", metadata: ["sent": "\(summary.sent)", "reason": "\(stop)"])
            throw stop
        }
        state.withLock { $0.lastError = nil }
        summary.remaining = try await pendingCount()
        logger.debug("push finished", metadata: ["sent": "\(summary.sent)", "parked": "\(summary.parked)", "remaining": "\(summary.remaining)"])
        return summary
    }

    /// The head of the queue as a push last read it, so that starting an entry does not read
    /// and decode the queue again each time. It is read again when the outbox changed
    /// otherwise than by this push's acknowledgements (``SyncStore/State/outboxGeneration``), or
    /// when every entry in it has started.
    struct PushWindow {
        static let size = 256
        var entries: [(row: OutboxRecord, dependencies: OutboxDependencies)] = []
        var generation = -1
        /// Whether the read stopped at ``size``: more entries may follow.
        var truncated = false
        /// Entries of `entries` acknowledged (or failed) since the read.
        var finished: Set<Int64> = []
    }

    /// Marks as in flight up to `limit` of the oldest pending entries that depend on no
    /// earlier unfinished entry, and returns them.
    ///
    /// Two entries depend on each other when they change the same row, or when one's body
    /// points (through a `BelongsTo` foreign key) at the other's row: a child waits for its
    /// parent's create (and its real key), a parent's delete waits for its children's writes.
    /// A parked entry holds back the same. Independent entries go out concurrently; each row's
    /// changes stay in order.
    func startIndependentEntries(limit: Int, _ window: inout PushWindow) async throws -> [OutboxRecord] {
        while true {
            let (generation, inFlight) = state.withLock { ($0.outboxGeneration, $0.inFlight) }
            if generation != window.generation {
                window = try await readWindow()
                continue
            }
            var earlier: [OutboxDependencies] = []
            var started: [OutboxRecord] = []
            var waiting = false
            for (entry, dependencies) in window.entries where !window.finished.contains(entry.sequence) {
                guard started.count < limit else { break }
                if entry.state == .pending, !inFlight.contains(entry.sequence) {
                    if earlier.contains(where: { $0.conflicts(with: dependencies) }) { waiting = true } else { started.append(entry) }
                }
                earlier.append(dependencies)
            }
            if started.isEmpty && !waiting && window.truncated {
                // Everything read has been sent: read on.
                window = try await readWindow()
                if window.entries.allSatisfy({ window.finished.contains($0.row.sequence) }) { return [] }
                continue
            }
            // Marked only if no save or rewrite changed the outbox since it was read: a save
            // coalesces into an entry only while it is not in flight (see `openEntries`).
            let marked = state.withLock { state -> Bool in
                guard state.outboxGeneration == window.generation else { return false }
                state.inFlight.formUnion(started.map(\.sequence))
                return true
            }
            guard marked else { continue }
            // Frozen before their requests leave: the server may apply them from now on.
            // (A retry's entries are marked already: no transaction for them.)
            let sequences = started.filter { !$0.sent }.map(\.sequence)
            if !sequences.isEmpty {
                do {
                    try await database.write { db in try SyncBookkeeping.markSent(sequences, db) }
                } catch {
                    state.withLock { $0.inFlight.subtract(started.map(\.sequence)) }
                    throw error
                }
            }
            return started.map { entry in
                var entry = entry
                entry.sent = true
                return entry
            }
        }
    }

    private func readWindow() async throws -> PushWindow {
        let models = state.withLock { $0.models }
        try await prepareBookkeeping()
        return try await database.write { db in
            // Read inside the transaction: a change after it bumps the generation again.
            let generation = self.state.withLock { $0.outboxGeneration }
            let rows = try SyncBookkeeping.queue(db, limit: PushWindow.size)
            let pending = rows.filter { $0.state == .pending }.count
            return PushWindow(
                entries: try rows.map { ($0, try OutboxDependencies($0, models)) }, generation: generation,
                truncated: pending >= PushWindow.size)
        }
    }

    /// Records a failure; returns true when the entry was parked and the push may go on.
    private func handleFailure(_ error: any Error, of entry: OutboxRecord) async throws -> Bool {
        let text = "\(error)"
        let status = (error as? RemoteError)?.status
        if case .status(let failure)? = error as? RemoteError, failure.status == 400,
           let body = (try? JSONValue(parsing: failure.response.body)).flatMap(SyncErrorBody.init(json:)),
           let versions = body.details["supportedVersions"]?.arrayValue {
            // Not this entry's fault: the whole queue waits for an update.
            state.withLock { state in
                state.pausedStatus = 400
                state.lastError = text
            }
            logger.error("the server does not speak this sync protocol; the outbox is paused", metadata: ["server": "\(versions)"])
            throw SyncError.unsupportedProtocol(serverSupports: versions.compactMap(\.intValue))
        }
        switch status {
        case 400?, 422?:
            var errors = JSONValue.object(JSONObject())
            if case .status(let failure)? = error as? RemoteError {
                for (name, messages) in failure.fieldErrors { errors[name] = .array(messages.map(JSONValue.string)) }
            }
            let fieldErrors = errors
            try await database.write { db in
                // Refused, so not applied: open again for the app's fix, which is another request.
                try OutboxRecord.where(\.id == entry.id).updateAll(
                    db, .set(\.state, to: .parked), .set(\.attempts) { $0.attempts + 1 }, .set(\.lastError, to: text),
                    .set(\.fieldErrors, to: fieldErrors), .set(\.sent, to: false), .set(\.idempotencyKey, to: SyncBookkeeping.newIdempotencyKey()))
                self.outboxChanged()
            }
            state.withLock { $0.lastError = text }
            logger.notice("the server refused an outbox entry; it is parked", metadata: [
                "sequence": "\(entry.sequence)", "model": "\(entry.model)", "status": "\(status ?? 0)"])
            return true
        case 401?, 403?:
            state.withLock { state in
                state.pausedStatus = status
                state.lastError = text
            }
            logger.notice("the server refused the credentials; the outbox is paused until resume()", metadata: ["status": "\(status ?? 0)"])
            throw SyncError.paused(status: status ?? 401)
        default:
            _ = try await database.write { db in
                try OutboxRecord.where(\.id == entry.id).updateAll(db, .set(\.attempts) { $0.attempts + 1 }, .set(\.lastError, to: text))
            }
            state.withLock { $0.lastError = text }
            return false
        }
    }

    /// What sending an entry came to.
    enum SendOutcome: Sendable {
        /// The server applied it; the entry is gone.
        case acknowledged
        /// The server's record had changed (412) or gone (404): the policy rewrote the entry.
        case conflictResolved
    }

    /// Sends one entry in a request of its own.
    func sendAlone(_ entry: OutboxRecord) async -> Result<SendOutcome, any Error> {
        do {
            guard let type = state.withLock({ $0.models[entry.model] }) else { throw SyncError.unknownModel(entry.model) }
            return .success(try await send(type, entry))
        } catch {
            return .failure(error)
        }
    }

    private func send<M: SyncedModel>(_ type: M.Type, _ entry: OutboxRecord) async throws -> SendOutcome {
        let (request, options) = try await request(M.self, for: entry)
        let answer: Result<WriteAnswer, any Error>
        do {
            answer = .success(try WriteAnswer(try await remote.send(request, options: options), M.self))
        } catch {
            answer = .failure(error)
        }
        return try await handle(M.self, entry, answer)
    }

    /// The request that carries an entry.
    func request<M: SyncedModel>(_ type: M.Type, for entry: OutboxRecord) async throws -> (RemoteRequest, RequestOptions) {
        let key = try SyncKey(M.self)
        var headers = Self.protocolHeaders
        switch entry.operation {
        case .create:
            var body = entry.body
            if entry.temporaryKey { body[key.path] = nil }
            headers[SyncProtocol.idempotencyKeyHeader] = entry.idempotencyKey ?? "modelsync-\(entry.sequence)"
            // Safe to resend: the key makes the server answer a repeat with the first response.
            return (RemoteRequest(method: .post, url: try await remote.resourceURL(for: M.self), body: Self.wrapped(body, M.self)),
                    RequestOptions(headers: headers, isIdempotent: true))
        case .update, .delete:
            guard let id = SyncKey.urlSegment(entry.localKey) else { throw SyncError.unsupportedKey(model: key.model) }
            if let version = entry.serverVersion { headers["If-Match"] = version }
            headers[SyncProtocol.idempotencyKeyHeader] = entry.idempotencyKey ?? "modelsync-\(entry.sequence)"
            let url = try await remote.resourceURL(for: M.self, id: id)
            let request = entry.operation == .update
                ? RemoteRequest(method: .patch, url: url, body: Self.wrapped(entry.body, M.self)) : RemoteRequest(method: .delete, url: url)
            // Safe to resend: a server that keeps keys answers a repeat with the first answer,
            // and a stale `If-Match` is refused rather than applied twice.
            return (request, RequestOptions(headers: headers, isIdempotent: true))
        }
    }

    /// Applies the server's answer to an entry (or rethrows its failure, for the caller's
    /// failure handling): an acknowledgement, or a conflict resolved by the policy.
    func handle<M: SyncedModel>(_ type: M.Type, _ entry: OutboxRecord, _ answer: Result<WriteAnswer, any Error>) async throws -> SendOutcome {
        let key = try SyncKey(M.self)
        let response: WriteAnswer?
        do {
            response = try answer.get()
        } catch let error as RemoteError where entry.operation != .create && (error.status == 412 || (error.status == 404 && entry.operation == .update))
                    || (entry.operation == .create && !entry.temporaryKey && error.status == 409) {
            // The record changed or went since the change was based on it; or a create under
            // the row's own key (a policy's creating again of a deleted record) met a record
            // another client created again meanwhile.
            guard let id = SyncKey.urlSegment(entry.localKey) else { throw SyncError.unsupportedKey(model: key.model) }
            let current = try await currentRecord(M.self, after: error, id: id)
            let (outcome, conflict) = try await database.write { db in
                try self.rebase(M.self, key: key, entry.localKey, server: current.record, version: current.version, sending: entry.sequence, db)
            }
            outcome.apply(to: identityMap)
            report(conflict.map { [$0] } ?? [])
            return .conflictResolved
        } catch let error as RemoteError where entry.operation == .delete && (error.status == 404 || error.status == 410) {
            response = nil  // Already gone: what the delete asked for.
        }
        var current: CurrentRecord?
        if let response, response.replayed {
            // Applied by an earlier attempt whose answer was lost: the record may have changed
            // since (a deleted one created again by another client's policy), and a pull may
            // have skipped that change while the entry's outcome was unknown. Its current state
            // settles the row.
            let id = entry.operation == .create ? response.record?[key.path].flatMap(SyncKey.urlSegment) : SyncKey.urlSegment(entry.localKey)
            if let id { current = try await fetchCurrent(M.self, id: id) }
        }
        try await apply([try acknowledgement(M.self, entry, response, current: current)])
        return .acknowledged
    }

    /// The headers of every sync request: the protocol version.
    static var protocolHeaders: HeaderFields {
        var headers = HeaderFields()
        headers[SyncProtocol.versionHeader] = String(SyncProtocol.version)
        return headers
    }

    /// An acknowledgement ready to apply: its database part runs in a transaction (its own, or
    /// one for a whole batch), and returns the identity-map part, run after the commit.
    struct Acknowledgement: Sendable {
        let write: @Sendable (SQLiteConnection) throws -> @Sendable () -> Void
    }

    /// Applies acknowledgements in one transaction, then their identity-map parts.
    func apply(_ acknowledgements: [Acknowledgement]) async throws {
        let followUps = try await database.write { db in try acknowledgements.map { try $0.write(db) } }
        for followUp in followUps { followUp() }
    }

    /// The acknowledgement of an entry the server applied (`response` nil: a delete of a
    /// record already gone). `current` is the record as it is now, when the answer was a replay:
    /// if it moved since, the row is rebased on it, as a pull would.
    func acknowledgement<M: SyncedModel>(
        _ type: M.Type, _ entry: OutboxRecord, _ response: WriteAnswer?, current: CurrentRecord? = nil
    ) throws -> Acknowledgement {
        let key = try SyncKey(M.self)
        let identityMap = identityMap
        switch entry.operation {
        case .create:
            guard let response else { throw SyncError.corruptEntry(sequence: entry.sequence, reason: "a create without an answer") }
            var server = entry.body
            if entry.temporaryKey { server[key.path] = nil }
            if case .object(let fields)? = response.record {
                for (name, value) in fields { server[name] = value }
            } else if let location = response.location, let last = location.split(separator: "/").last {
                server[key.path] = Int(last).map { .number(JSONNumber($0)) } ?? .string(String(last))
            }
            guard let serverKey = server[key.path], serverKey != .null else {
                throw SyncError.corruptEntry(sequence: entry.sequence, reason: "the server's answer to the create has no key")
            }
            let value = try remote.options.decoder.decode(M.self, from: server.jsonBytes())
            let serverVersion = version(M.self, etag: response.etag, record: server)
            return Acknowledgement { db in
                let (stored, children) = try self.acknowledgeCreate(entry, key: key, serverKey: serverKey, value, version: serverVersion, db)
                let moved = try self.rebaseIfMoved(M.self, key: key, serverKey, since: serverVersion, current, db)
                let created = self.afterCreate(entry, stored: stored, children: children)
                return {
                    created()
                    moved()
                }
            }
        case .update, .delete:
            let record = response?.record
            let value = try record.map { try remote.options.decoder.decode(M.self, from: $0.jsonBytes()) }
            let serverVersion = entry.operation == .delete ? nil : version(M.self, etag: response?.etag, record: record)
            return Acknowledgement { db in
                let stored = try self.acknowledge(entry, key: key, value, version: serverVersion, db)
                let moved = try self.rebaseIfMoved(M.self, key: key, entry.localKey, since: serverVersion, current, db)
                return {
                    if let stored { identityMap.store(stored) }
                    moved()
                }
            }
        }
    }

    /// After a replayed acknowledgement: rebases the row on the record as it is now when its
    /// version moved past the replayed one (another writer changed or deleted it meanwhile, or,
    /// after a delete, created it again).
    /// Returns what to do after the commit.
    private func rebaseIfMoved<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, _ keyValue: JSONValue, since version: String?, _ current: CurrentRecord?, _ db: SQLiteConnection
    ) throws -> @Sendable () -> Void {
        guard let current, current.record == nil || current.version != version else { return {} }
        let (outcome, conflict) = try rebase(M.self, key: key, keyValue, server: current.record, version: current.version, db)
        let identityMap = identityMap
        return {
            outcome.apply(to: identityMap)
            self.report(conflict.map { [$0] } ?? [])
        }
    }

    /// Applies an acknowledged create: the temporary key becomes the server's everywhere, the
    /// server's fields go into the row unless newer local changes wait, the entry goes.
    /// Returns the stored value and the local rows whose foreign keys were rewritten.
    func acknowledgeCreate<M: SyncedModel>(
        _ entry: OutboxRecord, key: SyncKey, serverKey: JSONValue, _ value: M, version: String?, _ db: SQLiteConnection
    ) throws -> (M?, [any SyncedModel]) {
        var children: [any SyncedModel] = []
        if entry.temporaryKey && serverKey != entry.localKey {
            children = try rewriteKey(M.self, key: key, from: entry.localKey, to: serverKey, acknowledged: entry.sequence, db)
        }
        var rewritten = entry
        rewritten.localKey = serverKey
        return (try acknowledge(rewritten, key: key, value, version: version, db), children)
    }

    /// The identity-map part of an acknowledged create, to run after the commit: the temporary
    /// key goes, the stored value and the rewritten children come in.
    func afterCreate<M: SyncedModel>(_ entry: OutboxRecord, stored: M?, children: [any SyncedModel]) -> @Sendable () -> Void {
        let identityMap = identityMap
        return {
            if entry.temporaryKey, let key = entry.localKey.identityKey(of: M.self) { identityMap.remove(M.self, key: key) }
            if let stored { identityMap.store(stored) }
            // A child whose parent's temporary key was rewritten must not keep the old key in memory.
            for child in children { identityMap.storeIfHeld(child) }
        }
    }

    /// Deletes the entry, records the row's new server version (later entries of the row are
    /// now based on it) and, when no later change of the row waits and the row still exists,
    /// stores the server's value. Returns the stored value.
    private func acknowledge<M: SyncedModel>(_ entry: OutboxRecord, key: SyncKey, _ value: M?, version: String?, _ db: SQLiteConnection) throws -> M? {
        try entry.delete(db)
        try SyncBookkeeping.setVersion(version, model: key.model, entry.localKey, db)
        let rebased = try SyncBookkeeping.setServerVersion(version, model: key.model, entry.localKey, db)
        if rebased > 0 { outboxChanged() }
        // Stored only when no later change of the row waits (each would have been rebased above).
        guard let value, rebased == 0, try M.find(key: [entry.localKey.primaryKeySQLValue(model: key.model)], db) != nil else { return nil }
        try value.upsert(db, validate: false)
        return value
    }

    /// Rewrites a temporary key in one transaction: the row, the entries naming it, the
    /// foreign keys of local rows pointing at it (the models' `BelongsTo` relations). Returns
    /// the rewritten child rows.
    ///
    /// Idempotent: when a pull stored the server's record under its real key while the create's
    /// answer was lost (a server whose feed does not name the create's key), that copy takes the
    /// local row's values (which hold any later local changes), and the temporary row goes once
    /// nothing points at it. An update, not a delete, so that no `ON DELETE` action reaches the
    /// copy's children.
    private func rewriteKey<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, from temporary: JSONValue, to server: JSONValue, acknowledged: Int64, _ db: SQLiteConnection
    ) throws -> [any SyncedModel] {
        let old = try temporary.primaryKeySQLValue(model: key.model)
        let new = try server.primaryKeySQLValue(model: key.model)
        // Children still point at the temporary key until they are rewritten below.
        try SyncBookkeeping.deferForeignKeys(db)
        let (table, keyColumn) = (quoteIdentifier(key.table), quoteIdentifier(key.column))
        let copyPulled = try db.scalar("SELECT 1 FROM \(table) WHERE \(keyColumn) = ?", [new]) != nil
        if copyPulled {
            let columns = M.schema.fields.map(\.column).filter { $0 != key.column }.map(quoteIdentifier).joined(separator: ", ")
            if !columns.isEmpty {
                try db.execute("UPDATE \(table) SET (\(columns)) = (SELECT \(columns) FROM \(table) WHERE \(keyColumn) = ?) WHERE \(keyColumn) = ?", [old, new])
            }
        } else {
            try db.execute("UPDATE \(table) SET \(keyColumn) = ? WHERE \(keyColumn) = ?", [new, old])
        }
        // The row's later entries (the acknowledged one is deleted next).
        let later = try SyncBookkeeping.entries(model: key.model, temporary, db).filter { $0.sequence != acknowledged }
        for var entry in later {
            if entry.body[key.path] != nil { entry.body[key.path] = server }
            // The base is compared with the server's record: it names the real key too.
            if entry.baseValues?[key.path] != nil { entry.baseValues?[key.path] = server }
            entry.localKey = server
            entry.temporaryKey = false
            try entry.update(db, only: [\.body, \.baseValues, \.localKey, \.temporaryKey], validate: false)
        }
        if !later.isEmpty { outboxChanged() }
        try KeyRewrite(model: key.model, temporaryKey: temporary, serverKey: server).upsert(db, validate: false)
        logger.debug("temporary key replaced by the server's", metadata: ["model": "\(key.model)", "temporary": "\(temporary.jsonText)", "server": "\(server.jsonText)"])
        var children: [any SyncedModel] = []
        for child in state.withLock({ Array($0.models.values) }) {
            children += try rewriteForeignKeys(child, parent: M.self, from: temporary, to: server, db)
        }
        if copyPulled { try db.execute("DELETE FROM \(table) WHERE \(keyColumn) = ?", [old]) }
        return children
    }

    private func rewriteForeignKeys<Child: SyncedModel, Parent: SyncedModel>(
        _ child: Child.Type, parent: Parent.Type, from temporary: JSONValue, to server: JSONValue, _ db: SQLiteConnection
    ) throws -> [Child] {
        var rewritten: [Child] = []
        for relation in Child.relations {
            guard let belongsTo = relation as? BelongsTo<Child, Parent>, belongsTo.parentKey == nil,
                  let field = Child.schema.field(named: belongsTo.foreignKey) else { continue }
            let column = quoteIdentifier(field.column)
            let (old, new) = (try temporary.primaryKeySQLValue(model: Parent.schema.name), try server.primaryKeySQLValue(model: Parent.schema.name))
            try db.execute("UPDATE \(quoteIdentifier(Child.schema.table)) SET \(column) = ? WHERE \(column) = ?", [new, old])
            if db.changes > 0 { rewritten += try Child.all(db, where: "\(column) = ?", [new]) }
            let path = JSONPath(parsing: field.jsonKey)
            // Only entries whose body holds the temporary key.
            for var entry in try SyncBookkeeping.entries(model: Child.schema.name, holding: old, at: path, db) where entry.body[path] == temporary {
                entry.body[path] = server
                try entry.saveRequest(db)
                outboxChanged()
            }
        }
        return rewritten
    }

    static func wrapped<M: SyncedModel>(_ body: JSONValue, _ type: M.Type) -> [UInt8] {
        var document = JSONValue.null
        document[M.remote.itemKey] = body
        return document.jsonBytes()
    }

    /// The record in a response body, or nil for an empty one.
    static func answer<M: SyncedModel>(_ response: RemoteResponse, _ type: M.Type) throws -> JSONValue? {
        guard !response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else { return nil }
        return try JSONValue(parsing: response.body)[M.remote.itemKey]
    }

    // MARK: Parked entries, pausing

    /// Sends a parked entry again (after the app fixed the row with ``save(_:)``, which updates
    /// the parked entry).
    public func retry(_ entry: OutboxEntry) async throws {
        try await database.write { db in
            let changed = try OutboxRecord.where(\.id == entry.sequence).updateAll(db, .set(\.state, to: .pending), .set(\.fieldErrors, to: nil))
            if changed == 0 { throw SyncError.noSuchEntry(entry.sequence) }
            self.outboxChanged()
        }
        changed()
    }

    /// Drops a parked entry and the row's later ones, and puts the row back as the server has
    /// it: a refused create's row is deleted; otherwise the server's record is fetched (and the
    /// row deleted when the server has none).
    ///
    /// - Throws: ``SyncError/noSuchEntry(_:)``; a ``/ModelSyncRemote/RemoteError`` when the
    ///   server's record cannot be read (nothing is changed then).
    public func discard(_ entry: OutboxEntry) async throws {
        guard let type = state.withLock({ $0.models[entry.model] }) else { throw SyncError.unknownModel(entry.model) }
        try await discard(type, entry)
        changed()
    }

    private func discard<M: SyncedModel>(_ type: M.Type, _ entry: OutboxEntry) async throws {
        let key = try SyncKey(M.self)
        var serverValue: M?
        if entry.operation != .create {
            guard let id = SyncKey.urlSegment(entry.localKey) else { throw SyncError.unsupportedKey(model: key.model) }
            do {
                serverValue = try await remote.fetch(M.self, id: id)
            } catch let error as RemoteError where error.status == 404 || error.status == 410 {
                serverValue = nil
            }
        }
        let restored = serverValue
        try await database.write { db in
            let rows = try SyncBookkeeping.entries(model: key.model, entry.localKey, db).filter { $0.sequence >= entry.sequence }
            guard rows.first?.sequence == entry.sequence else { throw SyncError.noSuchEntry(entry.sequence) }
            for row in rows { try row.delete(db) }
            self.outboxChanged()
            if let restored {
                try restored.upsert(db, validate: false)
            } else if let local = try M.find(key: [entry.localKey.primaryKeySQLValue(model: key.model)], db) {
                try local.delete(db)
            }
        }
        if let restored { identityMap.store(restored) } else if let key = entry.localKey.identityKey(of: M.self) { identityMap.remove(M.self, key: key) }
    }

    /// Restarts a queue paused by a 401 / 403, for example after refreshing a token.
    public func resume() {
        state.withLock { $0.pausedStatus = nil }
        changed()
    }

    // MARK: Automatic replay

    /// Starts pushing in the background: after every local change, and after a failure again
    /// with ``backoff`` until the queue is empty or paused. Calling it again does nothing.
    public func startAutomaticPush() {
        state.withLock { state in
            guard state.automaticPush == nil else { return }
            state.automaticPush = Task { [weak self] in
                guard let wakeUps = self?.wakeUps else { return }
                for await _ in wakeUps {
                    guard let self else { return }
                    await self.pushWithBackoff()
                }
            }
        }
        wake.yield()
    }

    /// Stops the background pushing started by ``startAutomaticPush()``.
    public func stopAutomaticPush() {
        state.withLock { state in
            state.automaticPush?.cancel()
            state.automaticPush = nil
        }
    }

    private func pushWithBackoff() async {
        var delay = backoff.initial
        while !Task.isCancelled {
            do {
                try await push()
                return
            } catch SyncError.paused {
                return
            } catch {
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, backoff.maximum)
            }
        }
    }
}

/// The server's answer to a write that succeeded, as sync reads it: from a response of its own,
/// or from a batch's result as it is (no response is made up for it).
struct WriteAnswer: Sendable {
    /// The record the answer carries (inside the model's item envelope), nil for none.
    var record: JSONValue?
    var etag: String?
    var location: String?
    /// Whether it is the replay of a write applied before (`Idempotent-Replayed`).
    var replayed: Bool

    init<M: SyncedModel>(_ response: RemoteResponse, _ type: M.Type) throws {
        record = try SyncStore.answer(response, M.self)
        etag = response.headers["ETag"]
        location = response.headers["Location"]
        replayed = response.headers[SyncProtocol.replayedHeader]?.lowercased() == "true"
    }

    init<M: SyncedModel>(_ result: SyncBatchResult, _ type: M.Type) {
        let record = result.body[M.remote.itemKey]
        self.record = record == .null ? nil : record
        etag = result.etag
        location = nil
        replayed = result.replayed
    }
}
