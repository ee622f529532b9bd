import Foundation

// The harness: what a workload is, how its contenders are timed, and how results are reported.
// Workloads live in `Workloads/`; the list of them is `Workload.all`.

// MARK: - Workloads

/// How a workload's throughput is counted.
enum ThroughputUnit: String, Sendable {
    /// Mebibytes of the document per second (JSON workloads; needs ``PreparedWorkload/bytes``).
    case mebibytesPerSecond = "MiB/s"
    /// Rows per second (the size's count is the number of rows).
    case rowsPerSecond = "rows/s"
    /// Requests per second (the size's count is the number of requests).
    case requestsPerSecond = "requests/s"
    /// Key-value writes or reads per second (the size's count is the number of keys).
    case valuesPerSecond = "values/s"
    /// Committed write transactions per second (the size's count is the number of commits).
    case commitsPerSecond = "commits/s"
}

/// One size a workload runs at.
struct WorkloadSize: Sendable {
    /// The label used in names and tables: `1k`, `10k`, `100k`.
    let label: String
    /// Objects, rows or requests per run.
    let count: Int
    /// Whether `--quick` runs this size (quick mode runs only the smallest sizes).
    let quick: Bool

    /// A size of `count` items, labelled `1k`, `10k`, `1M`, or the plain count.
    init(_ count: Int, quick: Bool = false) {
        self.count = count
        self.quick = quick
        if count >= 1_000_000, count.isMultiple(of: 1_000_000) {
            label = "\(count / 1_000_000)M"
        } else if count >= 1_000, count.isMultiple(of: 1_000) {
            label = "\(count / 1_000)k"
        } else {
            label = "\(count)"
        }
    }
}

/// A benchmark: ModelSync ("ours") against one or more peers doing the same job on the same
/// input.
struct Workload: Sendable {
    /// The name used on the command line and in `RESULT` lines, e.g. `json_decode`.
    let name: String
    /// One line for `--list`: what is measured, against which peers.
    let summary: String
    /// How throughput is counted.
    let unit: ThroughputUnit
    /// The sizes, smallest first.
    let sizes: [WorkloadSize]
    /// Ratios between two peers that a goal is stated in, printed as `RESULT` lines besides
    /// those against ours: `(of: "modelsync_prepared", against: "raw_c")` when ours is not the
    /// contender the goal is about.
    var alsoCompare: [(of: String, against: String)] = []
    /// Builds the input and the contenders for one size. Not timed.
    let prepare: @Sendable (WorkloadSize) async throws -> PreparedWorkload
}

/// A workload set up at one size, ready to be timed.
struct PreparedWorkload {
    /// The bytes one run processes (the JSON document), for throughput in MiB/s.
    var bytes: Int?
    /// ModelSync's way of doing the job.
    var ours: Contender
    /// The peers, by name: `foundation`, later `raw_c`, `grdb_codable`...
    var peers: [Contender]
    /// Checks once, before anything is timed, that every contender does the job right; throws
    /// a ``BenchmarkError`` if not.
    var verify: () async throws -> Void
}

/// One way of doing a workload's job.
struct Contender {
    /// The name of ModelSync's contender.
    static let oursName = "ours"

    /// `ours`, or the peer's name.
    let name: String
    /// Untimed work before each run, e.g. emptying the table an insert run fills.
    var reset: () async throws -> Void = {}
    /// One run. Returns a checksum of its output, so that no work can be optimized away; every
    /// run of a contender must return the same checksum.
    let run: () async throws -> Int

    /// ModelSync's contender, named ``oursName``.
    static func ours(reset: @escaping () async throws -> Void = {}, run: @escaping () async throws -> Int) -> Contender {
        Contender(name: oursName, reset: reset, run: run)
    }
}

/// A benchmark that cannot run or whose contenders disagree.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Verification helpers

