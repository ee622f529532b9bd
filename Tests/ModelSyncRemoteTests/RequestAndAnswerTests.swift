import Foundation
@testable import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

/// A page addressed by a text id, which may hold `/`, `.` or `?`.
@Model
struct Page: Equatable {
    var id: String
    var title: String
}

extension Page: RemoteResource {
    static let remote = RemoteConfiguration(path: "pages")
}

/// A model with an optional field, for the nils of request bodies.
@Model
struct Note: Equatable {
    var id: Int?
    var title: String
    var subtitle: String?
}

extension Note: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}

/// A user listed inside a `data` envelope.
@Model
struct EnvelopedUser: Equatable {
    var id: Int
    var name: String
}

extension EnvelopedUser: RemoteResource {
    static let remote = RemoteConfiguration(path: "users", listKey: "data")
}

/// Ids that must stay one path segment, and the path the server must receive for each.
private let hostileIDs: [(id: String, path: String)] = [
    ("1/", "/posts/1%2F"),
    ("1/../2", "/posts/1%2F..%2F2"),
    ("../", "/posts/..%2F"),
    ("..", "/posts/%2E%2E"),
    (".", "/posts/%2E"),
    ("2024/intro", "/posts/2024%2Fintro"),
    ("a?b#c%d e", "/posts/a%3Fb%23c%25d%20e"),
    ("caf\u{E9}", "/posts/caf%C3%A9"),
]

@Suite("RemoteStore: ids are one path segment")
struct PathSegmentTests {
    @Test(arguments: hostileIDs)
    func anIdIsOnePathSegment(id: String, path: String) async throws {
        try await withStore { store, server async throws in
            let error = await remoteError { try await store.delete(Post.self, id: id) }
            #expect(error?.status == 404)
            #expect(server.uris == [path])
            // Nothing else was deleted: `1/` once reached post 1.
            #expect(try await store.list(Post.self).count == 100)
        }
    }

    #if canImport(FoundationNetworking) || canImport(Darwin)
    @Test func urlSessionSendsTheSegmentsAsBuilt() async throws {
        try await withTestServer { server async throws in
            let store = RemoteStore(baseURL: server.baseURL, transport: URLSessionTransport())
            for (id, _) in hostileIDs { _ = try? await store.delete(Post.self, id: id) }
            #expect(server.uris == hostileIDs.map(\.path))
            #expect(try await store.list(Post.self).count == 100)
        }
    }
    #endif

    @Test func idsWithSlashesAndDotsReachTheirOwnItems() async throws {
        let data: JSONValue = ["pages": [["id": "2024/intro", "title": "slash"], ["id": "..", "title": "dots"], ["id": ".", "title": "dot"]]]
        try await withStore(data: data) { store, _ async throws in
            #expect(try await store.fetch(Page.self, id: "2024/intro").title == "slash")
            #expect(try await store.fetch(Page.self, id: "..").title == "dots")
            #expect(try await store.fetch(Page.self, id: ".").title == "dot")
            var page = Page(id: "2024/intro", title: "edited")
            try await store.save(&page)
            #expect(try await store.list(Page.self).map(\.title) == ["edited", "dots", "dot"])
        }
    }

    @Test func parentIdsAreOnePathSegmentToo() async throws {
        try await withStore(data: ["pages": [], "comments": []]) { store, server async throws in
            _ = try? await store.list(Comment.self, of: Page(id: "../posts/1", title: ""))
            #expect(server.uris == ["/pages/..%2Fposts%2F1/comments"])
        }
    }

    @Test func anEmptyIdIsMissing() async throws {
        try await withStore { store, server async throws in
            let error = await remoteError { try await store.delete(Post.self, id: "") }
            guard error?.code == .missingID else { Issue.record("expected missingID, got \(String(describing: error))"); return }
            #expect(server.uris.isEmpty)
        }
    }
}

