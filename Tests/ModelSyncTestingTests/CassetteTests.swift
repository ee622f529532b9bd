import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

@Suite("Testing: HTTP record and replay")
struct CassetteTests {
    /// Records a fetch and a save against a real server, with secrets in the headers.
    func record(to file: URL) async throws -> URL {
        try await withTestServer(data: postsData) { server in
            let transport = try CassetteTransport(cassette: file, redactedHeaders: CassetteTransport.defaultRedactedHeaders.union(["X-Tenant"]))
            #expect(transport.isRecording)
            var options = RemoteStore.Options()
            options.headers = ["Authorization": "Bearer s3cret", "X-Tenant": "acme", "X-Trace": "visible"]
            let api = RemoteStore(baseURL: server.baseURL, transport: transport, options: options)
            #expect(try await api.fetch(Post.self, id: 1).title == "Hello")
            var post = Post(userId: 2, title: "Recorded")
            try await api.save(&post)
            #expect(post.id == 2)
            return server.baseURL
        }
    }

    @Test func recordsOnceThenReplaysWithoutTheServer() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("Cassettes/posts.json")
        let baseURL = try await record(to: file)

        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(!text.contains("s3cret") && !text.contains("acme"))
        #expect(text.contains("Authorization: <redacted>") && text.contains("X-Tenant: <redacted>"))
        #expect(text.contains("X-Trace: visible"))
        #expect(text.contains("\n    {\n"))  // pretty-printed
        #expect(text.contains(#""title": "Recorded""#))  // JSON bodies stay JSON

        // The server is gone: the answers come from the cassette.
        let transport = try CassetteTransport(cassette: file)
        #expect(!transport.isRecording)
        let api = RemoteStore(baseURL: baseURL, transport: transport)
        #expect(try await api.fetch(Post.self, id: 1).title == "Hello")
        var post = Post(userId: 2, title: "Recorded")
        try await api.save(&post)
        #expect(post.id == 2)
        #expect(try String(contentsOf: file, encoding: .utf8) == text)  // replaying writes nothing
        // The fetch may repeat (the last answer again); the POST was recorded once and may not.
        #expect(try await api.fetch(Post.self, id: 1).title == "Hello")
        var again = Post(userId: 2, title: "Recorded")
        await #expect(throws: CassetteError.self) { try await api.save(&again) }
        #expect(again.id == nil)
    }

    @Test func anUnmatchedRequestListsTheClosestRecordedOnes() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("posts.json")
        let baseURL = try await record(to: file)
        let api = RemoteStore(baseURL: baseURL, transport: try CassetteTransport(cassette: file, mode: .replayOnly))
        var other = Post(userId: 2, title: "Different body")
        do {
            try await api.save(&other)
            Issue.record("expected an unmatched request")
        } catch let error as CassetteError {
            guard case .unmatchedRequest(let request, let closest, let cassette) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(request.hasPrefix("POST \(baseURL.absoluteString)/posts "))
            #expect(request.contains("Different body"))
            #expect(closest.first?.hasPrefix("POST \(baseURL.absoluteString)/posts ") == true)
            #expect(closest.first?.contains("Recorded") == true)
            #expect(closest.count == 2)
            #expect(cassette == file.path)
            #expect(error.description.contains("closest:"))
        }
        #expect(other.id == nil)
    }

    @Test func hostsCanBeIgnoredSoAnyBaseURLReplays() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("posts.json")
        _ = try await record(to: file)
        let elsewhere = try #require(URL(string: "http://replay.invalid:9"))
        let strict = RemoteStore(baseURL: elsewhere, transport: try CassetteTransport(cassette: file, mode: .replayOnly))
        await #expect(throws: CassetteError.self) { try await strict.fetch(Post.self, id: 1) }
        let loose = RemoteStore(baseURL: elsewhere, transport: try CassetteTransport(cassette: file, mode: .replayOnly, matchesHost: false))
        #expect(try await loose.fetch(Post.self, id: 1).title == "Hello")
    }

    @Test func replayOnlyNeedsACassetteAndABadOneIsATypedError() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.url.appendingPathComponent("missing.json")
        #expect(throws: CassetteError.missingCassette(path: missing.path)) {
            try CassetteTransport(cassette: missing, mode: .replayOnly)
        }
        let bad = directory.url.appendingPathComponent("bad.json")
        try Data(#"{"interactions": [{"request": {"url": "/x"}}]}"#.utf8).write(to: bad)
        #expect {
            try CassetteTransport(cassette: bad)
        } throws: { error in
            guard case .unreadableCassette(let path, let reason) = error as? CassetteError else { return false }
            return path == bad.path && reason.contains("interaction 0")
        }
    }

    @Test func passThroughNeitherRecordsNorReplays() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("unused.json")
        try await withTestServer(data: postsData) { server in
            let api = RemoteStore(baseURL: server.baseURL, transport: try CassetteTransport(cassette: file, mode: .passThrough))
            #expect(try await api.fetch(Post.self, id: 1).title == "Hello")
            #expect(server.recordedRequests.count == 1)
        }
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test func repeatedRequestsReplayInOrderThenRepeatTheLast() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("sequence.json")
        let baseURL = try await withTestServer(data: postsData) { server async throws -> URL in
            let api = RemoteStore(baseURL: server.baseURL, transport: try CassetteTransport(cassette: file))
            var post = try await api.fetch(Post.self, id: 1)
            post.title = "Changed"
            try await api.save(&post)
            _ = try await api.fetch(Post.self, id: 1)
            return server.baseURL
        }
        let api = RemoteStore(baseURL: baseURL, transport: try CassetteTransport(cassette: file, mode: .replayOnly))
        #expect(try await api.fetch(Post.self, id: 1).title == "Hello")
        #expect(try await api.fetch(Post.self, id: 1).title == "Changed")
        #expect(try await api.fetch(Post.self, id: 1).title == "Changed")
    }
}

