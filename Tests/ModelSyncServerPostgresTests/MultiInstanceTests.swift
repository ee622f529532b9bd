import Foundation
import ModelSync
import ModelSyncJSON
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import ServerTestSupport
import Testing

/// Counts the writes that must all arrive.
private actor Tally {
    var titles: Set<String> = []
    var retries = 0
    func created(_ title: String) { titles.insert(title) }
    func retried() { retries += 1 }
}

/// Two `modelsync-server` processes over one PostgreSQL database, as a deployment runs them.
@Suite("Two server processes over one PostgreSQL database", .serialized, .timeLimit(.minutes(10)))
struct MultiInstanceTests {
    static let clients = 8
    static let writesPerClient = 100
    static let incrementers = 8
    static let incrementsEach = 25

    @Test(.enabled(if: serverExecutable != nil || StressMode.componentsRequired, "the modelsync-server executable is not built"))
    func writesThroughOneServerAreReadAndStreamedThroughTheOther() async throws {
        let executable = try #require(serverExecutable, "modelsync-server must be built next to the tests")
        let database = try TestPostgres.database()
        let url = TestPostgres.url(of: database)
        try await withDatabaseFile(#"{"posts": [{"id": 1, "title": "seed"}], "counters": [{"id": 1, "value": 0}]}"#) { file in
            // The data goes in through the command line, as a deployment moves it.
            let imported = try await ServerProcess.run(executable, arguments: ["import", file.path, "--database", url])
            #expect(imported.status == 0, "\(imported.output)")
            let first = try await ServerProcess.start(executable, arguments: ["--database", url])
            let second = try await ServerProcess.start(executable, arguments: ["--database", url])
            do {
                try await Self.exercise(first.baseURL, second.baseURL)
                // What the servers wrote comes back out through `export`.
                let exported = file.deletingLastPathComponent().appendingPathComponent("export.json")
                #expect(try await ServerProcess.run(executable, arguments: ["export", exported.path, "--database", url]).status == 0)
                let data = try JSONValue(parsing: Array(try Data(contentsOf: exported)))
                #expect(data["posts"]?.arrayValue?.count == 2 + Self.clients * Self.writesPerClient)
                #expect(data["counters"]?[0]?["value"]?.intValue == Self.incrementers * Self.incrementsEach)
            } catch {
                Issue.record(error)
            }
            await first.stop()
            await second.stop()
        }
        await TestPostgres.drop(database)
    }

