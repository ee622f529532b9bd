import CSQLite
import Foundation
import ModelSync

/// A 10-integer-column row.
@Model(table: "ints")
struct IntRow: SQLModel, Equatable {
    var id: Int
    var a: Int, b: Int, c: Int, d: Int, e: Int, f: Int, g: Int, h: Int, i: Int

    init(_ n: Int) {
        (id, a, b, c, d, e, f, g, h, i) = (n + 1, n, n &* 2, n &* 3, -n, n % 7, n % 1000, n &* 31, n / 3, 42)
    }

    init(id: Int, a: Int, b: Int, c: Int, d: Int, e: Int, f: Int, g: Int, h: Int, i: Int) {
        (self.id, self.a, self.b, self.c, self.d, self.e, self.f, self.g, self.h, self.i) = (id, a, b, c, d, e, f, g, h, i)
    }
}

/// ``IntRow`` with the key most models declare, `var id: Int?` (here set, as in rows that come
/// from a server), so that every insert asks whether SQLite is to assign it.
@Model(table: "ints")
struct OptionalKeyIntRow: SQLModel, Equatable {
    var id: Int?
    var a: Int, b: Int, c: Int, d: Int, e: Int, f: Int, g: Int, h: Int, i: Int

    init(_ n: Int) {
        self.init(IntRow(n))
    }

    init(_ row: IntRow) {
        (id, a, b, c, d, e, f, g, h, i) = (row.id, row.a, row.b, row.c, row.d, row.e, row.f, row.g, row.h, row.i)
    }
}

/// The ten integer columns of a row of `ints`, in order, for the raw C loop.
protocol IntColumns {
    var columns: [Int] { get }
}

extension IntRow: IntColumns {
    var columns: [Int] { [id, a, b, c, d, e, f, g, h, i] }
}

extension OptionalKeyIntRow: IntColumns {
    var columns: [Int] { [id ?? 0, a, b, c, d, e, f, g, h, i] }
}

/// A 14-column row of mixed types: ints, text, dates, doubles, optionals.
@Model(table: "mixed")
struct MixedRow: SQLModel, Equatable {
    var id: Int
    var name: String
    var email: String
    var age: Int
    var score: Double
    var balance: Double
    var active: Bool
    var visits: Int
    var city: String
    var createdAt: Date
    var updatedAt: Date?
    var bio: String?
    var rating: Double?
    var note: String?

    init(_ n: Int) {
        id = n + 1
        name = "User \(n)"
        email = "user\(n)@example.com"
        age = 18 + n % 60
        score = Double(n) * 0.5
        balance = Double(n % 10_000) / 100
        active = n % 3 != 0
        visits = n &* 7
        city = ["Berlin", "Lagos", "Lima", "Osaka", "Perth"][n % 5]
        createdAt = Date(timeIntervalSince1970: 1_700_000_000 + Double(n))
        updatedAt = n % 2 == 0 ? Date(timeIntervalSince1970: 1_700_100_000 + Double(n)) : nil
        bio = n % 4 == 0 ? nil : "Bio of user \(n), with some text."
        rating = n % 5 == 0 ? nil : Double(n % 50) / 10
        note = n % 3 == 0 ? "note \(n)" : nil
    }

    init(
        id: Int, name: String, email: String, age: Int, score: Double, balance: Double, active: Bool, visits: Int,
        city: String, createdAt: Date, updatedAt: Date?, bio: String?, rating: Double?, note: String?
    ) {
        (self.id, self.name, self.email, self.age, self.score, self.balance, self.active) = (id, name, email, age, score, balance, active)
        (self.visits, self.city, self.createdAt, self.updatedAt, self.bio, self.rating, self.note) =
            (visits, city, createdAt, updatedAt, bio, rating, note)
    }
}

/// Inserting rows in one transaction and fetching them into models: ModelSync's ActiveRecord
/// (generated `bind(to:)` / `init(row:)`) against a raw SQLite C loop (prepared statement,
/// bind / column by index) and GRDB 7.10.0 (Codable records, and records with hand-written
/// row coding; see `SQLiteGRDBPeers.swift`), each on its own database file with the same
/// settings (WAL, `synchronous = NORMAL`).
enum SQLiteWorkloads {
    static let insertInts = insertWorkload("sqlite_insert_ints", IntRow.self, IntRow.init, rawInsertInts, [WorkloadSize(5_000, quick: true), WorkloadSize(50_000)])
    static let fetchInts = fetchWorkload("sqlite_fetch_ints", IntRow.self, IntRow.init, rawFetchInts, [WorkloadSize(20_000, quick: true), WorkloadSize(200_000)])
    static let insertIntsOptionalKey = insertWorkload(
        "sqlite_insert_ints_optional_key", OptionalKeyIntRow.self, OptionalKeyIntRow.init, rawInsertInts,
        [WorkloadSize(5_000, quick: true), WorkloadSize(50_000)])
    static let insertMixed = insertWorkload("sqlite_insert_mixed", MixedRow.self, MixedRow.init, rawInsertMixed, [WorkloadSize(5_000, quick: true), WorkloadSize(50_000)])
    static let fetchMixed = fetchWorkload("sqlite_fetch_mixed", MixedRow.self, MixedRow.init, rawFetchMixed, [WorkloadSize(20_000, quick: true), WorkloadSize(200_000)])

