import Foundation
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// What the scale-out servers wait for while a contender runs, from PostgreSQL's side and from
/// the servers' CPU quotas, so that a missed goal names its bottleneck from data.
///
/// Every 5 ms one query (on a connection of its own) reads `pg_stat_activity` for the servers'
/// backends (their `application_name` is `modelsync-scale-<n>`) and, through `pgrowlocks`,
/// which backend holds the state row's lock. Per contender, over all its runs:
///
/// - `WAITS`: the busy (not idle) server backends per sample, by what they did: `CPU` (active,
///   no wait event), `Lock:transactionid` (queued on another transaction's row lock: the state
///   row), `Lock:tuple` (queued behind that one), `Lock:object` (`NOTIFY`'s queue lock at
///   commit), `idle_in_transaction` (a transaction open, waiting for its server process), and
///   so on; as shares of the busy backend-samples, and `busy` their mean number.
/// - `LOCK`: how often the state row was locked, what its holder did meanwhile, and the mean
///   time a write transaction held it (locked share × run time / write transactions, counted as
///   PostgreSQL transaction ids taken); writes per transaction (the sequence's growth over them).
/// - `CPU`: each instance's CPU use (`/proc/<pid>/stat`) against its quota, and the share of the
///   quota's periods in which the cgroup throttled it (`cpu.stat`); the CPU of the servers'
///   PostgreSQL backends, of the load generator (this process) and of the whole machine, in
///   cores; and the servers' and their backends' CPU per write (writes: the sequence's growth).
actor WaitSampler {
    static let interval = Duration.milliseconds(5)

    /// One contender's figures, summed over its runs.
    struct Tally: Sendable {
        var samples = 0
        var busy: [String: Int] = [:]
        var lockedSamples = 0
        var holder: [String: Int] = [:]
        var seconds = 0.0
        var transactions: Int64 = 0
        var writes: Int64 = 0
        /// Per instance: CPU seconds, and the quota's periods, throttled ones.
        var cpu: [Double] = []
        var periods: [Int64] = []
        var throttled: [Int64] = []
        /// CPU seconds of the servers' PostgreSQL backends, of this process (the load generator),
        /// and of the whole machine (every core).
        var postgres = 0.0
        var generator = 0.0
        var machine = 0.0
    }

    /// Counters read at the start and the end of a run.
    private struct Counters {
        let at: ContinuousClock.Instant
        let nextTransaction: Int64
        let sequence: Int64
        let cpu: [Double]
        let periods: [Int64]
        let throttled: [Int64]
        /// By backend process id.
        let postgres: [Int32: Double]
        let generator: Double
        let machine: Double
    }

    private let connection: PostgresConnection
    private let schema: String
    private let quotas: [CPUQuota?]
    private let seesLocks: Bool
    private var tallies: [String: Tally] = [:]
    private var order: [String] = []
    private var running: (key: String, start: Counters, task: Task<Tally, Never>)?

    private static let logger = Logger(label: "modelsync-bench.waits")

    /// Connects to the database of `url`; `quotas` are the instances' CPU groups, in order.
    static func connect(url: String, schema: String, quotas: [CPUQuota?]) async throws -> WaitSampler {
        guard let components = URLComponents(string: url), let host = components.host else { throw BenchmarkError("cannot read \(url)") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        let configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres", password: components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        // Who holds the state row's lock: `pgrowlocks` (contrib) reads it from the row itself.
        let seesLocks = (try? await connection.query("CREATE EXTENSION IF NOT EXISTS pgrowlocks", logger: logger)) != nil
        if !seesLocks { BenchmarkNotes.add("server_scale_out: no pgrowlocks extension, so LOCK lines are missing") }
        let sampler = WaitSampler(connection: connection, schema: schema, quotas: quotas, seesLocks: seesLocks)
        ExtraReportLines.add { [sampler] in sampler.linesSnapshot.withLock { $0 } }
        return sampler
    }

    private init(connection: PostgresConnection, schema: String, quotas: [CPUQuota?], seesLocks: Bool) {
        self.connection = connection
        self.schema = schema
        self.quotas = quotas
        self.seesLocks = seesLocks
    }

    /// The report's lines, kept outside the actor for the synchronous report.
    nonisolated let linesSnapshot = NSLockedState<[String]>([])

    /// Starts sampling for `key` (`<workload>_<size> contender=<name>`).
    func begin(_ key: String) async throws {
        await end()
        let start = try await counters()
        let connection = connection
        let query = sampleQuery
        let task = Task { await Self.sample(connection, query) }
        running = (key, start, task)
    }

    /// Stops sampling and adds the run to its contender's figures.
    func end() async {
        guard let (key, start, task) = running else { return }
        running = nil
        task.cancel()
        var tally = await task.value
        guard let stop = try? await counters() else { return }
        tally.seconds = (stop.at - start.at).seconds
        tally.transactions = stop.nextTransaction - start.nextTransaction
        tally.writes = stop.sequence - start.sequence
        tally.cpu = zip(stop.cpu, start.cpu).map { $0 - $1 }
        tally.periods = zip(stop.periods, start.periods).map { $0 - $1 }
        tally.throttled = zip(stop.throttled, start.throttled).map { $0 - $1 }
        // A backend that began during the run counts from 0.
        tally.postgres = stop.postgres.reduce(0) { $0 + $1.value - (start.postgres[$1.key] ?? 0) }
        tally.generator = stop.generator - start.generator
        tally.machine = stop.machine - start.machine
        if tallies[key] == nil { order.append(key) }
        tallies[key, default: Tally()].add(tally)
        linesSnapshot.withLock { $0 = order.flatMap { Self.lines($0, tallies[$0] ?? Tally(), quotaFraction: quotas.first??.fraction) } }
    }

    private var sampleQuery: PostgresQuery {
        let holders = seesLocks
            ? "(SELECT coalesce(array_agg(p), '{}') FROM pgrowlocks('\(schema).modelsync_state'), unnest(pids) AS p)"
            : "'{}'::int[]"
        return PostgresQuery(unsafeSQL: """
            SELECT a.state, a.wait_event_type, a.wait_event, a.pid = ANY(h.pids) FROM pg_stat_activity a, (SELECT \(holders) AS pids) h \
            WHERE a.application_name LIKE 'modelsync-scale-%' AND a.state IS DISTINCT FROM 'idle'
            """)
    }

    private static func sample(_ connection: PostgresConnection, _ query: PostgresQuery) async -> Tally {
        var tally = Tally()
        while !Task.isCancelled {
            do {
                var locked = false
                for try await (state, type, event, holds) in try await connection.query(query, logger: logger).decode((String?, String?, String?, Bool?).self) {
                    let what = switch (state, type, event) {
                    case ("idle in transaction", _, _): "idle_in_transaction"
                    case ("active", nil, _): "CPU"
                    case (_, let type?, let event?): "\(type):\(event)"
                    default: state ?? "unknown"
                    }
                    tally.busy[what, default: 0] += 1
                    if holds == true {
                        locked = true
                        tally.holder[what, default: 0] += 1
                    }
                }
                tally.samples += 1
                if locked { tally.lockedSamples += 1 }
                try await Task.sleep(for: interval)
            } catch {
                break
            }
        }
        return tally
    }

    private func counters() async throws -> Counters {
        let read = PostgresQuery(unsafeSQL: """
            SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, (SELECT sequence FROM \(schema).modelsync_state), \
            ARRAY(SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'modelsync-scale-%')
            """)
        var values: (Int64, Int64, [Int32]) = (0, 0, [])
        for try await row in try await connection.query(read, logger: Self.logger).decode((Int64, Int64, [Int32]).self) { values = row }
        let stats = quotas.map { $0.map(Self.cpuStats) ?? (0, 0, 0) }
        var postgres: [Int32: Double] = [:]
        for pid in values.2 { postgres[pid] = Self.processCPU(String(pid)) }
        return Counters(
            at: .now, nextTransaction: values.0, sequence: values.1, cpu: stats.map(\.0), periods: stats.map(\.1), throttled: stats.map(\.2),
            postgres: postgres, generator: Self.processCPU("self"), machine: Self.machineCPU())
    }

    private static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// CPU seconds (user and system) of a process, `self` for this one.
    private static func processCPU(_ pid: String) -> Double {
        // Fields after the command's closing parenthesis: utime and stime are 14 and 15.
        let stat = text("/proc/\(pid)/stat")
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds the whole machine spent busy (every core; idle and I/O wait left out).
    private static func machineCPU() -> Double {
        guard let line = text("/proc/stat").split(separator: "\n").first, line.hasPrefix("cpu ") else { return 0 }
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        // user nice system idle iowait irq softirq steal guest…: the machine's own work.
        guard values.count >= 7 else { return 0 }
        return (values[0] + values[1] + values[2] + values[5] + values[6]) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds of the group's processes, and its quota's periods and throttled periods.
    private static func cpuStats(_ quota: CPUQuota) -> (Double, Int64, Int64) {
        let seconds = text("\(quota.path)/cgroup.procs").split(separator: "\n").reduce(0) { $0 + processCPU(String($1)) }
        var periods: Int64 = 0, throttled: Int64 = 0
        for line in text("\(quota.path)/cpu.stat").split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Int64(parts[1]) else { continue }
            if parts[0] == "nr_periods" { periods = value }
            if parts[0] == "nr_throttled" { throttled = value }
        }
        return (seconds, periods, throttled)
    }

    private static func lines(_ key: String, _ tally: Tally, quotaFraction: Double?) -> [String] {
        func shares(_ counts: [String: Int], of total: Int) -> String {
            counts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
                .map { String(format: "%@=%.0f%%", $0.key, 100 * Double($0.value) / Double(max(total, 1))) }
                .joined(separator: " ")
        }
        let busyTotal = tally.busy.values.reduce(0, +)
        var lines = [
            String(format: "WAITS %@ samples=%d busy=%.2f ", key, tally.samples, Double(busyTotal) / Double(max(tally.samples, 1)))
                + shares(tally.busy, of: busyTotal),
        ]
        let lockedShare = Double(tally.lockedSamples) / Double(max(tally.samples, 1))
        lines.append(
            String(
                format: "LOCK %@ state_row_locked=%.0f%% hold_per_transaction=%.2fms transactions=%lld writes_per_transaction=%.1f holder: ",
                key, 100 * lockedShare, 1000 * lockedShare * tally.seconds / Double(max(tally.transactions, 1)), tally.transactions,
                Double(tally.writes) / Double(max(tally.transactions, 1)))
                + shares(tally.holder, of: tally.lockedSamples))
        if let quotaFraction, tally.seconds > 0 {
            let instances = tally.cpu.indices.map { index in
                String(
                    format: "i%d=%.2f(throttled %.0f%%)", index, tally.cpu[index] / tally.seconds,
                    100 * Double(tally.throttled[index]) / Double(max(tally.periods[index], 1)))
            }
            let cores = Double(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
            let servers = tally.cpu.reduce(0, +)
            func perWrite(_ seconds: Double) -> Double { 1000 * seconds / Double(max(tally.writes, 1)) }
            lines.append(
                String(format: "CPU %@ quota=%.2f ", key, quotaFraction) + instances.joined(separator: " ")
                    + String(
                        format: " postgres=%.2f generator=%.2f machine=%.2f/%.0f (cores busy); per write: servers %.3f ms, postgres %.3f ms",
                        tally.postgres / tally.seconds, tally.generator / tally.seconds, tally.machine / tally.seconds, cores,
                        perWrite(servers), perWrite(tally.postgres)))
        }
        return lines
    }
}

extension WaitSampler.Tally {
    mutating func add(_ other: Self) {
        samples += other.samples
        for (key, count) in other.busy { busy[key, default: 0] += count }
        lockedSamples += other.lockedSamples
        for (key, count) in other.holder { holder[key, default: 0] += count }
        seconds += other.seconds
        transactions += other.transactions
        writes += other.writes
        func sum<T: AdditiveArithmetic>(_ left: [T], _ right: [T]) -> [T] {
            left.isEmpty ? right : zip(left, right).map { $0 + $1 }
        }
        cpu = sum(cpu, other.cpu)
        periods = sum(periods, other.periods)
        throttled = sum(throttled, other.throttled)
        postgres += other.postgres
        generator += other.generator
        machine += other.machine
    }
}