    /// Every write through `one` is read and streamed through `other`, and concurrent writers
    /// through both lose nothing.
    private static func exercise(_ one: String, _ other: String) async throws {
        // The second server's change stream, from the sequence before any write (the stream
        // connects on its first read).
        let start = try #require(try await send(.GET, other + "/_changes?since=now").json?["next"]?.stringValue)
        let remote = RemoteStore(baseURL: try #require(URL(string: other)))
        var events = remote.events(at: try #require(URL(string: other + "/_changes/stream?since=" + start))).makeAsyncIterator()

        let created = try await send(.POST, one + "/posts", body: #"{"title": "through one"}"#)
        #expect(created.status == 201)
        let id = try #require(created.json?["id"]?.intValue)
        let read = try await send(.GET, other + "/posts/\(id)")
        #expect(read.json?["title"] == "through one")
        #expect(read.header("ETag") == created.header("ETag"))
        let streamed = try #require(try await events.next())
        #expect(try JSONValue(parsing: Array(streamed.data.utf8))["record"]?["title"] == "through one")
        var lastSequence = try #require(Int(streamed.id ?? ""))

        // 8 clients × 100 creates, alternating between the servers.
        let tally = Tally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    for write in 0..<writesPerClient {
                        let title = "c\(client)-w\(write)"
                        let reply = try await send(.POST, (write % 2 == 0 ? one : other) + "/posts", body: #"{"title": "\#(title)"}"#)
                        if reply.status == 201 { await tally.created(title) }
                    }
                }
            }
            // Read-modify-write increments with If-Match, half through each server: a 412 means
            // someone else's increment landed first, and the client reads again.
            for incrementer in 0..<incrementers {
                group.addTask {
                    let base = incrementer % 2 == 0 ? one : other
                    var done = 0
                    while done < incrementsEach {
                        let current = try await send(.GET, base + "/counters/1")
                        let value = try #require(current.json?["value"]?.intValue)
                        let etag = try #require(current.header("ETag"))
                        let reply = try await send(
                            .PATCH, base + "/counters/1", body: #"{"value": \#(value + 1)}"#, headers: [("If-Match", etag)])
                        if reply.status == 200 { done += 1 } else if reply.status == 412 { await tally.retried() } else {
                            Issue.record("PATCH answered \(reply.status)")
                            return
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await tally.titles.count == clients * writesPerClient)
        let posts = try await send(.GET, other + "/posts")
        let titles = Set(posts.json?.arrayValue?.compactMap { $0["title"]?.stringValue } ?? [])
        #expect(await tally.titles.isSubset(of: titles))
        #expect(Set(posts.ids).count == 2 + clients * writesPerClient)
        #expect(try await send(.GET, one + "/counters/1").json?["value"]?.intValue == incrementers * incrementsEach)

        // The second server streamed those writes in sequence order up to the last one: every
        // created post, and the counter's final value (the stream, like the feed, sends a record
        // in its state when read, so quick successive edits of one record may arrive as one).
        let end = try #require(Int(try await send(.GET, one + "/_changes?since=now").json?["next"]?.stringValue ?? ""))
        var streamedTitles: Set<String> = []
        var counter: Int?
        while lastSequence < end, let event = try await events.next() {
            let sequence = try #require(Int(event.id ?? ""))
            #expect(sequence > lastSequence)
            lastSequence = sequence
            let record = try JSONValue(parsing: Array(event.data.utf8))["record"]
            if let title = record?["title"]?.stringValue { streamedTitles.insert(title) }
            if let value = record?["value"]?.intValue { counter = value }
        }
        #expect(await tally.titles.isSubset(of: streamedTitles))
        #expect(counter == incrementers * incrementsEach)
    }

    @Test(.timeLimit(.minutes(5))) func theChangeStreamCatchesUpAfterLosingPostgreSQL() async throws {
        let database = try TestPostgres.database()
        let server = try await SyncServer.start(
            data: ["posts": []], database: database, logger: TestPostgresLog.logger("server \(database.schema)"))
        let url = server.baseURL.absoluteString
        do {
            let remote = RemoteStore(baseURL: server.baseURL)
            var events = remote.events(at: try #require(URL(string: url + "/_changes/stream?since=0"))).makeAsyncIterator()
            #expect(try await send(.POST, url + "/posts", body: #"{"title": "before"}"#).status == 201)
            #expect(try await events.next()?.id == "1")
            // Cut every connection of this server (its statements name its schema), the stream's
            // LISTEN among them; the write that follows lands while the stream reconnects.
            let cut = try await TestPostgres.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND strpos(query, '\(database.schema)') > 0",
                in: database)
            #expect(cut > 0)
            var status = 0
            for _ in 0..<10 where status != 201 {
                status = (try? await send(.POST, url + "/posts", body: #"{"title": "during"}"#).status) ?? 0
            }
            #expect(status == 201)
            let event = try #require(try await events.next())
            #expect(event.id == "2")
            #expect(event.data.contains("during"))
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }

    /// A test schema's name, made longer.
    enum SchemaName: Sendable {
        /// Padded with `x` to this many bytes.
        case bytes(Int)
        /// With this appended.
        case suffix(String)

        func of(_ base: String) -> String {
            switch self {
            case .bytes(let count): base + String(repeating: "x", count: max(0, count - base.utf8.count))
            case .suffix(let suffix): base + suffix
            }
        }
    }

    /// Any schema name streams its changes. At 46 bytes the channel `modelsync_changes_<name>`
    /// would have 64, one past PostgreSQL's limit (`pg_notify` refused it), and a `"` broke the
    /// `LISTEN`: those get a hashed channel.
    @Test(.timeLimit(.minutes(5)), arguments: [SchemaName.bytes(46), .bytes(58), .suffix(#"q"uote"#), .suffix(" it's ü")])
    func everySchemaNameStreamsItsChanges(name: SchemaName) async throws {
        let base = try TestPostgres.database()
        let database = base.withSchema(name.of(base.schema))
        try await Self.expectStreamedWrites(try await SyncServer.start(
            data: ["posts": []], database: database, logger: TestPostgresLog.logger("server \(database.schema)")))
        // The collection's write function, made by an earlier version, notified another channel:
        // the next start makes it again.
        let function = """
            (SELECT p.oid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = '\(database.schema.replacingOccurrences(of: "'", with: "''"))' AND p.proname LIKE '%_write')
            """
        try await TestPostgres.execute(
            "DO $$ BEGIN EXECUTE replace(pg_get_functiondef(\(function)), 'pg_notify(''modelsync_changes', 'pg_notify(''elsewhere'); END $$",
            in: database)
        let elsewhere = "SELECT 1 FROM pg_proc WHERE oid = \(function) AND strpos(prosrc, 'pg_notify(''elsewhere') > 0"
        #expect(try await TestPostgres.execute(elsewhere, in: database) == 1)
        try await Self.expectStreamedWrites(try await SyncServer.start(
            database: database, logger: TestPostgresLog.logger("server \(database.schema)")))
        #expect(try await TestPostgres.execute(elsewhere, in: database) == 0)
        await TestPostgres.drop(database)
    }

    /// A create and an update through `server` reach its change stream; then it shuts down.
    private static func expectStreamedWrites(_ server: SyncServer) async throws {
        let url = server.baseURL.absoluteString
        do {
            let since = try #require(try await send(.GET, url + "/_changes?since=now").json?["next"]?.stringValue)
            var events = RemoteStore(baseURL: server.baseURL)
                .events(at: try #require(URL(string: url + "/_changes/stream?since=" + since))).makeAsyncIterator()
            let created = try await send(.POST, url + "/posts", body: #"{"title": "one"}"#)
            #expect(created.status == 201)
            let id = try #require(created.json?["id"]?.intValue)
            #expect(try await Self.streamedTitle(&events) == "one")
            #expect(try await send(.PATCH, url + "/posts/\(id)", body: #"{"title": "two"}"#).status == 200)
            #expect(try await Self.streamedTitle(&events) == "two")
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
    }

    private static func streamedTitle(_ events: inout AsyncThrowingStream<ServerSentEvent, any Error>.Iterator) async throws -> String? {
        let event = try await events.next()
        return try event.flatMap { try JSONValue(parsing: Array($0.data.utf8))["record"]?["title"]?.stringValue }
    }

    /// An import over the data (`import --replace`) while a server runs on it: the server hears
    /// of it by notification alone (it did not make it), ends its open streams, answers a cursor
    /// past the data 410, and a stream opened afterwards gets the writes since, live.
    @Test(.timeLimit(.minutes(5))) func anImportOverTheDataRewindsARunningServersStreams() async throws {
        let database = try TestPostgres.database()
        let data: JSONValue = ["posts": [["id": 1, "title": "a"]]]
        try await SyncServer.importData(data, into: database)
        let server = try await SyncServer.start(database: database, logger: TestPostgresLog.logger("server \(database.schema)"))
        let url = server.baseURL.absoluteString
        do {
            for title in ["x", "y", "z"] { _ = try await send(.PATCH, url + "/posts/1", body: #"{"title": "\#(title)"}"#) }   // 2, 3, 4
            let remote = RemoteStore(baseURL: server.baseURL)
            var open = remote.events(at: try #require(URL(string: url + "/_changes/stream?since=3"))).makeAsyncIterator()
            #expect(try await open.next()?.id == "4")
            try await SyncServer.importData(data, into: database, replacing: true)
            #expect(try await open.next() == nil)
            let gone = try await send(.GET, url + "/_changes?since=4")
            #expect(gone.status == 410 && gone.json?["horizon"]?.stringValue == "1")
            var fresh = remote.events(at: try #require(URL(string: url + "/_changes/stream?since=1"))).makeAsyncIterator()
            #expect(try await send(.PATCH, url + "/posts/1", body: #"{"title": "after"}"#).status == 200)
            #expect(try await fresh.next()?.id == "2")
            // Subscribed by now: this one can only come live, through the rewound relay.
            #expect(try await send(.PATCH, url + "/posts/1", body: #"{"title": "again"}"#).status == 200)
            #expect(try await fresh.next()?.id == "3")
        } catch {
            Issue.record(error)
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }

    @Test func startingOnASchemaWithoutDataSaysToImport() async throws {
        let database = try TestPostgres.database()
        await #expect {
            _ = try await SyncServer.start(database: database)
        } throws: { error in
            "\(error)".contains("holds no modelsync-server data")
        }
    }
}
