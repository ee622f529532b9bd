import Foundation
import ModelSyncJSON
import ModelSyncServer
import PostgresNIO

extension PostgresBackend {
    /// The sequence and horizon of a write transaction, from the locked state row.
    struct WriteState {
        var sequence: Int
        var horizon: Int
        let start: Int

        mutating func next() -> Int {
            sequence += 1
            return sequence
        }
    }

    /// Runs `body` in a transaction that first locks the state row: writes from every server
    /// sharing the database go one at a time, in sequence order. When `body` changed anything,
    /// the state is saved and the other servers are told (`NOTIFY`, sent on commit).
    ///
    /// Under access rules the lock's statement also names `caller` for row-level security (each
    /// operation names its own again, see ``apply(_:_:_:now:)``), at no extra round trip: the
    /// settings take effect from the next statement on.
    func writing<T: Sendable>(
        as caller: Caller = .anonymous, system: Bool = false, _ body: (PostgresConnection, inout WriteState) async throws -> (T, changed: Bool)
    ) async throws -> T {
        do {
            return try await client.guardedTransaction(logger: logger) { connection in
                var lock = BoundSQL("SELECT sequence, horizon")
                if rowSecurity != nil {
                    lock.append(", set_config('modelsync.user_id', \(lock.bind(caller.userID ?? "")), true), set_config('modelsync.role', \(lock.bind(caller.role ?? "")), true)")
                    lock.append(", set_config('modelsync.system', \(lock.bind(system ? "on" : "")), true)")
                    if let role = rowSecurity?.role { lock.append(", set_config('role', \(lock.bind(role)), true)") }
                }
                lock.append(" FROM \(schema.state) FOR UPDATE")
                guard let (sequence, horizon) = try await connection.guardedFirst(lock.query, as: (Int64, Int64).self, logger: logger) else { throw ServerError.database("the state row of \(schema.name) is missing") }
                var state = WriteState(sequence: Int(sequence), horizon: Int(horizon), start: Int(sequence))
                let (result, changed) = try await body(connection, &state)
                if changed {
                    // One statement saves the state and, when records changed, notifies.
                    var save = BoundSQL("WITH saved AS (UPDATE \(schema.state) SET sequence = ")
                    save.append("\(save.bind(state.sequence)), horizon = \(save.bind(state.horizon)), ")
                    // Second precision, as `Last-Modified`: a write must still move it forward.
                    save.append("modified = \(Self.nextModified) RETURNING sequence) ")
                    save.append("SELECT pg_notify(\(save.bind(schema.channel)), sequence::text) FROM saved WHERE \(save.bind(state.sequence > state.start))")
                    try await connection.guardedRun(save.query, logger: logger)
                }
                return result
            }
        } catch {
            throw Self.serverError(error)
        }
    }

