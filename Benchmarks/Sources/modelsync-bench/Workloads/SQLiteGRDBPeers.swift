import Foundation
import GRDB

// GRDB 7 peers of the SQLite workloads, in a file of their own because GRDB and ModelSync
// both name types `Database`, `Row` and `Column`: `grdb_codable` (Codable records, as most
// GRDB code is written) and `grdb_rows` (records that encode and decode their columns by
// hand, GRDB's fastest record path). Each works on its own database file, in WAL mode with
// `synchronous = NORMAL`, like the other contenders.

/// A row type's GRDB twins.
protocol GRDBTwins {
    associatedtype CodableRecord: FetchableRecord & PersistableRecord
    associatedtype ManualRecord: FetchableRecord & PersistableRecord
    init(_ codable: CodableRecord)
    init(_ manual: ManualRecord)
    var codable: CodableRecord { get }
    var manual: ManualRecord { get }
}

enum GRDBPeers {
    /// Insert contenders: both twins insert `rows` in one transaction into a table made by
    /// `createSQL`.
    static func insert<Row: GRDBTwins>(_ rows: [Row], createSQL: String, table: String, directory: URL) throws -> [Contender] {
        let codable = try queue(directory, "grdb_codable", createSQL)
        let manual = try queue(directory, "grdb_rows", createSQL)
        let codableRows = rows.map(\.codable)
        let manualRows = rows.map(\.manual)
        return [
            Contender(name: "grdb_codable", reset: { try codable.write { try $0.execute(sql: "DELETE FROM \(table)") } }) {
                try codable.write { db in for row in codableRows { try row.insert(db) } }
                return rows.count
            },
            Contender(name: "grdb_rows", reset: { try manual.write { try $0.execute(sql: "DELETE FROM \(table)") } }) {
                try manual.write { db in for row in manualRows { try row.insert(db) } }
                return rows.count
            },
        ]
    }

    /// Fetch contenders over tables filled with `rows`, and a check that both read them back.
    static func fetch<Row: GRDBTwins & Equatable>(
        _ rows: [Row], createSQL: String, directory: URL
    ) throws -> (contenders: [Contender], verify: () throws -> [[Row]]) {
        let codable = try queue(directory, "grdb_codable", createSQL)
        let manual = try queue(directory, "grdb_rows", createSQL)
        try codable.write { db in for row in rows { try row.codable.insert(db) } }
        try manual.write { db in for row in rows { try row.manual.insert(db) } }
        let fetchCodable = { try codable.read { try Row.CodableRecord.fetchAll($0) } }
        let fetchManual = { try manual.read { try Row.ManualRecord.fetchAll($0) } }
        return (
            [
                Contender(name: "grdb_codable") { try fetchCodable().count },
                Contender(name: "grdb_rows") { try fetchManual().count },
            ],
            { [try fetchCodable().map(Row.init), try fetchManual().map(Row.init)] }
        )
    }

    static func queue(_ directory: URL, _ name: String, _ createSQL: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        }
        let queue = try DatabaseQueue(path: directory.appendingPathComponent("\(name).sqlite").path, configuration: configuration)
        try queue.write { try $0.execute(sql: createSQL) }
        return queue
    }
}

// MARK: - IntRow

struct GRDBIntRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "ints"
    var id: Int, a: Int, b: Int, c: Int, d: Int, e: Int, f: Int, g: Int, h: Int, i: Int
}

struct GRDBIntRowManual: FetchableRecord, PersistableRecord {
    static let databaseTableName = "ints"
    var id: Int, a: Int, b: Int, c: Int, d: Int, e: Int, f: Int, g: Int, h: Int, i: Int

    init(id: Int, a: Int, b: Int, c: Int, d: Int, e: Int, f: Int, g: Int, h: Int, i: Int) {
        (self.id, self.a, self.b, self.c, self.d, self.e, self.f, self.g, self.h, self.i) = (id, a, b, c, d, e, f, g, h, i)
    }

