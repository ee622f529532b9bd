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
    /// time); tombstones, which the feed limits bound, stop there too.
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
        // A row that left a reader's view shows as its deletion, once (its latest departure), and
        // not while the reader can read it again.
        var departures: [String: [ExactText: SyncChange]] = [:]
        // Past the page's last record, nothing more belongs to this page.
        let through = changes.count > limit ? changes[limit].sequence : Int.max
        arguments = [.integer(Int64(since)), .integer(Int64(through))]
        condition = collectionCondition(collections, column: "collection", &arguments)
        for row in try connection.rows(
            """
            SELECT sequence, collection, id, owner, departed, fields FROM \(SQLiteSchema.tombstones) \
            WHERE sequence > ? AND sequence <= ? AND \(condition) ORDER BY sequence
            """, arguments)
        {
            let collection = row[1].textValue ?? ""
            let departed = row[4].integerValue == 1
            let fields = try parsed(row[5]).objectValue
            let shown: Bool
            switch rows(of: collection) {
            case .everything: shown = !departed
            case .nothing: shown = false
            case .ownedBy(_, let userID) where fields == nil: shown = row[3].textValue?.isIdentical(to: userID) ?? false
            case let filter:
                // Under a sharing rule: to the readers who saw the row through its fields as
                // they were (a board's members, its cards' deletions).
                shown = try fields.map { try filter.admits(.object($0), facts) } ?? false
            }
            guard shown else { continue }
            let change = SyncChange(sequence: Int(row[0].integerValue ?? 0), collection: collection, id: try parsed(row[2]), record: nil)
            guard departed else {
                changes.append(change)
                continue
            }
            guard let id = scalarText(change.id) else { continue }
            if let current = try record(collection, id: id, connection), try rows(of: collection).admits(current.record, facts) { continue }
            departures[collection, default: [:]][ExactText(id)] = change
        }
        changes += departures.values.flatMap(\.values)
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
