import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncSQLite
@testable import ModelSyncServer
import ModelSyncServerPostgres
@testable import ModelSyncServerSQLite
import ModelSyncTesting
import ServerTestSupport
import Testing

/// What only the SQLite backend has: its file, its lock, its writer's groups, its backups. The
/// HTTP contract it shares with the other backends runs in every suite over `Backend.allCases`.
@Suite struct SQLiteBackendTests {
    @Test func aSecondServerOnTheSameFileIsRefusedWithAClearError() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-lock")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        let server = try await SyncServer.start(data: sampleData, sqlite: path)
        do {
            _ = try await SyncServer.start(sqlite: path)
            Issue.record("a second server started on the same file")
        } catch let error as ServerError {
            #expect("\(error)".contains("another modelsync-server serves this database"))
        }
        await server.shutdown()
        // Once the first one stopped, the file is free again, with its data.
        let again = try await SyncServer.start(sqlite: path)
        #expect(try await send(.GET, again.baseURL.absoluteString + "/posts").ids == [1, 2, 3, 4, 5])
        await again.shutdown()
    }

    @Test func aFileThatIsNoSQLiteDatabaseIsRefusedAtStart() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-check")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        try Data(String(repeating: #"{"posts": []}"#, count: 100).utf8).write(to: URL(fileURLWithPath: path))
        await #expect(throws: ServerError.self) { try await SyncServer.start(sqlite: path) }
        // Nothing was written over it.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).starts(with: Data(#"{"posts": []}"#.utf8)))
    }

    @Test func dataVersionsAndTheFeedSurviveARestart() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-restart")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        let first = try await SyncServer.start(data: sampleData, sqlite: path)
        let created = try await send(.POST, first.baseURL.absoluteString + "/posts", body: #"{"title": "kept"}"#, headers: [("Idempotency-Key", "k1")])
        #expect(created.status == 201)
        #expect(try await send(.DELETE, first.baseURL.absoluteString + "/posts/1").status == 200)
        let feed = try await send(.GET, first.baseURL.absoluteString + "/_changes?since=0").json
        await first.shutdown()

        let second = try await SyncServer.start(sqlite: path)
        let base = second.baseURL.absoluteString
        let read = try await send(.GET, base + "/posts/6")
        #expect(read.json?["title"] == "kept")
        #expect(read.header("ETag") == created.header("ETag"))
        #expect(try await send(.GET, base + "/_changes?since=0").json == feed)
        // The key's first answer replays after the restart.
        let replayed = try await send(.POST, base + "/posts", body: #"{"title": "kept"}"#, headers: [("Idempotency-Key", "k1")])
        #expect(replayed.json == created.json)
        // Id 1 was deleted: never given again; the next create gets 7.
        #expect(try await send(.POST, base + "/posts", body: #"{"title": "next"}"#).json?["id"] == 7)
        await second.shutdown()
    }

    @Test func writesThatQueueWhileAGroupCommitsCommitTogether() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-group")
        defer { directory.remove() }
        let backend = try await SQLiteBackend.open(path: directory.path("data.sqlite"), initialData: ["posts": []], feedLimits: FeedLimits(), logger: Logger(label: "test"))
        // The first write holds the writer until the others have queued behind it.
        let (gate, holding) = await Self.holdWriter(of: backend)
        let writes = Task {
            try await withThrowingTaskGroup(of: [Result<ItemWrite.Result, APIError>].self) { group in
                for index in 0..<10 {
                    group.addTask { try await backend.write([ItemOperation(write: .create(collection: "posts", body: ["n": .number(JSONNumber(index))]))]) }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        while await backend.writer.waitingCount < 10 { try await Task.sleep(for: .milliseconds(5)) }
        gate.signal()
        try await holding.value
        let results = try await writes.value
        #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
        #expect(Set(results.compactMap { try? $0.get().body["id"]?.intValue }) == Set(1...10))
        // One group for the held write, one for the ten that queued.
        #expect(await backend.writer.groupsCommitted == 2)
        #expect(await backend.writer.largestGroupCommitted == 10)
        await backend.close()
    }

    /// Reads run on the readers: a write holding the writer holds up no read.
    @Test(.timeLimit(.minutes(5))) func readsGoOnWhileTheWriterIsHeld() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-readers")
        defer { directory.remove() }
        let backend = try await SQLiteBackend.open(path: directory.path("data.sqlite"), initialData: sampleData, feedLimits: FeedLimits(), logger: Logger(label: "test"))
        let (gate, holding) = await Self.holdWriter(of: backend)
        // The writer is held: these answer from the readers (they would wait forever on it).
        let read = try await backend.item("posts", id: "1", embeds: ["comments"], expands: ["user"], visibility: .open)
        #expect(read.value["title"] == "alpha" && read.value["comments"]?.arrayValue?.count == 2 && read.value["user"]?["name"] == "Leanne")
        #expect(try await backend.changes(after: .after(0), in: nil, limit: 100, visibility: .open).changes.count == 10)
        #expect(try await backend.everything().value["profile"] == sampleData["profile"])
        gate.signal()
        try await holding.value
        await backend.close()
    }

    /// A write that holds `backend`'s writer (on the writer's thread) until `gate` is signalled;
    /// returns once it holds it.
    private static func holdWriter(of backend: SQLiteBackend) async -> (gate: DispatchSemaphore, holding: Task<Void, any Error>) {
        let (started, running) = AsyncStream<Void>.makeStream()
        let gate = DispatchSemaphore(value: 0)
        let holding = Task {
            try await backend.writing { _, _ in
                running.yield()
                gate.wait()
            }
        }
        for await _ in started { break }
        return (gate, holding)
    }

    @Test func aBackupWhileTheServerRunsIsADatabaseOfItsOwn() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-backup")
        defer { directory.remove() }
        let server = try await SyncServer.start(data: sampleData, sqlite: directory.path("data.sqlite"))
        #expect(try await send(.POST, server.baseURL.absoluteString + "/posts", body: #"{"title": "backed up"}"#).status == 201)
        try await SyncServer.backUp(sqlite: directory.path("data.sqlite"), to: directory.path("backup.sqlite"))
        // The server goes on writing meanwhile; the backup is the snapshot.
        #expect(try await send(.POST, server.baseURL.absoluteString + "/posts", body: #"{"title": "after"}"#).status == 201)
        await #expect(throws: ServerError.self) { try await SyncServer.backUp(sqlite: directory.path("data.sqlite"), to: directory.path("backup.sqlite")) }
        let restored = try await SyncServer.start(sqlite: directory.path("backup.sqlite"))
        #expect(try await send(.GET, restored.baseURL.absoluteString + "/posts").ids == [1, 2, 3, 4, 5, 6])
        await restored.shutdown()
        await server.shutdown()
    }

    /// Moving to PostgreSQL when one machine is outgrown: export, then import. Records keep their
    /// versions, so clients' cursors and ETags stay valid.
    @Test func exportFromSQLiteThenImportIntoPostgreSQLKeepsDataAndFeed() async throws {
        let database = try TestPostgres.database()
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-export")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        let server = try await SyncServer.start(data: sampleData, sqlite: path)
        let base = server.baseURL.absoluteString
        let created = try await send(.POST, base + "/posts", body: #"{"title": "moved"}"#, headers: [("Idempotency-Key", "move-1")])
        #expect(try await send(.DELETE, base + "/posts/2").status == 200)
        #expect(try await send(.PATCH, base + "/profile", body: #"{"name": "moved"}"#).status == 200)
        let everything = try await send(.GET, base + "/db").json
        let feed = try await send(.GET, base + "/_changes?since=0").json
        let exported = try await SyncServer.exportData(fromSQLite: path)
        await server.shutdown()

        try await SyncServer.importData(exported, into: database)
        let postgres = try await SyncServer.start(database: database)
        let moved = postgres.baseURL.absoluteString
        #expect(try await send(.GET, moved + "/db").json == everything)
        #expect(try await send(.GET, moved + "/_changes?since=0").json == feed)
        #expect(try await send(.GET, moved + "/posts/6").header("ETag") == created.header("ETag"))
        let replayed = try await send(.POST, moved + "/posts", body: #"{"title": "moved"}"#, headers: [("Idempotency-Key", "move-1")])
        #expect(replayed.json == created.json)
        await postgres.shutdown()
        await TestPostgres.drop(database)
    }

    /// SQL leaves out the rows an equality filter refuses before Swift checks the rest: it must
    /// never leave out one that matches (a number's text as written, `-0`, a nested field).
    @Test(arguments: [Backend.jsonDocument, .sqlite]) func equalityFiltersMatchEveryValueAsItsText(backend: Backend) async throws {
        let data = try JSONValue(parsing: Array(#"""
            {"items": [
                {"id": 1, "n": 1}, {"id": 2, "n": "1"}, {"id": 3, "n": -0}, {"id": 4, "n": 0}, {"id": 5, "n": 1.0},
                {"id": 6, "n": true}, {"id": 7, "n": null}, {"id": 8}, {"id": 9, "n": {"a": 1}}, {"id": 10, "n": [1]},
                {"id": 11, "n": 1e0}, {"id": 12, "n": "x"}, {"id": 13, "meta": {"n": 1}}, {"id": 14, "meta": {"n": "-0"}}
            ],
            "children": [{"id": 1, "itemId": 1}, {"id": 2, "itemId": "3"}, {"id": 3, "itemId": -0}]}
            """#.utf8))
        try await withServer(data, backend: backend) { _, base async throws in
            let expected: [(String, [Int])] = [
                ("n=1", [1, 2]), ("n=-0", [3]), ("n=0", [4]), ("n=1.0", [5]), ("n=true", [6]), ("n=null", [7]), ("n=1e0", [11]),
                ("n=x&n=1", [1, 2, 12]), ("meta.n=1", [13]), ("meta.n=-0", [14]), ("n=2", []),
            ]
            for (query, ids) in expected {
                #expect(try await send(.GET, base + "/items?" + query).ids == ids, "\(query)")
            }
            // Embedded children by their key's text, and a nested route.
            let embedded = try await send(.GET, base + "/items?_embed=children&id_lte=4").json?.arrayValue ?? []
            #expect(embedded.map { $0["children"]?.arrayValue?.count ?? -1 } == [1, 0, 1, 0])
            #expect(try await send(.GET, base + "/items/3/children").ids == [2])
        }
    }

    @Test(.enabled(if: serverExecutable != nil || StressMode.componentsRequired, "the modelsync-server executable is not built"))
    func theCommandLineImportsServesBacksUpAndExportsASQLiteFile() async throws {
        let executable = try #require(serverExecutable, "modelsync-server must be built next to the tests")
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-cli")
        defer { directory.remove() }
        try Data(sampleData.jsonBytes()).write(to: directory.url.appendingPathComponent("db.json"))
        let imported = try await ServerProcess.run(executable, arguments: ["import", directory.path("db.json"), "--database", "sqlite:" + directory.path("data.sqlite")])
        #expect(imported.status == 0, "\(imported.output)")
        // `serve data.sqlite`, then a backup while it runs.
        let server = try await ServerProcess.start(executable, arguments: [directory.path("data.sqlite")])
        #expect(try await send(.POST, "http://127.0.0.1:\(server.port)/posts", body: #"{"title": "live"}"#).status == 201)
        let backup = try await ServerProcess.run(executable, arguments: ["backup", directory.path("copy.sqlite"), directory.path("data.sqlite")])
        #expect(backup.status == 0, "\(backup.output)")
        await server.stop()
        let exported = try await ServerProcess.run(executable, arguments: ["export", directory.path("out.json"), "--database", "sqlite:" + directory.path("copy.sqlite")])
        #expect(exported.status == 0, "\(exported.output)")
        let document = try JSONValue(parsing: Array(try Data(contentsOf: directory.url.appendingPathComponent("out.json"))))
        #expect(document["users"] == sampleData["users"] && document["profile"] == sampleData["profile"])
        #expect(document["posts"]?.arrayValue?.last?["title"] == "live")
        #expect(document["_modelsync"]?["sequence"] != nil)
    }

    /// `--synchronous normal` serves a SQLite file syncing at checkpoints (the banner says so);
    /// another value, or the option with a JSON file, is refused.
    @Test(.enabled(if: serverExecutable != nil || StressMode.componentsRequired, "the modelsync-server executable is not built"))
    func theCommandLineChoosesHowSQLiteSyncs() async throws {
        let executable = try #require(serverExecutable, "modelsync-server must be built next to the tests")
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-synchronous")
        defer { directory.remove() }
        let server = try await ServerProcess.start(executable, arguments: [directory.path("data.sqlite"), "--synchronous", "normal"])
        #expect(try await send(.GET, "http://127.0.0.1:\(server.port)/db").status == 200)
        await server.stop()
        let refused = try await ServerProcess.run(executable, arguments: [directory.path("data.sqlite"), "--synchronous", "off"])
        #expect(refused.status != 0)
        #expect(refused.output.contains("--synchronous must be full or normal"), "\(refused.output)")
        try Data("{}".utf8).write(to: directory.url.appendingPathComponent("db.json"))
        let notSQLite = try await ServerProcess.run(executable, arguments: [directory.path("db.json"), "--synchronous", "normal"])
        #expect(notSQLite.status != 0)
        #expect(notSQLite.output.contains("--synchronous applies to a SQLite database"), "\(notSQLite.output)")
    }

    /// `--metrics` shows the writer's queue and the sizes of its groups.
    @Test(.enabled(if: serverExecutable != nil || StressMode.componentsRequired, "the modelsync-server executable is not built"))
    func theMetricsShowTheWritersQueueAndGroups() async throws {
        let executable = try #require(serverExecutable, "modelsync-server must be built next to the tests")
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-metrics")
        defer { directory.remove() }
        try await SyncServer.importData(["posts": []], intoSQLite: directory.path("data.sqlite"))
        let server = try await ServerProcess.start(executable, arguments: [directory.path("data.sqlite"), "--metrics"])
        let base = "http://127.0.0.1:\(server.port)"
        #expect(try await send(.POST, base + "/posts", body: #"{"title": "counted"}"#).status == 201)
        let metrics = String(decoding: try await send(.GET, base + "/_metrics").body, as: UTF8.self)
        await server.stop()
        #expect(metrics.contains("modelsync_sqlite_writer_queue"))
        #expect(metrics.contains("modelsync_sqlite_writer_group_size"))
    }

    @Test func importIntoAFileWithDataNeedsReplacing() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-import")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        try await SyncServer.importData(sampleData, intoSQLite: path)
        await #expect(throws: ServerError.self) { try await SyncServer.importData(["posts": []], intoSQLite: path) }
        try await SyncServer.importData(["posts": [["id": 9]]], intoSQLite: path, replacing: true)
        #expect(try await SyncServer.exportData(fromSQLite: path)["posts"] == [["id": 9]])
    }
}
