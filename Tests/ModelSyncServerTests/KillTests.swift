import AsyncHTTPClient
import Foundation
import ModelSyncJSON
import ModelSyncServer
import ModelSyncTesting
import ServerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The acknowledged writes of a round (what each test keeps of one), and when to fire `kill -9`.
actor Acknowledgements<Acknowledged: Sendable> {
    private(set) var acknowledged: [Acknowledged] = []
    let killAt: Int
    private var killed = false

    init(killAt: Int) { self.killAt = killAt }

    /// Records an acknowledged write; true when this is the moment to kill.
    func record(_ write: Acknowledged) -> Bool {
        acknowledged.append(write)
        guard !killed, acknowledged.count >= killAt else { return false }
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
                let server = try await ServerProcess.start(executable, arguments: [file.path])
                let acks = Acknowledgements<String>(killAt: Int.random(in: 1...40, using: &random))
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
                acknowledged += await acks.acknowledged
                // The file the killed server left must load and hold every acknowledged write.
                let stored = try JSONValue(parsing: Array(try Data(contentsOf: file)))
                let titles = Set(stored["posts"]?.arrayValue?.compactMap { $0["title"]?.stringValue } ?? [])
                let lost = acknowledged.filter { !titles.contains($0) }
                #expect(lost.isEmpty, "round \(round), seed \(seed): acknowledged writes lost: \(lost.prefix(5))")
                if !lost.isEmpty { return }
            }
            // A restart loads the file and clears the temporary files the kills left.
            let restarted = try await TestServer.start(file: file)
            let count = try await restarted.data["posts"]?.arrayValue?.count ?? 0
            await restarted.shutdown()
            #expect(count >= acknowledged.count)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
            #expect(leftovers == ["db.json"])
        }
    }
}
