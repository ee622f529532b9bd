import Foundation
import ModelSync

/// `sqlite_concurrent_async`: 64 tasks, each running its share of the operations through the
/// async API, one in four a single-row write transaction (`UPDATE … WHERE id = ?`), the others a
/// single-row read (`SELECT … WHERE id = ?`), on a file database in WAL mode with 4 readers;
/// against GRDB 7.10.0's `DatabasePool` (`try await pool.read/write`, 4 readers). Throughput is
/// operations per second: reads/s is 3/4 of it, commits/s 1/4. During each timed run a sampler
/// reads `Threads:` from /proc/self/status; the peak (sampler excluded) is printed as a
/// `THREADS` line per contender.
enum ConcurrentAsyncWorkloads {
    static let tasks = 64
    static let rows = 1_000

    static let mixed = Workload(
        name: "sqlite_concurrent_async",
        summary: "64 tasks mixing single-row reads (3/4) and single-row write transactions (1/4) through the async API, 4 readers; ops/s; peer: grdb_pool",
        unit: .requestsPerSecond,
        sizes: [WorkloadSize(6_400, quick: true), WorkloadSize(64_000)]
    ) { size in
        let files = try Files()
        let ours = try Database(path: files.ours, configuration: DatabaseConfiguration(maximumReaders: 4))
        try await ours.write { db in
            try db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
            for id in 1...rows { try db.execute("INSERT INTO accounts (id, balance) VALUES (?, 0)", [.integer(Int64(id))]) }
        }
        let grdb = try await GRDBConcurrentPeer.pool(path: files.directory.appendingPathComponent("grdb.sqlite").path, rows: rows)
        let oursRun: @Sendable () async throws -> Int = {
            _ = files
            return try await mix(size.count) { id in
                try await ours.write { try $0.execute("UPDATE accounts SET balance = balance + 1 WHERE id = ?", [.integer(Int64(id))]) }
            } read: { id in
                try await ours.read { db in
                    guard case .integer(let balance) = try db.scalar("SELECT balance FROM accounts WHERE id = ?", [.integer(Int64(id))]) else { return -1 }
                    return Int(balance)
                }
            }
        }
        let grdbRun: @Sendable () async throws -> Int = {
            try await mix(size.count, write: grdb.write, read: grdb.read)
        }
        return PreparedWorkload(
            ours: .ours { try await ThreadPeak.measure("ours", oursRun) },
            peers: [Contender(name: "grdb_pool") { try await ThreadPeak.measure("grdb_pool", grdbRun) }]
        ) {
            // One run each; every write must be stored, and both must agree.
            _ = try await oursRun()
            _ = try await grdbRun()
            let oursTotal = try await ours.read { try $0.scalar("SELECT sum(balance) FROM accounts") }
            let grdbTotal = try await grdb.total()
            guard oursTotal == .integer(Int64(size.count / 4)), grdbTotal == size.count / 4 else {
                throw BenchmarkError("sqlite_concurrent_async: stored totals \(String(describing: oursTotal)) and \(String(describing: grdbTotal)), expected \(size.count / 4)")
            }
        }
    }

    static let all = [mixed]

    /// `count` operations spread over ``tasks`` tasks; returns how many ran plus a check on the
    /// reads (every balance read is non-negative).
    static func mix(
        _ count: Int, write: @escaping @Sendable (Int) async throws -> Void, read: @escaping @Sendable (Int) async throws -> Int
    ) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var done = 0
                    for operation in stride(from: task, to: count, by: tasks) {
                        let id = operation % rows + 1
                        if operation % 4 == 0 {
                            try await write(id)
                        } else if try await read(id) < 0 {
                            throw BenchmarkError("missing row \(id)")
                        }
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
    }
}

/// Samples the process's OS thread count while a run goes on, and prints the peak.
enum ThreadPeak {
    static func measure(_ contender: String, _ run: @Sendable () async throws -> Int) async throws -> Int {
        let sampler = Sampler()
        let thread = Thread { sampler.loop() }
        thread.start()
        defer {
            let peak = sampler.stop()
            FileHandle.standardError.write(Data("THREADS sqlite_concurrent_async \(contender) peak=\(peak) (cores: \(ProcessInfo.processInfo.activeProcessorCount))\n".utf8))
        }
        return try await run()
    }

    private final class Sampler: @unchecked Sendable {
        private let lock = NSLock()
        private var running = true
        private var peak = 0
        private let finished = DispatchSemaphore(value: 0)

        func loop() {
            while lock.withLock({ running }) {
                let threads = Self.threads()
                lock.withLock { peak = max(peak, threads - 1) }  // minus the sampler
                usleep(200)
            }
            finished.signal()
        }

        func stop() -> Int {
            lock.withLock { running = false }
            finished.wait()
            return lock.withLock { peak }
        }

        static func threads() -> Int {
            guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
            else { return 0 }
            return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
    }
}