@Suite("RemoteStore: query parameters")
struct QueryParameterTests {
    @Test func aParameterReplacesTheSameKeyInTheBaseURL() throws {
        let base = try #require(URL(string: "http://api.example/v1?userId=1&key=abc"))
        let url = try RemoteStore.buildURL(base, ["posts"], ["userId": 3, "tag": "a&b=c+d#e"])
        #expect(url.absoluteString == "http://api.example/v1/posts?key=abc&tag=a%26b%3Dc%2Bd%23e&userId=3")
        // `null` removes the base URL's key.
        let removed = try RemoteStore.buildURL(base, [], ["key": nil])
        #expect(removed.absoluteString == "http://api.example/v1?userId=1")
        // Names are compared by bytes: e + U+0301 is another key than é.
        let accented = try #require(URL(string: "http://api.example/?caf%C3%A9=1"))
        let both = try RemoteStore.buildURL(accented, [], ["cafe\u{301}": 2])
        #expect(both.absoluteString == "http://api.example?caf%C3%A9=1&cafe%CC%81=2")
    }

    @Test func theServerSeesOneValuePerKey() async throws {
        try await withTestServer { server async throws in
            let base = try #require(URL(string: server.baseURL.absoluteString + "?userId=1"))
            let store = RemoteStore(baseURL: base)
            let posts = try await store.list(Post.self, parameters: ["userId": 2])
            #expect(!posts.isEmpty && posts.allSatisfy { $0.userId == 2 })
            #expect(server.uris == ["/posts?userId=2"])
        }
    }

    @Test func saveSendsTheModelsParameterProperties() async throws {
        try await withStore { store, server async throws in
            var comment = Comment(post: 3, name: "n", body: "b")
            try await store.save(&comment)
            comment.body = "edited"
            try await store.save(&comment)
            #expect(server.uris == ["/comments?postId=3", "/comments/\(try #require(comment.id))?postId=3"])
        }
    }
}

@Suite("RemoteStore: request bodies")
struct RequestBodyTests {
    private func body(of request: RemoteRequest?) throws -> JSONValue {
        try JSONValue(parsing: try #require(request?.body))
    }

    @Test func createsLeaveNilsOutPutsSendNullPatchesSendClearedFields() async throws {
        let transport = RecordingTransport { request in
            RemoteResponse(status: request.method == .post ? 201 : 200, body: Array(#"{"id": 4}"#.utf8))
        }
        let store = RemoteStore(baseURL: try #require(URL(string: "http://api.example")), transport: transport)
        var note = Note(title: "t")
        try await store.save(&note)
        let original = Note(id: 4, title: "t", subtitle: "s")
        note = original
        try await store.save(&note)
        note.subtitle = nil
        try await store.save(&note, patchingChangesFrom: original)
        let sent = transport.sent.current
        #expect(try body(of: sent[0]) == ["title": "t"])
        #expect(try body(of: sent[1]) == ["id": 4, "title": "t", "subtitle": "s"])
        #expect(try body(of: sent[2]) == ["subtitle": nil])
    }

    @Test func aPatchSendsAClearedFieldEvenWhenTheEncoderOmitsNils() async throws {
        let transport = RecordingTransport { _ in RemoteResponse(status: 204) }
        var options = RemoteStore.Options()
        options.encoder.options.nilEncoding = .omit
        let store = RemoteStore(baseURL: try #require(URL(string: "http://api.example")), transport: transport, options: options)
        let original = Note(id: 4, title: "t", subtitle: "s")
        var note = original
        note.subtitle = nil
        try await store.save(&note, patchingChangesFrom: original)
        #expect(try body(of: transport.sent.current.first) == ["subtitle": nil])
        #expect(note == Note(id: 4, title: "t", subtitle: nil))
    }

    @Test func theServerStoresNoNullsForACreate() async throws {
        try await withStore(data: ["notes": []]) { store, server async throws in
            var note = Note(title: "t")
            try await store.save(&note)
            #expect(note.id != nil)
            let stored = try await store.send(RemoteRequest(method: .get, url: server.baseURL.appendingPathComponent("notes")))
            let item = try #require(try JSONValue(parsing: stored.body)[0]?.objectValue)
            #expect(item["subtitle"] == nil)
            #expect(item["title"] == "t")
        }
    }
}

@Suite("RemoteStore: answers to writes")
struct WriteAnswerTests {
    @Test func aPartialAnswerToACreateIsMergedIntoTheSentValue() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(201, body: ["id": 7])))
            var post = Post(userId: 3, title: "kept", text: "also kept")
            try await store.save(&post)
            #expect(post == Post(id: 7, userId: 3, title: "kept", text: "also kept"))
        }
    }

    @Test func theServersFieldsWinOverTheSentOnes() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(200, body: ["title": "Normalised"])))
            var post = Post(id: 1, userId: 3, title: "  normalised ", text: "kept")
            try await store.save(&post)
            #expect(post == Post(id: 1, userId: 3, title: "Normalised", text: "kept"))
        }
    }

    @Test func anEmptyAnswerTakesTheIdFromLocation() async throws {
        try await RawHTTPPeer.with({ _ in [.response("201 Created", headers: ["Location: /posts/42"])] }) { peer in
            let store = RemoteStore(baseURL: peer.baseURL, options: { var o = RemoteStore.Options(); o.retry = .none; return o }())
            var post = Post(userId: 3, title: "t", text: "b")
            try await store.save(&post)
            #expect(post == Post(id: 42, userId: 3, title: "t", text: "b"))
            // A text id from an absolute, percent-encoded Location.
            #expect(RemoteStore.lastPathSegment("http://h/pages/2024%2Fintro?x=1") == "2024/intro")
        }
    }

    @Test func anEmptyAnswerWithoutLocationLeavesTheModelAsSent() async throws {
        try await RawHTTPPeer.with({ _ in [.response("201 Created")] }) { peer in
            let store = RemoteStore(baseURL: peer.baseURL)
            var post = Post(userId: 3, title: "t", text: "b")
            let response = try await store.save(&post)
            #expect(response.status == 201)
            #expect(post == Post(userId: 3, title: "t", text: "b"))
        }
    }
}

