import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerSQLite

/// `server_data_size`: how the server's write and read rates hold as its data grows. For 1k,
/// 100k and 1M posts, `modelsync-server` over a SQLite file (`sqlite`) and, at 1k and 100k,
/// over its JSON file (`json_file`), each a release process of this binary (`--serve`), are
/// loaded by wrk with GET by id, POST and PATCH (no `If-Match`) over all their posts, one
/// contender at a time. After its runs, each server's peak resident memory (`VmHWM`) is read
/// beside its data's size on disk.
///
/// The goal reads across sizes, which the harness's peer ratios do not: `RESULT` lines of their
/// own give SQLite's rate over 1M as a fraction of its rate over 1k, and SQLite over the JSON
/// file at the same size.
enum DataSizeWorkloads {
    static let name = "server_data_size"
    static let summary = "GET by id, POST and PATCH by wrk over 1k, 100k and 1M posts: SQLite (and the JSON file to 100k); peak RSS beside the file"

    struct Measurement {
        let size: Int
        let contender: String
        let operation: String
        let sample: WrkWorkloads.Sample
    }

    struct Footprint {
        let size: Int
        let contender: String
        /// The server's peak resident memory, MiB.
        let peak: Double
        /// Its data on disk (the SQLite file and its WAL, or the JSON file), MiB.
        let onDisk: Double
    }

    static func list() -> String {
        "\(name)  [requests/s by size; wrk -c \(WrkWorkloads.connections) -t \(WrkWorkloads.threads)]\n    \(summary)"
    }

