import Foundation
import GRDB

// GRDB 7 peer of the observation workloads (a file of its own: GRDB and ModelSync both name
// types `Database`). GRDB's fastest record path (columns decoded by hand, cached statements),
// a `DatabasePool` in WAL mode with `synchronous = NORMAL` like ModelSync's `Database`.

struct GRDBListItem: FetchableRecord, Equatable, Sendable {
    var id: Int, listId: Int, value: Int

    init(row: GRDB.Row) {
        (id, listId, value) = (row[0], row[1], row[2])
    }
}

enum GRDBObservationPeer {
    /// GRDB's side: `ValueObservation.tracking { … }.removeDuplicates()` consumed through
    /// `values(in:)` (delivered on the cooperative thread pool), on a `DatabasePool` (`grdb_pool`:
    /// fetches on readers, like ModelSync's file database) or a `DatabaseQueue` in WAL mode
    /// (`grdb_queue`: fetches on the one connection, after each commit).
    static func lists(path: String, pool usesPool: Bool) async throws -> ObservedLists {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        }
        let pool: any DatabaseWriter = usesPool
            ? try DatabasePool(path: path, configuration: configuration)
            : try DatabaseQueue(path: path, configuration: configuration)
        try await pool.write { db in
            try db.execute(sql: ListItem.sqlTable.createTableSQL())
            try db.execute(sql: "CREATE INDEX items_listId ON items (listId)")
            let insert = try db.cachedStatement(sql: "INSERT INTO items (id, listId, value) VALUES (?, ?, 0)")
            for id in 1...ObservationWorkloads.items {
                try insert.execute(arguments: [id, (id - 1) / ObservationWorkloads.itemsPerList])
            }
        }
        let lists = ObservedLists(
            write: { id, value in
                try pool.write { db in
                    try db.cachedStatement(sql: "UPDATE items SET value = ? WHERE id = ?").execute(arguments: [value, id])
                }
            },
            read: { try pool.read { db in try Int.fetchAll(db, sql: "SELECT value FROM items ORDER BY id") } }
        )
        await lists.start { list, delivered in
            let observation = ValueObservation.tracking { db in
                try GRDBListItem.fetchAll(
                    db.cachedStatement(sql: "SELECT id, listId, value FROM items WHERE listId = ? ORDER BY id"),
                    arguments: [list]
                )
            }.removeDuplicates()
            Task {
                for try await items in observation.values(in: pool) { delivered(items.reduce(0) { $0 + $1.value }) }
            }
        }
        return lists
    }
}