@Suite("RemoteStore: content types and redirects")
struct ContentTypeAndRedirectTests {
    private static let user = #"{"id": 1, "name": "Leanne Graham"}"#

    @Test(arguments: ["application/json", "application/json; charset=utf-8", "application/vnd.api+json", nil])
    func jsonLabelsAreDecoded(contentType: String?) async throws {
        let headers = contentType.map { ["Content-Type: \($0)"] } ?? []
        try await RawHTTPPeer.with({ _ in [.response("200 OK", headers: headers, body: Self.user)] }) { peer in
            let user = try await RemoteStore(baseURL: peer.baseURL).fetch(User.self, id: 1)
            #expect(user == User(id: 1, name: "Leanne Graham"))
        }
    }

    @Test func jsonLabelledAsHTMLIsATypedError() async throws {
        try await RawHTTPPeer.with({ _ in [.response("200 OK", headers: ["Content-Type: text/html"], body: Self.user)] }) { peer in
            let error = await remoteError { _ = try await RemoteStore(baseURL: peer.baseURL).fetch(User.self, id: 1) }
            guard let mismatch = error?.contentTypeMismatch else {
                Issue.record("expected unexpectedContentType, got \(String(describing: error))")
                return
            }
            #expect(mismatch.contentType == "text/html")
        }
    }

    @Test func aRedirectLoopIsATypedErrorAndNotRetried() async throws {
        try await RawHTTPPeer.with({ _ in [.response("302 Found", headers: ["Location: /users/1"])] }) { peer in
            var options = RemoteStore.Options()
            options.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1))
            let error = await remoteError { _ = try await RemoteStore(baseURL: peer.baseURL, options: options).fetch(User.self, id: 1) }
            guard error?.code == .redirectLoop, let request = error?.request else { Issue.record("expected redirectLoop, got \(String(describing: error))"); return }
            #expect(request.url.path == "/users/1")
            let oneAttempt = peer.requests.current.count
            // A second call makes as many requests: the first was not retried.
            _ = await remoteError { _ = try await RemoteStore(baseURL: peer.baseURL, options: options).fetch(User.self, id: 1) }
            #expect(peer.requests.current.count == 2 * oneAttempt)
            #expect(oneAttempt <= 6)
        }
    }
}

