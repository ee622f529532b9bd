import Foundation
import ModelSyncServer
import ModelSyncTestingCore
import TestProcesses
import Testing

/// The `modelsync-server` executable built next to the test bundle, if it is there.
package let serverExecutable = StressMode.builtExecutable(named: "modelsync-server")

/// A `modelsync-server` child process (spawned without Foundation's `Process`: see
/// ``ChildProcess``).
package final class ServerProcess: Sendable {
    package let port: Int
    private let child: ChildProcess

    private init(_ child: ChildProcess, port: Int) {
        self.child = child
        self.port = port
    }

    package var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the executable serving `arguments` on a free port, and returns once it prints its
    /// address.
    package static func start(_ executable: URL, arguments: [String]) async throws -> ServerProcess {
        let child = try ChildProcess(executable, arguments: arguments + ["--port", "0"])
        var text = ""
        for await chunk in child.output {
            text += String(decoding: chunk, as: UTF8.self)
            // "modelsync-server: serving <file> at http://127.0.0.1:<port>"
            if let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
               let port = Int(text[range].split(separator: ":").last ?? "")
            {
                // The rest of the output is read (and dropped) so that the child never blocks on a full pipe.
                Task { for await _ in child.output {} }
                return ServerProcess(child, port: port)
            }
        }
        // Its output ended without an address: make sure it is gone before waiting for its status.
        let status = await child.kill()
        throw ServerError.couldNotStart("modelsync-server closed its output before listening (status \(status)): \(text)")
    }

    /// Runs a command of the executable to its end (`import`, `export`) and returns its exit
    /// status and what it printed.
    package static func run(_ executable: URL, arguments: [String]) async throws -> (status: Int32, output: String) {
        let child = try ChildProcess(executable, arguments: arguments, errorsToo: true)
        var bytes: [UInt8] = []
        for await chunk in child.output { bytes += chunk }
        return (await child.exitStatus, String(decoding: bytes, as: UTF8.self))
    }

    /// `kill -9`, and returns once the process is gone.
    package func kill() async {
        await child.kill()
    }

    /// SIGTERM (a graceful shutdown), and returns once the process is gone. A server that does
    /// not stop within 10 s of it is killed, and the test fails.
    package func stop() async {
        let killer = Task { [child] in
            try await Task.sleep(for: .seconds(10))
            await child.kill()
            Issue.record("modelsync-server \(child.pid) (\(child.arguments.joined(separator: " "))) did not stop within 10 s of SIGTERM")
        }
        await child.kill(SIGTERM)
        killer.cancel()
    }
}