/// Throws unless the two arrays are equal, naming the first differing element and its fields.
func expectEqual<T: Equatable>(_ actual: [T], _ expected: [T], _ what: String) throws {
    guard actual.count == expected.count else {
        throw BenchmarkError("\(what): \(actual.count) elements, expected \(expected.count)")
    }
    guard let index = actual.indices.first(where: { actual[$0] != expected[$0] }) else { return }
    let fields = differences(actual[index], expected[index]).joined(separator: "\n  ")
    throw BenchmarkError("\(what): element \(index) differs from the expected value:\n  \(fields)")
}

/// The stored properties of two values of the same type that print differently, one line each,
/// nested values expanded (`plan.name: …`). Dates print as seconds since 1970, so that
/// sub-second differences show.
func differences<T>(_ actual: T, _ expected: T, prefix: String = "") -> [String] {
    let pairs = zip(Mirror(reflecting: actual).children, Mirror(reflecting: expected).children)
    var lines: [String] = []
    for (left, right) in pairs {
        let label = prefix + (left.label ?? "?")
        let a = describe(left.value), b = describe(right.value)
        guard a != b else { continue }
        let isStruct = Mirror(reflecting: left.value).displayStyle == .struct && !(left.value is Date)
        let nested = isStruct ? differences(left.value, right.value, prefix: label + ".") : []
        lines += nested.isEmpty ? ["\(label): got \(a), expected \(b)"] : nested
    }
    return lines.isEmpty ? ["(no stored property differs; == disagrees)"] : lines
}

private func describe(_ value: Any) -> String {
    if let date = value as? Date { return "\(date.timeIntervalSince1970)s" }
    if let date = value as? Date? { return date.map { "\($0.timeIntervalSince1970)s" } ?? "nil" }
    return String(reflecting: value)
}

// MARK: - Measurement

/// How many times to run each contender, and which.
struct RunPlan: Sendable {
    /// Timed runs per contender; the median is reported.
    var runs: Int
    /// Warm-up: at least one untimed run per contender, more until this much time was spent.
    var warmUp: Duration
    /// Only the contenders with these names (all when empty), e.g. `ours` alone under a profiler.
    var only: Set<String> = []
}

/// The timed runs of one contender.
struct Measurement {
    let contender: String
    /// Wall-clock time of each run (`ContinuousClock`).
    let samples: [Duration]
    /// CPU time the process used during each run, all threads, user and system. Unlike wall
    /// time, it does not grow while other processes have the CPU, so it is the steadier figure
    /// on a busy machine.
    let cpuSamples: [Duration]
    /// How far the process's resident memory rose during one extra, untimed run, in bytes;
    /// nil where the kernel does not report it (see ``MemoryProbe``).
    let peakGrowth: Int?

    var median: Duration { Self.median(samples) }
    /// ``peakGrowth`` in MiB.
    var peakMebibytes: Double? { peakGrowth.map { Double($0) / 1_048_576 } }
    var min: Duration { samples.min() ?? .zero }
    var max: Duration { samples.max() ?? .zero }
    var cpuMedian: Duration { Self.median(cpuSamples) }

    private static func median(_ samples: [Duration]) -> Duration {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }
}

/// One workload at one size: ours first, then the peers (fewer with `--only`).
struct WorkloadResult {
    let workload: Workload
    let size: WorkloadSize
    let bytes: Int?
    let measurements: [Measurement]

    var ours: Measurement? { measurements.first { $0.contender == Contender.oursName } }
    var peers: [Measurement] { measurements.filter { $0.contender != Contender.oursName } }

    /// `json_decode_10k`.
    var label: String { "\(workload.name)_\(size.label)" }

    /// Units per second at the median, in ``Workload/unit``.
    func throughput(_ measurement: Measurement) -> Double {
        let seconds = measurement.median.seconds
        switch workload.unit {
        case .mebibytesPerSecond: return Double(bytes ?? 0) / 1_048_576 / seconds
        case .rowsPerSecond, .requestsPerSecond, .valuesPerSecond, .commitsPerSecond: return Double(size.count) / seconds
        }
    }

