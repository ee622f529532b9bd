import AsyncHTTPClient
import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Whether server processes scale out over one PostgreSQL database, on a machine too small to
/// show it: each server process is capped at 0.4 of a core by the cgroup v1 `cpu` controller
/// (a bigger machine's core per process, simulated), PostgreSQL and the load generator are not.
///
/// - `ours`: two capped processes, requests alternating between them;
/// - `one_instance`: one capped process; `four_instances`: four.
///
/// Goals: two instances ≥ 1.7× one on reads, ≥ 1.5× on writes. During `ours`' write runs, a
/// probe writes through the first instance every 20 ms while a stream on the second listens:
/// the time from each probe's answer to its event on the other instance is reported (p50,
/// p99; goal: p99 < 100 ms). Needs root and the cgroup v1 `cpu` controller; without them the
/// processes run uncapped and a note says so.
///
/// Each contender's runs are sampled (``WaitSampler``): `WAITS`, `LOCK` and `CPU` lines under
/// the results say what the servers' PostgreSQL backends waited for, how long the state row's
/// lock was held, and whose CPU ran out (an instance's quota, or the machine's cores).
enum ScaleOutWorkloads {
    static let instanceCPU = 0.4

    static let reads = workload("server_scale_out_reads", "GET /posts/<id>", probes: false) { base, worker, index, _ in
        (.GET, "\(base)/posts/\((worker * 61 + index * 7) % ServerWorkloads.postCount + 1)", nil, [])
    }
    static let writes = workload("server_scale_out_writes", "PATCH /posts/<id>, each worker its own posts", probes: true) { base, worker, index, _ in
        let id = worker + 1 + ServerWorkloads.concurrency * (index % (ServerWorkloads.postCount / ServerWorkloads.concurrency))
        return (.PATCH, "\(base)/posts/\(id)", #"{"title": "scaled \#(worker)-\#(index)"}"#, [])
    }

    static let all = [reads, writes]

    private static func workload(_ name: String, _ what: String, probes: Bool, _ request: @escaping ServerWorkloads.MakeRequest) -> Workload {
        let workloadName = name
        return Workload(
            name: name,
            summary: "\(what) to server processes capped at \(instanceCPU) CPU each over one PostgreSQL; ours: 2 instances; peers: one_instance, four_instances",
            unit: .requestsPerSecond, sizes: ServerWorkloads.sizes
        ) { size in
            let fleet = try await ScaleOutFleet.shared.start()
            func contender(_ name: String, _ bases: [String], probing: Bool = false) -> Contender {
                Contender(name: name) {
                    // Sampled while it runs: what the servers wait for (see `WaitSampler`).
                    try await fleet.waits.begin("\(workloadName)_\(size.label) contender=\(name)")
                    let probe = probing ? Task { await fleet.probe.run(through: bases[0]) } : nil
                    let answered: Int
                    do {
                        answered = try await Load.run(bases: bases, count: size.count, request: request)
                    } catch {
                        probe?.cancel()
                        await fleet.waits.end()
                        throw error
                    }
                    probe?.cancel()
                    await probe?.value
                    await fleet.waits.end()
                    return answered
                }
            }
            let ours = contender(Contender.oursName, Array(fleet.bases.prefix(2)), probing: probes)
            let peers = [contender("one_instance", [fleet.bases[0]]), contender("four_instances", fleet.bases)]
            return PreparedWorkload(ours: ours, peers: peers) {
                for contender in [ours] + peers { _ = try await contender.run() }
                guard await fleet.probe.sawEvents || !probes else {
                    throw BenchmarkError("\(name): no probe write reached the other instance's stream")
                }
            }
        }
    }
}

/// A cgroup v1 `cpu` group that caps its processes at a fraction of one core.
struct CPUQuota: Sendable {
    static let root = "/sys/fs/cgroup/cpu"
    static let period = 100_000

    let path: String
    let fraction: Double

    /// A group named `name`, or nil when the controller cannot be written (not root, or no
    /// cgroup v1 `cpu` hierarchy).
    static func make(_ name: String, fraction: Double) -> CPUQuota? {
        guard FileManager.default.isWritableFile(atPath: "\(root)/cgroup.procs") else { return nil }
        return CPUQuota(path: "\(root)/\(name)", fraction: fraction)
    }

    /// Creates the group with its quota and moves the process (all its threads) into it.
    func place(_ pid: Int32) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try write(String(Self.period), to: "cpu.cfs_period_us")
        try write(String(Int(fraction * Double(Self.period))), to: "cpu.cfs_quota_us")
        try write(String(pid), to: "cgroup.procs")
    }

    /// Removes the group once its processes are gone; false while one is still in it.
    @discardableResult
    func remove() -> Bool { rmdir(path) == 0 || errno == ENOENT }

    private func write(_ text: String, to file: String) throws {
        guard let handle = FileHandle(forWritingAtPath: "\(path)/\(file)") else { throw BenchmarkError("cannot open \(path)/\(file)") }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data(text.utf8))
    }
}

