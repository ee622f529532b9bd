import ArgumentParser
import Foundation

extension Workload {
    /// Every workload, in the order they run. Add new ones here.
    static let all: [Workload] = [
        JSONWorkloads.decode,
        JSONWorkloads.encode,
    ] + StreamingWorkloads.all + SQLiteWorkloads.all + QueryWorkloads.all + RelationWorkloads.all + ObservationWorkloads.all + RemoteWorkloads.all
        + StorageWorkloads.all + IdentityWorkloads.all + ConcurrentAsyncWorkloads.all + SyncWorkloads.all + ServerWorkloads.all
        + AccessWorkloads.all + ScaleOutWorkloads.all + InitialSyncWorkloads.all + HostileLikeWorkloads.all + MembershipWorkloads.all
}

/// `modelsync-bench`: times ModelSync against its peers and prints a table and `RESULT` lines.
@main
struct ModelSyncBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelsync-bench",
        abstract: "Times ModelSync against the libraries it replaces, on the same input.",
        discussion: """
            Each workload runs at each of its sizes: its contenders are checked once for \
            correctness, warmed up, then timed in turn (ours, peer, ours, peer...). The table \
            shows the median of the timed runs; ratio = peer median / ours median, so above 1 \
            means ModelSync is faster. Build with -c release.
            """
    )

    @Argument(help: "Workloads to run (default: all of them; see --list).")
    var workloads: [String] = []

    @Flag(help: "Fewer runs and only the smallest sizes.")
    var quick = false

    @Flag(help: "List the workloads and exit.")
    var list = false

    @Option(help: ArgumentHelp("Also write every figure to this JSON file.", valueName: "file"))
    var json: String?

    @Option(help: "Timed runs per contender (default: 7, or 3 with --quick).")
    var runs: Int?

    @Option(help: ArgumentHelp("Run only these sizes, e.g. --size 10k (repeatable).", valueName: "size"))
    var size: [String] = []

    @Option(help: ArgumentHelp(
        "Time only these contenders, e.g. --only ours under a profiler (repeatable; no ratios then).",
        valueName: "contender"
    ))
    var only: [String] = []

    @Option(help: .hidden)
    var serve: String?

    @Option(help: .hidden)
    var serveAccess: String?

    @Option(help: .hidden)
    var serveSecret: String?

    @Flag(help: .hidden)
    var serveConstant = false

    @Option(help: ArgumentHelp("Seconds per wrk run in the *_wrk rows (default: 5, or 2 with --quick).", valueName: "seconds"))
    var duration: Int?

    func validate() throws {
        if serve != nil || serveConstant { return }
        let known = Workload.all.map(\.name) + WrkWorkloads.names + [DataSizeWorkloads.name]
        if let unknown = workloads.first(where: { !known.contains($0) }) {
            throw ValidationError("unknown workload '\(unknown)'; known: \(known.joined(separator: ", "))")
        }
        if let duration, duration < 1 {
            throw ValidationError("--duration must be at least 1")
        }
        if let runs, runs < 1 {
            throw ValidationError("--runs must be at least 1")
        }
        #if DEBUG
        // Debug figures say nothing about either side; refuse them rather than print them.
        if !list {
            throw ValidationError("modelsync-bench times release builds only: swift run -c release --package-path Benchmarks modelsync-bench")
        }
        #endif
    }

    func run() async throws {
        // The server workloads start this binary as their server processes.
        if let serve {
            try await BenchServe.run(serve, access: serveAccess, secret: serveSecret)
            return
        }
        if serveConstant {
            try await ConstantServe.run()
            return
        }
        if list {
            for workload in Workload.all {
                let sizes = workload.sizes.map { $0.label + ($0.quick ? " (quick)" : "") }.joined(separator: ", ")
                print("\(workload.name)  [\(sizes); \(workload.unit.rawValue)]\n    \(workload.summary)")
            }
            print(WrkWorkloads.list())
            print(DataSizeWorkloads.list() + " (only when named)")
            return
        }

        let selected = workloads.isEmpty ? Workload.all : Workload.all.filter { workloads.contains($0.name) }
        let selectedWrk = workloads.isEmpty ? WrkWorkloads.rows : WrkWorkloads.rows.filter { workloads.contains($0.name) }
        let plan = RunPlan(
            runs: runs ?? (quick ? 3 : 7),
            warmUp: quick ? .milliseconds(50) : .milliseconds(200),
            only: Set(only)
        )
        let machine = Machine.current()
        print("ModelSync benchmarks\(quick ? " (quick)" : "")")
        print(machine.summary)
        print("runs:    \(plan.runs) timed per contender after warm-up; median reported; ratio = peer / ours\n")

        var results: [WorkloadResult] = []
        var wrkResults: [WrkWorkloads.Result] = []
        var dataSize: (measurements: [DataSizeWorkloads.Measurement], footprints: [DataSizeWorkloads.Footprint])?
        do {
            for workload in selected {
                for workloadSize in workload.sizes where chosen(workloadSize) {
                    log("\(workload.name) \(workloadSize.label): preparing, verifying, timing...")
                    let result = try await Runner.run(workload, size: workloadSize, plan: plan)
                    for line in TextReport.resultLines([result]) { log("  " + line) }
                    results.append(result)
                }
            }
            if !selectedWrk.isEmpty {
                // wrk runs for a duration, not a count: rounds of ours and each contender in turn.
                wrkResults = try await WrkWorkloads.run(
                    selectedWrk, rounds: runs ?? (quick ? 1 : 3), seconds: duration ?? (quick ? 2 : 5), log: log)
                for line in WrkWorkloads.resultLines(wrkResults) { log("  " + line) }
            }
            // Long (imports of up to a million posts): only when named.
            if workloads.contains(DataSizeWorkloads.name) {
                dataSize = try await DataSizeWorkloads.run(seconds: duration ?? (quick ? 2 : 5), quick: quick, log: log)
            }
        } catch {
            await ServerFleet.shared.stop()
            throw error
        }
        guard !results.isEmpty || !wrkResults.isEmpty || dataSize != nil else {
            throw ValidationError("no workload has a size matching \(size.joined(separator: ", "))")
        }

        await ServerFleet.shared.stop()
        if !results.isEmpty {
            print(TextReport.table(results))
            print()
        }
        if !wrkResults.isEmpty {
            print(WrkWorkloads.table(wrkResults))
            print()
        }
        if let dataSize {
            print(DataSizeWorkloads.table(dataSize.measurements, dataSize.footprints))
            print()
        }
        for line in TextReport.resultLines(results) + WrkWorkloads.resultLines(wrkResults) { print(line) }
        if let dataSize { for line in DataSizeWorkloads.resultLines(dataSize.measurements, dataSize.footprints) { print(line) } }
        for line in ExtraReportLines.all { print(line) }
        for note in BenchmarkNotes.all { print("note: " + note) }
        if let json {
            let command = CommandLine.arguments.joined(separator: " ")
            try JSONReport(machine: machine, command: command, quick: quick, results: results).write(to: json)
            log("wrote \(json)")
        }
    }

    private func chosen(_ workloadSize: WorkloadSize) -> Bool {
        size.isEmpty ? (!quick || workloadSize.quick) : size.contains(workloadSize.label)
    }

    /// Progress goes to standard error, so that standard output holds only the report.
    private func log(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
