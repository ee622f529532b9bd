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
///
/// Spawned with `posix_spawn`, not Foundation's `Process`: with many children started at once
/// (the whole suite), a `Process` whose child had exited and been reaped sometimes never
/// reported it, or never delivered the end of its output, and the test waited forever (the
/// stall of issue #17, caught with the tests' PostgreSQL log showing every server done). Here a
/// thread of its own reads the output to its end with blocking `read`s, and another waits for
/// the exit with `waitpid`: neither depends on a notification arriving.
final class ServerProcess: Sendable {
    let pid: pid_t
    let port: Int
    private let arguments: [String]
    private let exited: Task<Int32, Never>

    private init(_ child: Child, port: Int) {
        self.pid = child.pid
        self.port = port
        self.arguments = child.arguments
        self.exited = child.exitStatus
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the executable serving `arguments` on a free port, and returns once it prints its
    /// address.
    static func start(_ executable: URL, arguments: [String]) async throws -> ServerProcess {
        let child = try Child(executable, arguments: arguments + ["--port", "0"], errorsToo: false)
        var text = ""
        for await chunk in child.output {
            text += chunk
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
        _ = Glibc.kill(child.pid, SIGKILL)
        throw ServerError.couldNotStart("modelsync-server closed its output before listening (status \(await child.exitStatus.value)): \(text)")
    }

    /// Runs a command of the executable to its end (`import`, `export`) and returns its exit
    /// status and what it printed.
    static func run(_ executable: URL, arguments: [String]) async throws -> (status: Int32, output: String) {
        let child = try Child(executable, arguments: arguments, errorsToo: true)
        var text = ""
        for await chunk in child.output { text += chunk }
        return (await child.exitStatus.value, text)
    }

    /// `kill -9`, and returns once the process is gone.
    func kill() async {
        _ = Glibc.kill(pid, SIGKILL)
        _ = await exited.value
    }

    /// SIGTERM (a graceful shutdown), and returns once the process is gone. A server that does
    /// not stop within 10 s of it is killed, and the test fails.
    func stop() async {
        _ = Glibc.kill(pid, SIGTERM)
        let killer = Task {
            try await Task.sleep(for: .seconds(10))
            _ = Glibc.kill(pid, SIGKILL)
            Issue.record("modelsync-server \(pid) (\(arguments.joined(separator: " "))) did not stop within 10 s of SIGTERM")
        }
        _ = await exited.value
        killer.cancel()
    }

    /// A spawned child: its output until the end, and its exit status once it has exited.
    private struct Child {
        let pid: pid_t
        let arguments: [String]
        let output: AsyncStream<String>
        let exitStatus: Task<Int32, Never>

        init(_ executable: URL, arguments: [String], errorsToo: Bool) throws {
            // Close-on-exec, so that no other child spawned later inherits an end of it.
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw ServerError.couldNotStart("pipe: errno \(errno)") }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
            if errorsToo {
                posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
            } else {
                posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            }
            let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
            close(ends[1])
            guard spawned == 0 else {
                close(ends[0])
                throw ServerError.couldNotStart("posix_spawn \(executable.path): error \(spawned)")
            }
            let child = pid
            self.pid = child
            self.arguments = arguments

            let (output, chunks) = AsyncStream<String>.makeStream()
            let reading = ends[0]
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(reading, $0.baseAddress, $0.count) }
                    if count > 0 {
                        chunks.yield(String(decoding: buffer[..<count], as: UTF8.self))
                    } else if count < 0, errno == EINTR {
                        continue
                    } else {
                        break
                    }
                }
                close(reading)
                chunks.finish()
            }
            self.output = output

            let (exit, exitContinuation) = AsyncStream<Int32>.makeStream()
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) == -1, errno == EINTR {}
                // Exited: its code; killed by a signal: 128 + the signal, as a shell says.
                exitContinuation.yield(status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
                exitContinuation.finish()
            }
            self.exitStatus = Task { await exit.first { _ in true } ?? -1 }
        }
    }
}