    /// The peer's median time over ours: above 1, ours is faster. Nil for ours, or when ours
    /// did not run.
    func ratio(_ peer: Measurement) -> Double? {
        guard let ours, peer.contender != ours.contender else { return nil }
        return peer.median.seconds / ours.median.seconds
    }

    /// The workload's ``Workload/alsoCompare`` pairs whose contenders both ran, with `against`'s
    /// median over `of`'s.
    var extraComparisons: [(of: Measurement, against: Measurement, ratio: Double)] {
        workload.alsoCompare.compactMap { pair in
            guard let of = measurements.first(where: { $0.contender == pair.of }),
                let against = measurements.first(where: { $0.contender == pair.against })
            else { return nil }
            return (of, against, against.median.seconds / of.median.seconds)
        }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    var milliseconds: Double { seconds * 1e3 }
}

/// Prepares, verifies and times workloads.
enum Runner {
    /// Runs one workload at one size: prepare, verify, warm up, then `plan.runs` rounds in
    /// which ours and each peer run once, in turn, so that noise spreads over all of them.
    static func run(_ workload: Workload, size: WorkloadSize, plan: RunPlan) async throws -> WorkloadResult {
        let prepared = try await workload.prepare(size)
        if workload.unit == .mebibytesPerSecond, prepared.bytes == nil {
            throw BenchmarkError("\(workload.name) reports MiB/s but its setup gives no byte count")
        }
        do {
            try await prepared.verify()
        } catch {
            throw BenchmarkError("\(workload.name)_\(size.label): verification failed: \(error)")
        }
        let contenders = ([prepared.ours] + prepared.peers).filter { plan.only.isEmpty || plan.only.contains($0.name) }
        guard !contenders.isEmpty else {
            throw BenchmarkError("\(workload.name) has no contender named \(plan.only.sorted().joined(separator: " or "))")
        }
        var checksums: [Int] = []
        for contender in contenders {
            var spent = Duration.zero
            var warmUps = 0
            var checksum = 0
            repeat {
                let run = try await time(contender)
                spent += run.wall
                warmUps += 1
                checksum = run.checksum
            } while spent < plan.warmUp && warmUps < 50
            checksums.append(checksum)
        }
        var wall = Array(repeating: [Duration](), count: contenders.count)
        var cpu = wall
        for _ in 0 ..< plan.runs {
            for (index, contender) in contenders.enumerated() {
                let run = try await time(contender)
                guard run.checksum == checksums[index] else {
                    throw BenchmarkError(
                        "\(workload.name)_\(size.label): \(contender.name) returned checksum \(run.checksum), earlier \(checksums[index])"
                    )
                }
                wall[index].append(run.wall)
                cpu[index].append(run.cpu)
            }
        }
        // Memory is measured in a run of its own: trimming the heap before a timed run would
        // make that run pay for faulting pages back in.
        var peaks: [Int?] = []
        for contender in contenders {
            peaks.append(try await peakGrowth(contender))
        }
        let measurements = contenders.indices.map {
            Measurement(contender: contenders[$0].name, samples: wall[$0], cpuSamples: cpu[$0], peakGrowth: peaks[$0])
        }
        return WorkloadResult(workload: workload, size: size, bytes: prepared.bytes, measurements: measurements)
    }

    private static func time(_ contender: Contender) async throws -> (wall: Duration, cpu: Duration, checksum: Int) {
        try await contender.reset()
        let clock = ContinuousClock()
        let cpuStart = processCPUTime()
        let start = clock.now
        let checksum = try await contender.run()
        let wall = start.duration(to: clock.now)
        return (wall, processCPUTime() - cpuStart, checksum)
    }

