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
    /// ``Visibility/shown(_:rows:)``); the tombstones of collections it reads whole, and of its
    /// own rows (the tombstone names the deleted row's owner); and, for a reader of its own rows
    /// only, the departures of rows an admin gave to another owner, as deletions, unless it can
    /// still read the row (then its record is there instead). At most `limit`, each record once.
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
            select.append("\(select.bind(since)) AND \(rowCondition(rows, &select)) ORDER BY version LIMIT \(select.bind(wanted))")
            for try await (version, text, createdWith) in try await connection.guardedQuery(select.query, logger: logger).decode((Int64, String, String?).self) {
                let record = try JSONValue(parsing: Array(text.utf8))
                let change = SyncChange(sequence: Int(version), collection: name, id: record["id"] ?? .null, record: record, createdWith: createdWith)
                if let shown = try visibility.shown(change, rows: rows, RowFacts(NoRowLookups())) { changes.append(shown) }
            }
            var stones = BoundSQL("SELECT sequence, id::text FROM \(schema.tombstones) AS stone WHERE collection = ")
            stones.append("\(stones.bind(name)) AND sequence > \(stones.bind(since))")
            switch rows {
            case .everything:
                stones.append(" AND NOT departed")
            case .member, .parent, .any:
                stones.append(" AND false")
            case .ownedBy(_, let userID):
                stones.append(" AND owner = \(stones.bind(userID)) AND (NOT departed OR NOT EXISTS (SELECT 1 FROM \(table) AS current ")
                stones.append("WHERE current.id_text = \(schema.textFunction)(stone.id) AND \(rowCondition(rows, &stones, record: "current.record"))))")
            case .nothing:
                continue
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

    func reset() async throws {
        guard let initialData else {
            throw ServerError.database("only a server started with data can be reset (SyncServer.start(data:database:))")
        }
        do {
            let replacement = try await Self.replaceData(with: initialData, schema: schema, client: client, logger: logger)
            // Before answering, so that a stream opened after the reset is not ended by it; the
            // notification does the same on the other servers (and finds this one done).
            await relay.rewind(replacement)
            // The tables were made again: so are their policies.
            try await Self.installRowSecurity(rowSecurity, schema: schema, tables: Self.collectionTables(resources), client: client, logger: logger)
        } catch {
            throw Self.serverError(error)
        }
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

/// A replacement of a schema's data (a reset, an import over it): the sequence went back to
/// `sequence`. Sent as a notification on the schema's channel, `replaced:<sequence>:<id>`, where
/// a commit sends its sequence.
struct DataReplacement: Sendable {
    let sequence: Int
    let id: String

    init(sequence: Int) {
        self.sequence = sequence
        self.id = UUID().uuidString
    }

    init?(payload: String) {
        let parts = payload.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "replaced", let sequence = Int(parts[1]) else { return nil }
        (self.sequence, self.id) = (sequence, String(parts[2]))
    }

    var payload: String { "replaced:\(sequence):\(id)" }
}

/// The open change streams of one server, fed in sequence order, each the changes of the
/// collections it watches.
actor ChangeRelay {
    /// What the relay reads after a commit: the changes after `after`, of `collections` (nil:
    /// all), as the streams were at `generation`.
    struct Plan: Sendable {
        let after: Int
        let collections: Set<String>?
        let generation: Int
    }

    private struct Subscriber {
        let continuation: AsyncStream<SyncChange>.Continuation
        /// Nil: every collection.
        let collections: Set<String>?
    }

    private var subscribers: [Int: Subscriber] = [:]
    private var nextID = 0
    private var finished = false
    /// The last sequence value handed to the streams.
    private(set) var delivered: Int
    /// The collections the streams watch (nil: all), and how often that set grew.
    private var watched: Set<String>? = []
    private var generation = 0
    /// The replacements of the data rewound to, the latest last (a few: a listener that lags
    /// may bring an older one's notification after this server made a newer one).
    private var rewoundReplacements: [String] = []

    /// A relay whose streams get the changes after `delivered`: the sequence read when the
    /// server opened, before it took requests, so that a stream reads what came before from the
    /// feed and every later commit reaches it. (Started from a sequence its connection read when
    /// it connected, a commit after a stream's backlog and before that read reached neither.)
    init(delivered: Int) {
        self.delivered = delivered
    }

    /// A stream of the changes of `collections` (nil: all) from the next read on; the caller
    /// reads what came before (its backlog) after subscribing.
    func subscribe(to collections: Set<String>?) -> (id: Int, changes: AsyncStream<SyncChange>) {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncChange.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = nextID
        nextID += 1
        if finished {
            continuation.finish()
        } else {
            subscribers[id] = Subscriber(continuation: continuation, collections: collections)
            let widened = watched.map { current in collections.map { !$0.isSubset(of: current) } ?? true } ?? false
            if widened {
                // A read planned before did not read these collections: see `deliver(_:as:)`.
                watched = collections.flatMap { watched?.union($0) }
                generation += 1
            }
        }
        return (id, stream)
    }

    func unsubscribe(_ id: Int) {
        subscribers.removeValue(forKey: id)?.continuation.finish()
        var union: Set<String>? = []
        for subscriber in subscribers.values {
            union = subscriber.collections.flatMap { union?.union($0) }
        }
        // Narrowing needs no new generation: a read of more collections than watched is harmless.
        watched = union
    }

    /// What to read after a commit.
    func plan() -> Plan {
        Plan(after: delivered, collections: watched, generation: generation)
    }

    /// Whether the changes up to `sequence` (a notification's payload: the sequence after a
    /// commit) need no read: no stream is open (then the relay moves past them), or they were
    /// read already. False when there are streams to feed, or the payload is not a number.
    func skip(to sequence: Int?) -> Bool {
        guard let sequence else { return false }
        if sequence <= delivered { return true }
        guard subscribers.isEmpty else { return false }
        delivered = sequence
        return true
    }

    /// Hands out changes read as `plan` says, in sequence order, each to the streams watching its
    /// collection, then moves past `through`: the read held every change up to it. False
    /// (nothing handed out) when a stream began to watch a collection the read left out: it must
    /// read again. Handing out the rest would move past that collection's changes, which its
    /// stream's backlog, read once it subscribed, may not hold either.
    ///
    /// `through` is the sequence the read saw in the state row, when no more changes followed:
    /// commits come in sequence order, each after those before it (the state row's lock), so the
    /// read saw every change up to it, of collections nobody watches too, and those read as a
    /// later version. Notifications up to it then need no read.
    func deliver(_ changes: [SyncChange], as plan: Plan, through: Int? = nil) -> Bool {
        guard plan.generation == generation else { return false }
        for change in changes where change.sequence > delivered {
            for subscriber in subscribers.values where subscriber.collections?.contains(change.collection) ?? true {
                subscriber.continuation.yield(change)
            }
            delivered = change.sequence
        }
        if let through { delivered = max(delivered, through) }
        return true
    }

    /// Starts again from the sequence the data went back to. Every stream ends: its client's
    /// cursor may be past the new sequence, and reconnecting with it gets a 410 (read everything
    /// again). A read planned before is not delivered (its plan's generation is gone): it may
    /// have seen the old data's sequence. Once per replacement: the server that made it rewinds
    /// before its notification comes.
    func rewind(_ replacement: DataReplacement) {
        guard !rewoundReplacements.contains(replacement.id) else { return }
        rewoundReplacements = rewoundReplacements.suffix(7) + [replacement.id]
        delivered = replacement.sequence
        generation += 1
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers.removeAll()
        watched = []
    }

    func finish() {
        finished = true
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers.removeAll()
        watched = []
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
