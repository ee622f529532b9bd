import Foundation
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncServer
import PostgresNIO

extension PostgresBackend {
    func changes(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> FeedPage {
        try await reading(as: visibility.caller) { connection in try await changes(after: cursor, in: collections, limit: limit, visibility, connection) }
    }

    private func changes(
        after cursor: FeedCursor, in collections: Set<String>?, limit: Int, _ visibility: Visibility, _ connection: PostgresConnection
    ) async throws -> FeedPage {
        let (since, sequence) = try await start(of: cursor, connection)
        let (changes, more): ([SyncChange], Bool)
        if visibility.isOpen {
            let read = try await Self.readChanges(after: since, in: collections, limit: limit, schema: schema, resources: resources, connection, logger)
            (changes, more) = (read.changes, read.more)
        } else {
            (changes, more) = try await readChanges(after: since, in: collections, limit: limit, visibility, connection)
        }
        return FeedPage(changes: changes, more: more, next: more ? changes.last?.sequence ?? since : max(sequence, since))
    }

    /// Where a read of the feed starts (`since`) and the sequence now; a 410 when the cursor is
    /// older than the tombstones kept, or past the last change (the data was replaced).
    private func start(of cursor: FeedCursor, _ connection: PostgresConnection) async throws -> (since: Int, sequence: Int) {
        let query = PostgresQuery(unsafeSQL: "SELECT sequence, horizon FROM \(schema.state)")
        let state = try await connection.guardedFirst(query, as: (Int64, Int64).self, logger: logger)
        let sequence = Int(state?.0 ?? 0)
        return (try cursor.start(sequence: sequence, horizon: Int(state?.1 ?? 0)), sequence)
    }

    /// The feed's page with each change written as the answer sends it. For a reader of every
    /// row, the records (and ids) go from PostgreSQL's `jsonb` text into the answer as they are,
    /// in the order the statement gives them: reading them into values only to write them out
    /// again was a third of the server's time in a first sync. Under rules each record is read,
    /// to show it only as its reader may see it.
    func encodedChanges(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> EncodedFeedPage {
        guard visibility.isOpen else {
            return EncodedFeedPage(try await changes(after: cursor, in: collections, limit: limit, visibility: visibility))
        }
        return try await reading(as: visibility.caller) { connection in
            let (since, sequence) = try await start(of: cursor, connection)
            let (query, names) = Self.openFeed(after: since, in: collections, limit: limit, current: false, schema: schema, resources: resources)
            let collectionNames = names.map { JSONValue.string($0).jsonBytes() }
            var writer = JSONWriter(capacity: 64 * 1024)
            var (count, last, more) = (0, since, false)
            for try await row in try await connection.guardedQuery(query, logger: logger) {
                // The rows past the page are only counted: `more`.
                guard count < limit else {
                    more = true
                    continue
                }
                let (place, version, text, extra, id) = try row.decode((Int32, Int64, String, String?, String?).self)
                if count > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeASCII(#"{"seq":"#)
                writer.writeInteger(version)
                writer.writeASCII(#","collection":"#)
                if place >= 0, Int(place) < collectionNames.count {
                    writer.writeRaw(collectionNames[Int(place)])
                    writer.writeASCII(#","id":"#)
                    // A record without an id (`record -> 'id'` is NULL) is named by null, as when read.
                    writer.writeText(id ?? "null")
                    writer.writeASCII(#","deleted":false,"record":"#)
                    writer.writeText(text)
                    if let extra {
                        writer.writeASCII(#","createdWith":"#)
                        writer.writeString(extra)
                    }
                } else {
                    writer.writeString(extra ?? "")
                    writer.writeASCII(#","id":"#)
                    writer.writeText(text)
                    writer.writeASCII(#","deleted":true"#)
                }
                writer.writeByte(UInt8(ascii: "}"))
                (count, last) = (count + 1, Int(version))
            }
            return EncodedFeedPage(changes: writer.bytes, more: more, next: more ? last : max(sequence, since))
        }
    }

    /// The feed's statement for a reader of every row: the changes after `since` of
    /// `collections` (nil: all), each collection's by its version index and the tombstones, at
    /// most `limit + 1` of each, in sequence order. One round trip whatever the number of
    /// collections. A row: its collection's place in `names` (-1: a tombstone; -2: with
    /// `current`, the state row), its sequence value, the record (a tombstone's id) as text, the
    /// create's key (a tombstone's collection), and the record's id as text.
    private static func openFeed(
        after since: Int, in collections: Set<String>?, limit: Int, current: Bool, schema: PostgresSchema, resources: [String: Resource]
    ) -> (query: PostgresQuery, names: [String]) {
        let wanted = min(limit, Int(Int32.max) - 1) + 1
        var select = BoundSQL()
        let (after, most) = (select.bind(since), select.bind(wanted))
        let tables = resources.sorted(by: { $0.key < $1.key }).compactMap { name, resource in
            resource.kind == .collection && (collections?.contains(name) ?? true) ? resource.table.map { (name, $0) } : nil
        }
        var parts = tables.enumerated().map { index, named in
            "SELECT \(index), version, record::text, created_with, (record -> 'id')::text FROM \(named.1) WHERE version > \(after) ORDER BY version LIMIT \(most)"
        }
        // Departures are deletions only for the former owner (see the feed under rules below).
        var tombstones = "SELECT -1, sequence, id::text, collection, NULL FROM \(schema.tombstones) WHERE NOT departed AND sequence > \(after)"
        if let collections { tombstones += " AND collection = ANY(\(select.bind(Array(collections)))::text[])" }
        parts.append(tombstones + " ORDER BY sequence LIMIT \(most)")
        if current { parts.append("SELECT -2, sequence, '', NULL, NULL FROM \(schema.state)") }
        // A subquery: a lone part's own ORDER BY would clash with the outer one.
        select.append("SELECT * FROM (" + parts.map { "(\($0))" }.joined(separator: " UNION ALL ") + ") AS feed ORDER BY 2")
        return (select.query, tables.map(\.0))
    }

    /// The changes after `since`, at most `limit`, and whether more follow (see
    /// ``openFeed(after:in:limit:current:schema:resources:)``): the change stream's relay reads
    /// them after commits of every server. With `current`, it also reads the state row's
    /// sequence as that statement saw it (`through`): unless more follow, every change of the
    /// collections up to it is among those read, since commits come in sequence order.
    static func readChanges(
        after since: Int, in collections: Set<String>?, limit: Int, current: Bool = false, schema: PostgresSchema, resources: [String: Resource],
        _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> (changes: [SyncChange], more: Bool, through: Int?) {
        let (query, names) = openFeed(after: since, in: collections, limit: limit, current: current, schema: schema, resources: resources)
        var changes: [SyncChange] = []
        var (more, through): (Bool, Int?) = (false, nil)
        for try await row in try await connection.guardedQuery(query, logger: logger) {
            let (place, sequence, text, extra, _) = try row.decode((Int32, Int64, String, String?, String?).self)
            if place == -2 {
                through = Int(sequence)
            } else if changes.count == limit {
                more = true
            } else if place >= 0, Int(place) < names.count {
                let record = try JSONValue(parsing: Array(text.utf8))
                changes.append(SyncChange(sequence: Int(sequence), collection: names[Int(place)], id: record["id"] ?? .null, record: record, createdWith: extra))
            } else if let collection = extra {
                changes.append(SyncChange(sequence: Int(sequence), collection: collection, id: try JSONValue(parsing: Array(text.utf8)), record: nil))
            }
        }
        return (changes, more, through)
    }

    /// The changes after `since` that `visibility` admits, each collection's filtered in SQL:
    /// the records the reader may read (without the create's key unless it owns them, see
    /// ``Visibility/shown(_:rows:_:)``); the tombstones of collections it reads whole, of its
    /// own rows (the tombstone names the deleted row's owner), and under a sharing rule those
    /// whose kept fields its filter admits; and the departures of rows that left its view (given
    /// to another owner, moved to another board), as deletions, unless it can still read the row
    /// (then its record is there instead). At most `limit`, each record once.
    private func readChanges(
        after since: Int, in collections: Set<String>?, limit: Int, _ visibility: Visibility, _ connection: PostgresConnection
    ) async throws -> (changes: [SyncChange], more: Bool) {
        let wanted = min(limit, Int(Int32.max) - 1) + 1
        var changes: [SyncChange] = []
        var removals: [SyncChange] = []
        for (name, resource) in resources.sorted(by: { $0.key < $1.key }) where resource.kind == .collection && (collections?.contains(name) ?? true) {
            guard let table = resource.table else { continue }
            let rows = visibility.rows(of: name)
            if rows == .nothing { continue }
            var select = BoundSQL("SELECT version, record::text, created_with FROM \(table) WHERE version > ")
            select.append("\(select.bind(since)) AND \(rowCondition(rows, &select, of: name)) ORDER BY version LIMIT \(select.bind(wanted))")
            for try await (version, text, createdWith) in try await connection.guardedQuery(select.query, logger: logger).decode((Int64, String, String?).self) {
                let record = try JSONValue(parsing: Array(text.utf8))
                let change = SyncChange(sequence: Int(version), collection: name, id: record["id"] ?? .null, record: record, createdWith: createdWith)
                // The statement admitted the row: only the create's key is left to decide.
                if let shown = try visibility.shown(change, rows: .everything, RowFacts(NoRowLookups())) { changes.append(shown) }
            }
            var stones = BoundSQL("SELECT sequence, id::text FROM \(schema.tombstones) AS stone WHERE collection = ")
            stones.append("\(stones.bind(name)) AND sequence > \(stones.bind(since))")
            switch rows {
            case .everything:
                stones.append(" AND NOT departed")
            case .nothing:
                continue
            default:
                // A tombstone of an owner's row names its owner; under a sharing rule it keeps the
                // fields the rule reads, and shows to those whose filter admits them (a parent
                // deleted too is read from its own tombstone).
                var byOwner = "false"
                if case .ownedBy(_, let userID) = rows { byOwner = "stone.owner = \(stones.bind(userID))" }
                let byFields = shared.condition(rows, of: .json("stone.fields"), user: { stones.bind($0) }, tombstones: true)
                stones.append(" AND ((stone.fields IS NULL AND \(byOwner)) OR (stone.fields IS NOT NULL AND \(byFields)))")
                // A departure only while the reader cannot read the row as it is now.
                stones.append(" AND (NOT departed OR NOT EXISTS (SELECT 1 FROM \(table) AS current ")
                stones.append("WHERE current.id_text = \(schema.textFunction)(stone.id) AND \(rowCondition(rows, &stones, of: name, alias: "current"))))")
            }
            stones.append(" ORDER BY sequence LIMIT \(stones.bind(wanted))")
            for try await (sequence, id) in try await connection.guardedQuery(stones.query, logger: logger).decode((Int64, String).self) {
                removals.append(SyncChange(sequence: Int(sequence), collection: name, id: try JSONValue(parsing: Array(id.utf8)), record: nil))
            }
        }
        // A row that left twice, or left and was deleted: its last removal only.
        var last: [String: Int] = [:]
        for removal in removals {
            let key = removal.collection + "\u{0}" + (scalarText(removal.id) ?? "")
            last[key] = max(last[key] ?? 0, removal.sequence)
        }
        changes += removals.filter { last[$0.collection + "\u{0}" + (scalarText($0.id) ?? "")] == $0.sequence }
        changes.sort { $0.sequence < $1.sequence }
        return (Array(changes.prefix(limit)), changes.count > limit)
    }

    func subscribe(to collections: Set<String>?) async -> (id: Int, changes: AsyncStream<SyncChange>) {
        await relay.subscribe(to: collections)
    }

    func unsubscribe(_ id: Int) async {
        await relay.unsubscribe(id)
    }

    /// Follows `NOTIFY`s of the schema's channel for as long as the server runs, reconnecting
    /// after an error, and hands each committed change (of every server sharing the database)
    /// to the relay in sequence order.
    ///
    /// Under access rules (`security`) each read reads every row (`modelsync.system`, for its
    /// transaction only, as the requests' role): the routes filter each stream's changes.
    static func listen(
        _ schema: PostgresSchema, _ resources: [String: Resource], _ client: PostgresClient, _ relay: ChangeRelay, security: RowSecurity?,
        _ logger: Logger
    ) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    // Listening before the catch-up read: a write committed in between is notified.
                    // The catch-up reads from the relay's last change (where the server started, or
                    // where the lost connection left off), never from a sequence read here: a write
                    // committed before such a read and after a stream read its backlog would reach
                    // neither. Cancelling the task ends the notifications; the pool must still be
                    // running then, for the UNLISTEN and the release (see `close()`).
                    try await connection.listen(on: schema.channel) { notifications in
                        try await catchUp(schema, resources, connection, relay, security: security, logger)
                        for try await notification in notifications {
                            if let replacement = DataReplacement(payload: notification.payload) {
                                await relay.rewind(replacement)
                                continue
                            }
                            // Nothing to read: nobody to hand the changes to (a stream that opens
                            // later reads its backlog itself, after subscribing), or an earlier
                            // read already went past this commit (notifications queue up while a
                            // read runs: one read serves them all).
                            let notified = Int(notification.payload)
                            if await relay.skip(to: notified) { continue }
                            try await catchUp(schema, resources, connection, relay, security: security, logger)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                // PostgreSQL's message: a PSQLError describes itself as a generic sentence.
                logger.warning("the change stream lost PostgreSQL; reconnecting", metadata: ["error": "\(serverError(error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Reads the changes after the relay's last one and hands them over. Under access rules each
    /// read is a transaction that reads every row (`modelsync.system`, as the requests' role),
    /// set for that transaction only: the pooled connection goes back to the pool without it.
    private static func catchUp(
        _ schema: PostgresSchema, _ resources: [String: Resource], _ connection: PostgresConnection, _ relay: ChangeRelay,
        security: RowSecurity?, _ logger: Logger
    ) async throws {
        while true {
            // Only the collections some stream watches: the others' records are not decoded.
            let plan = await relay.plan()
            let read = {
                try await readChanges(
                    after: plan.after, in: plan.collections, limit: 1_000, current: true, schema: schema, resources: resources, connection, logger)
            }
            let (changes, more, through) = if let security { try await asSystem(security, connection, logger, read) } else { try await read() }
            // A stream began to watch another collection meanwhile: read again, with it.
            guard await relay.deliver(changes, as: plan, through: more ? nil : through) else { continue }
            if !more { return }
        }
    }
}

extension PostgresBackend {
    /// Runs `body` in a transaction on `connection` that reads every row, as the requests' role.
    static func asSystem<T: Sendable>(
        _ security: RowSecurity, _ connection: PostgresConnection, _ logger: Logger, _ body: () async throws -> T
    ) async throws -> T {
        try await connection.guardedRun("BEGIN", logger: logger)
        do {
            var system = BoundSQL("SELECT set_config('modelsync.system', 'on', true)")
            if let role = security.role { system.append(", set_config('role', \(system.bind(role)), true)") }
            try await connection.guardedRun(system.query, logger: logger)
            let result = try await body()
            try await connection.guardedRun("COMMIT", logger: logger)
            return result
        } catch {
            try? await connection.guardedRun("ROLLBACK", logger: logger)
            throw error
        }
    }
}

extension JSONWriter {
    /// Appends JSON text as it is: PostgreSQL's `jsonb` output, always valid JSON.
    fileprivate mutating func writeText(_ text: String) {
        var text = text
        text.withUTF8 { writeRaw($0) }
    }

    /// Appends an ASCII literal without allocating.
    fileprivate mutating func writeASCII(_ literal: StaticString) {
        literal.withUTF8Buffer { writeRaw($0) }
    }
}
