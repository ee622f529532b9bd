import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    // MARK: Acknowledgements

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
