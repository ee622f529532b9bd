import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncServer
import PostgresNIO

/// The write checks and membership reads of sharing rules.
///
/// A write's checks (``ItemOperation/checkAccess(to:replacement:_:)``, ``ItemOperation/checkCreate(_:_:)``,
/// ``ItemOperation/duplicateID(_:_:_:)``) evaluate their filters in Swift through
/// ``RowLookups``, which answer synchronously; PostgreSQL answers asynchronously. So before a
/// check the backend reads, in the write's transaction, what the check's filters will ask for:
/// the records up each filter's chain of parents and the caller's memberships of each link, a
/// few indexed reads, whatever the tables' policies say (as the JSON file looks them up).
extension PostgresBackend {
    /// The lookups that `filters` make on `records`, read through `connection` (in the write's
    /// transaction) before the check runs.
    func facts(for filters: [RowFilter], on records: [JSONValue], _ connection: PostgresConnection) async throws -> RowFacts {
        var lookups = ReadAheadLookups()
        var pending: [(RowFilter, JSONValue)] = []
        for filter in filters where filter.needsLookups { pending += records.map { (filter, $0) } }
        while let (filter, record) = pending.popLast() {
            switch filter {
            case .everything, .nothing, .ownedBy:
                continue
            case .member(let link, let userID, _):
                guard lookups.memberships[link]?[ExactText(userID)] == nil else { continue }
                lookups.memberships[link, default: [:]][ExactText(userID)] = try await membershipRows(link, userID: userID, connection)
            case .parent(let field, let collection, let rows):
                guard let parentID = record[field].flatMap(scalarText) else { continue }
                let parent: JSONValue?
                if let known = lookups.records[collection]?[ExactText(parentID)] {
                    parent = known
                } else {
                    parent = try await storedRecord(in: collection, id: parentID, connection)
                    lookups.records[collection, default: [:]][ExactText(parentID)] = .some(parent)
                }
                if let parent { pending.append((rows, parent)) }
            case .any(let filters):
                pending += filters.map { ($0, record) }
            }
        }
        return RowFacts(lookups)
    }

    /// The facts of `operation`'s checks of `filters` on `records`: none without access rules,
    /// or when the filters need no lookups.
    func facts(_ operation: ItemOperation, _ filters: (CollectionAccess) -> [RowFilter], on records: [JSONValue], _ connection: PostgresConnection) async throws -> RowFacts {
        guard let access = operation.access else { return RowFacts(NoRowLookups()) }
        let filters = filters(access)
        guard filters.contains(where: \.needsLookups) else { return RowFacts(NoRowLookups()) }
        return try await facts(for: filters, on: records, connection)
    }

    /// A record of `collection` by id as stored, whoever may read it.
    private func storedRecord(in collection: String, id: String, _ connection: PostgresConnection) async throws -> JSONValue? {
        guard let table = resources[collection]?.table else { return nil }
        var select = BoundSQL()
        if rowSecurity != nil {
            select.append("SELECT \(shared.recordFunction)(\(select.bind(table))::regclass, \(select.bind(id)))")
        } else {
            select.append("SELECT record::text FROM \(table) WHERE id_text = \(select.bind(id))")
        }
        let found: String?? = try await connection.guardedFirst(select.query, as: String?.self, logger: logger)
        guard let text = found ?? nil else { return nil }
        return try JSONValue(parsing: Array(text.utf8))
    }

    /// The rows the memberships of `link` naming `userID` are on, with their roles: one indexed
    /// read (through the link's function under rules, see ``SharedRowsSQL``).
    func membershipRows(_ link: SharingRule.Membership, userID: String, _ connection: PostgresConnection) async throws -> [(rowID: String, role: String)] {
        var select = BoundSQL()
        if rowSecurity != nil {
            guard shared.links.contains(link) else { return [] }
            select.append("SELECT member_row, member_role FROM \(shared.memberFunction(link))(\(select.bind(userID)))")
        } else {
            guard let table = resources[link.collection]?.table else { return [] }
            let source = SharedRowsSQL.Source.table(collection: link.collection, alias: nil)
            let role = schema.literal(link.role)
            select.append("SELECT \(shared.field(link.field, of: source)), record ->> \(role) FROM \(table) WHERE \(shared.field(link.user, of: source)) = ")
            select.append("\(select.bind(userID)) AND \(shared.field(link.field, of: source)) IS NOT NULL AND jsonb_typeof(record -> \(role)) = 'string'")
        }
        var rows: [(rowID: String, role: String)] = []
        for try await (rowID, role) in try await connection.guardedQuery(select.query, logger: logger).decode((String, String).self) { rows.append((rowID, role)) }
        return rows
    }

    func currentChanges(of collection: String, where field: String, isOneOf values: [String], visibility: Visibility) async throws -> [SyncChange] {
        try await currentChanges(of: collection, where: field, isOneOf: values, visibility: visibility, versions: 0...Int.max, limit: Int.max)
    }