    static func run(seconds: Int, quick: Bool, log: (String) -> Void) async throws -> (measurements: [Measurement], footprints: [Footprint]) {
        guard let wrk = WrkWorkloads.executable("wrk") else { throw BenchmarkError("\(name) needs wrk (Debian: apt-get install wrk)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-bench-size-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0])
        var measurements: [Measurement] = []
        var footprints: [Footprint] = []
        for size in quick ? [1_000, 100_000] : [1_000, 100_000, 1_000_000] {
            log("\(name) \(label(size)): importing (untimed)")
            let data = posts(size)
            var servers: [(contender: String, arguments: [String], files: [URL])] = []
            let sqlite = directory.appendingPathComponent("posts-\(size).sqlite")
            try await SyncServer.importData(data, intoSQLite: sqlite.path)
            servers.append(("sqlite", ["--serve", sqlite.path], [sqlite, URL(fileURLWithPath: sqlite.path + "-wal")]))
            if size <= 100_000 {
                let file = directory.appendingPathComponent("posts-\(size).json")
                try Data(data.jsonBytes()).write(to: file)
                servers.append(("json_file", ["--serve", file.path], [file]))
            }
            for server in servers {
                let (base, pid) = try await ServerFleet.shared.launchProcess(executable, server.arguments)
                for (operation, script) in scripts(size) {
                    let path = directory.appendingPathComponent("\(operation).lua")
                    try Data(script.utf8).write(to: path)
                    let output = try runProcess(wrk, [
                        "-t", "\(WrkWorkloads.threads)", "-c", "\(WrkWorkloads.connections)", "-d", "\(seconds)s", "--latency", "-s", path.path, base,
                    ])
                    let sample = try WrkWorkloads.parseWrk(output)
                    guard sample.failures == 0 else { throw BenchmarkError("\(name): \(server.contender) answered \(sample.failures) requests with an error") }
                    log("  \(label(size)) \(server.contender) \(operation): \(TextReport.format(sample.requestsPerSecond, 0)) requests/s, "
                        + "p99 \(sample.p99.map { TextReport.format($0, 2) } ?? "-") ms")
                    measurements.append(Measurement(size: size, contender: server.contender, operation: operation, sample: sample))
                }
                let onDisk = server.files.compactMap { try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int }.reduce(0, +)
                footprints.append(Footprint(size: size, contender: server.contender, peak: peakResidentMiB(pid) ?? 0, onDisk: Double(onDisk) / 1_048_576))
                await ServerFleet.shared.stop(pid: pid)
            }
        }
        return (measurements, footprints)
    }

    static func label(_ size: Int) -> String {
        size >= 1_000_000 ? "\(size / 1_000_000)m" : "\(size / 1_000)k"
    }

    /// `count` posts by 100 users, as the wrk rows' servers hold them.
    static func posts(_ count: Int) -> JSONValue {
        let body = JSONValue.string(String(repeating: "lorem ipsum ", count: 8))
        return ["posts": .array((1...count).map { id -> JSONValue in
            ["id": .number(JSONNumber(id)), "userId": .number(JSONNumber((id - 1) % 100 + 1)), "title": .string("post \(id)"), "body": body]
        })]
    }

    /// The wrk scripts: ids spread over every post (a prime stride), each thread its own.
    static func scripts(_ count: Int) -> [(String, String)] {
        let setup = """
            local next_tid = 0
            function setup(thread)
              thread:set("tid", next_tid)
              next_tid = next_tid + 1
            end
            tid = 0
            counter = 0
            function id()
              counter = counter + 1
              return (counter * 7919 + tid * 104729) % \(count) + 1
            end

            """
        return [
            ("get", setup + #"request = function() return wrk.format("GET", "/posts/" .. id()) end"#),
            ("post", setup + #"""
                request = function()
                  counter = counter + 1
                  return wrk.format("POST", "/posts", {["Content-Type"] = "application/json"}, '{"userId": 1, "title": "created ' .. tid .. '-' .. counter .. '", "body": "text"}')
                end
                """#),
            ("patch", setup + #"""
                request = function()
                  return wrk.format("PATCH", "/posts/" .. id(), {["Content-Type"] = "application/json"}, '{"title": "edit ' .. counter .. '"}')
                end
                """#),
        ]
    }

    /// `VmHWM` of process `pid`, in MiB.
    static func peakResidentMiB(_ pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Double($0) }) else { return nil }
        return kilobytes / 1_024
    }

    static func table(_ measurements: [Measurement], _ footprints: [Footprint]) -> String {
        var rows = [["posts", "contender", "operation", "requests/s", "p99 ms"]]
        for measurement in measurements {
            rows.append([label(measurement.size), measurement.contender, measurement.operation, TextReport.format(measurement.sample.requestsPerSecond, 0),
                         measurement.sample.p99.map { TextReport.format($0, 2) } ?? "-"])
        }
        var text = align(rows) + "\n\n"
        var memory = [["posts", "contender", "peak RSS MiB", "on disk MiB"]]
        for footprint in footprints {
            memory.append([label(footprint.size), footprint.contender, TextReport.format(footprint.peak, 1), TextReport.format(footprint.onDisk, 1)])
        }
        text += align(memory)
        return text
    }

    private static func align(_ rows: [[String]]) -> String {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                return column < 3 ? row[column] + padding : padding + row[column]
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// Per operation: SQLite's rate at each size over its rate at 1k, and SQLite over the JSON
    /// file at each size both serve; then each server's memory beside its data.
    static func resultLines(_ measurements: [Measurement], _ footprints: [Footprint]) -> [String] {
        func rate(_ size: Int, _ contender: String, _ operation: String) -> Double? {
            measurements.first { $0.size == size && $0.contender == contender && $0.operation == operation }?.sample.requestsPerSecond
        }
        var lines: [String] = []
        for operation in ["get", "post", "patch"] {
            guard let base = rate(1_000, "sqlite", operation) else { continue }
            var fields = ["sqlite_1k_rps=\(TextReport.format(base, 0))"]
            for size in [100_000, 1_000_000] {
                guard let ours = rate(size, "sqlite", operation) else { continue }
                fields.append("sqlite_\(label(size))_rps=\(TextReport.format(ours, 0)) sqlite_\(label(size))_over_1k=\(TextReport.format(ours / base, 2))")
            }
            for size in [1_000, 100_000] {
                guard let ours = rate(size, "sqlite", operation), let file = rate(size, "json_file", operation) else { continue }
                fields.append("json_file_\(label(size))_rps=\(TextReport.format(file, 0)) sqlite_over_json_file_\(label(size))=\(TextReport.format(ours / file, 2))")
            }
            lines.append("RESULT \(name)_\(operation) " + fields.joined(separator: " "))
        }
        for footprint in footprints {
            lines.append("RESULT \(name)_memory \(footprint.contender)_\(label(footprint.size)) peak_rss_mib=\(TextReport.format(footprint.peak, 1)) "
                + "on_disk_mib=\(TextReport.format(footprint.onDisk, 1))")
        }
        return lines
    }
}