    init(row: GRDB.Row) {
        (id, a, b, c, d, e, f, g, h, i) = (row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9])
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["a"] = a
        container["b"] = b
        container["c"] = c
        container["d"] = d
        container["e"] = e
        container["f"] = f
        container["g"] = g
        container["h"] = h
        container["i"] = i
    }
}

extension IntRow: GRDBTwins {
    init(_ r: GRDBIntRow) { self.init(id: r.id, a: r.a, b: r.b, c: r.c, d: r.d, e: r.e, f: r.f, g: r.g, h: r.h, i: r.i) }
    init(_ r: GRDBIntRowManual) { self.init(id: r.id, a: r.a, b: r.b, c: r.c, d: r.d, e: r.e, f: r.f, g: r.g, h: r.h, i: r.i) }
    var codable: GRDBIntRow { GRDBIntRow(id: id, a: a, b: b, c: c, d: d, e: e, f: f, g: g, h: h, i: i) }
    var manual: GRDBIntRowManual { GRDBIntRowManual(id: id, a: a, b: b, c: c, d: d, e: e, f: f, g: g, h: h, i: i) }
}

extension OptionalKeyIntRow: GRDBTwins {
    init(_ r: GRDBIntRow) { self.init(IntRow(r)) }
    init(_ r: GRDBIntRowManual) { self.init(IntRow(r)) }
    var codable: GRDBIntRow { GRDBIntRow(id: id ?? 0, a: a, b: b, c: c, d: d, e: e, f: f, g: g, h: h, i: i) }
    var manual: GRDBIntRowManual { GRDBIntRowManual(id: id ?? 0, a: a, b: b, c: c, d: d, e: e, f: f, g: g, h: h, i: i) }
}

// MARK: - MixedRow

struct GRDBMixedRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "mixed"
    var id: Int, name: String, email: String, age: Int, score: Double, balance: Double, active: Bool, visits: Int
    var city: String, createdAt: Date, updatedAt: Date?, bio: String?, rating: Double?, note: String?
}

struct GRDBMixedRowManual: FetchableRecord, PersistableRecord {
    static let databaseTableName = "mixed"
    var fields: GRDBMixedRow

    init(_ fields: GRDBMixedRow) { self.fields = fields }

    init(row: GRDB.Row) {
        fields = GRDBMixedRow(
            id: row[0], name: row[1], email: row[2], age: row[3], score: row[4], balance: row[5], active: row[6],
            visits: row[7], city: row[8], createdAt: row[9], updatedAt: row[10], bio: row[11], rating: row[12], note: row[13])
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = fields.id
        container["name"] = fields.name
        container["email"] = fields.email
        container["age"] = fields.age
        container["score"] = fields.score
        container["balance"] = fields.balance
        container["active"] = fields.active
        container["visits"] = fields.visits
        container["city"] = fields.city
        container["createdAt"] = fields.createdAt
        container["updatedAt"] = fields.updatedAt
        container["bio"] = fields.bio
        container["rating"] = fields.rating
        container["note"] = fields.note
    }
}

extension MixedRow: GRDBTwins {
    init(_ r: GRDBMixedRow) {
        self.init(
            id: r.id, name: r.name, email: r.email, age: r.age, score: r.score, balance: r.balance, active: r.active,
            visits: r.visits, city: r.city, createdAt: r.createdAt, updatedAt: r.updatedAt, bio: r.bio, rating: r.rating, note: r.note)
    }
    init(_ r: GRDBMixedRowManual) { self.init(r.fields) }
    var codable: GRDBMixedRow {
        GRDBMixedRow(
            id: id, name: name, email: email, age: age, score: score, balance: balance, active: active, visits: visits,
            city: city, createdAt: createdAt, updatedAt: updatedAt, bio: bio, rating: rating, note: note)
    }
    var manual: GRDBMixedRowManual { GRDBMixedRowManual(codable) }
}
