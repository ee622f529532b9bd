import Foundation
import GRDB

// GRDB 7 peer of `sqlite_concurrent_async`, in a file of its own because GRDB and ModelSync
// both name a type `Database`.

/// GRDB's side: a `DatabasePool` with 4 readers, WAL, `synchronous = NORMAL` and a 5-second
/// busy timeout like ModelSync's `Database` (GRDB's default fails at once on a busy file, which
/// a run once met), used through `try await pool.read/write`.
struct GRDBConcurrentPeer: Sendable {
    let pool: DatabasePool

    static func pool(path: String, rows: Int) async throws -> GRDBConcurrentPeer {
        var configuration = Configuration()
        configuration.maximumReaderCount = 4
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
            for id in 1...rows { try db.execute(sql: "INSERT INTO accounts (id, balance) VALUES (?, 0)", arguments: [id]) }
        }
        return GRDBConcurrentPeer(pool: pool)
    }

    @Sendable func write(_ id: Int) async throws {
        try await pool.write { try $0.execute(sql: "UPDATE accounts SET balance = balance + 1 WHERE id = ?", arguments: [id]) }
    }

    @Sendable func read(_ id: Int) async throws -> Int {
        try await pool.read { try Int.fetchOne($0, sql: "SELECT balance FROM accounts WHERE id = ?", arguments: [id]) ?? -1 }
    }

    func total() async throws -> Int? {
        try await pool.read { try Int.fetchOne($0, sql: "SELECT sum(balance) FROM accounts") }
    }
}
