import Foundation
import ModelSync

/// Key-value storage: one model per key (the 14-column `MixedRow`), saved and fetched one by
/// one. Ours is a `StorageSuite` (generated JSON codec; each save a temporary file, `fsync`,
/// `rename`, `fsync` of the directory). Peers: `foundation_atomic`, `JSONEncoder` /
/// `JSONDecoder` on the Codable twin and `Data.write(to:options: .atomic)` / `Data(contentsOf:)`,
/// one file per key (it `fsync`s the file, not the directory); `userdefaults`, the same JSON
/// `Data` in a `UserDefaults` suite, flushed once per run with `synchronize()`.
enum StorageWorkloads {
    static let save = Workload(
        name: "storage_save", summary: "save models one per key; peers: foundation_atomic, userdefaults",
        unit: .valuesPerSecond, sizes: [WorkloadSize(200, quick: true), WorkloadSize(2_000)]
    ) { size in
        let fixture = try Fixture(size)
        let ours = Contender.ours(reset: { try fixture.suite.removeAll() }) {
            for (key, row) in zip(fixture.keys, fixture.rows) { try fixture.suite.save(row, forKey: key) }
            return fixture.rows.count
        }
        return PreparedWorkload(ours: ours, peers: [fixture.foundationAtomicSaves(), fixture.userDefaultsSaves()]) {
            try fixture.fill()
            try fixture.verify()
        }
    }

    /// The same saves as one batch: ours flushes the directory once for all of them (each
    /// file still gets its own flushed temporary file and rename); the peers cannot batch.
    static let saveBatch = Workload(
        name: "storage_save_batch", summary: "save models one per key, as one batch (one directory fsync); peers: foundation_atomic, userdefaults",
        unit: .valuesPerSecond, sizes: [WorkloadSize(200, quick: true), WorkloadSize(2_000)]
    ) { size in
        let fixture = try Fixture(size)
        let entries = Array(zip(fixture.keys, fixture.rows)).map { (key: $0.0, value: $0.1) }
        let ours = Contender.ours(reset: { try fixture.suite.removeAll() }) {
            try fixture.suite.save(entries)
            return entries.count
        }
        return PreparedWorkload(ours: ours, peers: [fixture.foundationAtomicSaves(), fixture.userDefaultsSaves()]) {
            try fixture.fill()
            try fixture.verify()
        }
    }

    static let fetch = Workload(
        name: "storage_fetch", summary: "fetch models one per key; peers: foundation_atomic, userdefaults",
        unit: .valuesPerSecond, sizes: [WorkloadSize(200, quick: true), WorkloadSize(2_000)]
    ) { size in
        let fixture = try Fixture(size)
        try fixture.fill()
        let ours = Contender.ours {
            var sum = 0
            for key in fixture.keys { sum &+= try fixture.suite.fetch(MixedRow.self, forKey: key)?.id ?? 0 }
            return sum
        }
        let atomic = Contender(name: "foundation_atomic") {
            let decoder = JSONDecoder()
            var sum = 0
            for url in fixture.peerFiles { sum &+= try decoder.decode(GRDBMixedRow.self, from: Data(contentsOf: url)).id }
            return sum
        }
        let defaults = Contender(name: "userdefaults") {
            let decoder = JSONDecoder()
            var sum = 0
            for key in fixture.keys {
                guard let data = fixture.defaults.data(forKey: key) else { throw BenchmarkError("userdefaults: \(key) missing") }
                sum &+= try decoder.decode(GRDBMixedRow.self, from: data).id
            }
            return sum
        }
        return PreparedWorkload(ours: ours, peers: [atomic, defaults]) { try fixture.verify() }
    }

    static let all = [save, saveBatch, fetch]
}

/// The rows, their keys, a suite, a directory for the Foundation peer and a defaults suite,
/// all removed when the fixture goes.
private final class Fixture: @unchecked Sendable {
    let rows: [MixedRow]
    let keys: [String]
    let directory: URL
    let suite: StorageSuite
    let peerFiles: [URL]
    let defaultsName = "modelsync-bench-\(UUID().uuidString)"
    let defaults: UserDefaults

    init(_ size: WorkloadSize) throws {
        rows = (0..<size.count).map(MixedRow.init)
        keys = rows.map { "row-\($0.id)" }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-\(UUID().uuidString)")
        suite = try StorageSuite(name: "ours", in: directory)
        let peerDirectory = directory.appendingPathComponent("foundation")
        try FileManager.default.createDirectory(at: peerDirectory, withIntermediateDirectories: true)
        peerFiles = keys.map { peerDirectory.appendingPathComponent("\($0).json") }
        guard let defaults = UserDefaults(suiteName: defaultsName) else { throw BenchmarkError("no UserDefaults suite") }
        self.defaults = defaults
    }

    deinit {
        defaults.removePersistentDomain(forName: defaultsName)
        try? FileManager.default.removeItem(at: directory)
    }

    /// The Foundation peer of a save workload: `JSONEncoder` and an atomic `Data.write` per key.
    func foundationAtomicSaves() -> Contender {
        Contender(name: "foundation_atomic", reset: removePeerFiles) {
            let encoder = JSONEncoder()
            for (url, row) in zip(self.peerFiles, self.rows) { try encoder.encode(row.codable).write(to: url, options: .atomic) }
            return self.rows.count
        }
    }

    /// The UserDefaults peer of a save workload: the same JSON per key, synchronised once.
    func userDefaultsSaves() -> Contender {
        Contender(name: "userdefaults", reset: clearDefaults) {
            let encoder = JSONEncoder()
            for (key, row) in zip(self.keys, self.rows) { self.defaults.set(try encoder.encode(row.codable), forKey: key) }
            self.defaults.synchronize()
            return self.rows.count
        }
    }

    func removePeerFiles() throws {
        for url in peerFiles where FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }

    func clearDefaults() {
        defaults.removePersistentDomain(forName: defaultsName)
    }

    /// Every contender's store holds every row.
    func fill() throws {
        let encoder = JSONEncoder()
        for (index, row) in rows.enumerated() {
            try suite.save(row, forKey: keys[index])
            let data = try encoder.encode(row.codable)
            try data.write(to: peerFiles[index], options: .atomic)
            defaults.set(data, forKey: keys[index])
        }
        defaults.synchronize()
    }

    /// Each store reads back the rows it was given.
    func verify() throws {
        let decoder = JSONDecoder()
        try expectEqual(try keys.compactMap { try suite.fetch(MixedRow.self, forKey: $0) }, rows, "storage ours")
        try expectEqual(try peerFiles.map { MixedRow(try decoder.decode(GRDBMixedRow.self, from: Data(contentsOf: $0))) }, rows, "storage foundation_atomic")
        try expectEqual(try keys.map { MixedRow(try decoder.decode(GRDBMixedRow.self, from: defaults.data(forKey: $0) ?? Data())) }, rows, "storage userdefaults")
    }
}
