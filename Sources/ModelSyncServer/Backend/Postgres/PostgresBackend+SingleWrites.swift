import Foundation
import ModelSyncJSON
import PostgresNIO

/// Single updates and creates, the common writes, with the state row locked for as short a time
/// as possible: writes from every server go one at a time through that lock, so the time it is
/// held bounds write throughput.
///
/// - An update reads its row without a lock, checks `If-Match`, and then in one statement takes
///   the next sequence value (locking the state row until the commit) and writes the row only if
///   its version is still the one it read: `If-Match` as a compare-and-set. When another write came
///   in between, it rolls back and starts again (and then a stale `If-Match` gets its 412).
/// - A create takes the sequence value first (so that the next free id is read after every
///   earlier create committed), then inserts, picking the id in the same statement.
///
/// Both lock the state row before any record row, like every other write, so no two writes can
/// wait for each other.
extension PostgresBackend {
    /// Another write changed the row between the read and the write.
    private struct RowMoved: Error {}

    /// The statement that takes the next sequence value and moves `modified`; its row lock is
    /// held until the commit.
    private var takeSequence: String {
        "UPDATE \(schema.state) SET sequence = sequence + 1, "
            + "modified = greatest(date_trunc('second', now()), modified + interval '1 second') RETURNING sequence"
    }

    func updateAlone(_ operation: ItemOperation) async throws -> ItemWrite.Result? {
        guard case .update(let name, let id, let body, let merge) = operation.write else { return nil }
        try ItemWrite.checkBodyID(body, matches: id)
        let table = try table(of: name)
        // Each retry means another write landed: give up after a few, to the locking path.
        for _ in 0..<8 {
            do {
                return try await transaction { connection in
                    var select = BoundSQL("SELECT row_id, version, record::text FROM \(table) WHERE id_text = ")
                    select.append(select.bind(id))
                    var found: (Int64, Int64, String)?
                    for try await row in try await connection.query(select.query, logger: logger).decode((Int64, Int64, String).self) { found = row }
                    guard let (rowID, version, text) = found else { throw APIError.missing(name, id) }
                    let current = try JSONValue(parsing: Array(text.utf8))
                    try checkIfMatch(current, version: Int(version), operation.ifMatch)
                    let updated = ItemWrite.updated(current, with: body, merge: merge)
                    try Self.checkStorable(.object(updated))
                    var write = BoundSQL("WITH taken AS (\(takeSequence)), written AS (UPDATE \(table) SET record = ")
                    write.append("\(write.bind(json: .object(updated))), version = (SELECT sequence FROM taken) ")
                    write.append("WHERE row_id = \(write.bind(rowID)) AND version = \(write.bind(version)) RETURNING record::text, version) ")
                    write.append("SELECT written.record, written.version FROM written, pg_notify(\(write.bind(schema.channel)), written.version::text)")
                    for try await (stored, newVersion) in try await connection.query(write.query, logger: logger).decode((String, Int64).self) {
                        return ItemWrite.Result(status: 200, body: try JSONValue(parsing: Array(stored.utf8)), version: Int(newVersion))
                    }
                    throw RowMoved()
                }
            } catch is RowMoved {
                continue
            }
        }
        return nil
    }

    /// A create without an `Idempotency-Key`; nil when the next free id is not simply the highest
    /// integer id + 1 (the locking path walks to a free one).
    func createAlone(_ operation: ItemOperation) async throws -> ItemWrite.Result? {
        guard case .create(let name, let given, nil) = operation.write else { return nil }
        let table = try table(of: name)
        var object = given
        let explicitID = try object["id"].flatMap { $0 == .null ? nil : try normalizedID($0) }
        object["id"] = explicitID
        try Self.checkStorable(.object(object))
        do {
            return try await createAloneOnce(name, object, explicitID: explicitID, given: given, table)
        } catch is NoSimpleID {
            return nil
        }
    }

    private func createAloneOnce(_ name: String, _ object: JSONObject, explicitID: JSONValue?, given: JSONObject, _ table: String) async throws -> ItemWrite.Result {
        try await transaction { connection in
            var version: Int64?
            for try await value in try await connection.query(PostgresQuery(unsafeSQL: takeSequence), logger: logger).decode(Int64.self) { version = value }
            guard let version else { throw ServerError.database("the state row of \(schema.name) is missing") }
            var insert = BoundSQL("WITH inserted AS (INSERT INTO \(table) (id_text, version, record) ")
            if let explicitID {
                insert.append("VALUES (\(insert.bind(scalarText(explicitID) ?? "")), \(insert.bind(version)), \(insert.bind(json: .object(object)))) ")
                insert.append("ON CONFLICT (id_text) DO NOTHING RETURNING record::text) ")
            } else {
                insert.append("SELECT (top.id + 1)::text, \(insert.bind(version)), jsonb_build_object('id', top.id + 1) || \(insert.bind(json: .object(object))) ")
                insert.append("FROM (SELECT coalesce(max(integer_id), 0) AS id FROM \(table)) AS top ")
                insert.append("WHERE top.id >= 0 AND top.id < \(Int.max) AND NOT EXISTS (SELECT 1 FROM \(table) WHERE id_text = (top.id + 1)::text) ")
                insert.append("RETURNING record::text) ")
            }
            insert.append("SELECT inserted.record FROM inserted, pg_notify(\(insert.bind(schema.channel)), \(insert.bind(String(version))))")
            for try await stored in try await connection.query(insert.query, logger: logger).decode(String.self) {
                return ItemWrite.Result(status: 201, body: try JSONValue(parsing: Array(stored.utf8)), version: Int(version))
            }
            if let explicitID { throw APIError.duplicateID(name, given["id"] ?? explicitID) }
            // Rolls back the sequence value; the locking path takes it again.
            throw NoSimpleID()
        }
    }

    private struct NoSimpleID: Error {}

    /// Runs `body` in a transaction, with PostgreSQL's errors as the server's.
    private func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch let error as PostgresTransactionError {
            if let thrown = error.closureError, thrown is RowMoved || thrown is NoSimpleID { throw thrown }
            throw Self.serverError(error)
        } catch {
            throw Self.serverError(error)
        }
    }
}
