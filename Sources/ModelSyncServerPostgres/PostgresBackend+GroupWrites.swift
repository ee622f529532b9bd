import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncServer
import PostgresNIO

/// Independent creates and updates (see ``GroupCommit``), alone or in a group, in one or two
/// statements and no explicit transaction.
///
/// A group of one collection's creates without an id and updates by id whose `If-Match` names at
/// most one version goes first to the collection's write function, one statement that reads
/// nothing before and whose plans PostgreSQL keeps per connection: it takes the sequence values
/// (and the state row's lock), gives the creates the ids after the highest, merges each update
/// into its row as it is then, only if the row has the version `If-Match` names, and fails as a
/// whole unless every write took (a missing row, a stale `If-Match`, an id a string id holds). A
/// group that failed so, and every other group, goes the way below, which answers each write as
/// it should.
///
/// The other way takes two statements: one reads every row they touch, the writes are checked and
/// applied in memory, and one statement takes their sequence values (holding the state row's lock
/// only until it commits) and writes them all, each update only if its row still has the version
/// read: `If-Match` as a compare-and-set. When another write came in between, nothing is written
/// and the group starts again, in the end holding the state row's lock from the read on (then a
/// stale `If-Match` gets its 412). Under that lock round trips bound throughput, so they are what
/// this saves.
///
/// It takes the groups whose writes do not depend on each other: no two touch one record, and
/// the ids that creates pick cannot collide. Other groups, deletes, and writes with an
/// `Idempotency-Key` go one by one under the lock.
extension PostgresBackend {
    /// What one collection's writes in a group touch and change; `step` is a write's place among
    /// the group's sequence values (1, 2, …).
    fileprivate struct CollectionPlan {
        let table: String
        /// Ids read: updated, created with an id, and the ids new records would take.
        var wanted: [String] = []
        var autoCreates = 0
        var highest: Int?
        var rows: [ExactText: (rowID: Int64, version: Int64, record: String)] = [:]
        /// Creates; those without an id (a `rank` above 0) take the highest integer id + `rank`,
        /// counted when the write holds the state row's lock.
        var inserts: [(id: String, rank: Int32, step: Int64, record: String)] = []
        var updates: [(rowID: Int64, version: Int64, step: Int64, record: String)] = []
    }

    /// A record of a collection, both by their bytes.
    private struct RecordKey: Hashable {
        let collection: ExactText
        let id: ExactText

        init(_ collection: String, _ id: String) {
            (self.collection, self.id) = (ExactText(collection), ExactText(id))
        }
    }

    /// A write's answer once the group's statement ran: done already (a refusal), or the stored
    /// record of this step.
    private enum Pending {
        case done(GroupCommit.Outcome)
        case stored(step: Int64, status: Int)
    }

    /// A row moved between the read and the write, or another server took an id meanwhile.
    private struct RowsMoved: Error {}

    /// The integer ids above the highest are too few for the group's creates.
    private struct NoIDAbove: Error {}

    /// How one try of a group went.
    private enum Attempt {
        case written([GroupCommit.Outcome])
        /// Another write landed between the read and the write: nothing was written.
        case moved
        /// An id a create picks is taken: one by one finds the next free one.
        case notTaken
    }

    /// The outcomes of `operations`, or nil when this path does not take them (nothing changed).
    func writeTogether(_ operations: [ItemOperation]) async throws -> [GroupCommit.Outcome]? {
        do {
            if let group = unreadGroup(operations), let outcomes = try await writeUnread(operations, group) { return outcomes }
            guard let plans = plan(operations) else { return nil }
            return try await writeTogether(operations, plans)
        } catch {
            throw Self.serverError(error)
        }
    }

    /// A group of one collection written without reading first, by the collection's write
    /// function (see ``PostgresSchema/writeFunctionCreation(_:)``): creates without an id, and
    /// updates by id; `step` is a write's place in the group (1, 2, …).
    fileprivate struct UnreadGroup {
        let tableName: String
        var createSteps: [Int64] = []
        var createRecords: [String] = []
        var updateIDs: [String] = []
        /// The version `If-Match` names, -1 for any.
        var updateVersions: [Int64] = []
        var updateSteps: [Int64] = []
        var updateBodies: [String] = []
        var updateMerges: [Bool] = []
    }

