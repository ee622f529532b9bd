import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import TestProcesses
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `modelsync-stress-child` executable (not a dependency of the tests, so a filtered build
/// may lack it).
private let stressChild = StressMode.builtExecutable(named: "modelsync-stress-child")

/// Issue 13, reliability suite: `saveAll` batches survive `kill -9` whole or not at all.
@Suite("Crash safety: kill -9 during batch saves")
struct BatchSaveCrashTests {
    static let kills = StressMode.count(3, stress: 100)
    static let rowsPerBatch = 200

    // Skipped when the child was not built (`swift build --build-tests` builds it); under
    // CI=true it runs and fails instead, so a CI run can never pass without it.
    @Test(.enabled(if: stressChild != nil || StressMode.componentsRequired, "modelsync-stress-child is not built"))
    func batchesAreAllOrNothingAfterSIGKILL() async throws {
        let child = try #require(stressChild, "modelsync-stress-child is missing beside the test bundle")
        let directory = try TemporaryDirectory()
        let path = directory.path("batches.sqlite")
        var random = SeededGenerator(seed: 0x5EED_0013)
        var reported = Set<Int>()
        for round in 0..<Self.kills {
            let process = try ChildProcess(child, arguments: ["batch-saves", path, String(Self.rowsPerBatch)])
            var lines = process.lines().makeAsyncIterator()
            // Synchronise on the child's own reports: kill after a random number of commits,
            // then after a random pause (not a timing assertion: any moment is a valid one),
            // which lands anywhere in the next batch.
            let commitsBeforeKill = Int.random(in: 1...4, using: &random)
            var commits = 0
            while commits < commitsBeforeKill, let line = await lines.next() {
                if let batch = Self.batch(in: line) {
                    reported.insert(batch)
                    commits += 1
                }
            }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...20_000, using: &random)))
            let status = await process.kill()
            while let line = await lines.next() {
                if let batch = Self.batch(in: line) { reported.insert(batch) }
            }
            #expect(status == 128 + SIGKILL, "round \(round): the child ended by itself (status \(status))")
            try Self.check(path, reported: reported, round: round)
        }
        // The figures docs/RELIABILITY.md records.
        let stored = try await Database(path: path).read { try $0.scalar("SELECT count(DISTINCT batch) FROM batch_rows")?.integerValue ?? 0 }
        print("batch saves under kill -9: \(Self.kills) kills, \(stored) batches of \(Self.rowsPerBatch) rows stored, \(reported.count) reported")
    }

    static func batch(in line: String) -> Int? {
        line.hasPrefix("committed ") ? Int(line.dropFirst("committed ".count)) : nil
    }

    /// The file passes `integrity_check`, every batch in it is whole, batches are numbered
    /// without gaps, and every batch the child reported is there.
    static func check(_ path: String, reported: Set<Int>, round: Int) throws {
        let db = try Database(path: path)
        try db.read { db in
            let integrity = try db.rows("PRAGMA integrity_check").compactMap { $0.first?.textValue }
            #expect(integrity == ["ok"], "round \(round)")
            let counts = try db.rows("SELECT batch, count(*), count(DISTINCT position) FROM batch_rows GROUP BY batch ORDER BY batch")
            let batches = counts.compactMap { $0[0].integerValue.map(Int.init) }
            for row in counts {
                #expect(row[1] == .integer(Int64(rowsPerBatch)) && row[2] == .integer(Int64(rowsPerBatch)), "round \(round): batch \(row[0]) is partial")
            }
            #expect(batches == Array(0..<batches.count), "round \(round): batches are not numbered without gaps")
            #expect(reported.isSubset(of: Set(batches)), "round \(round): reported batches missing: \(reported.subtracting(batches).sorted())")
        }
    }
}
