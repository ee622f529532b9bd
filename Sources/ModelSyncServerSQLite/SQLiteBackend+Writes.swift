import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncSQLite
import ModelSyncServer

/// Writes: each runs on the writer, in a group's transaction (`SQLiteWriter`), and is
/// answered once that transaction is committed.
extension SQLiteBackend {
    /// Runs `body` on the writer and returns its result once committed; SQLite's errors as 500s.
    func writing<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection, inout WriteState) throws -> T) async throws -> T {
        do {
            return try await writer.submit(body)
        } catch {
            throw Self.requestError(error)
        }
    }

    package func write(_ operations: [ItemOperation]) async throws -> [Result<ItemWrite.Result, APIError>] {
        let limits = feedLimits
        if operations.count == 1, let operation = operations.first {
            // A single write fails alone: its savepoint in the group is rolled back.
            do {
                return [.success(try await writing { connection, state in try Self.apply(operation, connection, &state, limits: limits) })]
            } catch let error as APIError {
                return [.failure(error)]
            }
        }
        return try await writing { connection, state in
            var results: [Result<ItemWrite.Result, APIError>] = []
            for operation in operations {
                // Each operation in a savepoint: one that fails leaves nothing behind.
                let before = state
                try connection.execute("SAVEPOINT modelsync_operation")
                do {
                    results.append(.success(try Self.apply(operation, connection, &state, limits: limits)))
                    try connection.execute("RELEASE modelsync_operation")
                } catch {
                    state = before
                    try connection.execute("ROLLBACK TO modelsync_operation")
                    try connection.execute("RELEASE modelsync_operation")
                    results.append(.failure(error as? APIError ?? APIError(status: 500, message: "SQLite: \(error)")))
                }
            }
            return results
        }
    }

    /// Applies the write, or replays the first answer of its `Idempotency-Key`.
    static func apply(_ operation: ItemOperation, _ connection: SQLiteConnection, _ state: inout WriteState, limits: FeedLimits) throws -> ItemWrite.Result {
        guard let given = operation.idempotencyKey, let scope = operation.idempotencyScope else {
            return try apply(operation, connection, &state, limits: limits, createdWith: nil)
        }
        // Per user under access rules: one user's key never replays another's answer.
        let key = IdempotencyKeys.storageKey(scope)
        let collection = operation.write.collection
        let request = operation.write.requestFingerprint
        // Expired keys go by their index on `at`.
        try connection.execute(
            "DELETE FROM \(SQLiteSchema.idempotencyKeys) WHERE at < ?", [.integer(Int64(state.now.timeIntervalSince1970 - IdempotencyKeys.retention))])
        if let row = try connection.rows(
            "SELECT collection, request, response, status, version FROM \(SQLiteSchema.idempotencyKeys) WHERE key = ?", [.text(key)]
        ).first {
            // The collection by its bytes: names Swift calls equal are two collections.
            guard row[0].textValue?.isIdentical(to: collection) == true, try parsed(row[1]) == request else { throw APIError.idempotencyKeyReused }
            let first = try parsed(row[2])
            guard let status = row[3].integerValue else {
                // A create's key remembered before keys kept the version: the record's current one.
                let version = try recordID(of: first).flatMap { try record(collection, id: $0, connection)?.version }
                return ItemWrite.Result(status: 201, body: first, version: version, replayed: true)
            }
            return ItemWrite.Result(status: Int(status), body: first, version: row[4].integerValue.map { Int($0) }, replayed: true)
        }
        let result = try apply(operation, connection, &state, limits: limits, createdWith: given)
        try connection.execute(
            "INSERT OR REPLACE INTO \(SQLiteSchema.idempotencyKeys) (key, collection, request, response, status, version, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(key), .text(collection), text(request), text(result.body), .integer(Int64(result.status)),
                result.version.map { .integer(Int64($0)) } ?? .null, .integer(Int64(state.now.timeIntervalSince1970)),
            ])
        return result
    }

    /// Applies the write; a create records `createdWith`, its `Idempotency-Key`, for the feed.
    private static func apply(
        _ operation: ItemOperation, _ connection: SQLiteConnection, _ state: inout WriteState, limits: FeedLimits, createdWith: String?
    ) throws -> ItemWrite.Result {
        switch operation.write {
        case .create(let name, let given):
            try requireCollection(name, connection)
            var object = given
            if let given = object["id"], given != .null {
                let id = try normalizedID(given)
                if let current = try record(name, id: scalarText(id) ?? "", connection) {
                    throw operation.duplicateID(current.record, given, RowFacts.sqlite(connection))
                }
                object["id"] = id
            } else {
                object["id"] = nil
                object = JSONObject([("id", JSONValue.number(JSONNumber(try nextFreeID(name, connection))))] + object.map { ($0.key, $0.value) })
            }
            // With its id: a membership row names the row it is on, a card its board.
            try operation.checkCreate(object, RowFacts.sqlite(connection))
            let stored = JSONValue.object(object)
            let version = state.next()
            try insert(stored, into: name, version: version, createdWith: createdWith, connection)
            state.changes.append(SyncChange(sequence: version, collection: name, id: object["id"] ?? .null, record: stored, createdWith: createdWith))
            return ItemWrite.Result(status: 201, body: stored, version: version)
        case .update(let name, let id, let body, let merge):
            try ItemWrite.checkBodyID(body, matches: id)
            try operation.checkSignedIn()
            try requireCollection(name, connection)
            guard let current = try record(name, id: id, connection) else { throw APIError.missing(name, id) }
            let updated = ItemWrite.updated(current.record, with: body, merge: merge, keeping: operation.access?.ownerField)
            try operation.checkAccess(to: current.record, replacement: updated, RowFacts.sqlite(connection))
            try checkIfMatch(current.record, version: current.version, operation.ifMatch)
            let formerOwner = operation.departure(from: current.record, to: updated)
            let formerFields = operation.sharedDeparture(from: current.record, to: updated, version: current.version)
            let stored = JSONValue.object(updated)
            let version = state.next()
            try connection.execute(
                "UPDATE \(SQLiteSchema.records) SET record = ?, version = ? WHERE row_id = ?", [text(stored), .integer(Int64(version)), .integer(current.rowID)])
            state.changes.append(SyncChange(sequence: version, collection: name, id: stored["id"] ?? .null, record: stored, createdWith: current.createdWith))
            if formerOwner != nil || formerFields != nil {
                // Given to another owner (by an admin), or moved (a card to another board): the
                // feeds of those who saw it through its former fields show it leave.
                try keepTombstone(
                    name, id: current.record["id"] ?? .null, sequence: version, owner: formerOwner, fields: formerFields, departed: true, connection, &state,
                    limits: limits)
            }
            return ItemWrite.Result(status: 200, body: stored, version: version)
        case .delete(let name, let id):
            try operation.checkSignedIn()
            try requireCollection(name, connection)
            guard let current = try record(name, id: id, connection) else { throw APIError.missing(name, id) }
            try operation.checkAccess(to: current.record, replacement: nil, RowFacts.sqlite(connection))
            try checkIfMatch(current.record, version: current.version, operation.ifMatch)
            let sequence = state.next()
            try connection.execute("DELETE FROM \(SQLiteSchema.records) WHERE row_id = ?", [.integer(current.rowID)])
            let deletedID = current.record["id"] ?? .null
            if let integer = deletedID.intValue {
                // New ids go above every deleted one: none is given twice.
                try connection.execute(
                    "UPDATE \(SQLiteSchema.resources) SET deleted_id = max(deleted_id, ?) WHERE name = ?", [.integer(Int64(integer)), .text(name)])
            }
            // The owner under access rules: whose feed shows the deletion.
            let owner = operation.access?.ownerField.flatMap { current.record[$0] }.flatMap(scalarText)
            try keepTombstone(
                name, id: deletedID, sequence: sequence, owner: owner, fields: operation.sharedFields(of: current.record), departed: false, connection, &state,
                limits: limits)
            state.changes.append(SyncChange(sequence: sequence, collection: name, id: deletedID, record: nil))
            if operation.access?.holdsAccounts == true, let userID = recordID(of: current.record) {
                // An account's record gone: its credentials and refresh tokens go in this write.
                try connection.execute("DELETE FROM \(SQLiteSchema.accounts) WHERE user_id = ? AND collection = ?", [.text(userID), .text(name)])
                try connection.execute("DELETE FROM \(SQLiteSchema.refreshTokens) WHERE user_id = ?", [.text(userID)])
            }
            return ItemWrite.Result(status: 200, body: [:], version: nil)
        }
    }

    /// Inserts a record at the end of its collection.
    static func insert(_ record: JSONValue, into collection: String, version: Int, createdWith: String?, _ connection: SQLiteConnection) throws {
        let id = record["id"]
        try connection.execute(
            "INSERT INTO \(SQLiteSchema.records) (collection, id_text, integer_id, version, record, created_with) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(collection), id.flatMap(scalarText).map(SQLValue.text) ?? .null, id?.intValue.map { .integer(Int64($0)) } ?? .null,
                .integer(Int64(version)), text(record), createdWith.map(SQLValue.text) ?? .null,
            ])
    }

    /// Keeps a tombstone (with the row's shared `fields` under a sharing rule), then drops those
    /// beyond the feed limits (by their indexes) and raises the horizon past them.
    static func keepTombstone(
        _ collection: String, id: JSONValue, sequence: Int, owner: String?, fields: JSONObject?, departed: Bool, _ connection: SQLiteConnection,
        _ state: inout WriteState, limits: FeedLimits
    ) throws {
        let now = Int64(state.now.timeIntervalSince1970)
        try connection.execute(
            "INSERT INTO \(SQLiteSchema.tombstones) (sequence, collection, id, at, owner, fields, departed) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .integer(Int64(sequence)), .text(collection), text(id), .integer(now), owner.map(SQLValue.text) ?? .null,
                fields.map { text(.object($0)) } ?? .null, .integer(departed ? 1 : 0),
            ])
        let retention = limits.tombstoneRetention
        // A retention of NaN or below zero keeps nothing past now; none traps.
        let oldest = now - Int64(retention.isNaN ? 0 : min(max(retention, 0), Double(Int32.max)))
        let dropped = try connection.rows(
            """
            DELETE FROM \(SQLiteSchema.tombstones) WHERE at < ? OR sequence <= \
            (SELECT sequence FROM \(SQLiteSchema.tombstones) ORDER BY sequence DESC LIMIT 1 OFFSET ?) RETURNING sequence
            """, [.integer(oldest), .integer(Int64(limits.tombstoneCapacity))])
        for row in dropped { state.horizon = max(state.horizon, Int(row[0].integerValue ?? 0)) }
    }

    /// One more than the highest integer id, held or deleted (by the index), or, when that is
    /// `Int.max` or a string id spells it, the next free one (as the JSON backend does).
    static func nextFreeID(_ collection: String, _ connection: SQLiteConnection) throws -> Int {
        let highest = try connection.rows(
            """
            SELECT max(coalesce((SELECT max(integer_id) FROM \(SQLiteSchema.records) WHERE collection = ?1), 0), \
            coalesce((SELECT deleted_id FROM \(SQLiteSchema.resources) WHERE name = ?1), 0))
            """, [.text(collection)]).first?[0].integerValue.map { Int($0) } ?? 0
        var candidate = highest < Int.max ? max(highest, 0) + 1 : 1
        // Free unless a string id spells it; otherwise walk up (ends: each step skips a taken id).
        while try record(collection, id: String(candidate), connection) != nil {
            candidate = candidate == Int.max ? 1 : candidate + 1
        }
        return candidate
    }

    package func writeSingular(_ name: String, body: JSONObject, merge: Bool, ifMatch: String?) async throws -> JSONValue {
        try await writing { connection, state in
            guard let value = try connection.scalar("SELECT value FROM \(SQLiteSchema.resources) WHERE kind = 'singular' AND name = ?", [.text(name)]) else {
                throw APIError.notFound("no resource named \(name)")
            }
            let current = try Self.parsed(value)
            try checkIfMatch(current, version: nil, ifMatch)
            var updated = merge ? current.objectValue ?? JSONObject() : JSONObject()
            for (key, value) in body { updated[key] = value }
            try connection.execute("UPDATE \(SQLiteSchema.resources) SET value = ? WHERE name = ?", [Self.text(.object(updated)), .text(name)])
            state.changed = true
            return JSONValue.object(updated)
        }
    }

    // MARK: Reset and replacing the data

    package func reset() async throws {
        guard let initialData else {
            throw ServerError.unsupported("only a server started with data can be reset (SyncServer.start(data:sqlite:))")
        }
        let resources = try await writing { connection, state in
            try Self.replaceData(with: initialData, connection)
            state.replaced = true
            return try Self.readResources(connection)
        }
        self.resources.withLock { $0 = resources }
    }

    /// Replaces every record, resource and bookkeeping row with `data` (a JSON document as the
    /// JSON backend saves it, with or without its `_modelsync` bookkeeping), in the caller's
    /// transaction.
    ///
    /// - Throws: ``/ModelSyncServer/ServerError/notAnObject`` for data that is not an object,
    ///   ``/ModelSyncServer/ServerError/cannotImport(_:)`` for two items of a collection with one id.
    static func replaceData(with data: JSONValue, _ connection: SQLiteConnection) throws {
        guard var root = data.objectValue else { throw ServerError.notAnObject }
        let book = Bookkeeping.extract(from: &root)
        for table in [SQLiteSchema.records, SQLiteSchema.resources, SQLiteSchema.tombstones, SQLiteSchema.idempotencyKeys, SQLiteSchema.accounts, SQLiteSchema.refreshTokens] {
            try connection.execute("DELETE FROM \(table)")
        }
        var sequence = book.sequence
        for (position, (name, value)) in root.enumerated() {
            let kind: String
            switch value {
            case .array(let items):
                kind = "collection"
                // Every record keeps its version; one without (a second record with an id
                // already seen, or no id) gets the next.
                var seen = Set<ExactText>()
                for item in items {
                    let id = recordID(of: item)
                    if let id, !seen.insert(ExactText(id)).inserted {
                        throw ServerError.cannotImport("two items of \(name) have the id \(id)")
                    }
                    let stamp = id.flatMap { book.versions[name]?[ExactText($0)] }
                    let version: Int
                    if let stamp { version = stamp.version } else {
                        sequence += 1
                        version = sequence
                    }
                    try insert(item, into: name, version: version, createdWith: stamp?.createdWith, connection)
                }
            case .object: kind = "singular"
            default: kind = "value"
            }
            try connection.execute(
                "INSERT INTO \(SQLiteSchema.resources) (name, position, kind, value, deleted_id) VALUES (?, ?, ?, ?, ?)",
                [.text(name), .integer(Int64(position)), .text(kind), kind == "collection" ? .null : text(value), .integer(Int64(book.deletedIDs[name] ?? 0))])
        }
        for stone in book.tombstones {
            try connection.execute(
                "INSERT OR REPLACE INTO \(SQLiteSchema.tombstones) (sequence, collection, id, at, owner, fields, departed) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .integer(Int64(stone.sequence)), .text(stone.collection), text(stone.id), .integer(Int64(stone.at)),
                    stone.owner.map(SQLValue.text) ?? .null, stone.fields.map { text(.object($0)) } ?? .null, .integer(stone.departed ? 1 : 0),
                ])
        }
        for (key, record) in book.idempotency {
            guard let collection = record["collection"]?.stringValue, let request = record["request"], let response = record["response"] else { continue }
            try connection.execute(
                "INSERT INTO \(SQLiteSchema.idempotencyKeys) (key, collection, request, response, status, version, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(key), .text(collection), text(request), text(response), record["status"]?.intValue.map { .integer(Int64($0)) } ?? .null,
                    record["version"]?.intValue.map { .integer(Int64($0)) } ?? .null, .integer(Self.seconds(record["at"])),
                ])
        }
        for (email, account) in book.accounts {
            // The JSON backend keeps no collection per account: the default accounts collection.
            try connection.execute(
                "INSERT INTO \(SQLiteSchema.accounts) (email, collection, user_id, password_hash, role, generation) VALUES (?, 'users', ?, ?, ?, ?)",
                [.text(email), .text(account.userID), .text(account.passwordHash), account.role.map(SQLValue.text) ?? .null, .integer(Int64(account.generation))])
        }
        for token in book.refreshTokens.values {
            try storeRefreshToken(token, connection)
        }
        try connection.execute(
            "UPDATE \(SQLiteSchema.state) SET sequence = ?, horizon = ?, modified = max(CAST(strftime('%s', 'now') AS INTEGER), modified + 1)",
            [.integer(Int64(sequence)), .integer(Int64(book.horizon))])
    }

    /// The data as the JSON backend saves it: the collections and resources, and the
    /// bookkeeping under `_modelsync` (versions, tombstones, idempotency keys, accounts).
    static func exportData(_ connection: SQLiteConnection) throws -> JSONValue {
        var book = Bookkeeping()
        if let state = try connection.rows("SELECT sequence, horizon FROM \(SQLiteSchema.state)").first {
            (book.sequence, book.horizon) = (Int(state[0].integerValue ?? 0), Int(state[1].integerValue ?? 0))
        }
        var root = JSONObject()
        for member in try connection.rows("SELECT name, kind, value, deleted_id FROM \(SQLiteSchema.resources) ORDER BY position") {
            guard let name = member[0].textValue else { continue }
            if let deleted = member[3].integerValue, deleted > 0 { book.deletedIDs[name] = Int(deleted) }
            guard member[1].textValue == "collection" else {
                root[name] = try parsed(member[2])
                continue
            }
            var items: [JSONValue] = []
            var versions: [ExactText: Bookkeeping.Stamp] = [:]
            try connection.withStatement(
                "SELECT version, record, created_with FROM \(SQLiteSchema.records) WHERE collection = ? ORDER BY row_id", [.text(name)]
            ) { statement in
                while try statement.step() {
                    let record = try parsed(statement.value(at: 1))
                    items.append(record)
                    if let id = recordID(of: record) {
                        versions[ExactText(id)] = Bookkeeping.Stamp(
                            version: Int(statement.value(at: 0).integerValue ?? 0), record: record, createdWith: statement.value(at: 2).textValue)
                    }
                }
            }
            if !versions.isEmpty { book.versions[name] = versions }
            root[name] = .array(items)
        }
        // Departures stay behind: the JSON file keeps no such record.
        for row in try connection.rows("SELECT sequence, collection, id, at, owner, fields FROM \(SQLiteSchema.tombstones) WHERE departed = 0 ORDER BY sequence") {
            book.tombstones.append(Bookkeeping.Tombstone(
                collection: row[1].textValue ?? "", id: try parsed(row[2]), sequence: Int(row[0].integerValue ?? 0), at: Int(row[3].integerValue ?? 0),
                owner: row[4].textValue, fields: try parsed(row[5]).objectValue))
        }
        for row in try connection.rows("SELECT email, user_id, password_hash, role, generation FROM \(SQLiteSchema.accounts) ORDER BY email") {
            book.setAccount(
                StoredAccount(userID: row[1].textValue ?? "", passwordHash: row[2].textValue ?? "", role: row[3].textValue, generation: Int(row[4].integerValue ?? 0)),
                email: row[0].textValue ?? "")
        }
        for row in try connection.rows("SELECT key, collection, request, response, status, version, at FROM \(SQLiteSchema.idempotencyKeys) ORDER BY at") {
            var record: JSONValue = [
                "collection": .string(row[1].textValue ?? ""), "request": try parsed(row[2]), "response": try parsed(row[3]),
                "at": .number(JSONNumber(row[6].integerValue ?? 0)),
            ]
            if let status = row[4].integerValue { record["status"] = .number(JSONNumber(status)) }
            if let version = row[5].integerValue { record["version"] = .number(JSONNumber(version)) }
            book.idempotency[row[0].textValue ?? ""] = record
        }
        for token in try refreshTokens(where: "1", [], connection) { book.refreshTokens[token.hash] = token }
        root[Bookkeeping.member] = book.saved
        return .object(root)
    }
}

extension SQLiteBackend {
    /// Seconds as a document holds them (an imported idempotency key's `at`), as an integer: 0
    /// for what is not a finite number of 64-bit range (`1e300` must not trap the import).
    static func seconds(_ value: JSONValue?) -> Int64 {
        guard let seconds = value?.doubleValue, seconds.isFinite, seconds > -9.2e18, seconds < 9.2e18 else { return 0 }
        return Int64(seconds)
    }
}