    /// How far one run raises resident memory, in bytes.
    private static func peakGrowth(_ contender: Contender) async throws -> Int? {
        try await contender.reset()
        guard let residentAtStart = MemoryProbe.resetPeak() else { return nil }
        _ = try await contender.run()
        return MemoryProbe.kibibytes("VmHWM").map { max(0, $0 - residentAtStart) * 1024 }
    }

    /// The CPU time used by the whole process so far.
    private static func processCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}

/// Peak resident memory, from Linux's `/proc/self/status`. Before a run, free heap pages go
/// back to the kernel (glibc's `malloc_trim`), so that the run's allocations show as resident
/// growth instead of reusing what earlier runs freed; then writing `5` to
/// `/proc/self/clear_refs` resets the high-water mark (`VmHWM`) to the current resident size,
/// and the mark after the run tells how far the run raised memory. Process-wide: other
/// threads count too. Elsewhere every figure is nil.
enum MemoryProbe {
    /// glibc's `malloc_trim`, looked up at run time (Swift's Glibc module does not export it).
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if os(Linux)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// Trims the heap and resets the high-water mark; returns the resident size in KiB at that
    /// moment, or nil where the kernel does not support it.
    static func resetPeak() -> Int? {
        _ = mallocTrim?(0)
        guard (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil else {
            return nil
        }
        return kibibytes("VmRSS")
    }

    /// A `kB` field of `/proc/self/status`, e.g. `VmHWM`.
    static func kibibytes(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }
}

// MARK: - Reporting

/// Where and how the figures were measured.
struct Machine: Encodable {
    let date: String
    let os: String
    let cpu: String?
    let cores: Int
    let memoryGibibytes: Double
    let swift: String?
    let build: String
    /// The load averages when the run started: figures taken on a busy machine are noisier.
    let load: String?

    /// Describes this machine. Runs `swift --version` (about 0.1 s) for the toolchain on `PATH`.
    static func current() -> Machine {
        let info = ProcessInfo.processInfo
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n")
            .first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?
            .trimmingCharacters(in: .whitespaces)
        #if DEBUG
        let build = "debug (numbers are meaningless: use -c release)"
        #else
        let build = "release"
        #endif
        return Machine(
            date: ISO8601DateFormatter().string(from: Date()),
            os: info.operatingSystemVersionString,
            cpu: cpu,
            cores: info.activeProcessorCount,
            memoryGibibytes: (Double(info.physicalMemory) / 1_073_741_824 * 10).rounded() / 10,
            swift: swiftVersion(),
            build: build,
            load: (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
                .split(separator: " ").prefix(3).joined(separator: " ")
        )
    }

    private static func swiftVersion() -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: output, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }

    /// The lines printed at the top of a run.
    var summary: String {
        """
        date:    \(date)
        machine: \(cores) cores\(cpu.map { ", \($0)" } ?? ""), \(memoryGibibytes) GiB, \(os)\(load.map { "; load \($0)" } ?? "")
        swift:   \(swift ?? "unknown")
        build:   \(build)
        """
    }
}

/// The results as text: a table for people and `RESULT` lines for scripts.
enum TextReport {
    /// One row per contender, grouped by workload and size; ratio = peer median / ours median.
    static func table(_ results: [WorkloadResult]) -> String {
        var rows = [["workload", "size", "MiB", "contender", "median ms", "min ms", "max ms", "cpu ms", "peak MiB", "throughput", "ratio"]]
        for result in results {
            let mebibytes = result.bytes.map { format(Double($0) / 1_048_576, 1) } ?? "-"
            for (index, measurement) in result.measurements.enumerated() {
                let first = index == 0
                rows.append([
                    first ? result.workload.name : "",
                    first ? result.size.label : "",
                    first ? mebibytes : "",
                    measurement.contender,
                    format(measurement.median.milliseconds, 2),
                    format(measurement.min.milliseconds, 2),
                    format(measurement.max.milliseconds, 2),
                    format(measurement.cpuMedian.milliseconds, 2),
                    measurement.peakMebibytes.map { format($0, 1) } ?? "-",
                    throughput(result.throughput(measurement), result.workload.unit),
                    result.ratio(measurement).map { format($0, 2) + "x" } ?? "",
                ])
            }
        }
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        let leftAligned: Set = [0, 1, 3]
        return rows.map { row in
            row.indices.map { column in
                let text = row[column], padding = String(repeating: " ", count: widths[column] - text.count)
                return leftAligned.contains(column) ? text + padding : padding + text
            }
            .joined(separator: "  ")
            .replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }
        .joined(separator: "\n")
    }

