import Foundation
import ModelSync
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

/// The server rows timed from outside: `wrk` sends the requests (a C load generator, with a Lua
/// script per row), so that the client's own cost does not hide the server's, as the in-process
/// client of ``ServerWorkloads`` may. Each row runs against its limits and peers in the same run,
/// in rounds (ours, then each other contender, then ours again…), the median round reported:
///
/// - `ours`: `modelsync-server` over PostgreSQL, one process (a release build: this binary's
///   `--serve` mode);
/// - `constant_route`: a Hummingbird application answering each route with a constant (this
///   binary's `--serve-constant`): the HTTP layer's ceiling;
/// - `pgbench_select` (reads by id): `pgbench -S -M prepared`, the same client count, on the same
///   PostgreSQL: the database's own ceiling for a primary-key read;
/// - `json_server_py`: json-server.py, when installed; `json_file`: our server over its JSON file;
///   `sqlite`: our server over a SQLite file (one process, `synchronous = FULL`).
///
/// These rows do not fit the harness's model (a run of a fixed number of requests, timed): wrk
/// runs for a duration and reports requests/s and a latency distribution, so they have their
/// own runner and report, and print `RESULT` lines of their own form:
/// `RESULT server_get_id_wrk ours_rps=… ours_p50_ms=… ours_p99_ms=… pgbench_select_rps=… … ratio=…`,
/// where `ratio` is ours over the other's requests/s (the fraction of a limit, the multiple of a peer).
enum WrkWorkloads {
    /// One row: its name, what it sends, and its Lua script.
    struct Row: Sendable {
        let name: String
        let summary: String
        let script: String
        /// Whether the row writes: its created posts are deleted after each run, untimed.
        var creates = false
        /// Whether the script wants the posts' current ETags before each run.
        var needsETags = false
        /// Whether `pgbench -S` is this row's limit.
        var pgbenchLimit = false
    }

    /// wrk's connections: the in-process client's count, and pgbench's `-c`.
    static let connections = ServerWorkloads.concurrency
    /// wrk's and pgbench's threads: one per core of the machine these figures come from.
    static let threads = 2

    static let rows: [Row] = [
        Row(name: "server_get_id_wrk", summary: "GET /posts/<id>, by wrk", script: getByID, pgbenchLimit: true),
        Row(name: "server_get_filtered_wrk", summary: "GET /posts?userId=<n> (10 of 1,000 posts), by wrk", script: getFiltered),
        Row(name: "server_post_wrk", summary: "POST /posts, by wrk (the created posts are deleted after each run, untimed)", script: post, creates: true),
        Row(
            name: "server_patch_if_match_wrk", summary: "PATCH /posts/<id> with the post's current ETag as If-Match, by wrk",
            script: patchIfMatch, needsETags: true),
    ]

    static var names: [String] { rows.map(\.name) }

    static func list() -> String {
        rows.map {
            "\($0.name)  [requests/s, p50, p99; wrk -c \(connections) -t \(threads)]\n    \($0.summary); ours: PostgreSQL, 1 server process; "
                + "limits: \($0.pgbenchLimit ? "pgbench_select, " : "")constant_route; peers: json_server_py, json_file, sqlite"
        }.joined(separator: "\n")
    }

    // MARK: - Scripts

    /// Each wrk thread numbers its requests; `tid` (0-based, set in `setup`) keeps the threads'
    /// posts apart where that matters.
    private static let threadSetup = """
        local threads = {}
        local next_tid = 0
        function setup(thread)
          thread:set("tid", next_tid)
          next_tid = next_tid + 1
          table.insert(threads, thread)
        end
        tid = 0
        counter = 0
        """

    static let getByID = threadSetup + """

        request = function()
          counter = counter + 1
          return wrk.format("GET", "/posts/" .. ((counter * 61 + tid * 7) % 1000 + 1))
        end
        """

    static let getFiltered = threadSetup + """

        request = function()
          counter = counter + 1
          return wrk.format("GET", "/posts?userId=" .. ((counter * 7 + tid) % 100 + 1))
        end
        """

    /// Records the ids it is answered with, and writes them to `MODELSYNC_WRK_CREATED` when done.
    static let post = threadSetup + """

        created = {}
        wrk.method = "POST"
        wrk.headers["Content-Type"] = "application/json"
        request = function()
          counter = counter + 1
          return wrk.format(nil, "/posts", nil, '{"userId": 1, "title": "created ' .. tid .. '-' .. counter .. '", "body": "text"}')
        end
        response = function(status, headers, body)
          local id = string.match(body, '"id"%s*:%s*"?([%w%-]+)')
          if id then table.insert(created, id) end
        end
        function done(summary, latency, requests)
          local file = io.open(os.getenv("MODELSYNC_WRK_CREATED"), "w")
          for _, thread in ipairs(threads) do
            for _, id in ipairs(thread:get("created")) do file:write(id, "\\n") end
          end
          file:close()
        end
        """

