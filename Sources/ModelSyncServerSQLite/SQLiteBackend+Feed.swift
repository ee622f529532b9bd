import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncSQLite
import ModelSyncServer

/// The change feed: records by the version index, tombstones by their sequence (the primary
/// key), on a reader.
extension SQLiteBackend {
    package func changes(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> FeedPage {
        try await reading { connection in
            guard let state = try connection.rows("SELECT sequence, horizon FROM \(SQLiteSchema.state)").first else {
                throw APIError(status: 500, message: "SQLite: the state row is missing")
            }
            let sequence = Int(state[0].integerValue ?? 0)
            let since = try cursor.start(sequence: sequence, horizon: Int(state[1].integerValue ?? 0))
            let (changes, more) = visibility.isOpen
                ? try Self.openChanges(after: since, in: collections, limit: limit, connection)
                : try Self.changes(after: since, in: collections, limit: limit, visibility, connection)
            return FeedPage(changes: changes, more: more, next: more ? changes.last?.sequence ?? since : max(sequence, since))
        }
    }

    /// `collection IN (…)` for a set of names (bound as one JSON array), or true for all.
    private static func collectionCondition(_ collections: Set<String>?, column: String, _ arguments: inout [SQLValue]) -> String {
        guard let collections else { return "1" }
        arguments.append(text(.array(collections.sorted().map(JSONValue.string))))
        return "\(column) IN (SELECT value FROM json_each(?))"
    }

    /// The changes after `since` for a reader of every row: at most `limit + 1` records (by the
    /// version index) and as many tombstones, merged in sequence order.
    private static func openChanges(after since: Int, in collections: Set<String>?, limit: Int, _ connection: SQLiteConnection) throws -> ([SyncChange], Bool) {
        let wanted = Int64(min(limit, Int(Int32.max) - 1) + 1)
        var changes: [SyncChange] = []
        var arguments: [SQLValue] = [.integer(Int64(since))]
        var condition = collectionCondition(collections, column: "collection", &arguments)
        try connection.withStatement(
            "SELECT version, collection, record, created_with FROM \(SQLiteSchema.records) WHERE version > ? AND \(condition) ORDER BY version LIMIT ?",
            arguments + [.integer(wanted)]
        ) { statement in
            while try statement.step() {
                let record = try parsed(statement.value(at: 2))
                changes.append(SyncChange(
                    sequence: Int(statement.value(at: 0).integerValue ?? 0), collection: statement.value(at: 1).textValue ?? "", id: record["id"] ?? .null,
                    record: record, createdWith: statement.value(at: 3).textValue))
            }
        }
        arguments = [.integer(Int64(since))]
        condition = collectionCondition(collections, column: "collection", &arguments)
        try connection.withStatement(
            "SELECT sequence, collection, id FROM \(SQLiteSchema.tombstones) WHERE sequence > ? AND departed = 0 AND \(condition) ORDER BY sequence LIMIT ?",
            arguments + [.integer(wanted)]
        ) { statement in
            while try statement.step() {
                changes.append(SyncChange(
                    sequence: Int(statement.value(at: 0).integerValue ?? 0), collection: statement.value(at: 1).textValue ?? "",
                    id: try parsed(statement.value(at: 2)), record: nil))
            }
        }
        changes.sort { $0.sequence < $1.sequence }
        return (Array(changes.prefix(limit)), changes.count > limit)
    }

    /// The changes after `since` that `visibility` admits, as the JSON backend gives them
    /// (``/ModelSyncServer/Bookkeeping/changes(after:in:limit:visibility:)``): the records the
    /// reader may read (without the create's key unless it owns them); the deletions of
    /// collections it reads whole, of its own rows, and under a sharing rule of the rows whose
    /// shared fields, as they were, it reads; the departures of rows given to another owner or
    /// moved (a card to another board), as deletions, while it cannot read the row. Records stop at the first past the
    /// page (a reader of a large history pages through it instead of reading it whole each
    /// time); tombstones stop there too, and once the page is full before the next one.
    private static func changes(
        after since: Int, in collections: Set<String>?, limit: Int, _ visibility: Visibility, _ connection: SQLiteConnection
    ) throws -> ([SyncChange], Bool) {
        var readerRows = ReaderRows(visibility)
        func rows(of collection: String) -> RowFilter { readerRows.of(collection) }
        // Memberships and parents by their indexes, once each for the page; a deleted parent by
        // its tombstone's shared fields.
        let facts = RowFacts.sqlite(connection, tombstones: true)
        var changes: [SyncChange] = []
        var arguments: [SQLValue] = [.integer(Int64(since))]
        var condition = collectionCondition(collections, column: "collection", &arguments)
        try connection.withStatement(
            "SELECT version, collection, record, created_with FROM \(SQLiteSchema.records) WHERE version > ? AND \(condition) ORDER BY version", arguments
        ) { statement in
            while changes.count <= limit, try statement.step() {
                let collection = statement.value(at: 1).textValue ?? ""
                let filter = rows(of: collection)
                if filter == .nothing { continue }
                let record = try parsed(statement.value(at: 2))
                let change = SyncChange(
                    sequence: Int(statement.value(at: 0).integerValue ?? 0), collection: collection, id: record["id"] ?? .null, record: record,
                    createdWith: statement.value(at: 3).textValue)
                if let shown = try visibility.shown(change, rows: filter, facts) { changes.append(shown) }
            }
        }
        // Past the page's last record, nothing more belongs to this page.
        let through = changes.count > limit ? changes[limit].sequence : Int.max
        /// Whether the reader sees a tombstone: a deletion of a collection it reads whole, of its
        /// own row, or under a sharing rule of a row whose shared fields, as they were, it reads.
        func shown(_ collection: String, departed: Bool, owner: SQLValue, fields: SQLValue) throws -> Bool {
            let fields = try parsed(fields).objectValue
            switch rows(of: collection) {
            case .everything: return !departed
            case .nothing: return false
            case .ownedBy(_, let userID) where fields == nil: return owner.textValue?.isIdentical(to: userID) ?? false
            case let filter:
                // Under a sharing rule: to the readers who saw the row through its fields as
                // they were (a board's members, its cards' deletions).
                return try fields.map { try filter.admits(.object($0), facts) } ?? false
            }
        }
        /// Whether a later departure of the row `id` (by the tombstones' `(collection, id)`
        /// index), up to `through`, shows to the reader: that one stands for the row's departure.
        func departsLater(_ collection: String, id: String, after sequence: Int) throws -> Bool {
            // The tombstone's id is JSON text: a string's, or a number's (or other value's) own.
            let candidates = [String(decoding: JSONValue.string(id).jsonBytes(), as: UTF8.self), id]
            return try connection.rows(
                """
                SELECT id, owner, fields FROM \(SQLiteSchema.tombstones) WHERE collection = ? AND id IN (SELECT value FROM json_each(?)) \
                AND departed = 1 AND sequence > ? AND sequence <= ?
                """, [.text(collection), text(.array(candidates.map(JSONValue.string))), .integer(Int64(sequence)), .integer(Int64(through))]
            ).contains { row in
                guard let stoneID = try? parsed(row[0]), scalarText(stoneID)?.isIdentical(to: id) == true else { return false }
                return try shown(collection, departed: true, owner: row[1], fields: row[2])
            }
        }
        // The tombstones in sequence order, streamed; they stop once the page is full before the
        // next one (the records and tombstones before it fill it): a reader far behind holds a
        // page, not every deletion since its cursor. A row that left a reader's view shows as
        // its deletion, once (its latest departure: one that a later one stands for is left
        // out), and not while the reader can read it again.
        let records = changes
        var recordsBefore = 0
        var tombstones: [SyncChange] = []
        arguments = [.integer(Int64(since)), .integer(Int64(through))]
        condition = collectionCondition(collections, column: "collection", &arguments)
        try connection.withStatement(
            """
            SELECT sequence, collection, id, owner, departed, fields FROM \(SQLiteSchema.tombstones) \
            WHERE sequence > ? AND sequence <= ? AND \(condition) ORDER BY sequence
            """, arguments
        ) { statement in
            while try statement.step() {
                let sequence = Int(statement.value(at: 0).integerValue ?? 0)
                while recordsBefore < records.count, records[recordsBefore].sequence < sequence { recordsBefore += 1 }
                if recordsBefore + tombstones.count > limit { break }
                let collection = statement.value(at: 1).textValue ?? ""
                let departed = statement.value(at: 4).integerValue == 1
                guard try shown(collection, departed: departed, owner: statement.value(at: 3), fields: statement.value(at: 5)) else { continue }
                let change = SyncChange(sequence: sequence, collection: collection, id: try parsed(statement.value(at: 2)), record: nil)
                guard departed else {
                    tombstones.append(change)
                    continue
                }
                guard let id = scalarText(change.id) else { continue }
                if let current = try record(collection, id: id, connection), try rows(of: collection).admits(current.record, facts) { continue }
                if try departsLater(collection, id: id, after: sequence) { continue }
                tombstones.append(change)
            }
        }
        changes += tombstones
        changes.sort { $0.sequence < $1.sequence }
        return (Array(changes.prefix(limit)), changes.count > limit)
    }

    package func subscribe(to collections: Set<String>?) async -> (id: Int, changes: AsyncStream<SyncChange>) {
        streams.subscribe()
    }

    package func unsubscribe(_ id: Int) async {
        streams.unsubscribe(id)
    }
}