    /// `RESULT json_decode_10k ours_ms=41.20 foundation_ms=170.30 ratio=4.13`, one per peer, then
    /// one per ``Workload/alsoCompare`` pair.
    static func resultLines(_ results: [WorkloadResult]) -> [String] {
        results.flatMap { result in
            let againstOurs = result.peers.compactMap { peer -> String? in
                guard let ours = result.ours, let ratio = result.ratio(peer) else { return nil }
                return resultLine(result.label, ours, peer, ratio)
            }
            return againstOurs + result.extraComparisons.map { resultLine(result.label, $0.of, $0.against, $0.ratio) }
        }
    }

    private static func resultLine(_ label: String, _ of: Measurement, _ against: Measurement, _ ratio: Double) -> String {
        "RESULT \(label) \(of.contender)_ms=\(format(of.median.milliseconds, 2)) "
            + "\(against.contender)_ms=\(format(against.median.milliseconds, 2)) ratio=\(format(ratio, 2))"
    }

    static func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }

    /// `412.3 MiB/s`, `1.62M rows/s`, `523k rows/s`, `850 requests/s`.
    static func throughput(_ value: Double, _ unit: ThroughputUnit) -> String {
        let number = switch unit {
        case .mebibytesPerSecond: format(value, 1)
        case .rowsPerSecond, .requestsPerSecond, .valuesPerSecond, .commitsPerSecond:
            value >= 1e6 ? format(value / 1e6, 2) + "M" : value >= 1e4 ? format(value / 1e3, 0) + "k" : format(value, 0)
        }
        return number + " " + unit.rawValue
    }
}

/// The results as the JSON file that `--json` writes.
struct JSONReport: Encodable {
    struct Figure: Encodable {
        let workload: String
        let size: String
        let count: Int
        let bytes: Int?
        let contender: String
        let runs: Int
        let medianMs: Double
        let minMs: Double
        let maxMs: Double
        /// The median CPU time of the process during a run.
        let cpuMedianMs: Double
        /// The largest rise in resident memory during a run, in MiB (nil where unknown).
        let peakMemoryMiB: Double?
        let throughput: Double
        let throughputUnit: String
        /// This contender's median over ours (absent for ours).
        let ratio: Double?
    }

    let machine: Machine
    let command: String
    let quick: Bool
    let figures: [Figure]

    init(machine: Machine, command: String, quick: Bool, results: [WorkloadResult]) {
        self.machine = machine
        self.command = command
        self.quick = quick
        figures = results.flatMap { result in
            result.measurements.map { measurement in
                Figure(
                    workload: result.workload.name,
                    size: result.size.label,
                    count: result.size.count,
                    bytes: result.bytes,
                    contender: measurement.contender,
                    runs: measurement.samples.count,
                    medianMs: measurement.median.milliseconds,
                    minMs: measurement.min.milliseconds,
                    maxMs: measurement.max.milliseconds,
                    cpuMedianMs: measurement.cpuMedian.milliseconds,
                    peakMemoryMiB: measurement.peakMebibytes,
                    throughput: result.throughput(measurement),
                    throughputUnit: result.workload.unit.rawValue,
                    ratio: result.ratio(measurement)
                )
            }
        }
    }

    /// Writes the report as pretty-printed JSON with snake_case keys.
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
