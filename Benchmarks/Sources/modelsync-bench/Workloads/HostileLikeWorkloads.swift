import Foundation
import ModelSync
import ModelSyncServer
import NIOHTTP1

/// `GET /posts/<id>` while clients send `_like` patterns that make a backtracking engine run
/// for minutes (issue 48: over 200 posts of 40 `a`s, 4 clients sending `(a+)+$` left a read by
/// id unanswered for a minute), beside the same reads with no such clients, in the same run.
///
/// - `ours`: the reads while 4 clients each send `GET /posts?title_like=(a%2B)%2B%24` in a loop;
/// - `quiet`: the same reads alone;
/// - `busy`: the same reads while the 4 clients each send `GET /posts/1` in a loop instead: what
///   four busy clients cost whatever they ask, on the same cores (the control for `ours`).
///
/// The server is a JSON-file process of its own (this binary's `--serve`, a release build) over
/// 1,000 posts and 200 whose titles are 40 `a`s and a `!`. One client reads, one request at a
/// time; each read is timed. The `RESULT server_get_id_under_like_<size>` line under the report
/// gives the p99s and their ratios (goal: ≤ 2, hostile / quiet).
enum HostileLikeWorkloads {
    static let hostileClients = 4
    static let hostilePath = "/posts?title_like=(a%2B)%2B%24"

    static let getByIDUnderLike = Workload(
        name: "server_get_id_under_like",
        summary: "GET /posts/<id>, one at a time, over a JSON-file server process; ours: while \(hostileClients) clients send title_like=(a+)+$; peer: quiet (none)",
        unit: .requestsPerSecond, sizes: [WorkloadSize(500, quick: true), WorkloadSize(2_000)]
    ) { size in
        let base = try await server()
        let latencies = Latencies(label: "server_get_id_under_like_\(size.label)")
        func contender(_ name: String, sending path: String?) -> Contender {
            Contender(name: name) {
                let attackers = path.map { path in (0..<hostileClients).map { _ in Task { await attack(base + path) } } } ?? []
                defer { for attacker in attackers { attacker.cancel() } }
                var answered = 0
                var samples: [Double] = []
                samples.reserveCapacity(size.count)
                for index in 0..<size.count {
                    let url = "\(base)/posts/\((index * 7) % ServerWorkloads.postCount + 1)"
                    let started = ContinuousClock.now
                    let (status, _, _) = try await Load.send(.GET, url, body: nil, headers: [])
                    samples.append((ContinuousClock.now - started).milliseconds)
                    guard status == 200 else { throw BenchmarkError("GET \(url) answered \(status)") }
                    answered += 1
                }
                for attacker in attackers { attacker.cancel() }
                for attacker in attackers { await attacker.value }
                latencies.add(samples, to: name)
                return answered
            }
        }
        let ours = contender(Contender.oursName, sending: hostilePath)
        let quiet = contender("quiet", sending: nil)
        let busy = contender("busy", sending: "/posts/1")
        return PreparedWorkload(ours: ours, peers: [quiet, busy]) {
            let (status, _, body) = try await Load.send(.GET, base + hostilePath, body: nil, headers: [])
            guard status == 200, (try? JSONValue(parsing: body))?.arrayValue?.isEmpty == true else {
                throw BenchmarkError("GET \(hostilePath) answered \(status), not an empty list")
            }
            latencies.reset()
        }
    }

    static let all = [getByIDUnderLike]

    /// Sends `url` until cancelled.
    private static func attack(_ url: String) async {
        while !Task.isCancelled {
            _ = try? await Load.send(.GET, url, body: nil, headers: [])
        }
    }

    /// A JSON-file server process over the posts and the 200 all-`a` ones, started once.
    private static func server() async throws -> String {
        if let started = started.withLock({ $0 }) { return started }
        var data = ServerFleet.data()
        let posts = (data["posts"]?.arrayValue ?? []) + (1...200).map { offset -> JSONValue in
            ["id": .number(JSONNumber(ServerWorkloads.postCount + offset)), "userId": 1, "title": .string(String(repeating: "a", count: 40) + "!")]
        }
        data = ["posts": .array(posts)]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-like-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("db.json")
        try Data(data.jsonBytes()).write(to: file)
        let base = try await ServerFleet.shared.launch(URL(fileURLWithPath: CommandLine.arguments[0]), ["--serve", file.path])
        started.withLock { $0 = base }
        return base
    }

    private static let started = NSLockedState<String?>(nil)

    /// Every timed read's latency, by contender, and the line comparing their p99s.
    final class Latencies: Sendable {
        private let samples = NSLockedState<[String: [Double]]>([:])

        init(label: String) {
            ExtraReportLines.add { [self] in lines(label) }
        }

        func add(_ new: [Double], to contender: String) {
            samples.withLock { $0[contender, default: []] += new }
        }

        func reset() { samples.withLock { $0 = [:] } }

        private func lines(_ label: String) -> [String] {
            let samples = samples.withLock { $0 }
            let hostile = samples[Contender.oursName] ?? [], quiet = samples["quiet"] ?? [], busy = samples["busy"] ?? []
            guard let hostileP99 = Self.p99(hostile), let quietP99 = Self.p99(quiet), let busyP99 = Self.p99(busy) else { return [] }
            return [
                "RESULT \(label) hostile_p99_ms=\(TextReport.format(hostileP99, 2)) quiet_p99_ms=\(TextReport.format(quietP99, 2)) "
                    + "busy_p99_ms=\(TextReport.format(busyP99, 2)) hostile/quiet=\(TextReport.format(hostileP99 / quietP99, 2)) "
                    + "hostile/busy=\(TextReport.format(hostileP99 / busyP99, 2)) (goal: hostile/quiet <= 2; \(hostile.count), \(quiet.count), \(busy.count) reads)",
            ]
        }

        private static func p99(_ values: [Double]) -> Double? {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        }
    }
}