    func write(_ operations: [ItemOperation]) async throws -> [Result<ItemWrite.Result, APIError>] {
        if operations.count == 1, let operation = operations.first {
            switch await groupCommit.submit(operation, commit: commitGroup) {
            case .success(let result): return [.success(result)]
            case .failure(let error as APIError): return [.failure(error)]
            case .failure(let error): throw error
            }
        }
        let now = Date()
        return try await writing { connection, state in
            var results: [Result<ItemWrite.Result, APIError>] = []
            for (index, operation) in operations.enumerated() {
                // Each operation in a savepoint: one that fails leaves nothing behind.
                let savepoint = "operation_\(index)"
                try await connection.guardedRun(PostgresQuery(unsafeSQL: "SAVEPOINT \(savepoint)"), logger: logger)
                let before = state
                do {
                    results.append(.success(try await apply(operation, connection, &state, now: now)))
                    try await connection.guardedRun(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(savepoint)"), logger: logger)
                } catch {
                    state = before
                    try await connection.guardedRun(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(savepoint)"), logger: logger)
                    results.append(.failure(error as? APIError ?? APIError(status: 500, message: "\(Self.serverError(error))")))
                }
            }
            let changed = results.contains { if case .success(let result) = $0 { !result.replayed } else { false } }
            return (results, changed)
        }
    }

    /// Commits single writes that queued together (see ``GroupCommit``), in order, an outcome
    /// for each: in two statements when the writes are independent creates and updates
    /// (``writeTogether(_:)``), otherwise one by one in one transaction, where a write refused (a
    /// 404, a 412) changes nothing and the others go on. Should PostgreSQL refuse the group as a
    /// whole, each write is tried again alone, so it fails alone; should the connection fail
    /// while committing, every write of the group fails, since it may have been saved.
    func commitGroup(_ operations: [ItemOperation]) async -> [GroupCommit.Outcome] {
        do {
            // Under access rules each write runs as its own caller: one by one in the group's
            // transaction, each naming its caller (the one-statement ways write as one).
            if rowSecurity == nil, let outcomes = try await writeTogether(operations) { return outcomes }
            if operations.count > 1 { return try await applyInTurn(operations) }
        } catch let error as ServerError where error == Self.commitOutcomeUnknown {
            return operations.map { _ in .failure(error) }
        } catch {
            // Refused, so nothing was committed: one by one below.
        }
        var outcomes: [GroupCommit.Outcome] = []
        for operation in operations {
            do {
                outcomes.append(contentsOf: try await applyInTurn([operation]))
            } catch {
                outcomes.append(.failure(error))
            }
        }
        return outcomes
    }

    /// The writes one after another in one transaction holding the state row's lock.
    private func applyInTurn(_ operations: [ItemOperation]) async throws -> [GroupCommit.Outcome] {
        let now = Date()
        return try await writing { connection, state in
            var outcomes: [GroupCommit.Outcome] = []
            for operation in operations {
                do {
                    outcomes.append(.success(try await apply(operation, connection, &state, now: now)))
                } catch let error as APIError where operations.count > 1 {
                    outcomes.append(.failure(error))
                }
            }
            let changed = outcomes.contains { if case .success(let result) = $0 { !result.replayed } else { false } }
            return (outcomes, changed)
        }
    }

    /// Applies the write, or replays the first answer of its `Idempotency-Key`.
    func apply(_ operation: ItemOperation, _ connection: PostgresConnection, _ state: inout WriteState, now: Date) async throws -> ItemWrite.Result {
        if rowSecurity != nil, let access = operation.access {
            // Row-level security sees this operation's caller (a group holds several callers').
            try await connection.guardedRun(identityStatement(access.caller), logger: logger)
        }
        guard let given = operation.idempotencyKey, let scope = operation.idempotencyScope else { return try await apply(operation, connection, &state, now: now, createdWith: nil) }
        // Per user under access rules: one user's key never replays another's answer.
        let key = IdempotencyKeys.storageKey(scope)
        let collection = operation.write.collection
        let request = operation.write.requestFingerprint
        if let replay = try await replay(key, collection: collection, request: request, connection, now: now) { return replay }
        let result = try await apply(operation, connection, &state, now: now, createdWith: given)
        var remember = BoundSQL("INSERT INTO \(schema.idempotencyKeys) (key, collection, request, response, status, version, at) VALUES (")
        remember.append("\(remember.bind(key)), \(remember.bind(collection)), \(remember.bind(json: request)), \(remember.bind(json: result.body)), ")
        remember.append("\(remember.bind(result.status)), \(remember.bindOrNull(result.version)), \(remember.bind(now)))")
        remember.append(" ON CONFLICT (key) DO UPDATE SET collection = excluded.collection, request = excluded.request, response = excluded.response,")
        remember.append(" status = excluded.status, version = excluded.version, at = excluded.at")
        try await connection.guardedRun(remember.query, logger: logger)
        return result
    }

    /// Applies the write; a create records `createdWith`, its `Idempotency-Key`, for the feed.
    private func apply(
        _ operation: ItemOperation, _ connection: PostgresConnection, _ state: inout WriteState, now: Date, createdWith: String?
    ) async throws -> ItemWrite.Result {
        let ifMatch = operation.ifMatch
        // Under rules a row is read without `FOR UPDATE`, which row-level security admits only for
        // rows the caller may write: a row it reads but may not write must get its 403, not a
        // 404. Every write holds the state row's lock, so no other write moves the row meanwhile.
        let locking = rowSecurity == nil
        switch operation.write {
        case .create(let name, let given):
            let table = try table(of: name)
            // Before the id is looked up: a query cannot carry a NUL either.
            try Self.checkStorable(.object(given))
            var object = given
            if let given = object["id"], given != .null {
                let id = try normalizedID(given)
                if try await idTaken(table, scalarText(id) ?? "", connection) {
                    // Read as the caller: row-level security hides a row it may not read.
                    var visible: JSONValue?
                    if operation.access != nil { visible = try await row(table, id: scalarText(id) ?? "", connection, locking: false)?.2 }
                    let facts = try await facts(operation, { [$0.view] }, on: visible.map { [$0] } ?? [], connection)
                    throw operation.duplicateID(visible, given, facts)
                }
                object["id"] = id
            } else {
                object["id"] = nil
                object = JSONObject([("id", JSONValue.number(JSONNumber(try await nextFreeID(table, collection: name, connection))))] + object.map { ($0.key, $0.value) })
            }
            // With its id: a membership's rule reads the row it is on.
            let facts = try await facts(operation, { [$0.create] }, on: [.object(object)], connection)
            try operation.checkCreate(object, facts)
            let version = state.next()
            var insert = BoundSQL("INSERT INTO \(table) (id_text, version, record, created_with) VALUES (")
            insert.append("\(insert.bind(scalarText(object["id"] ?? .null) ?? "")), \(insert.bind(version)), \(insert.bind(json: .object(object))), ")
            insert.append("\(insert.bindOrNull(createdWith))) RETURNING record::text")
            let stored = try await records(connection, insert.query).first ?? .object(object)
            return ItemWrite.Result(status: 201, body: stored, version: version)
        case .update(let name, let id, let body, let merge):
            try ItemWrite.checkBodyID(body, matches: id)
            try operation.checkSignedIn()
            let table = try table(of: name)
            guard let (rowID, version, current) = try await row(table, id: id, connection, locking: locking) else { throw APIError.missing(name, id) }
            let updated = ItemWrite.updated(current, with: body, merge: merge, keeping: operation.access?.ownerField)
            let facts = try await facts(operation, { [$0.view, $0.update] }, on: [current, .object(updated)], connection)
            try operation.checkAccess(to: current, replacement: updated, facts)
            try checkIfMatch(current, version: version, ifMatch)
            try Self.checkStorable(.object(updated))
            let newVersion = state.next()
            var update = BoundSQL("UPDATE \(table) SET record = ")
            update.append("\(update.bind(json: .object(updated))), version = \(update.bind(newVersion)) WHERE row_id = \(update.bind(rowID)) RETURNING record::text")
            let stored = try await records(connection, update.query).first ?? .object(updated)
            let formerOwner = operation.departure(from: current, to: updated)
            let formerFields = operation.sharedDeparture(from: current, to: updated, version: version)
            if formerOwner != nil || formerFields != nil {
                // Given to another owner (by an admin), or moved where a sharing rule reads (a card
                // to another board): the feeds of those who saw it, and cannot now, show it leave.
                var departure = BoundSQL("INSERT INTO \(schema.tombstones) (sequence, collection, id, at, owner, fields, departed) VALUES (")
                departure.append("\(departure.bind(newVersion)), \(departure.bind(name)), \(departure.bind(json: current["id"] ?? .null)), \(departure.bind(now)), ")
                departure.append("\(departure.bindOrNull(formerOwner)), \(formerFields.map { departure.bind(json: .object($0)) } ?? "NULL"), true)")
                try await connection.guardedRun(departure.query, logger: logger)
                try await dropOldTombstones(connection, &state, now: now)
            }
            return ItemWrite.Result(status: 200, body: stored, version: newVersion)
        case .delete(let name, let id):
            try operation.checkSignedIn()
            let table = try table(of: name)
            guard let (rowID, version, current) = try await row(table, id: id, connection, locking: locking) else { throw APIError.missing(name, id) }
            let facts = try await facts(operation, { [$0.view, $0.delete] }, on: [current], connection)
            try operation.checkAccess(to: current, replacement: nil, facts)
            try checkIfMatch(current, version: version, ifMatch)
            let sequence = state.next()
            var delete = BoundSQL("DELETE FROM \(table) WHERE row_id = ")
            delete.append(delete.bind(rowID))
            try await connection.guardedRun(delete.query, logger: logger)
            if let deletedID = current["id"]?.intValue {
                // New ids go above every deleted one: none is given twice.
                var mark = BoundSQL("UPDATE \(schema.resources) SET deleted_id = greatest(deleted_id, ")
                mark.append("\(mark.bind(deletedID))) WHERE name = \(mark.bind(name))")
                try await connection.guardedRun(mark.query, logger: logger)
            }
            // The owner under access rules: whose feed shows the deletion.
            let owner: String? = operation.access?.ownerField.flatMap { current[$0] }.flatMap(scalarText)
            // Under a sharing rule, the fields its filters read: whose feeds show the deletion.
            let fields = operation.sharedFields(of: current)
            var tombstone = BoundSQL("INSERT INTO \(schema.tombstones) (sequence, collection, id, at, owner, fields) VALUES (")
            tombstone.append("\(tombstone.bind(sequence)), \(tombstone.bind(name)), \(tombstone.bind(json: current["id"] ?? .null)), \(tombstone.bind(now)), ")
            tombstone.append("\(tombstone.bindOrNull(owner)), \(fields.map { tombstone.bind(json: .object($0)) } ?? "NULL"))")
            try await connection.guardedRun(tombstone.query, logger: logger)
            try await dropOldTombstones(connection, &state, now: now)
            if operation.access?.holdsAccounts == true, let userID = recordID(of: current) {
                // An account's record gone: its credentials and refresh tokens go in this transaction.
                try await endAccount(userID: userID, collection: name, connection)
            }
            return ItemWrite.Result(status: 200, body: [:], version: nil)
        }
    }

    func writeSingular(_ name: String, body: JSONObject, merge: Bool, ifMatch: String?) async throws -> JSONValue {
        try await writing { connection, _ in
            var select = BoundSQL("SELECT value::text FROM \(schema.resources) WHERE kind = 'singular' AND name = ")
            select.append(select.bind(name) + " FOR UPDATE")
            guard let text = try await connection.guardedFirst(select.query, as: String.self, logger: logger) else { throw APIError.notFound("no resource named \(name)") }
            let current = try JSONValue(parsing: Array(text.utf8))
            try checkIfMatch(current, version: nil, ifMatch)
            var updated = merge ? current.objectValue ?? JSONObject() : JSONObject()
            for (key, value) in body { updated[key] = value }
            try Self.checkStorable(.object(updated))
            var update = BoundSQL("UPDATE \(schema.resources) SET value = ")
            update.append("\(update.bind(json: .object(updated))) WHERE name = \(update.bind(name)) RETURNING value::text")
            let stored = try await records(connection, update.query).first ?? .object(updated)
            return (stored, true)
        }
    }

    // MARK: Helpers

    /// A record by id: its row, version and value.
    private func row(_ table: String, id: String, _ connection: PostgresConnection, locking: Bool = false) async throws -> (Int64, Int, JSONValue)? {
        var select = BoundSQL("SELECT row_id, version, record::text FROM \(table) WHERE id_text = ")
        select.append(select.bind(id) + (locking ? " FOR UPDATE" : ""))
        guard let (rowID, version, text) = try await connection.guardedFirst(select.query, as: (Int64, Int64, String).self, logger: logger) else {
            return nil
        }
        return (rowID, Int(version), try JSONValue(parsing: Array(text.utf8)))
    }

    /// One more than the highest integer id, held or deleted, or the smallest free positive
    /// integer when that is `Int.max` (as the JSON backend does). Writes are serialised, so
    /// nobody takes it meanwhile.
    private func nextFreeID(_ table: String, collection: String, _ connection: PostgresConnection) async throws -> Int {
        // The highest integer id (through its index), and whether a string id already spells
        // the one after it: one round trip in the usual case.
        var highestQuery = BoundSQL()
        if rowSecurity != nil {
            // Every row counts, those row-level security hides from the caller too.
            let top = "\(schema.highestIDFunction)(\(highestQuery.bind(table))::regclass, 0, 0)"
            highestQuery.append("SELECT top.id::text, \(schema.idTakenFunction)(\(highestQuery.bind(table))::regclass, (greatest(coalesce(top.id, 0), 0) + 1)::text) ")
            highestQuery.append("FROM (SELECT \(top) AS id) AS top")
        } else {
            highestQuery.append("SELECT top.id::text, EXISTS (SELECT 1 FROM \(table) WHERE id_text = (greatest(coalesce(top.id, 0), 0) + 1)::text) ")
            highestQuery.append("FROM (SELECT greatest(max(integer_id), (SELECT deleted_id FROM \(schema.resources) WHERE name = \(highestQuery.bind(collection)))) AS id ")
            highestQuery.append("FROM \(table)) AS top")
        }
        let found = try await connection.guardedFirst(highestQuery.query, as: (String?, Bool).self, logger: logger)
        let highest = found?.0.map { Int($0) ?? Int.max } ?? 0
        if highest < Int.max, found?.1 == false { return max(highest, 0) + 1 }
        var candidate = highest < Int.max ? max(highest, 0) + 1 : 1
        // Free unless a string id spells it; otherwise walk up (ends: each step skips a taken id).
        while true {
            guard try await idTaken(table, String(candidate), connection) else { return candidate }
            candidate = candidate == Int.max ? 1 : candidate + 1
        }
    }

    /// Whether a row of `table` has this id, whether the caller may see it or not.
    private func idTaken(_ table: String, _ id: String, _ connection: PostgresConnection) async throws -> Bool {
        var taken = BoundSQL()
        if rowSecurity != nil {
            taken.append("SELECT \(schema.idTakenFunction)(\(taken.bind(table))::regclass, \(taken.bind(id)))")
        } else {
            taken.append("SELECT EXISTS (SELECT 1 FROM \(table) WHERE id_text = \(taken.bind(id)))")
        }
        let found: Bool? = try await connection.guardedFirst(taken.query, as: Bool.self, logger: logger)
        return found ?? false
    }

    /// The first answer of a write sent again with its `Idempotency-Key`; a 422 when the key
    /// came with another request.
    private func replay(_ key: String, collection: String, request: JSONValue, _ connection: PostgresConnection, now: Date) async throws -> ItemWrite.Result? {
        var expire = BoundSQL("DELETE FROM \(schema.idempotencyKeys) WHERE at < ")
        expire.append(expire.bind(now.addingTimeInterval(-IdempotencyKeys.retention)))
        try await connection.guardedRun(expire.query, logger: logger)
        var select = BoundSQL("SELECT collection, request::text, response::text, status, version FROM \(schema.idempotencyKeys) WHERE key = ")
        select.append(select.bind(key))
        guard let (storedCollection, storedRequest, response, status, version) = try await connection.guardedFirst(
            select.query, as: (String, String, String, Int?, Int?).self, logger: logger)
        else { return nil }
        guard storedCollection == collection, try JSONValue(parsing: Array(storedRequest.utf8)) == request else { throw APIError.idempotencyKeyReused }
        let first = try JSONValue(parsing: Array(response.utf8))
        guard let status else {
            // A create's key remembered before keys kept the version: the record's current one.
            let version = try await first.flatMapID { try await row(try table(of: collection), id: $0, connection)?.1 }
            return ItemWrite.Result(status: 201, body: first, version: version, replayed: true)
        }
        return ItemWrite.Result(status: status, body: first, version: version, replayed: true)
    }

    /// Drops tombstones beyond the feed limits and raises the horizon past them.
    func dropOldTombstones(_ connection: PostgresConnection, _ state: inout WriteState, now: Date) async throws {
        var drop = BoundSQL("DELETE FROM \(schema.tombstones) WHERE at < ")
        drop.append(drop.bind(now.addingTimeInterval(-min(feedLimits.tombstoneRetention, Double(Int32.max)))))
        drop.append(" OR sequence <= (SELECT sequence FROM \(schema.tombstones) ORDER BY sequence DESC OFFSET \(drop.bind(feedLimits.tombstoneCapacity)) LIMIT 1)")
        drop.append(" RETURNING sequence")
        for try await sequence in try await connection.guardedQuery(drop.query, logger: logger).decode(Int64.self) {
            state.horizon = max(state.horizon, Int(sequence))
        }
    }

    /// PostgreSQL's text cannot hold U+0000: such a record is refused before anything changes.
    static func checkStorable(_ value: JSONValue) throws {
        if value.containsNUL { throw APIError(status: 422, message: "PostgreSQL cannot store the character U+0000 (NUL)") }
    }
}

extension JSONValue {
    /// `body` applied to the value's id as text, when it has one.
    fileprivate func flatMapID<T>(_ body: (String) async throws -> T?) async rethrows -> T? {
        guard let id = recordID(of: self) else { return nil }
        return try await body(id)
    }
}
