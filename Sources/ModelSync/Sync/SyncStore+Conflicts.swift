import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncRemote
import ModelSyncSQLite

/// How one model type syncs: its conflict policy and where its versions come from.
struct SyncModelConfiguration: Sendable {
    var resolve: @Sendable (_ base: JSONValue?, _ local: JSONValue?, _ server: JSONValue?, _ codec: SyncCodec) throws -> JSONValue?
    var version: VersionSource
}

/// What applying the server's record did to a local row, for the identity map (updated after
/// the transaction commits).
enum RowOutcome<M: SyncedModel> {
    case stored(M)
    case removed(JSONValue)
    case unchanged

    /// Brings the identity map in line with the row: a stored row replaces only a value the map
    /// holds (or someone observes), so that a pull of many rows leaves the app's working set in
    /// memory.
    func apply(to identityMap: IdentityMap) {
        switch self {
        case .stored(let model): identityMap.storeIfHeld(model)
        case .removed(let key): if let key = key.identityKey(of: M.self) { identityMap.remove(M.self, key: key) }
        case .unchanged: break
        }
    }
}

extension SyncStore {
    /// Sets how `type` resolves conflicts, where its server versions come from, and how a full
    /// reconcile pages through a server without a change feed (nil: one request for the whole
    /// list). Types not configured use ``ConflictPolicy/merge(_:)``, ``VersionSource/etag`` and
    /// one request.
    public func configure<M: SyncedModel>(
        _ type: M.Type, conflicts: ConflictPolicy<M> = .merge(), version: VersionSource = .etag, pagination: Pagination? = nil
    ) {
        register(M.self)
        state.withLock { state in
            state.configurations[M.schema.name] = SyncModelConfiguration(resolve: conflicts.resolve, version: version)
            state.paginations[M.schema.name] = pagination
        }
    }

    func configuration<M: SyncedModel>(for type: M.Type) -> SyncModelConfiguration {
        state.withLock { $0.configurations[M.schema.name] }
            ?? SyncModelConfiguration(resolve: ConflictPolicy<M>.merge().resolve, version: .etag)
    }

    var codec: SyncCodec { SyncCodec(encoder: remote.options.encoder, decoder: remote.options.decoder) }

    /// The server version a response (and the record it carries) gives a row.
    func version<M: SyncedModel>(_ type: M.Type, etag: String?, record: JSONValue?) -> String? {
        switch configuration(for: M.self).version {
        case .etag:
            return etag
        case .field(let name):
            guard let value = record?[JSONPath(parsing: name)], value != .null else { return nil }
            return "\"" + (value.stringValue ?? value.jsonText) + "\""
        }
    }

