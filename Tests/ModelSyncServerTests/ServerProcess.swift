import Foundation
import ModelSyncServer
import ModelSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `modelsync-server` executable built next to the test bundle, if it is there.
let serverExecutable = StressMode.builtExecutable(named: "modelsync-server")

/// A `modelsync-server` child process.
final class ServerProcess: Sendable {
    let process: Process
    let port: Int
    private let exited: Task<Void, Never>

    private init(process: Process, port: Int, exited: Task<Void, Never>) {
        self.process = process
        self.port = port
        self.exited = exited
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the executable serving `arguments` on a free port, and returns once it prints its
    /// address.
    static func start(_ executable: URL, arguments: [String]) async throws -> ServerProcess {
        let (process, output, exited) = try launch(executable, arguments: arguments + ["--port", "0"])
        var text = ""
        for await chunk in output {
            text += chunk
            // "modelsync-server: serving <file> at http://127.0.0.1:<port>"
            if let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
               let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return ServerProcess(process: process, port: port, exited: Task { for await _ in exited {} })
            }
        }
        throw ServerError.couldNotStart("modelsync-server exited before listening: \(text)")
    }

    /// Runs a command of the executable to its end (`import`, `export`) and returns its exit
    /// status and what it printed.
    static func run(_ executable: URL, arguments: [String]) async throws -> (status: Int32, output: String) {
        let (process, output, exited) = try launch(executable, arguments: arguments, errorsToo: true)
        var text = ""
        for await chunk in output { text += chunk }
        for await _ in exited {}
        return (process.terminationStatus, text)
    }

    /// Starts the process; its standard output (and error, if asked) arrives in chunks, and the
    /// second stream ends when it exits.
    private static func launch(
        _ executable: URL, arguments: [String], errorsToo: Bool = false
    ) throws -> (Process, AsyncStream<String>, AsyncStream<Void>) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errorsToo ? output : FileHandle.nullDevice
        let (chunks, continuation) = AsyncStream<String>.makeStream()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                continuation.finish()
            } else {
                continuation.yield(String(decoding: data, as: UTF8.self))
            }
        }
        let (exited, endContinuation) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in endContinuation.finish() }
        try process.run()
        return (process, chunks, exited)
    }

    /// `kill -9`, and returns once the process is gone.
    func kill() async {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        await exited.value
    }

    /// SIGTERM (a graceful shutdown), and returns once the process is gone.
    func stop() async {
        process.terminate()
        await exited.value
        // Foundation has reported the exit of a server still running (seen once in some ten runs
        // of the whole suite, with many processes started at once): check the process itself.
        // A server that a SIGTERM of our own does not stop in 10 s fails the test.
        var waited = 0
        while isStillRunning {
            if waited == 0 { _ = Glibc.kill(process.processIdentifier, SIGTERM) }
            if waited == 100 {
                _ = Glibc.kill(process.processIdentifier, SIGKILL)
                Issue.record("modelsync-server \(process.processIdentifier) did not stop within 10 s of SIGTERM")
            }
            try? await Task.sleep(for: .milliseconds(100))
            waited += 1
        }
    }

    /// Whether the process started is still running: its pid with its arguments (a pid is reused
    /// once the process is gone; a zombie has none).
    private var isStillRunning: Bool {
        guard let commandLine = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(process.processIdentifier)/cmdline")) else { return false }
        let started = [process.executableURL?.path ?? ""] + (process.arguments ?? [])
        return commandLine.split(separator: 0).map { String(decoding: $0, as: UTF8.self) } == started
    }
}
