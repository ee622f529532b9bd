import AsyncHTTPClient
import Foundation
import ModelSyncJSON
import ModelSyncServer
import ModelSyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `modelsync-server` executable built next to the test bundle, if it is there.
private let serverExecutable = StressMode.builtExecutable(named: "modelsync-server")

/// A `modelsync-server` child process.
private final class ServerProcess: Sendable {
    let process: Process
    let port: Int
    private let exited: Task<Void, Never>

    private init(process: Process, port: Int, exited: Task<Void, Never>) {
        self.process = process
        self.port = port
        self.exited = exited
    }

    /// Starts the executable on a free port and returns once it prints its address.
    static func start(_ executable: URL, file: URL) async throws -> ServerProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = [file.path, "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let (lines, continuation) = AsyncStream<String>.makeStream()
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                continuation.finish()
            } else {
                continuation.yield(String(decoding: data, as: UTF8.self))
            }
        }
        let (ended, endContinuation) = AsyncStream<Void>.makeStream()
        process.terminationHandler = { _ in endContinuation.finish() }
        try process.run()
        let exited = Task { for await _ in ended {} }
        var text = ""
        for await chunk in lines {
            text += chunk
            // "modelsync-server: serving <file> at http://127.0.0.1:<port>"
            if let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
               let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return ServerProcess(process: process, port: port, exited: exited)
            }
        }
        throw ServerError.couldNotStart("modelsync-server exited before listening: \(text)")
    }

    /// `kill -9`, and returns once the process is gone.
    func kill() async {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        await exited.value
    }
}

/// Counts acknowledged writes and fires `kill -9` at the chosen one.
private actor Acknowledgements {
    var titles: [String] = []
    let killAt: Int
    private var killed = false

    init(killAt: Int) { self.killAt = killAt }

    /// Records an acknowledged title; true when this is the moment to kill.
    func record(_ title: String) -> Bool {
        titles.append(title)
        guard !killed, titles.count >= killAt else { return false }
        killed = true
        return true
    }
}

@Suite("kill -9 during the server's file writes", .serialized, .timeLimit(.minutes(30)))
struct ServerKillTests {
    /// One kill by default; `MODELSYNC_STRESS=1` runs 200 (the figure in docs/RELIABILITY.md).
    static let rounds = StressMode.isOn ? 200 : 1
    static let writers = 4

    @Test(
        // The executable is built with the tests (`swift build --build-tests`); a filtered build
        // may leave it out, and then there is nothing to kill.
        .enabled(if: serverExecutable != nil || StressMode.componentsRequired, "the modelsync-server executable is not built")
    )
    func everyAcknowledgedWriteSurvivesKill9() async throws {
        let executable = try #require(serverExecutable, "modelsync-server must be built next to the tests")
        let seed = UInt64(ProcessInfo.processInfo.environment["MODELSYNC_SEED"] ?? "") ?? 13
        var random = SeededGenerator(seed: seed)
        try await withDatabaseFile(#"{"posts": []}"#) { file async throws in
            var acknowledged: [String] = []
            for round in 0..<Self.rounds {
                let server = try await ServerProcess.start(executable, file: file)
                let acks = Acknowledgements(killAt: Int.random(in: 1...40, using: &random))
                let base = "http://127.0.0.1:\(server.port)/posts"
                await withTaskGroup(of: Void.self) { group in
                    for writer in 0..<Self.writers {
                        group.addTask {
                            var index = 0
                            // Each writer stops at its first failure: the server is gone.
                            while true {
                                let title = "r\(round)-w\(writer)-\(index)"
                                index += 1
                                // A request the kill cut off is unacknowledged whatever happens to it; the short
                                // timeout only keeps a stalled one from holding the round.
                                guard let reply = try? await send(.POST, base, body: #"{"title": "\#(title)"}"#, timeout: .seconds(2)),
                                    reply.status == 201
                                else { return }
                                if await acks.record(title) { await server.kill() }
                            }
                        }
                    }
                }
                await server.kill()
                acknowledged += await acks.titles
                // The file the killed server left must load and hold every acknowledged write.
                let stored = try JSONValue(parsing: Array(try Data(contentsOf: file)))
                let titles = Set(stored["posts"]?.arrayValue?.compactMap { $0["title"]?.stringValue } ?? [])
                let lost = acknowledged.filter { !titles.contains($0) }
                #expect(lost.isEmpty, "round \(round), seed \(seed): acknowledged writes lost: \(lost.prefix(5))")
                if !lost.isEmpty { return }
            }
            // A restart loads the file and clears the temporary files the kills left.
            let restarted = try await ModelSyncServer.start(file: file)
            let count = try await restarted.data["posts"]?.arrayValue?.count ?? 0
            await restarted.shutdown()
            #expect(count >= acknowledged.count)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
            #expect(leftovers == ["db.json"])
        }
    }
}
