import AsyncHTTPClient
import Foundation
import ModelSyncJSON
import ModelSyncSQLite
import ModelSyncServer
import ModelSyncServerSQLite
import ModelSyncTesting
import ServerTestSupport
import Testing

private struct AcknowledgedCreate: Sendable {
    let title: String
    let body: JSONValue
}

@Suite("kill -9 of the server over SQLite while clients write", .serialized, .timeLimit(.minutes(30)))
struct SQLiteKillTests {
    /// One kill by default; `MODELSYNC_STRESS=1` runs 50.
    static let rounds = StressMode.isOn ? 50 : 1
    static let writers = 4

    @Test(.enabled(if: serverExecutable != nil || StressMode.componentsRequired, "the modelsync-server executable is not built"))
    func noAcknowledgedWriteIsLostAndEveryReplayHolds() async throws {
        let executable = try #require(serverExecutable, "modelsync-server must be built next to the tests")
        let seed = UInt64(ProcessInfo.processInfo.environment["MODELSYNC_SEED"] ?? "") ?? 13
        var random = SeededGenerator(seed: seed)
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-kill")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        try await SyncServer.importData(["posts": []], intoSQLite: path)
        var acknowledged: [AcknowledgedCreate] = []
        for round in 0..<Self.rounds {
            // The path's extension chooses SQLite (`modelsync-server serve data.sqlite`).
            let server = try await ServerProcess.start(executable, arguments: [path])
            // Each acknowledged create's title and first answer.
            let acks = Acknowledgements<AcknowledgedCreate>(killAt: Int.random(in: 1...40, using: &random))
            let base = "http://127.0.0.1:\(server.port)/posts"
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<Self.writers {
                    group.addTask {
                        var index = 0
                        // Each writer stops at its first failure: the server is gone.
                        while true {
                            let title = "r\(round)-w\(writer)-\(index)"
                            index += 1
                            guard let reply = try? await send(
                                .POST, base, body: #"{"title": "\#(title)"}"#, headers: [("Idempotency-Key", title)], timeout: .seconds(5)),
                                reply.status == 201, let body = reply.json
                            else { return }
                            if await acks.record(AcknowledgedCreate(title: title, body: body)) { await server.kill() }
                        }
                    }
                }
            }
            await server.kill()
            acknowledged += await acks.acknowledged

            // The file the killed server left passes SQLite's own check.
            let file = try Database(path: path, configuration: DatabaseConfiguration(createsTables: false))
            let check = try await file.read { try $0.rows("PRAGMA integrity_check") }
            #expect(check.map { $0.first?.textValue } == ["ok"], "round \(round), seed \(seed)")

            // Every acknowledged create is there, and its key replays its first answer.
            let restarted = try await SyncServer.start(sqlite: path)
            let posts = try await send(.GET, restarted.baseURL.absoluteString + "/posts").json?.arrayValue ?? []
            let titles = Set(posts.compactMap { $0["title"]?.stringValue })
            let lost = acknowledged.filter { !titles.contains($0.title) }
            #expect(lost.isEmpty, "round \(round), seed \(seed): acknowledged writes lost: \(lost.prefix(5).map(\.title))")
            for (title, body) in acknowledged.prefix(20).map({ ($0.title, $0.body) }) {
                let replay = try await send(.POST, restarted.baseURL.absoluteString + "/posts", body: #"{"title": "\#(title)"}"#, headers: [("Idempotency-Key", title)])
                #expect(replay.status == 201 && replay.json == body, "round \(round), seed \(seed): the replay of \(title) changed")
            }
            let after = try await send(.GET, restarted.baseURL.absoluteString + "/posts").json?.arrayValue?.count
            #expect(after == posts.count, "a replay created a record")
            await restarted.shutdown()
            if !lost.isEmpty { return }
        }
    }
}