    /// Thread `tid` of `n` patches posts `tid+1, tid+1+n, …` in turn, 1,000/n of them, so no
    /// two requests in flight name one post (8 connections a thread; a post comes round again
    /// 500 requests later). Each sends the post's newest ETag: from `MODELSYNC_WRK_ETAGS` (one
    /// `id etag` line per post, read before the run) and then from each answer.
    static let patchIfMatch = threadSetup + """

        etags = {}
        init = function(args)
          local file = io.open(os.getenv("MODELSYNC_WRK_ETAGS"), "r")
          if file then
            for line in file:lines() do
              local id, tag = string.match(line, "^(%d+) (.+)$")
              if id then etags[tonumber(id)] = tag end
            end
            file:close()
          end
        end
        request = function()
          counter = counter + 1
          local n = \(threads)
          local id = ((counter % math.floor(1000 / n)) * n) + tid + 1
          local headers = { ["Content-Type"] = "application/json" }
          if etags[id] then headers["If-Match"] = etags[id] end
          return wrk.format("PATCH", "/posts/" .. id, headers, '{"title": "edit ' .. counter .. '"}')
        end
        response = function(status, headers, body)
          local id = tonumber(string.match(body, '"id"%s*:%s*(%d+)'))
          local tag = headers["ETag"] or headers["etag"] or headers["Etag"]
          if id and tag then etags[id] = tag end
        end
        """

    // MARK: - Running

    /// One contender's figures in one run.
    struct Sample {
        var requestsPerSecond: Double
        var p50: Double?
        var p99: Double?
        /// Answers other than 2xx/3xx, and socket errors.
        var failures: Int
    }

    /// A contender's rounds.
    struct Figures {
        let contender: String
        var samples: [Sample] = []

        /// The round with the median requests/s (its latencies with it).
        var median: Sample? {
            let sorted = samples.sorted { $0.requestsPerSecond < $1.requestsPerSecond }
            return sorted.isEmpty ? nil : sorted[sorted.count / 2]
        }
    }

    struct Result {
        let row: Row
        let figures: [Figures]
    }

