import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process of a test: its output as it arrives, and its exit status once it has exited.
///
/// Spawned with `posix_spawn`, not Foundation's `Process`: with many children started at once
/// (the whole suite), a `Process` whose child had exited and been reaped sometimes never
/// reported it, or never delivered the end of its output, and the test waited forever (the
/// stall of issue #17). Here a thread of its own reads the output to its end with blocking
/// `read`s, and another waits for the exit with `waitpid`: neither depends on a notification.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    /// The arguments it was started with (for messages).
    public let arguments: [String]
    /// Its standard output (and standard error, when asked for) in the chunks it was read in,
    /// ending when the child closes it. One consumer; see ``lines()``.
    public let output: AsyncStream<[UInt8]>
    private let exited: Task<Int32, Never>

    /// Starts `executable` with `arguments`; its standard input is `/dev/null`, and its standard
    /// error goes to ``output`` when `errorsToo`, else to `/dev/null`.
    public init(_ executable: URL, arguments: [String], errorsToo: Bool = false) throws {
        // Close-on-exec, so that no other child spawned meanwhile inherits an end of it.
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SpawnError(message: "pipe: errno \(errno)") }
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
        closeInheritedDescriptors(&actions)
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            throw SpawnError(message: "posix_spawn \(executable.path): error \(spawned)")
        }
        let child = pid
        self.pid = child
        self.arguments = arguments

        let (output, chunks) = AsyncStream<[UInt8]>.makeStream()
        let reading = ends[0]
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(reading, $0.baseAddress, $0.count) }
                if count > 0 {
                    chunks.yield(Array(buffer[..<count]))
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
        exited = Task { await exit.first { _ in true } ?? -1 }
    }

    /// Its exit status, once it has exited: its exit code, or 128 + the signal that ended it.
    public var exitStatus: Int32 {
        get async { await exited.value }
    }

    /// Sends `signal` (SIGKILL by default) and returns once the process is gone, with its status.
    @discardableResult
    public func kill(_ signal: Int32 = SIGKILL) async -> Int32 {
        send(signal, to: pid)
        return await exited.value
    }

    /// ``output`` as text lines without their newline; the last line is kept even without one.
    /// It consumes ``output``.
    public func lines() -> AsyncStream<String> {
        let output = output
        return AsyncStream { continuation in
            let task = Task {
                var buffer: [UInt8] = []
                for await chunk in output {
                    buffer += chunk
                    var start = buffer.startIndex
                    while let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                        continuation.yield(String(decoding: buffer[start..<newline], as: UTF8.self))
                        start = newline + 1
                    }
                    buffer.removeSubrange(..<start)
                }
                if !buffer.isEmpty { continuation.yield(String(decoding: buffer, as: UTF8.self)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// `kill(2)`, out of reach of the method named after it.
private func send(_ signal: Int32, to pid: pid_t) {
    _ = kill(pid, signal)
}

/// The child could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Has the child close every descriptor above standard error. Without it the child inherits
/// the test process's sockets that are not close-on-exec, and NIO accepts its connections
/// without that flag on Linux: a connection an in-process server had closed stayed open in
/// the child, and its client waited for the end of it until the child exited.
private func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    #if os(Linux)
    _ = addCloseFrom?(&actions, 3)
    #endif
}

#if os(Linux)
/// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, looked up once (Swift's Glibc module
/// does not declare it). Missing, children inherit; `aChildInheritsNoSocketOfTheTests` says so.
private let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
    dlsym(dlopen(nil, RTLD_LAZY), "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }
#endif