/// Answers from a closure: a test of the cassette's own seam (bodies and headers it stores).
struct ScriptedTransport: HTTPTransport {
    let answer: @Sendable (RemoteRequest) -> RemoteResponse
    func send(_ request: RemoteRequest) async throws -> RemoteResponse { answer(request) }
}

extension CassetteTests {
    @Test func textAndBinaryBodiesAndRepeatedHeadersRoundTrip() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("bodies.json")
        let binary: [UInt8] = [0, 0xFF, 0xC3, 0x28, 10]
        let upstream = ScriptedTransport { request in
            request.url.path == "/text"
                ? RemoteResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("plain ünïcode\n".utf8))
                : RemoteResponse(
                    status: 201, headers: HeaderFields([("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-Id", "7")]), body: binary)
        }
        let recorder = try CassetteTransport(cassette: file, upstream: upstream)
        let base = try #require(URL(string: "http://seam.invalid"))
        let requests = [
            RemoteRequest(method: .get, url: base.appendingPathComponent("text")),
            RemoteRequest(method: .post, url: base.appendingPathComponent("blob"), body: Array("not json".utf8)),
        ]
        var recorded: [RemoteResponse] = []
        for request in requests { recorded.append(try await recorder.send(request)) }

        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains(#""bodyText": "plain ünïcode\n""#))
        #expect(text.contains(#""bodyBase64": "AP/DKAo=""#))
        #expect(text.contains(#""Set-Cookie: <redacted>""#) && !text.contains("a=1"))

        let player = try CassetteTransport(cassette: file, mode: .replayOnly)
        var replayed: [RemoteResponse] = []
        for (request, original) in zip(requests, recorded) {
            replayed.append(try await player.send(request))
            #expect(replayed.last?.status == original.status)
            #expect(replayed.last?.body == original.body)
        }
        let blob = replayed[1]
        #expect(blob.headers.fields.map(\.name) == ["Set-Cookie", "Set-Cookie", "X-Id"])
        #expect(blob.headers["X-Id"] == "7")
    }
}