    /// Makes the server's record (nil: deleted on the server) the row's state, rebasing the
    /// row's pending changes on it. `decoded` is the record as a model, when the caller has it.
    ///
    /// - No pending change: the row becomes the server's record (or is deleted).
    /// - Pending changes based on this very record: only the version moves.
    /// - Otherwise the server changed the record under the local changes: the model's
    ///   ``ConflictPolicy`` decides from the base, the local row and the server's record, the
    ///   row becomes the resolution, and the row's entries become the one request that takes
    ///   the server's record to it (none when they agree), conditional on the new version.
    func rebase<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, _ keyValue: JSONValue, server rawServer: JSONValue?, version: String?,
        sending: Int64? = nil, pendingKeys: Set<String>? = nil, storedVersions: [String: String]? = nil, skipsUnchanged: Bool = true,
        decoded: M? = nil, _ db: SQLiteConnection
    ) throws -> (RowOutcome<M>, SyncConflict?) {
        let codec = self.codec
        if let pendingKeys, !pendingKeys.contains(keyValue.jsonText) {
            // No pending change (the caller read which rows have one): the record is the row.
            let stored = try storedVersions.map { $0[keyValue.jsonText] } ?? SyncBookkeeping.version(model: key.model, keyValue, db)
            // The echo of this client's own write: nothing to decode.
            if let version, rawServer != nil, stored == version { return (.unchanged, nil) }
            let serverModel = try rawServer == nil ? nil : decoded ?? codec.decode(M.self, rawServer)
            return (try storeFromServer(key: key, keyValue, serverModel, version: version, storedVersion: stored, skipsUnchanged: skipsUnchanged, db), nil)
        }
        if sending == nil, try SyncBookkeeping.hasSentEntry(model: key.model, keyValue, db) {
            // A change of the row was sent and its outcome is unknown: the push settles the row
            // when it learns the outcome (a replay's acknowledgement reads the record as it is then).
            return (.unchanged, nil)
        }
        // Through the model and back, so that it compares with local values field by field.
        let serverModel = try codec.decode(M.self, rawServer)
        let server = try serverModel.map(codec.encode)
        let localModel = try M.find(key: [keyValue.primaryKeySQLValue(model: key.model)], db)
        let local = try localModel.map(codec.encode)
        let open = try openEntries(key, keyValue, db, including: sending)
        try SyncBookkeeping.setVersion(server == nil ? nil : version, model: key.model, keyValue, db)
        guard var entry = open.first else {
            if server == local { return (.unchanged, nil) }
            if let serverModel {
                try serverModel.upsert(db, validate: false)
                return (.stored(serverModel), nil)
            }
            return (try deleteRow(key, keyValue, exists: localModel != nil, db), nil)
        }
        if server == entry.baseValues {
            // Nothing moved under the local changes (a pending create meets no record either).
            try SyncBookkeeping.setServerVersion(version, model: key.model, keyValue, db)
            return (.unchanged, nil)
        }
        let resolved = try configuration(for: M.self).resolve(entry.baseValues, local, server, codec)
        let conflict = SyncConflict(model: key.model, key: keyValue, base: entry.baseValues, local: local, server: server, resolved: resolved)
        for later in open.dropFirst() { try later.delete(db) }
        entry.baseValues = server
        entry.serverVersion = server == nil ? nil : version
        let outcome: RowOutcome<M>
        switch (resolved, server) {
        case (let resolved?, let server?):
            guard let model = try codec.decode(M.self, resolved) else { return (.unchanged, conflict) }
            try model.upsert(db, validate: false)
            outcome = .stored(model)
            let fields = Set(resolved.objectValue?.keys ?? []).union(server.objectValue?.keys ?? []).filter { resolved[$0] != server[$0] }.sorted()
            if fields.isEmpty {
                try entry.delete(db)
            } else {
                var body = JSONValue.object(JSONObject())
                for field in fields { body[field] = resolved[field] ?? .null }
                (entry.operation, entry.body, entry.changedFields) = (.update, body, fields)
                try entry.rewrite(db)
            }
        case (let resolved?, nil):
            // Kept locally, gone on the server: created again, under the same key.
            guard let model = try codec.decode(M.self, resolved) else { return (.unchanged, conflict) }
            try model.upsert(db, validate: false)
            outcome = .stored(model)
            (entry.operation, entry.body, entry.changedFields) = (.create, resolved, resolved.objectValue?.keys ?? [])
            entry.temporaryKey = false
            try entry.rewrite(db)
        case (nil, .some):
            outcome = try deleteRow(key, keyValue, exists: localModel != nil, db)
            (entry.operation, entry.body, entry.changedFields) = (.delete, .object(JSONObject()), [])
            try entry.rewrite(db)
        case (nil, nil):
            outcome = try deleteRow(key, keyValue, exists: localModel != nil, db)
            try entry.delete(db)
        }
        return (outcome, conflict)
    }

    /// Makes a row without pending local changes the server's: `server` stored (nil: the row
    /// deleted) and its version recorded, unless the row has that version already (the echo of
    /// this client's own write) or, with `skipsUnchanged`, holds the same values.
    func storeFromServer<M: SyncedModel>(
        key: SyncKey, _ keyValue: JSONValue, _ server: M?, version: String?, storedVersion: String?, skipsUnchanged: Bool, _ db: SQLiteConnection
    ) throws -> RowOutcome<M> {
        if let version, server != nil, storedVersion == version { return .unchanged }
        try SyncBookkeeping.setVersion(server == nil ? nil : version, model: key.model, keyValue, db)
        guard let server else { return try deleteRow(key, keyValue, exists: nil, db) }
        if skipsUnchanged, let local = try M.find(key: [keyValue.primaryKeySQLValue(model: key.model)], db),
           try codec.encode(local) == codec.encode(server) {
            return .unchanged
        }
        try server.upsert(db, validate: false)
        return .stored(server)
    }

    /// Deletes a row the server no longer has. Foreign keys are checked at commit, so that a
    /// pull may delete a parent before the children it also deletes.
    /// `exists` nil: not known, the delete tells.
    private func deleteRow<M: SyncedModel>(_ key: SyncKey, _ keyValue: JSONValue, exists: Bool?, _ db: SQLiteConnection) throws -> RowOutcome<M> {
        guard exists != false else { return .unchanged }
        try SyncBookkeeping.deferForeignKeys(db)
        try db.execute("DELETE FROM \(quoteIdentifier(key.table)) WHERE \(quoteIdentifier(key.column)) = ?",
                       [keyValue.primaryKeySQLValue(model: key.model)])
        return db.changes > 0 ? .removed(keyValue) : .unchanged
    }

    /// The keys (as JSON text) of `key`'s rows that have outbox entries.
    func pendingKeys(_ key: SyncKey, _ db: SQLiteConnection) throws -> Set<String> {
        try SyncBookkeeping.keysWithEntries(model: key.model, db)
    }

    /// Tells the status observers and the log about a resolved conflict.
    func report(_ conflicts: [SyncConflict]) {
        guard !conflicts.isEmpty else { return }
        state.withLock { state in
            state.conflictCount += conflicts.count
            state.recentConflicts = Array((state.recentConflicts + conflicts).suffix(SyncStatus.recentConflictLimit))
        }
        for conflict in conflicts {
            logger.info("conflict resolved", metadata: [
                "model": "\(conflict.model)", "key": "\(conflict.key.jsonText)",
                "kept": "\(conflict.resolved.map(\.jsonText) ?? "deleted")"])
        }
        changed()
    }

    /// The server's current record after a 412 or a 404: the 412's `current` member when the
    /// server sends one (modelsync-server does), else a GET of the item; nil when it is gone.
    func currentRecord<M: SyncedModel>(_ type: M.Type, after error: RemoteError, id: String) async throws -> CurrentRecord {
        if let failure = error.statusError {
            if failure.status == 404 || failure.status == 410 { return CurrentRecord(record: nil, version: nil) }
            if let body = try? JSONValue(parsing: failure.response.body), let current = body["current"], current != .null {
                return CurrentRecord(record: current, version: version(M.self, etag: failure.response.headers["ETag"], record: current))
            }
        }
        return try await fetchCurrent(M.self, id: id)
    }

    /// The server's record now (a GET of the item); a nil record when it is gone.
    func fetchCurrent<M: SyncedModel>(_ type: M.Type, id: String) async throws -> CurrentRecord {
        do {
            let response = try await remote.send(RemoteRequest(method: .get, url: try await remote.resourceURL(for: M.self, id: id)))
            let record = try Self.answer(response, M.self)
            return CurrentRecord(record: record, version: version(M.self, etag: response.headers["ETag"], record: record))
        } catch let error as RemoteError where error.status == 404 || error.status == 410 {
            return CurrentRecord(record: nil, version: nil)
        }
    }
}

/// A record as the server holds it now: nil when it is gone.
struct CurrentRecord: Sendable {
    var record: JSONValue?
    var version: String?
}
