import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    // MARK: Failures: parked entries, pausing

    /// Records a failure; returns true when the entry was parked and the push may go on.
    func handleFailure(_ error: any Error, of entry: OutboxRecord) async throws -> Bool {
        let text = "\(error)"
        let status = (error as? RemoteError)?.status
        if let failure = (error as? RemoteError)?.statusError, failure.status == 400,
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
        // 403: signed in, but the rules refuse this row (a role lowered, a board left): this
        // entry waits for the app, and the others go on.
        case 400?, 403?, 422?:
            var errors = JSONValue.object(JSONObject())
            if let failure = (error as? RemoteError)?.statusError {
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
        case 401?:
            let resumedSince = state.withLock { state -> Bool in
                state.lastError = text
                // The session refreshed while the request was on its way: the 401 answers the
                // old token. The entry stays queued and goes again with the new one.
                guard state.resumptions == state.resumptionsAtPush else { return true }
                state.pausedStatus = status
                return false
            }
            if resumedSince { throw SyncError.willRetry(sequence: entry.sequence, underlying: text) }
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
        // The record as the server holds it now, with its version (its ETag).
        var current = CurrentRecord(record: nil, version: nil)
        if entry.operation != .create {
            guard let id = SyncKey.urlSegment(entry.localKey) else { throw SyncError.unsupportedKey(model: key.model) }
            current = try await fetchCurrent(M.self, id: id)
        }
        let (restored, version) = (try codec.decode(M.self, current.record), current.version)
        try await database.write { db in
            let rows = try SyncBookkeeping.entries(model: key.model, entry.localKey, db).filter { $0.sequence >= entry.sequence }
            guard rows.first?.sequence == entry.sequence else { throw SyncError.noSuchEntry(entry.sequence) }
            for row in rows { try row.delete(db) }
            self.outboxChanged()
            // The row is the server's now, at the version it answered: the next save is
            // conditional on it. None for a row the server no longer shows (a version kept from
            // before would take the row moved back in at that very version for an echo).
            try SyncBookkeeping.setVersion(restored == nil ? nil : version, model: key.model, entry.localKey, db)
            if let restored {
                try restored.upsert(db, validate: false)
            } else if let local = try M.find(key: [entry.localKey.primaryKeySQLValue(model: key.model)], db) {
                try local.delete(db)
            }
        }
        if let restored { identityMap.store(restored) } else if let key = entry.localKey.identityKey(of: M.self) { identityMap.remove(M.self, key: key) }
        // A restored row that no subscription holds goes at the next subscription's pull.
        state.withLock { _ = $0.sweptModels.remove(key.model) }
    }

    /// Restarts a queue paused by a 401, for example after refreshing a token.
    public func resume() {
        state.withLock { state in
            state.pausedStatus = nil
            state.resumptions += 1
        }
        changed()
    }
}