@Suite("Transports: the timeout covers the body", .timeLimit(.minutes(5)))
struct BodyTimeoutTests {
    /// The head at once, then one byte of a long body every 50 ms: about 10 s in all, far
    /// beyond the timeout, yet never idle long enough for an idle timeout to fire.
    private static let trickle: @Sendable (String) -> [RawStep] = { _ in
        let body = Array(repeating: UInt8(ascii: " "), count: 200)
        var steps: [RawStep] = [.text("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")]
        for byte in body { steps += [.pause(.milliseconds(50)), .send([byte])] }
        return steps
    }

    private func expectTimeout(_ transport: any HTTPTransport, _ peer: RawHTTPPeer) async throws {
        let request = RemoteRequest(method: .get, url: peer.baseURL.appendingPathComponent("users/1"), timeout: .seconds(1))
        let error = await remoteError { _ = try await transport.send(request) }
        guard error?.code == .timeout, let summary = error?.request else { Issue.record("expected timeout, got \(String(describing: error))"); return }
        #expect(summary.url.path == "/users/1")
    }

    @Test func asyncHTTPClient() async throws {
        try await RawHTTPPeer.with(Self.trickle) { try await expectTimeout(AsyncHTTPClientTransport(), $0) }
    }

    /// The head and part of the body at once, then nothing until the peer stops: only a bound
    /// on the whole exchange ends the wait.
    private static func stall(_ headSent: @escaping @Sendable () -> Void = {}) -> @Sendable (String) -> [RawStep] {
        { _ in
            [.text("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n[1,2,"), .run(headSent), .pause(.seconds(3600))]
        }
    }

    @Test func aStalledBodyTimesOut() async throws {
        try await RawHTTPPeer.with(Self.stall()) { try await expectTimeout(AsyncHTTPClientTransport(), $0) }
    }

    @Test func cancellingTheCallerEndsAStalledBody() async throws {
        let (headSent, signal) = AsyncStream.makeStream(of: Void.self)
        try await RawHTTPPeer.with(Self.stall { signal.yield() }) { peer in
            // A timeout far beyond the test: only the cancellation ends the exchange, as a cancellation.
            let request = RemoteRequest(method: .get, url: peer.baseURL.appendingPathComponent("users/1"), timeout: .seconds(60))
            let exchange = Task { try await AsyncHTTPClientTransport().send(request) }
            for await _ in headSent { break }
            exchange.cancel()
            let result = await exchange.result
            guard case .failure(let error) = result, error is CancellationError else {
                Issue.record("expected a cancellation, got \(result)")
                return
            }
        }
    }

    #if canImport(FoundationNetworking) || canImport(Darwin)
    @Test func urlSession() async throws {
        try await RawHTTPPeer.with(Self.trickle) { try await expectTimeout(URLSessionTransport(), $0) }
    }

    @Test func urlSessionNeverArmsAnIdleTimeoutOfZero() {
        // FoundationNetworking truncates its interval to whole seconds: 0.5 s once timed out at
        // once. The whole-exchange race keeps the caller's exact bound.
        #if canImport(FoundationNetworking)
        #expect(URLSessionTransport.idleInterval(.milliseconds(500)) == 1)
        #endif
        #expect(URLSessionTransport.idleInterval(.seconds(3)) == 3)
    }
    #endif

    @Test func throughTheStore() async throws {
        try await RawHTTPPeer.with(Self.trickle) { peer in
            var options = RemoteStore.Options()
            options.retry = .none
            let error = await remoteError {
                _ = try await RemoteStore(baseURL: peer.baseURL, options: options).fetch(User.self, id: 1, options: RequestOptions(timeout: .milliseconds(500)))
            }
            guard error?.code == .timeout else { Issue.record("expected timeout, got \(String(describing: error))"); return }
        }
    }

    @Test func hugeTimeoutsDoNotOverflow() async throws {
        try await withTestServer { server async throws in
            let request = RemoteRequest(method: .get, url: server.baseURL.appendingPathComponent("users/1"), timeout: .seconds(Int64.max))
            #expect(try await AsyncHTTPClientTransport().send(request).status == 200)
        }
        // Every conversion to NIO's time amount bounds first: the largest and the negative
        // durations come out at the bound and at zero instead of overflowing.
        #expect(timeAmount(.seconds(Int64.max)) == .seconds(Int64(Int32.max)))
        #expect(timeAmount(.seconds(-5)) == .zero)
    }
}