    static let all = [insertInts, insertIntsOptionalKey, fetchInts, insertMixed, fetchMixed]

    // MARK: - Workload shapes

    private static func insertWorkload<Row: SQLModel & Sendable & GRDBTwins>(
        _ name: String, _ type: Row.Type, _ make: @escaping @Sendable (Int) -> Row,
        _ raw: @escaping @Sendable (OpaquePointer, [Row]) throws -> Void, _ sizes: [WorkloadSize]
    ) -> Workload {
        Workload(
            name: name, summary: "insert \(Row.schema.fields.count)-column rows in one transaction; peers: raw_c, grdb_codable, grdb_rows",
            unit: .rowsPerSecond, sizes: sizes
        ) { size in
            let rows = (0..<size.count).map(make)
            let files = try Files()
            let db = try Database(path: files.ours, models: [Row.self])
            let rawDB = try RawDatabase(path: files.raw, schema: Row.sqlTable.createTableSQL())
            let ours = Contender.ours(reset: { try db.write { _ = try Row.deleteAll($0) } }) {
                try db.write { db in
                    for var row in rows { try row.insert(db) }
                }
                return rows.count
            }
            let peer = Contender(name: "raw_c", reset: { try rawDB.execute("DELETE FROM \(quoteIdentifier(Row.sqlTable.name))") }) {
                try rawDB.transaction { try raw(rawDB.handle, rows) }
                return rows.count
            }
            let grdb = try GRDBPeers.insert(rows, createSQL: Row.sqlTable.createTableSQL(), table: Row.sqlTable.name, directory: files.directory)
            return PreparedWorkload(ours: ours, peers: [peer] + grdb) {
                _ = files
                for contender in grdb {
                    try await contender.reset()
                    _ = try await contender.run()
                }
                try await db.write { db in
                    _ = try Row.deleteAll(db)
                    for var row in rows { try row.insert(db) }
                }
                try rawDB.execute("DELETE FROM \(quoteIdentifier(Row.sqlTable.name))")
                try rawDB.transaction { try raw(rawDB.handle, rows) }
                let stored = try await db.read { try Row.all($0, order: "id") }
                guard stored.count == rows.count, try rawDB.count(Row.sqlTable.name) == rows.count else {
                    throw BenchmarkError("\(name): row counts differ")
                }
            }
        }
    }

    private static func fetchWorkload<Row: SQLModel & Sendable & Equatable & GRDBTwins>(
        _ name: String, _ type: Row.Type, _ make: @escaping @Sendable (Int) -> Row,
        _ raw: @escaping @Sendable (OpaquePointer, String) throws -> [Row], _ sizes: [WorkloadSize]
    ) -> Workload {
        Workload(
            name: name, summary: "fetch \(Row.schema.fields.count)-column rows into models; peers: raw_c, grdb_codable, grdb_rows",
            unit: .rowsPerSecond, sizes: sizes
        ) { size in
            let rows = (0..<size.count).map(make)
            let files = try Files()
            let db = try Database(path: files.ours, models: [Row.self])
            try db.write { db in
                for var row in rows { try row.insert(db) }
            }
            let rawDB = try RawDatabase(path: files.ours, schema: nil)
            let select = "SELECT \(Row.schema.fields.map { quoteIdentifier($0.column) }.joined(separator: ", ")) FROM \(quoteIdentifier(Row.sqlTable.name))"
            let ours = Contender.ours {
                _ = files
                return try db.read { try Row.all().fetchAll($0) }.count
            }
            let peer = Contender(name: "raw_c") {
                try raw(rawDB.handle, select).count
            }
            let grdb = try GRDBPeers.fetch(rows, createSQL: Row.sqlTable.createTableSQL(), directory: files.directory)
            return PreparedWorkload(ours: ours, peers: [peer] + grdb.contenders) {
                try expectEqual(try db.read { try Row.all().fetchAll($0) }, rows, "\(name) ours")
                try expectEqual(try raw(rawDB.handle, select), rows, "\(name) raw_c")
                for (index, fetched) in try grdb.verify().enumerated() {
                    try expectEqual(fetched, rows, "\(name) \(grdb.contenders[index].name)")
                }
            }
        }
    }

    // MARK: - The raw C loops

    private static func rawInsertInts<Row: IntColumns>(_ handle: OpaquePointer, _ rows: [Row]) throws {
        try withStatement(handle, "INSERT INTO ints (id, a, b, c, d, e, f, g, h, i) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") { statement in
            for row in rows {
                for (index, value) in row.columns.enumerated() {
                    sqlite3_bind_int64(statement, Int32(index + 1), Int64(value))
                }
                try step(statement, handle)
            }
        }
    }

