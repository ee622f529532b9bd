import Foundation
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncServer
import PostgresNIO

extension PostgresBackend {
    func changes(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> FeedPage {
        try await reading { connection in try await changes(after: cursor, in: collections, limit: limit, connection) }
    }

    private func changes(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, _ connection: PostgresConnection) async throws -> FeedPage {
        let query = PostgresQuery(unsafeSQL: "SELECT sequence, horizon FROM \(schema.state)")
        let state = try await connection.guardedFirst(query, as: (Int64, Int64).self, logger: logger)
        let (sequence, horizon) = (Int(state?.0 ?? 0), Int(state?.1 ?? 0))
        let since: Int
        switch cursor {
        case .now: since = sequence
        case .after(let value): since = value
        }
        guard since >= horizon else { throw APIError.cursorTooOld(horizon: horizon) }
        let (changes, more) = try await Self.readChanges(
            after: since, in: collections, limit: limit, schema: schema, resources: resources, connection, logger)
        return FeedPage(changes: changes, more: more, next: more ? changes.last?.sequence ?? since : max(sequence, since))
    }

    /// The changes after `since`: each collection's by its version index and the tombstones, at
    /// most `limit + 1` of each, merged in sequence order; at most `limit`, and whether more follow.
    static func readChanges(
        after since: Int, in collections: Set<String>?, limit: Int, schema: PostgresSchema, resources: [String: Resource],
        _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> (changes: [SyncChange], more: Bool) {
        let wanted = min(limit, Int(Int32.max) - 1) + 1
        var changes: [SyncChange] = []
        for (name, resource) in resources.sorted(by: { $0.key < $1.key }) where resource.kind == .collection && (collections?.contains(name) ?? true) {
            guard let table = resource.table else { continue }
            var select = BoundSQL("SELECT version, record::text, created_with FROM \(table) WHERE version > ")
            select.append("\(select.bind(since)) ORDER BY version LIMIT \(select.bind(wanted))")
            for try await (version, text, createdWith) in try await connection.guardedQuery(select.query, logger: logger).decode((Int64, String, String?).self) {
                let record = try JSONValue(parsing: Array(text.utf8))
                changes.append(SyncChange(sequence: Int(version), collection: name, id: record["id"] ?? .null, record: record, createdWith: createdWith))
            }
        }
        var tombstones = BoundSQL("SELECT sequence, collection, id::text FROM \(schema.tombstones) WHERE sequence > ")
        tombstones.append(tombstones.bind(since))
        if let collections { tombstones.append(" AND collection = ANY(\(tombstones.bind(Array(collections)))::text[])") }
        tombstones.append(" ORDER BY sequence LIMIT \(tombstones.bind(wanted))")
        for try await (sequence, collection, id) in try await connection.guardedQuery(tombstones.query, logger: logger).decode((Int64, String, String).self) {
            changes.append(SyncChange(sequence: Int(sequence), collection: collection, id: try JSONValue(parsing: Array(id.utf8)), record: nil))
        }
        changes.sort { $0.sequence < $1.sequence }
        return (Array(changes.prefix(limit)), changes.count > limit)
    }

    func subscribe() async -> (id: Int, changes: AsyncStream<SyncChange>) {
        await relay.subscribe()
    }

    func unsubscribe(_ id: Int) async {
        await relay.unsubscribe(id)
    }

    // Built-in accounts need access rules, which a PostgreSQL server refuses so far
    // (`SyncServer.start(database:)`): these are never reached.
    func register(email: String, passwordHash: String, profile: JSONObject, in collection: String) async throws -> (user: JSONValue, account: StoredAccount) {
        throw ServerError.unsupported("built-in accounts are not kept in PostgreSQL yet")
    }

    func account(email: String, in collection: String) async throws -> (user: JSONValue, account: StoredAccount)? {
        throw ServerError.unsupported("built-in accounts are not kept in PostgreSQL yet")
    }

    func reset() async throws {
        guard let initialData else {
            throw ServerError.database("only a server started with data can be reset (SyncServer.start(data:database:))")
        }
        do {
            try await Self.replaceData(with: initialData, schema: schema, client: client, logger: logger)
        } catch {
            throw Self.serverError(error)
        }
    }

    /// Follows `NOTIFY`s of the schema's channel for as long as the server runs, reconnecting
    /// after an error, and hands each committed change (of every server sharing the database)
    /// to the relay in sequence order.
    static func listen(_ schema: PostgresSchema, _ resources: [String: Resource], _ client: PostgresClient, _ relay: ChangeRelay, _ logger: Logger) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    let start = PostgresQuery(unsafeSQL: "SELECT sequence FROM \(schema.state)")
                    let stored: Int64? = try await connection.guardedFirst(start, as: Int64.self, logger: logger)
                    let current = Int(stored ?? 0)
                    // Listening before the catch-up read: a write committed in between is notified.
                    // Cancelling the task ends the notifications; the pool must still be running
                    // then, for the UNLISTEN and the release (see `close()`).
                    try await connection.listen(on: schema.channel) { notifications in
                        await relay.start(at: current)
                        try await catchUp(schema, resources, connection, relay, logger)
                        for try await notification in notifications {
                            // Nobody to hand the changes to: skip reading them (a stream that opens
                            // later reads its backlog itself, after subscribing).
                            if await relay.skipIfUnwatched(to: Int(notification.payload)) { continue }
                            try await catchUp(schema, resources, connection, relay, logger)
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

    /// Reads the changes after the relay's last one and hands them over.
    private static func catchUp(
        _ schema: PostgresSchema, _ resources: [String: Resource], _ connection: PostgresConnection, _ relay: ChangeRelay, _ logger: Logger
    ) async throws {
        while true {
            let (changes, more) = try await readChanges(
                after: await relay.delivered, in: nil, limit: 1_000, schema: schema, resources: resources, connection, logger)
            await relay.deliver(changes)
            if !more { return }
        }
    }
}

/// The open change streams of one server, fed in sequence order.
actor ChangeRelay {
    private var subscribers: [Int: AsyncStream<SyncChange>.Continuation] = [:]
    private var nextID = 0
    private var finished = false
    private var started = false
    /// The last sequence value handed to the streams.
    private(set) var delivered = 0

    /// Where the first connection found the data: streams get only later changes. After a
    /// reconnection the relay goes on from its last delivered change instead, so that what was
    /// committed while the connection was down still reaches the streams.
    func start(at sequence: Int) {
        guard !started else { return }
        started = true
        delivered = max(delivered, sequence)
    }

    func subscribe() -> (id: Int, changes: AsyncStream<SyncChange>) {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncChange.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = nextID
        nextID += 1
        if finished { continuation.finish() } else { subscribers[id] = continuation }
        return (id, stream)
    }

    func unsubscribe(_ id: Int) {
        subscribers.removeValue(forKey: id)?.finish()
    }

    /// Moves past `sequence` (a notification's payload: the sequence after a commit) when no
    /// stream is open; false when there are streams to feed.
    func skipIfUnwatched(to sequence: Int?) -> Bool {
        guard subscribers.isEmpty, let sequence else { return false }
        delivered = max(delivered, sequence)
        return true
    }

    func deliver(_ changes: [SyncChange]) {
        for change in changes where change.sequence > delivered {
            for subscriber in subscribers.values { subscriber.yield(change) }
            delivered = change.sequence
        }
    }

    func finish() {
        finished = true
        for subscriber in subscribers.values { subscriber.finish() }
        subscribers.removeAll()
    }
}