    /// Writes the group in one statement without reading first; nil (nothing written) when a
    /// write did not take.
    private func writeUnread(_ operations: [ItemOperation], _ group: UnreadGroup) async throws -> [GroupCommit.Outcome]? {
        var call = BoundSQL("SELECT stored_version, stored_record FROM \(schema.writeFunction(group.tableName))(")
        let arguments = [
            call.bind(Int64(operations.count)), call.bind(group.createSteps) + "::bigint[]", call.bind(group.createRecords) + "::text[]",
            call.bind(group.updateIDs) + "::text[]", call.bind(group.updateVersions) + "::bigint[]", call.bind(group.updateSteps) + "::bigint[]",
            call.bind(group.updateBodies) + "::text[]", call.bind(group.updateMerges) + "::boolean[]",
        ]
        call.append(arguments.joined(separator: ", ") + ")")
        let written: (base: Int64?, stored: [Int64: String])
        do {
            written = try await client.withConnection { connection in
                var base: Int64?
                var stored: [Int64: String] = [:]
                for try await (version, record) in try await connection.guardedQuery(call.query, logger: logger).decode((Int64, String?).self) {
                    if let record { stored[version] = record } else { base = version }
                }
                return (base, stored)
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == Self.rowsMovedState || error.serverInfo?[.sqlState] == "22003" {
            // A write did not take, or new ids would pass `Int.max`: the usual way answers.
            return nil
        } catch where Self.isUnanswered(error) {
            throw Self.commitOutcomeUnknown
        }
        guard let base = written.base else { throw ServerError.database("the state row of \(schema.name) is missing") }
        groupsWrittenUnread.withLock { $0 += 1 }
        return operations.indices.map { index in
            let version = base + Int64(index) + 1
            let status = if case .create = operations[index].write { 201 } else { 200 }
            return Result {
                guard let text = written.stored[version] else { throw ServerError.database("a grouped write's row was not returned") }
                return ItemWrite.Result(status: status, body: try JSONValue(parsing: Array(text.utf8)), version: Int(version))
            }
        }
    }

    /// The group as one collection's writes without reading first (see above), or nil when a
    /// write needs the rows read: a create with an id, a write with an `Idempotency-Key`, a delete, two
    /// writes to one record, an `If-Match` naming several versions, writes to several
    /// collections, or a write refused whatever the rows hold.
    private func unreadGroup(_ operations: [ItemOperation]) -> UnreadGroup? {
        var group: UnreadGroup?
        var touched = Set<ExactText>()
        for (index, operation) in operations.enumerated() {
            let step = Int64(index) + 1
            let name = operation.write.collection
            guard operation.idempotencyKey == nil, let tableName = resources[name]?.tableName, group.map({ $0.tableName == tableName }) ?? true else { return nil }
            var current = group ?? UnreadGroup(tableName: tableName)
            switch operation.write {
            case .create(_, var body):
                guard body["id"] ?? .null == .null else { return nil }
                body["id"] = nil
                let record = JSONValue.object(body)
                guard !record.containsNUL else { return nil }
                current.createSteps.append(step)
                current.createRecords.append(String(decoding: record.jsonBytes(), as: UTF8.self))
            case .update(_, let id, var body, let merge):
                guard (try? ItemWrite.checkBodyID(body, matches: id)) != nil, let expected = Self.expectedVersion(operation.ifMatch),
                      touched.insert(ExactText(id)).inserted
                else { return nil }
                body["id"] = nil
                let changes = JSONValue.object(body)
                guard !changes.containsNUL else { return nil }
                current.updateIDs.append(id)
                current.updateVersions.append(expected)
                current.updateSteps.append(step)
                current.updateBodies.append(String(decoding: changes.jsonBytes(), as: UTF8.self))
                current.updateMerges.append(merge)
            case .delete:
                return nil
            }
            group = current
        }
        return group
    }

    /// The version an `If-Match` asks for: -1 for any (none, or `*`), nil when it names several or
    /// none that a version's ETag could be (see ``checkIfMatch(_:version:_:)``).
    static func expectedVersion(_ ifMatch: String?) -> Int64? {
        guard let ifMatch else { return -1 }
        let tags = etagList(ifMatch)
        if tags.contains("*") { return -1 }
        guard tags.count == 1, var tag = tags.first else { return nil }
        if tag.hasPrefix("W/") { tag.removeFirst(2) }
        guard tag.count >= 3, tag.hasPrefix("\""), tag.hasSuffix("\"") else { return nil }
        let digits = String(tag.dropFirst().dropLast())
        // Only the spelling `versionETag` gives ("007" is no version's tag).
        guard let version = Int64(digits), version >= 0, String(version) == digits else { return nil }
        return version
    }

    private func writeTogether(_ operations: [ItemOperation], _ plans: [String: CollectionPlan]) async throws -> [GroupCommit.Outcome]? {
        var attempt = Attempt.moved
        // Another server wrote the same rows or took the same ids: try again a few times (a try
        // costs two round trips), then under the state row's lock, where nothing moves.
        for _ in 0..<3 {
            attempt = try await client.withConnection { connection in try await write(operations, plans, committing: true, connection) }
            guard case .moved = attempt else { break }
            groupsMoved.withLock { $0 += 1 }
        }
        if case .moved = attempt {
            attempt = try await client.guardedTransaction(logger: logger) { connection in
                try await connection.guardedRun(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(schema.state) FOR UPDATE"), logger: logger)
                return try await write(operations, plans, committing: false, connection)
            }
        }
        guard case .written(let outcomes) = attempt else { return nil }
        return outcomes
    }

    /// Reads the rows, applies the writes in memory and writes them in one statement, which
    /// commits unless a transaction is open (`committing`).
    private func write(
        _ operations: [ItemOperation], _ plans: [String: CollectionPlan], committing: Bool, _ connection: PostgresConnection
    ) async throws -> Attempt {
        var plans = plans
        let names = plans.keys.sorted()
        try await readRows(names, &plans, connection)
        guard let (pending, steps) = try applyInMemory(operations, &plans) else { return .notTaken }
        let written: (base: Int64, stored: [Int64: String])
        do {
            written = steps == 0 ? (0, [:]) : try await writeRows(names, plans, steps: steps, connection)
        } catch is RowsMoved {
            return .moved
        } catch is NoIDAbove {
            return .notTaken
        } catch where committing && Self.isUnanswered(error) {
            throw Self.commitOutcomeUnknown
        }
        // Written: from here on nothing throws, or the caller would write them again.
        return .written(pending.map { pending in
            switch pending {
            case .done(let outcome):
                return outcome
            case .stored(let step, let status):
                let version = written.base + step
                return Result {
                    guard let text = written.stored[version] else { throw ServerError.database("a grouped write's row was not returned") }
                    return ItemWrite.Result(status: status, body: try JSONValue(parsing: Array(text.utf8)), version: Int(version))
                }
            }
        })
    }

    /// Each collection's ids to read, or nil when the writes are not independent.
    private func plan(_ operations: [ItemOperation]) -> [String: CollectionPlan]? {
        var plans: [String: CollectionPlan] = [:]
        var touched = Set<RecordKey>()
        for operation in operations {
            let name: String
            let id: String?
            // A write with an `Idempotency-Key` goes alone under the lock, where its key is read.
            guard operation.idempotencyKey == nil else { return nil }
            switch operation.write {
            case .create(let collection, let body):
                name = collection
                // A bad id is refused later; here it only counts as a create without one.
                id = body["id"].flatMap { $0 == .null ? nil : try? normalizedID($0) }.flatMap(scalarText)
            case .update(let collection, let itemID, _, _):
                name = collection
                id = itemID
            case .delete:
                return nil
            }
            // An id PostgreSQL cannot hold (NUL) is not read: the write alone answers its 422.
            if id?.utf8.contains(0) == true { return nil }
            guard let table = resources[name]?.table else { continue }
            if let id {
                guard touched.insert(RecordKey(name, id)).inserted else { return nil }
                plans[name, default: CollectionPlan(table: table)].wanted.append(id)
            } else {
                plans[name, default: CollectionPlan(table: table)].autoCreates += 1
            }
        }
        return plans
    }

    /// Checks and applies the writes in order against the rows read; the answers and how many
    /// sequence values they take, or nil when a new id would land on a taken one.
    private func applyInMemory(_ operations: [ItemOperation], _ plans: inout [String: CollectionPlan]) throws -> ([Pending], steps: Int64)? {
        var pending: [Pending] = []
        var steps: Int64 = 0
        var created = Set<RecordKey>()
        for operation in operations {
            do {
                switch operation.write {
                case .create(let name, let given):
                    _ = try table(of: name)
                    guard var plan = plans[name] else { return nil }
                    var object = given
                    let id: JSONValue
                    var rank: Int32 = 0
                    if let explicit = given["id"], explicit != .null {
                        id = try normalizedID(explicit)
                        let text = scalarText(id) ?? ""
                        if plan.rows[ExactText(text)] != nil { throw APIError.duplicateID(name, explicit) }
                        // New records' ids could land on it or, above the highest, follow it.
                        if plan.autoCreates > 0, id.intValue.map({ $0 > (plan.highest ?? 0) }) ?? (Int(text) != nil) { return nil }
                        object["id"] = id
                    } else {
                        let highest = plan.highest ?? 0
                        guard highest < Int.max else { return nil }
                        let next = max(highest, 0) + 1
                        guard plan.rows[ExactText(String(next))] == nil, !created.contains(RecordKey(name, String(next))) else { return nil }
                        // Checked against the ids read; the statement takes the one after the
                        // highest when it writes, another server's creates included.
                        id = .number(JSONNumber(next))
                        object["id"] = nil
                        plan.highest = next
                        rank = Int32(clamping: plan.inserts.count(where: { $0.rank > 0 }) + 1)
                    }
                    try Self.checkStorable(.object(object))
                    steps += 1
                    created.insert(RecordKey(name, scalarText(id) ?? ""))
                    plan.inserts.append((scalarText(id) ?? "", rank, steps, String(decoding: JSONValue.object(object).jsonBytes(), as: UTF8.self)))
                    plans[name] = plan
                    pending.append(.stored(step: steps, status: 201))
                case .update(let name, let id, let body, let merge):
                    try ItemWrite.checkBodyID(body, matches: id)
                    _ = try table(of: name)
                    guard let row = plans[name]?.rows[ExactText(id)] else { throw APIError.missing(name, id) }
                    let current = try JSONValue(parsing: Array(row.record.utf8))
                    try checkIfMatch(current, version: Int(row.version), operation.ifMatch)
                    let updated = JSONValue.object(ItemWrite.updated(current, with: body, merge: merge))
                    try Self.checkStorable(updated)
                    steps += 1
                    plans[name]?.updates.append((row.rowID, row.version, steps, String(decoding: updated.jsonBytes(), as: UTF8.self)))
                    pending.append(.stored(step: steps, status: 200))
                case .delete:
                    return nil
                }
            } catch let error as APIError {
                pending.append(.done(.failure(error)))
            }
        }
        return (pending, steps)
    }

    /// One statement reads every collection's wanted rows, its highest integer id and the rows
    /// holding the ids its creates would take.
    private func readRows(_ names: [String], _ plans: inout [String: CollectionPlan], _ connection: PostgresConnection) async throws {
        var read = BoundSQL()
        var parts: [String] = []
        for (index, name) in names.enumerated() {
            guard let plan = plans[name] else { continue }
            // One array of ids, so that the lookup is one index scan (`= ANY(…) OR IN (subquery)`
            // scanned the whole table).
            var ids = "\(read.bind(plan.wanted))::text[]"
            if plan.autoCreates > 0 {
                let floor = "(SELECT deleted_id FROM \(schema.resources) WHERE name = \(read.bind(name)))"
                let top = "(SELECT greatest(coalesce(max(integer_id), 0), 0, \(floor)) AS id FROM \(plan.table))"
                ids += " || ARRAY(SELECT (top.id + step)::text FROM \(top) AS top, generate_series(1, \(read.bind(plan.autoCreates))) AS step)"
                parts.append("SELECT \(index), NULL::bigint, NULL::bigint, top.id::text, NULL::text FROM \(top) AS top")
            }
            parts.append("SELECT \(index), row_id, version, id_text, record::text FROM \(plan.table) WHERE id_text = ANY(\(ids))")
        }
        guard !parts.isEmpty else { return }
        read.append(parts.map { "(\($0))" }.joined(separator: " UNION ALL "))
        let rows = try await connection.guardedQuery(read.query, logger: logger).decode((Int32, Int64?, Int64?, String?, String?).self)
        for try await (index, rowID, version, id, record) in rows {
            let name = names[Int(index)]
            if let rowID, let version, let id, let record {
                plans[name]?.rows[ExactText(id)] = (rowID, version, record)
            } else {
                // Above `Int.max` (imported data): no simple next id; one by one finds one.
                plans[name]?.highest = id.flatMap { Int($0) } ?? Int.max
            }
        }
    }

    /// One statement takes `steps` sequence values and writes every collection's inserts and
    /// updates; returns the sequence value before them and the stored records by version. Throws
    /// ``RowsMoved`` (having written nothing) when a row moved or an id was taken since the read.
    private func writeRows(
        _ names: [String], _ plans: [String: CollectionPlan], steps: Int64, _ connection: PostgresConnection
    ) async throws -> (base: Int64, stored: [Int64: String]) {
        var write = BoundSQL("WITH taken AS (UPDATE \(schema.state) SET sequence = sequence + ")
        let count = write.bind(steps)
        write.append("\(count), modified = \(Self.nextModified) RETURNING sequence - \(count) AS base)")
        var written: [String] = []
        for (index, name) in names.enumerated() {
            guard let plan = plans[name] else { continue }
            if !plan.inserts.isEmpty {
                // Inserted in the group's order: `row_id` is the list order. New ids follow the
                // highest once the state row is locked (`taken`), so creates through two servers
                // do not collide; an id taken since the read inserts nothing, and the count below
                // notices.
                let top = "\(schema.highestIDFunction)(\(write.bind(plan.table))::regclass, \(write.bind(plan.autoCreates))::integer, (SELECT base FROM taken))"
                write.append("""
                    , inserted_\(index) AS (INSERT INTO \(plan.table) (id_text, version, record) \
                    SELECT CASE WHEN given.rank > 0 THEN (top.id + given.rank)::text ELSE given.id END, (SELECT base FROM taken) + given.step, \
                    CASE WHEN given.rank > 0 THEN jsonb_build_object('id', top.id + given.rank) || given.record::jsonb ELSE given.record::jsonb END \
                    FROM unnest(\(write.bind(plan.inserts.map(\.id)))::text[], \(write.bind(plan.inserts.map(\.rank)))::integer[], \
                    \(write.bind(plan.inserts.map(\.step)))::bigint[], \(write.bind(plan.inserts.map(\.record)))::text[]) \
                    WITH ORDINALITY AS given(id, rank, step, record, position), (SELECT \(top) AS id) AS top ORDER BY position \
                    ON CONFLICT (id_text) DO NOTHING RETURNING version, record::text)
                    """)
                written.append("SELECT version, record FROM inserted_\(index)")
            }
            if !plan.updates.isEmpty {
                write.append("""
                    , updated_\(index) AS (UPDATE \(plan.table) AS target \
                    SET version = (SELECT base FROM taken) + given.step, record = given.record::jsonb \
                    FROM unnest(\(write.bind(plan.updates.map(\.rowID)))::bigint[], \(write.bind(plan.updates.map(\.version)))::bigint[], \
                    \(write.bind(plan.updates.map(\.step)))::bigint[], \(write.bind(plan.updates.map(\.record)))::text[]) \
                    AS given(row_id, version, step, record) \
                    WHERE target.row_id = given.row_id AND target.version = given.version RETURNING target.version, target.record::text)
                    """)
                written.append("SELECT version, record FROM updated_\(index)")
            }
        }
        write.append(", written AS (\(written.joined(separator: " UNION ALL ")))")
        // A single statement rolls itself back only by failing: dividing by zero when fewer rows
        // were written than planned (a row moved, an id was taken) is that failure. `ok` is
        // materialized and read, or PostgreSQL would never compute it.
        write.append(", checked AS MATERIALIZED (SELECT 1 / (CASE WHEN (SELECT count(*) FROM written) = \(count) THEN 1 ELSE 0 END) AS ok)")
        write.append(" SELECT version, record FROM written UNION ALL ")
        write.append("SELECT base, NULL FROM taken, checked, pg_notify(\(write.bind(schema.channel)), (base + \(count))::text) WHERE checked.ok = 1")
        var base: Int64?
        var stored: [Int64: String] = [:]
        do {
            for try await (version, record) in try await connection.guardedQuery(write.query, logger: logger).decode((Int64, String?).self) {
                if let record { stored[version] = record } else { base = version }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == Self.rowsMovedState {
            throw RowsMoved()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "22003" {
            // New ids would pass `Int.max`: one by one finds free ones below.
            throw NoIDAbove()
        }
        guard let base else { throw ServerError.database("the state row of \(schema.name) is missing") }
        return (base, stored)
    }

    /// The SQLSTATE of a group's statement when a write did not take (nothing is written): a
    /// division by zero in ``writeRows(_:_:steps:_:)``, raised as such by the write functions.
    static let rowsMovedState = "22012"

    /// `modified` after a write: now, to the second (as `Last-Modified`), and always later than
    /// before.
    static let nextModified = "greatest(date_trunc('second', now()), modified + interval '1 second')"
}