    private static func rawFetchInts(_ handle: OpaquePointer, _ sql: String) throws -> [IntRow] {
        try withStatement(handle, sql) { statement in
            var rows: [IntRow] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                func int(_ index: Int32) -> Int { Int(sqlite3_column_int64(statement, index)) }
                rows.append(IntRow(id: int(0), a: int(1), b: int(2), c: int(3), d: int(4), e: int(5), f: int(6), g: int(7), h: int(8), i: int(9)))
            }
            return rows
        }
    }

    private static func rawInsertMixed(_ handle: OpaquePointer, _ rows: [MixedRow]) throws {
        let sql = """
            INSERT INTO mixed (id, name, email, age, score, balance, active, visits, city, createdAt, updatedAt, bio, rating, note)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        try withStatement(handle, sql) { statement in
            for row in rows {
                sqlite3_bind_int64(statement, 1, Int64(row.id))
                bindText(statement, 2, row.name)
                bindText(statement, 3, row.email)
                sqlite3_bind_int64(statement, 4, Int64(row.age))
                sqlite3_bind_double(statement, 5, row.score)
                sqlite3_bind_double(statement, 6, row.balance)
                sqlite3_bind_int64(statement, 7, row.active ? 1 : 0)
                sqlite3_bind_int64(statement, 8, Int64(row.visits))
                bindText(statement, 9, row.city)
                sqlite3_bind_double(statement, 10, row.createdAt.timeIntervalSince1970)
                if let updatedAt = row.updatedAt { sqlite3_bind_double(statement, 11, updatedAt.timeIntervalSince1970) } else { sqlite3_bind_null(statement, 11) }
                if let bio = row.bio { bindText(statement, 12, bio) } else { sqlite3_bind_null(statement, 12) }
                if let rating = row.rating { sqlite3_bind_double(statement, 13, rating) } else { sqlite3_bind_null(statement, 13) }
                if let note = row.note { bindText(statement, 14, note) } else { sqlite3_bind_null(statement, 14) }
                try step(statement, handle)
            }
        }
    }

    private static func rawFetchMixed(_ handle: OpaquePointer, _ sql: String) throws -> [MixedRow] {
        try withStatement(handle, sql) { statement in
            var rows: [MixedRow] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, index) == SQLITE_NULL }
                func text(_ index: Int32) -> String { String(cString: sqlite3_column_text(statement, index)) }
                func date(_ index: Int32) -> Date { Date(timeIntervalSince1970: sqlite3_column_double(statement, index)) }
                rows.append(
                    MixedRow(
                        id: Int(sqlite3_column_int64(statement, 0)), name: text(1), email: text(2),
                        age: Int(sqlite3_column_int64(statement, 3)), score: sqlite3_column_double(statement, 4),
                        balance: sqlite3_column_double(statement, 5), active: sqlite3_column_int64(statement, 6) != 0,
                        visits: Int(sqlite3_column_int64(statement, 7)), city: text(8), createdAt: date(9),
                        updatedAt: isNull(10) ? nil : date(10), bio: isNull(11) ? nil : text(11),
                        rating: isNull(12) ? nil : sqlite3_column_double(statement, 12), note: isNull(13) ? nil : text(13)))
            }
            return rows
        }
    }

    // MARK: - C helpers

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func bindText(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        sqlite3_bind_text(statement, index, text, -1, transient)
    }

    private static func withStatement<T>(_ handle: OpaquePointer, _ sql: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw BenchmarkError("prepare failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
        defer { sqlite3_finalize(statement) }
        return try body(statement)
    }

    private static func step(_ statement: OpaquePointer, _ handle: OpaquePointer) throws {
        guard sqlite3_step(statement) == SQLITE_DONE else {
            throw BenchmarkError("step failed: \(String(cString: sqlite3_errmsg(handle)))")
        }
        sqlite3_reset(statement)
    }
}

/// Two database files in a temporary directory, removed when the last reference goes.
final class Files: Sendable {
    let directory: URL
    var ours: String { directory.appendingPathComponent("ours.sqlite").path }
    var raw: String { directory.appendingPathComponent("raw.sqlite").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// The raw C side's connection: the same pragmas as ModelSync's writer.
final class RawDatabase: @unchecked Sendable {
    let handle: OpaquePointer

    init(path: String, schema: String?) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, let handle else {
            throw BenchmarkError("cannot open \(path)")
        }
        self.handle = handle
        try execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON")
        if let schema { try execute(schema) }
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchmarkError("\(sql): \(String(cString: sqlite3_errmsg(handle)))")
        }
    }

    func transaction(_ body: () throws -> Void) throws {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    func count(_ table: String) throws -> Int {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "SELECT count(*) FROM \(quoteIdentifier(table))", -1, &statement, nil) == SQLITE_OK,
            let statement, sqlite3_step(statement) == SQLITE_ROW
        else { throw BenchmarkError("count failed") }
        defer { sqlite3_finalize(statement) }
        return Int(sqlite3_column_int64(statement, 0))
    }
}