/// Four capped server processes over one database (schema `modelsync_scale`), started once.
actor ScaleOutFleet {
    static let shared = ScaleOutFleet()

    struct Started: Sendable {
        let bases: [String]
        let probe: StreamProbe
        let waits: WaitSampler
    }

    private var started: Started?

    func start() async throws -> Started {
        if let started { return started }
        guard let url = ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_URL"], !url.isEmpty else {
            throw BenchmarkError("the scale-out workloads need PostgreSQL: set MODELSYNC_POSTGRES_URL (source .ci/postgres.sh starts one)")
        }
        var data = ServerFleet.data().objectValue ?? [:]
        data["probes"] = []
        try await SyncServer.importData(.object(data), into: try ServerDatabase(url: url).withSchema("modelsync_scale"), replacing: true)
        let executable = URL(fileURLWithPath: CommandLine.arguments[0])
        var bases: [String] = []
        var quotas: [CPUQuota?] = []
        for instance in 0..<4 {
            // Each instance's connections by name in `pg_stat_activity`, for the wait sampler.
            var components = URLComponents(string: url) ?? URLComponents()
            components.queryItems = (components.queryItems ?? []).filter { !["schema", "application_name"].contains($0.name) } + [
                URLQueryItem(name: "schema", value: "modelsync_scale"), URLQueryItem(name: "application_name", value: "modelsync-scale-\(instance)"),
            ]
            let quota = CPUQuota.make("modelsync-bench-\(getpid())-\(instance)", fraction: ScaleOutWorkloads.instanceCPU)
            if quota == nil {
                BenchmarkNotes.add("server_scale_out: uncapped, since \(CPUQuota.root) cannot be written (needs root and cgroup v1)")
            }
            bases.append(try await ServerFleet.shared.launch(executable, ["--serve", components.string ?? url], quota: quota))
            quotas.append(quota)
        }
        let probe = StreamProbe()
        try await probe.listen(to: bases[1])
        let waits = try await WaitSampler.connect(url: url, schema: "modelsync_scale", quotas: quotas)
        let fleet = Started(bases: bases, probe: probe, waits: waits)
        started = fleet
        return fleet
    }
}

/// Writes through one instance and times their arrival on another instance's stream.
actor StreamProbe {
    private var answered: [Int: ContinuousClock.Instant] = [:]
    private var arrived: [Int: ContinuousClock.Instant] = [:]
    private var next = 0
    private var listening: Task<Void, Never>?

    var sawEvents: Bool { !arrived.isEmpty }

    /// Opens `/_changes/stream` of `probes` on `base` and records each probe's arrival.
    func listen(to base: String) async throws {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "\(base)/_changes/stream?since=now&collections=probes"), timeout: .hours(24))
        guard response.status == .ok else { throw BenchmarkError("the probe's stream answered \(response.status.code)") }
        listening = Task {
            var pending: [UInt8] = []
            do {
                for try await buffer in response.body {
                    pending += buffer.readableBytesView
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = pending[..<newline]
                        pending.removeSubrange(...newline)
                        guard line.starts(with: Array("data: ".utf8)),
                              let n = (try? JSONValue(parsing: Array(line.dropFirst(6))))?["record"]?["n"]?.intValue else { continue }
                        arrive(n, at: .now)
                    }
                }
            } catch {
                // The stream ends when the server stops.
            }
        }
    }

    private func arrive(_ n: Int, at instant: ContinuousClock.Instant) {
        if arrived[n] == nil { arrived[n] = instant }
    }

    private func answer(_ n: Int, at instant: ContinuousClock.Instant) { answered[n] = instant }

    private func nextNumber() -> Int {
        next += 1
        return next
    }

    /// Creates a probe through `base` every 20 ms until cancelled, then reports the latencies so
    /// far as a note.
    nonisolated func run(through base: String) async {
        while !Task.isCancelled {
            let n = await nextNumber()
            // A new record each time: the feed sends a record's current state, so a second
            // update of one record before the stream read it would hide the first.
            if let (status, _, _) = try? await Load.send(.POST, "\(base)/probes", body: #"{"n": \#(n)}"#, headers: []), status == 201 {
                await answer(n, at: .now)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        await report()
    }

    /// p50 and p99 of answer → arrival over every probe written so far (an event that came
    /// before its answer counts as 0; those not arrived yet are counted apart).
    private func report() {
        var latencies: [Double] = []
        var lost = 0
        for (n, answer) in answered {
            guard let arrival = arrived[n] else {
                lost += 1
                continue
            }
            latencies.append(max(0, (arrival - answer).milliseconds))
        }
        guard !latencies.isEmpty else { return }
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        BenchmarkNotes.replace(
            prefix: "server_scale_out_writes stream latency",
            with: String(
                format: "server_scale_out_writes stream latency (a write through instance 1 until the event on instance 2's stream, under ours' load): p50 %.1f ms, p99 %.1f ms over %d probes; %d not arrived",
                percentile(0.5), percentile(0.99), latencies.count, lost))
    }
}
