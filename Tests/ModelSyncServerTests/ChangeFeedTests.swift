import Foundation
import ModelSync
import ModelSyncJSON
@testable import ModelSyncServer
import ModelSyncTesting
import ServerTestSupport
import Testing

/// The change feed: versions as ETags, If-Match against them, `/_changes`, `?_since=`,
/// tombstones and the horizon, the bookkeeping kept out of the data, the live stream.
@Suite struct ChangeFeedTests {
    static let data: JSONValue = ["posts": [["id": 1, "title": "a"], ["id": 2, "title": "b"]], "tags": [["id": "x"]], "profile": ["name": "p"]]

    func changes(_ base: String, _ query: String) async throws -> (changes: [JSONValue], next: String?, more: Bool?, status: Int) {
        let reply = try await send(.GET, base + query)
        return (reply.json?["changes"]?.arrayValue ?? [], reply.json?["next"]?.stringValue, reply.json?["more"]?.boolValue, reply.status)
    }

    @Test(arguments: Backend.allCases) func everyWriteTakesTheNextSequenceAndItsETagIsTheVersion(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { _, url in
            let base = url + "/"
            // Loaded records get versions in the data's order: posts 1, 2, then tags.
            #expect(try await send(.GET, base + "posts/2").header("ETag") == #""2""#)
            let created = try await send(.POST, base + "posts", body: #"{"title": "c"}"#)
            #expect(created.header("ETag") == #""4""#)
            let patched = try await send(.PATCH, base + "posts/1", body: #"{"title": "a2"}"#, headers: [("If-Match", #""1""#)])
            #expect(patched.status == 200 && patched.header("ETag") == #""5""#)
            // A stale version: 412 with the current record and its ETag.
            let stale = try await send(.PUT, base + "posts/1", body: #"{"title": "lost"}"#, headers: [("If-Match", #""1""#)])
            #expect(stale.status == 412)
            #expect(stale.json?["current"]?["title"]?.stringValue == "a2" && stale.header("ETag") == #""5""#)
            let staleDelete = try await send(.DELETE, base + "posts/1", headers: [("If-Match", #""4""#)])
            #expect(staleDelete.status == 412)
            #expect(try await send(.DELETE, base + "posts/1", headers: [("If-Match", "*")]).status == 200)
            #expect(try await send(.PATCH, base + "posts/1", body: "{}", headers: [("If-Match", "*")]).status == 404)
        }
    }

    @Test(arguments: Backend.allCases) func theFeedListsEachRecordOnceInOrderWithTombstones(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { _, url in
            let base = url + "/"
            _ = try await send(.PATCH, base + "posts/1", body: #"{"title": "a2"}"#)   // 4
            _ = try await send(.POST, base + "posts", body: #"{"title": "c"}"#)        // 5 (id 3)
            _ = try await send(.PATCH, base + "posts/1", body: #"{"title": "a3"}"#)   // 6
            _ = try await send(.DELETE, base + "posts/2")                              // 7
            let all = try await changes(base, "_changes")
            #expect(all.changes.compactMap { $0["seq"]?.intValue } == [3, 5, 6, 7])
            #expect(all.changes[2]["record"]?["title"]?.stringValue == "a3")
            #expect(all.changes[3]["deleted"]?.boolValue == true && all.changes[3]["id"]?.intValue == 2)
            #expect(all.next == "7" && all.more == false)

            let paged = try await changes(base, "_changes?since=3&limit=2")
            #expect(paged.changes.compactMap { $0["seq"]?.intValue } == [5, 6] && paged.next == "6" && paged.more == true)
            let rest = try await changes(base, "_changes?since=6&limit=2")
            #expect(rest.changes.compactMap { $0["seq"]?.intValue } == [7] && rest.next == "7" && rest.more == false)
            // A quiet feed still moves the cursor to the present.
            let filtered = try await changes(base, "_changes?since=3&collections=tags")
            #expect(filtered.changes.isEmpty && filtered.next == "7")
            // The same for one collection through its list route.
            let posts = try await changes(base, "posts?_since=5")
            #expect(posts.changes.compactMap { $0["seq"]?.intValue } == [6, 7])
            #expect(try await changes(base, "_changes?since=-1").status == 400)
            #expect(try await changes(base, "_changes?since=abc").status == 400)
            #expect(try await changes(base, "_changes?limit=0").status == 400)
        }
    }

    /// PostgreSQL writes a page's records from their `jsonb` text: each must read as the record
    /// the item route serves, escapes, Unicode, text ids and `createdWith` included.
    @Test(arguments: Backend.allCases) func theFeedsRecordsAreTheRecordsAsServed(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { _, url in
            let base = url + "/"
            let title = #"quote \" back\\slash \u0001 tab\t é e\u0301 😀"#
            let created = try await send(.POST, base + "posts", body: #"{"title": "\#(title)", "n": 1e2, "deep": {"a": [1, {"b": null}]}}"#,
                                         headers: [("Idempotency-Key", "create-3")])
            #expect(created.status == 201, "\(created.json ?? nil)")
            #expect(try await send(.POST, base + "tags", body: #"{"id": "ü-1", "name": "ünï"}"#).status == 201)
            #expect(try await send(.DELETE, base + "tags/x").status == 200)
            let all = try await changes(base, "_changes")
            #expect(all.changes.count == 5)
            for change in all.changes {
                let id = try #require(change["id"])
                let collection = try #require(change["collection"]?.stringValue)
                guard change["deleted"]?.boolValue == false else {
                    #expect(change["record"] == nil && id == "x")
                    continue
                }
                let segment = id.intValue.map(String.init) ?? id.stringValue?.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let served = try await send(.GET, base + collection + "/" + segment)
                #expect(change["record"] == served.json, "\(collection) \(id)")
                #expect(change["record"]?["id"] == id)
            }
            let change = try #require(all.changes.first { $0["id"] == 3 })
            #expect(change["createdWith"] == "create-3")
            #expect(change["record"]?["title"]?.stringValue == (try JSONValue(parsing: "\"\(title)\"")).stringValue)
        }
    }

    @Test(arguments: Backend.allCases) func droppedTombstonesMakeOldCursorsGone(backend: Backend) async throws {
        let options = ServerOptions(feedLimits: FeedLimits(tombstoneCapacity: 2))
        try await withServer(["posts": [["id": 1], ["id": 2], ["id": 3], ["id": 4]]], options: options, backend: backend) { _, url in
            let base = url + "/"
            for id in 1...3 { _ = try await send(.DELETE, base + "posts/\(id)") }   // 5, 6, 7: the first is dropped
            let gone = try await changes(base, "_changes?since=4")
            #expect(gone.status == 410)
            let reply = try await send(.GET, base + "_changes/stream?since=0")
            #expect(reply.status == 410 && reply.json?["horizon"]?.stringValue == "5")
            let fresh = try await changes(base, "_changes?since=5")
            #expect(fresh.status == 200 && fresh.changes.compactMap { $0["seq"]?.intValue } == [6, 7])
        }
    }

    @Test func theBookkeepingIsSavedWithTheDataAndNeverServed() async throws {
        try await withDatabaseFile(#"{"posts": [{"id": 1, "title": "a"}], "_idempotency": {}}"#) { file in
            let server = try await TestServer.start(file: file)
            let base = server.baseURL.absoluteString + "/"
            _ = try await send(.POST, base + "posts", body: #"{"title": "b"}"#, headers: [("Idempotency-Key", "k1")])
            _ = try await send(.DELETE, base + "posts/1")
            #expect(try await send(.GET, base + "_modelsync").status == 404)
            #expect(try await send(.GET, base + "_idempotency").status == 404)
            #expect(try await send(.POST, base + "_modelsync", body: "{}").status == 404)
            let db = try await send(.GET, base + "db").json
            #expect(db?["_modelsync"] == nil && db?["_idempotency"] == nil)
            await server.shutdown()

            let restarted = try await TestServer.start(file: file)
            let again = restarted.baseURL.absoluteString + "/"
            let feed = try await changes(again, "_changes")
            #expect(feed.changes.compactMap { $0["seq"]?.intValue } == [2, 3] && feed.next == "3")
            // The idempotency key survived the restart: the repeat creates nothing.
            let repeated = try await send(.POST, again + "posts", body: #"{"title": "b"}"#, headers: [("Idempotency-Key", "k1")])
            #expect(repeated.header("Idempotent-Replayed") == "true" && repeated.header("ETag") == #""2""#)
            #expect(try await restarted.data["posts"]?.arrayValue?.count == 1)
            await restarted.shutdown()
        }
    }

    @Test(.timeLimit(.minutes(5)), arguments: Backend.allCases)
    func theStreamSendsTheBacklogThenLiveChangesAndEndsAtShutdown(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { server, url in
            let base = url + "/"
            let remote = RemoteStore(baseURL: server.baseURL)
            var events = remote.events(at: try #require(URL(string: base + "_changes/stream?since=1&collections=posts"))).makeAsyncIterator()
            // The backlog: post 2 (tags are filtered out).
            let first = try #require(try await events.next())
            #expect(first.id == "2" && first.event == "change")
            // Live: a write after the stream opened.
            _ = try await send(.PATCH, base + "posts/1", body: #"{"title": "live"}"#)
            _ = try await send(.POST, base + "tags", body: #"{"id": "y"}"#)
            _ = try await send(.DELETE, base + "posts/2")
            let live = try #require(try await events.next())
            #expect(live.id == "4")
            #expect(try JSONValue(parsing: Array(live.data.utf8))["record"]?["title"]?.stringValue == "live")
            let deletion = try #require(try await events.next())
            #expect(deletion.id == "6" && deletion.data.contains(#""deleted":true"#))
            // Shutting down with the stream open completes, and ends the stream.
            await server.shutdown()
            #expect(try await events.next() == nil)
        }
    }

    /// A reset takes the sequence back: a stream open across it ends, a cursor past the data is
    /// gone (410, with the current sequence), and a stream opened afterwards gets every change
    /// written since, live (over PostgreSQL, through the relay the reset rewound).
    @Test(.timeLimit(.minutes(5)), arguments: Backend.allCases)
    func aResetEndsStreamsAndMakesCursorsPastTheDataGone(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { server, url in
            let base = url + "/"
            let remote = RemoteStore(baseURL: server.baseURL)
            for title in ["x", "y", "z"] { _ = try await send(.PATCH, base + "posts/1", body: #"{"title": "\#(title)"}"#) }   // 4, 5, 6
            var open = remote.events(at: try #require(URL(string: base + "_changes/stream?since=5"))).makeAsyncIterator()
            #expect(try await open.next()?.id == "6")
            try await server.reset()
            #expect(try await open.next() == nil)

            let gone = try await send(.GET, base + "_changes?since=6")
            #expect(gone.status == 410 && gone.json?["horizon"]?.stringValue == "3")
            #expect(try await send(.GET, base + "_changes/stream", headers: [("Last-Event-ID", "6")]).status == 410)
            #expect(try await changes(base, "_changes?since=3").status == 200)

            var fresh = remote.events(at: try #require(URL(string: base + "_changes/stream?since=3"))).makeAsyncIterator()
            _ = try await send(.PATCH, base + "posts/2", body: #"{"title": "after"}"#)
            #expect(try await fresh.next()?.id == "4")
            // Subscribed by now: this one can only come live.
            _ = try await send(.DELETE, base + "posts/1")
            #expect(try await fresh.next()?.id == "5")
        }
    }
}

@Suite struct IdempotencyKeyPruningTests {
    func remember(_ key: String, in records: inout JSONObject, now: Date) {
        let record = IdempotencyKeys.record(collection: "posts", request: [:], result: ItemWrite.Result(status: 201, body: [:]), at: now)
        IdempotencyKeys.remember(key, record, in: &records, now: now)
    }

    @Test func keysArePrunedInBatchesByAgeAndCapacity() {
        var records = JSONObject()
        let start = Date(timeIntervalSince1970: 1_000_000)
        for index in 0..<IdempotencyKeys.capacity {
            remember("k\(index)", in: &records, now: start)
        }
        #expect(records.count == IdempotencyKeys.capacity)
        // At capacity, the next key makes room for a tenth more, dropping the oldest.
        remember("newest", in: &records, now: start)
        #expect(records.count == IdempotencyKeys.capacity - IdempotencyKeys.capacity / 10)
        #expect(records["newest"] != nil && records["k0"] == nil && records["k\(IdempotencyKeys.capacity - 1)"] != nil)
        // Once the oldest expired, every expired key goes.
        let later = start.addingTimeInterval(IdempotencyKeys.retention + 1)
        remember("fresh", in: &records, now: later)
        #expect(records.count == 1 && records["fresh"] != nil)
    }
}

@Suite struct BatchTests {
    @Test(arguments: Backend.allCases) func aBatchAppliesEachOperationAndAnswersEachOnItsOwn(backend: Backend) async throws {
        try await withServer(["posts": [["id": 1, "title": "a"], ["id": 2, "title": "b"]]], backend: backend) { server, url in
            let body = """
                {"operations": [
                  {"method": "POST", "path": "/posts", "headers": {"Idempotency-Key": "k"}, "body": {"title": "c"}},
                  {"method": "PATCH", "path": "/posts/1", "headers": {"if-match": "\\"1\\""}, "body": {"title": "a2"}},
                  {"method": "PATCH", "path": "/posts/2", "headers": {"If-Match": "\\"99\\""}, "body": {"title": "lost"}},
                  {"method": "DELETE", "path": "/posts/7"},
                  {"method": "GET", "path": "/posts"},
                  {"method": "DELETE", "path": "/posts/2"}
                ]}
                """
            let reply = try await send(.POST, url + "/_batch", body: body)
            let results = try #require(reply.json?["results"]?.arrayValue)
            #expect(results.compactMap { $0["status"]?.intValue } == [201, 200, 412, 404, 400, 200])
            #expect(results[0]["etag"]?.stringValue == #""3""# && results[0]["body"]?["id"]?.intValue == 3)
            #expect(results[2]["body"]?["current"]?["title"]?.stringValue == "b" && results[2]["etag"]?.stringValue == #""2""#)
            let titles = try await server.data["posts"]?.arrayValue?.compactMap { $0["title"]?.stringValue }
            #expect(titles == ["a2", "c"])
            // The create's key is remembered like any other.
            let again = try await send(.POST, url + "/_batch", body: #"{"operations": [{"method": "POST", "path": "/posts", "headers": {"Idempotency-Key": "k"}, "body": {"title": "c"}}]}"#)
            #expect(again.json?["results"]?[0]?["replayed"]?.boolValue == true)
            #expect(try await server.data["posts"]?.arrayValue?.count == 2)
        }
    }

    @Test(arguments: Backend.allCases) func malformedAndOversizedBatchesAreRefused(backend: Backend) async throws {
        try await withServer(["posts": []], backend: backend) { _, url async throws in
            #expect(try await send(.POST, url + "/_batch", body: "{}").status == 400)
            #expect(try await send(.GET, url + "/_batch").status == 405)
            let many = Array(repeating: #"{"method": "DELETE", "path": "/posts/1"}"#, count: 1_001).joined(separator: ",")
            #expect(try await send(.POST, url + "/_batch", body: #"{"operations": [\#(many)]}"#).status == 413)
        }
        try await withServer(["posts": []], options: ServerOptions(servesSyncExtensions: false), backend: backend) { _, url async throws in
            #expect(try await send(.POST, url + "/_batch", body: #"{"operations": []}"#).status == 404)
        }
    }
}

@Suite struct FeedAfterMovesTests {
    @Test(arguments: Backend.allCases) func theFeedFindsRecordsAfterTheyMove(backend: Backend) async throws {
        let posts: JSONValue = .array((1...6).map { id in ["id": .number(JSONNumber(id)), "title": .string("t\(id)")] })
        try await withServer(["posts": posts], backend: backend) { _, url in
            let base = url + "/"
            _ = try await send(.GET, base + "posts?_since=0")
            _ = try await send(.DELETE, base + "posts/2")                                   // 7: later records move up
            _ = try await send(.PATCH, base + "posts/5", body: #"{"title": "five"}"#)       // 8
            _ = try await send(.POST, base + "posts", body: #"{"title": "seven"}"#)         // 9
            _ = try await send(.PATCH, base + "posts/6", body: #"{"title": "six"}"#)        // 10
            let feed = try await send(.GET, base + "posts?_since=6").json?["changes"]?.arrayValue ?? []
            #expect(feed.compactMap { $0["seq"]?.intValue } == [7, 8, 9, 10])
            #expect(feed.map { $0["record"]?["title"]?.stringValue } == [nil, "five", "seven", "six"])
            #expect(feed.compactMap { $0["id"]?.intValue } == [2, 5, 7, 6])
        }
    }
}