    /// Runs `selected` rows: `rounds` rounds of `seconds` seconds per contender.
    static func run(_ selected: [Row], rounds: Int, seconds: Int, log: (String) -> Void) async throws -> [Result] {
        guard let wrk = executable("wrk") else {
            throw BenchmarkError("the wrk rows need wrk (Debian: apt-get install wrk)")
        }
        let servers = try await ServerFleet.shared.start()
        let constant = try await ServerFleet.shared.launch(URL(fileURLWithPath: CommandLine.arguments[0]), ["--serve-constant"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-wrk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pgbench = try Pgbench(directory: directory, log: log)

        var targets = [("ours", servers.postgres), ("constant_route", constant)]
        if let python = servers.jsonServerPy { targets.append(("json_server_py", python)) }
        targets.append(("json_file", servers.jsonFile))
        targets.append(("sqlite", servers.sqlite))

        var results: [Result] = []
        for row in selected {
            let script = directory.appendingPathComponent("\(row.name).lua")
            try Data(row.script.utf8).write(to: script)
            var figures = targets.map { Figures(contender: $0.0) }
            if row.pgbenchLimit, pgbench != nil { figures.append(Figures(contender: "pgbench_select")) }
            log("\(row.name): \(rounds) round(s) of \(seconds) s per contender, in turn")
            for _ in 0..<rounds {
                for index in figures.indices {
                    let contender = figures[index].contender
                    let sample: Sample
                    if contender == "pgbench_select", let pgbench {
                        sample = try pgbench.run(seconds: seconds)
                    } else {
                        let base = targets[index].1
                        sample = try await runWrk(wrk, script: script, base: base, row: row, seconds: seconds, directory: directory)
                    }
                    log("  \(contender): \(TextReport.format(sample.requestsPerSecond, 0)) requests/s, p50 \(sample.p50.map { TextReport.format($0, 2) } ?? "-") ms, "
                        + "p99 \(sample.p99.map { TextReport.format($0, 2) } ?? "-") ms\(sample.failures > 0 ? ", \(sample.failures) failures" : "")")
                    guard sample.failures == 0 else {
                        throw BenchmarkError("\(row.name): \(contender) answered \(sample.failures) requests with an error (see the wrk output above)")
                    }
                    figures[index].samples.append(sample)
                }
            }
            results.append(Result(row: row, figures: figures))
        }
        return results
    }

    /// One wrk run against `base`; for a row that creates posts, deletes them afterwards.
    private static func runWrk(_ wrk: String, script: URL, base: String, row: Row, seconds: Int, directory: URL) async throws -> Sample {
        var environment = ProcessInfo.processInfo.environment
        let created = directory.appendingPathComponent("created.txt")
        let etags = directory.appendingPathComponent("etags.txt")
        environment["MODELSYNC_WRK_CREATED"] = created.path
        environment["MODELSYNC_WRK_ETAGS"] = etags.path
        if row.needsETags { try await writeETags(base: base, to: etags) }
        let output = try runProcess(
            wrk, ["-t", "\(threads)", "-c", "\(connections)", "-d", "\(seconds)s", "--latency", "-s", script.path, base], environment: environment)
        if row.creates {
            let ids = (try? String(contentsOf: created, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
            try await deletePosts(ids, base: base)
        }
        return try parseWrk(output)
    }

    /// `id etag` per post of the workload's thousand, as the server answers them now.
    private static func writeETags(base: String, to file: URL) async throws {
        let lines = try await withThrowingTaskGroup(of: String.self) { group in
            for worker in 0..<connections {
                group.addTask {
                    var lines = ""
                    for id in stride(from: worker + 1, through: ServerWorkloads.postCount, by: connections) {
                        let (status, headers, _) = try await Load.send(.GET, "\(base)/posts/\(id)", body: nil, headers: [])
                        if (200..<300).contains(status), let etag = headers["ETag"].first { lines += "\(id) \(etag)\n" }
                    }
                    return lines
                }
            }
            return try await group.reduce("", +)
        }
        try Data(lines.utf8).write(to: file)
    }

    private static func deletePosts(_ ids: [String], base: String) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<connections {
                group.addTask {
                    for index in stride(from: worker, to: ids.count, by: connections) {
                        _ = try await Load.send(.DELETE, "\(base)/posts/\(ids[index])", body: nil, headers: [])
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Requests/s, the 50th and 99th latency percentiles and the failures of wrk's report.
    static func parseWrk(_ output: String) throws -> Sample {
        var sample = Sample(requestsPerSecond: 0, failures: 0)
        var sawRate = false
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first == "Requests/sec:", fields.count > 1, let rate = Double(fields[1]) {
                sample.requestsPerSecond = rate
                sawRate = true
            } else if first == "50%", fields.count > 1 {
                sample.p50 = milliseconds(fields[1])
            } else if first == "99%", fields.count > 1 {
                sample.p99 = milliseconds(fields[1])
            } else if line.contains("Non-2xx or 3xx responses:"), let count = fields.last.flatMap({ Int($0) }) {
                sample.failures += count
            } else if first == "Socket", line.contains("errors:") {
                // `Socket errors: connect 0, read 0, write 0, timeout 0`
                sample.failures += fields.compactMap { Int($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }.reduce(0, +)
            }
        }
        guard sawRate else { throw BenchmarkError("wrk printed no Requests/sec:\n\(output)") }
        return sample
    }

    /// `1.93ms`, `850.00us`, `1.02s` in milliseconds.
    private static func milliseconds(_ text: Substring) -> Double? {
        for (suffix, scale) in [("us", 1e-3), ("ms", 1.0), ("s", 1e3), ("m", 60e3)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return nil
    }

    // MARK: - Report

    static func table(_ results: [Result]) -> String {
        var rows = [["workload", "contender", "requests/s", "p50 ms", "p99 ms", "rounds", "ours / it"]]
        for result in results {
            let ours = result.figures.first { $0.contender == "ours" }?.median
            for (index, figures) in result.figures.enumerated() {
                guard let median = figures.median else { continue }
                let ratio = figures.contender == "ours" ? "" : ours.map { TextReport.format($0.requestsPerSecond / median.requestsPerSecond, 2) } ?? ""
                rows.append([
                    index == 0 ? result.row.name : "", figures.contender, TextReport.format(median.requestsPerSecond, 0),
                    median.p50.map { TextReport.format($0, 2) } ?? "-", median.p99.map { TextReport.format($0, 2) } ?? "-",
                    "\(figures.samples.count)", ratio,
                ])
            }
        }
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                return column < 2 ? row[column] + padding : padding + row[column]
            }.joined(separator: "  ").replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }.joined(separator: "\n")
    }

    /// One line per pair of ours and a limit or peer: `ratio` = ours / theirs in requests/s.
    static func resultLines(_ results: [Result]) -> [String] {
        results.flatMap { result -> [String] in
            guard let ours = result.figures.first(where: { $0.contender == "ours" })?.median else { return [] }
            return result.figures.compactMap { figures -> String? in
                guard figures.contender != "ours", let other = figures.median else { return nil }
                return "RESULT \(result.row.name) \(fields("ours", ours)) \(fields(figures.contender, other)) "
                    + "ratio=\(TextReport.format(ours.requestsPerSecond / other.requestsPerSecond, 2))"
            }
        }
    }

    private static func fields(_ name: String, _ sample: Sample) -> String {
        "\(name)_rps=\(TextReport.format(sample.requestsPerSecond, 0)) \(name)_p50_ms=\(sample.p50.map { TextReport.format($0, 2) } ?? "-") "
            + "\(name)_p99_ms=\(sample.p99.map { TextReport.format($0, 2) } ?? "-")"
    }
}

/// `pgbench -S -M prepared` on a database of its own (`modelsync_bench_pgbench`, made and
/// filled with `pgbench -i` when missing) on the benchmark's PostgreSQL, with wrk's client and
/// thread counts; its latencies from its per-transaction log.
struct Pgbench {
    let executable: String
    let url: String
    let directory: URL

    /// Nil, with a note, when pgbench or psql is missing.
    init?(directory: URL, log: (String) -> Void) throws {
        guard let pgbench = WrkWorkloads.executable("pgbench"), let psql = WrkWorkloads.executable("psql") else {
            BenchmarkNotes.add("pgbench_select skipped: pgbench or psql is not installed (Debian: postgresql-client)")
            return nil
        }
        guard let server = ProcessInfo.processInfo.environment["MODELSYNC_POSTGRES_URL"], var components = URLComponents(string: server) else {
            throw BenchmarkError("the wrk rows need MODELSYNC_POSTGRES_URL")
        }
        components.path = "/modelsync_bench_pgbench"
        components.queryItems = nil
        guard let url = components.string else { throw BenchmarkError("cannot make pgbench's database URL from \(server)") }
        let exists = try runProcess(psql, ["-tA", "-d", server, "-c", "SELECT 1 FROM pg_database WHERE datname = 'modelsync_bench_pgbench'"])
        if !exists.contains("1") {
            log("pgbench: creating and filling modelsync_bench_pgbench (scale 1)")
            _ = try runProcess(psql, ["-d", server, "-c", "CREATE DATABASE modelsync_bench_pgbench"])
            _ = try runProcess(pgbench, ["-i", "-s", "1", "-q", url])
        }
        executable = pgbench
        self.url = url
        self.directory = directory
    }

    func run(seconds: Int) throws -> WrkWorkloads.Sample {
        let prefix = directory.appendingPathComponent("pgbench-\(UUID().uuidString)").path
        let output = try runProcess(executable, [
            "-S", "-M", "prepared", "-n", "-c", "\(WrkWorkloads.connections)", "-j", "\(WrkWorkloads.threads)", "-T", "\(seconds)",
            "-l", "--log-prefix", prefix, url,
        ])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let tps = Double(line.split(separator: " ")[2])
        else { throw BenchmarkError("pgbench printed no tps:\n\(output)") }
        // One log file per thread: `client transaction latency_us script epoch epoch_us` lines.
        var latencies: [Double] = []
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for file in files where directory.appendingPathComponent(file).path.hasPrefix(prefix) {
            let path = directory.appendingPathComponent(file)
            let text = (try? String(contentsOf: path, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 2, let micros = Double(fields[2]) { latencies.append(micros / 1000) }
            }
            try? FileManager.default.removeItem(at: path)
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double? {
            latencies.isEmpty ? nil : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let failed = output.split(separator: "\n").first { $0.hasPrefix("number of failed transactions:") }
            .flatMap { $0.split(separator: " ").dropFirst(4).first.flatMap { Int($0) } } ?? 0
        return WrkWorkloads.Sample(requestsPerSecond: tps, p50: percentile(0.5), p99: percentile(0.99), failures: failed)
    }
}

extension WrkWorkloads {
    /// The path of `name` on `PATH`, or nil.
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// Runs a program to its end; its standard output and error, together. Throws when
/// it exits with a failure.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    // One pipe for both, read before waiting, so that neither can fill up and block the child.
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    // A child inherits its spawning thread's signal mask, and Dispatch's threads block SIGALRM,
    // which ends `pgbench -T` (it ran on for minutes), and SIGTERM and SIGINT (a stray child
    // ignored `kill`): spawn with them unblocked.
    var unblocked = sigset_t()
    var previous = sigset_t()
    sigemptyset(&unblocked)
    for signal in [SIGALRM, SIGTERM, SIGINT] { sigaddset(&unblocked, signal) }
    pthread_sigmask(SIG_UNBLOCK, &unblocked, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BenchmarkError("\(executable) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus):\n\(text)")
    }
    return text
}
