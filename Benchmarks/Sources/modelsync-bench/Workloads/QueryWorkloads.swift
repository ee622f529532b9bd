import CSQLite
import Foundation
import ModelSync

/// Queries through the builder, where its own cost shows: many small queries. Each lookup
/// builds a query from a key path, finds its shape among the connection's recent ones (whose
/// SQL was rendered once), binds its values to that shape's statement, steps and decodes one row; the raw C peer prepares the same `SELECT` once and only
/// binds, steps and resets it per lookup. Both read the same file inside one read transaction.
enum QueryWorkloads {
    static let lookup = Workload(
        name: "sqlite_query_lookup",
        summary: "look up 10-column rows one at a time: IntRow.where(\\.id == key).fetchOne; peers: raw_c (one prepared statement), modelsync_find, modelsync_prepared",
        unit: .rowsPerSecond, sizes: [WorkloadSize(5_000, quick: true), WorkloadSize(50_000)],
        // Issue #20's goal is the prepared query against the C loop.
        alsoCompare: [(of: "modelsync_prepared", against: "raw_c")]
    ) { size in
        let rows = (0..<size.count).map(IntRow.init)
        let files = try Files()
        let db = try Database(path: files.ours, models: [IntRow.self])
        try db.write { db in
            for var row in rows { try row.insert(db) }
        }
        let rawDB = try RawDatabase(path: files.ours, schema: nil)
        // Every id once, in a scattered order (7919 is prime, so this is a permutation).
        let keys = (0..<size.count).map { ($0 &* 7919) % size.count + 1 }
        let query = try IntRow.where(\.id == 0).limit(1).sql

        func ourLookups() throws -> [IntRow] {
            try db.read { db in try keys.compactMap { key in try IntRow.where(\.id == key).fetchOne(db) } }
        }
        let ours = Contender.ours {
            _ = files
            return try ourLookups().reduce(0) { $0 &+ $1.b }
        }
        let peer = Contender(name: "raw_c") {
            try rawLookups(rawDB, query, keys).reduce(0) { $0 &+ $1.b }
        }
        // ModelSync's own lookup without the builder: `find`, on the table's cached statement.
        let find = Contender(name: "modelsync_find") {
            try db.read { db in try keys.compactMap { key in try IntRow.find(key, db) } }.reduce(0) { $0 &+ $1.b }
        }
        // The same query prepared once (`preparedQuery`): per lookup, only the key is bound.
        let byID = try IntRow.preparedQuery(Int.self) { id in IntRow.where(\.id == id) }
        func preparedLookups() throws -> [IntRow] {
            try db.read { db in try keys.compactMap { key in try byID.fetchOne(db, key) } }
        }
        let prepared = Contender(name: "modelsync_prepared") {
            try preparedLookups().reduce(0) { $0 &+ $1.b }
        }
        return PreparedWorkload(ours: ours, peers: [peer, find, prepared]) {
            let expected = keys.map { rows[$0 - 1] }
            try expectEqual(try ourLookups(), expected, "sqlite_query_lookup ours")
            try expectEqual(try rawLookups(rawDB, query, keys), expected, "sqlite_query_lookup raw_c")
            try expectEqual(try preparedLookups(), expected, "sqlite_query_lookup modelsync_prepared")
        }
    }

    static let all = [lookup]

    /// One prepared statement, bound and stepped per key, in one read transaction.
    private static func rawLookups(_ database: RawDatabase, _ sql: String, _ keys: [Int]) throws -> [IntRow] {
        let handle = database.handle
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw BenchmarkError("prepare failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
        defer { sqlite3_finalize(statement) }
        try database.execute("BEGIN DEFERRED")
        defer { try? database.execute("COMMIT") }
        var found: [IntRow] = []
        found.reserveCapacity(keys.count)
        for key in keys {
            sqlite3_bind_int64(statement, 1, Int64(key))
            sqlite3_bind_int64(statement, 2, 1)
            if sqlite3_step(statement) == SQLITE_ROW {
                func int(_ index: Int32) -> Int { Int(sqlite3_column_int64(statement, index)) }
                found.append(IntRow(id: int(0), a: int(1), b: int(2), c: int(3), d: int(4), e: int(5), f: int(6), g: int(7), h: int(8), i: int(9)))
            }
            sqlite3_reset(statement)
        }
        return found
    }
}