    /// The same at versions in `versions`, oldest first, at most `limit`, read by version in
    /// batches until `limit` are shown or none are left.
    func currentChanges(
        of collection: String, where field: String, isOneOf values: [String], visibility: Visibility, versions: ClosedRange<Int>, limit: Int
    ) async throws -> [SyncChange] {
        guard let table = resources[collection]?.table, !values.isEmpty, limit > 0 else { return [] }
        let rows = visibility.rows(of: collection)
        if rows == .nothing { return [] }
        // Open visibility reads every row: the server's own work, whatever the policies say.
        return try await reading(as: visibility.caller, system: visibility.isOpen) { connection in
            var changes: [SyncChange] = []
            var after = versions.lowerBound - 1
            while true {
                var select = BoundSQL("SELECT version, record::text, created_with FROM \(table) WHERE ")
                select.append("\(shared.field(field, of: .table(collection: collection, alias: nil))) = ANY(\(select.bind(values))::text[]) ")
                select.append("AND version > \(select.bind(after)) AND version <= \(select.bind(versions.upperBound)) ")
                select.append("AND \(rowCondition(rows, &select, of: collection)) ORDER BY version")
                select.append(" LIMIT \(select.bind(limit))")
                var read = 0
                for try await (version, text, createdWith) in try await connection.guardedQuery(select.query, logger: logger).decode((Int64, String, String?).self) {
                    read += 1
                    after = Int(version)
                    let record = try JSONValue(parsing: Array(text.utf8))
                    let change = SyncChange(sequence: Int(version), collection: collection, id: record["id"] ?? .null, record: record, createdWith: createdWith)
                    // The statement admitted the row: only the create's key is left to decide.
                    if let shown = try visibility.shown(change, rows: .everything, RowFacts(NoRowLookups())) { changes.append(shown) }
                }
                guard read == limit, changes.count < limit else { break }
            }
            return Array(changes.prefix(limit))
        }
    }

    func deletions(of collection: String, where field: String, isOneOf values: [String], after since: Int) async throws -> [SyncChange] {
        let wanted = Set(values.map(ExactText.init))
        return try await readingOnce { connection in
            // The reader's window of tombstones, by their sequence; the field is read here.
            var select = BoundSQL("SELECT sequence, id::text, fields::text FROM \(schema.tombstones) WHERE sequence > ")
            select.append("\(select.bind(since)) AND collection = \(select.bind(collection)) AND fields IS NOT NULL ORDER BY sequence")
            var found: [SyncChange] = []
            for try await (sequence, id, fields) in try await connection.guardedQuery(select.query, logger: logger).decode((Int64, String, String).self) {
                guard let value = try JSONValue(parsing: Array(fields.utf8))[field].flatMap(scalarText), wanted.contains(ExactText(value)) else { continue }
                found.append(SyncChange(sequence: Int(sequence), collection: collection, id: try JSONValue(parsing: Array(id.utf8)), record: nil))
            }
            return found
        }
    }

    func tombstoneFields(in collection: String, id: JSONValue, sequence: Int) async throws -> JSONObject? {
        // The tombstones have no policies: one read by their key.
        try await readingOnce { connection in
            var select = BoundSQL("SELECT fields::text FROM \(schema.tombstones) WHERE sequence = ")
            select.append("\(select.bind(sequence)) AND collection = \(select.bind(collection)) AND \(schema.textFunction)(id) = \(select.bind(scalarText(id) ?? ""))")
            let found: String?? = try await connection.guardedFirst(select.query, as: String?.self, logger: logger)
            guard let text = found ?? nil else { return nil }
            return try JSONValue(parsing: Array(text.utf8)).objectValue
        }
    }

    func memberships(of userID: String, in links: [SharingRule.Membership]) async throws -> [MembershipList.Entry] {
        guard !links.isEmpty else { return [] }
        return try await reading(as: .anonymous, system: true) { connection in
            var entries: [MembershipList.Entry] = []
            for link in links {
                entries += try await membershipRows(link, userID: userID, connection).map { MembershipList.Entry(link: link, rowID: $0.rowID, role: $0.role) }
            }
            return entries
        }
    }
}

/// What a write's checks look up, read before they run (see ``PostgresBackend/facts(for:on:_:)``).
/// What was not read is not there: a check that asks for more admits less, never more.
private struct ReadAheadLookups: RowLookups {
    /// By collection and id; nil for a record looked for and not found.
    var records: [String: [ExactText: JSONValue?]] = [:]
    var memberships: [SharingRule.Membership: [ExactText: [(rowID: String, role: String)]]] = [:]

    func record(in collection: String, id: String) throws -> JSONValue? {
        records[collection]?[ExactText(id)] ?? nil
    }

    func memberships(in link: SharingRule.Membership, userID: String) throws -> [(rowID: String, role: String)] {
        memberships[link]?[ExactText(userID)] ?? []
    }
}