@Suite("RemoteStore: servers that ignore paging")
struct IgnoredPagingTests {
    /// At most `limit` pages, so that a sequence that never ends fails instead of hanging.
    private func collect<M>(_ pages: RemotePages<M>, limit: Int = 5) async throws -> [[M]] {
        var result: [[M]] = []
        for try await page in pages {
            result.append(page)
            if result.count == limit { break }
        }
        return result
    }

    @Test func aPageLongerThanAskedIsTheLast() async throws {
        try await withStore { store, _ async throws in
            // The server knows `_start`/`_limit` and ignores these: it sends all 100 posts every time.
            let pages = store.pages(Post.self, pagination: .offset(limit: 10, offsetParameter: "_offset", limitParameter: "_count"))
            let fetched = try await collect(pages)
            #expect(fetched.map(\.count) == [100])
            #expect(pages.end == .pageLongerThanRequested(requested: 10, received: 100))
        }
    }

    @Test func aRepeatedPageEndsTheSequence() async throws {
        // Two users for every page asked, with no total: page 2 repeats page 1.
        let users = #"[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]"#
        try await RawHTTPPeer.with({ _ in [.response("200 OK", headers: ["Content-Type: application/json"], body: users)] }) { peer in
            let pages = RemoteStore(baseURL: peer.baseURL).pages(User.self, pagination: .pages(size: 2))
            let fetched = try await collect(pages)
            #expect(fetched.map { $0.map(\.id) } == [[1, 2]])
            #expect(pages.end == .pageRepeated)
            #expect(peer.requests.current.count == 2)
        }
    }

    @Test func aPageOfTheSameItemsInAnotherEnvelopeIsARepeat() async throws {
        // Every answer differs by its timestamp, but holds the same two users.
        let count = Locked(0)
        try await RawHTTPPeer.with({ _ in
            let n = count.withLock { $0 += 1; return $0 }
            let body = #"{"at": \#(n), "data": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}"#
            return [.response("200 OK", headers: ["Content-Type: application/json"], body: body)]
        }) { peer async throws in
            let pages = RemoteStore(baseURL: peer.baseURL).pages(EnvelopedUser.self, pagination: .pages(size: 2))
            #expect(try await collect(pages).map { $0.map(\.id) } == [[1, 2]])
            #expect(pages.end == .pageRepeated)
        }
    }

    @Test func aLinkBackToAFetchedPageEndsTheSequence() async throws {
        try await RawHTTPPeer.with({ head in
            // Each page differs, but every one links back to the first.
            let n = head.contains("p=2") ? 2 : 1
            return [.response("200 OK", headers: ["Content-Type: application/json", "Link: </users?p=2>; rel=\"next\""],
                              body: #"[{"id": \#(n), "name": "u"}]"#)]
        }) { peer in
            let pages = RemoteStore(baseURL: peer.baseURL).pages(User.self, pagination: .linkHeader)
            let fetched = try await collect(pages)
            #expect(fetched.map { $0.map(\.id) } == [[1], [2]])
            #expect(pages.end == .pageRepeated)
        }
    }

    @Test func aCompleteCollectionSaysSo() async throws {
        try await withStore { store, _ async throws in
            let pages = store.pages(Comment.self, parameters: ["post": 1], pagination: .offset(limit: 2))
            #expect(try await collect(pages).count == 3)
            #expect(pages.end == .complete)
        }
    }
}

@Suite("RemoteStore: errors keep their cause")
struct ErrorCauseTests {
    @Test func aTransportFailureKeepsTheUnderlyingError() async throws {
        let url = try await withTestServer(data: [:]) { $0.baseURL }  // shut down: nothing listens there now
        var options = RemoteStore.Options()
        options.retry = .none
        let error = await remoteError { _ = try await RemoteStore(baseURL: url, options: options).fetch(Post.self, id: 1) }
        guard let failure = error?.transportFailure else { Issue.record("expected transport, got \(String(describing: error))"); return }
        let underlying = try #require(failure.underlyingError)
        #expect(failure.reason == String(describing: underlying))
    }
}
