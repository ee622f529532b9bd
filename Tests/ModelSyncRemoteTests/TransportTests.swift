import Foundation
@testable import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

/// A transport that records what the store hands it and answers from a closure: a test of the
/// transport seam itself.
final class RecordingTransport: HTTPTransport {
    let sent = Locked<[RemoteRequest]>([])
    let answer: @Sendable (RemoteRequest) -> RemoteResponse

    init(answer: @escaping @Sendable (RemoteRequest) -> RemoteResponse) {
        self.answer = answer
    }

    func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        sent.withLock { $0.append(request) }
        return answer(request)
    }
}

@Suite("Transports")
struct TransportTests {
    @Test func theStoreHandsTheTransportACompleteRequest() async throws {
        let transport = RecordingTransport { _ in RemoteResponse(status: 201, body: Array(#"{"id": 9, "userId": 1, "title": "t", "body": "b"}"#.utf8)) }
        let api = RemoteStore(baseURL: try #require(URL(string: "http://api.example/v1")), transport: transport)
        var post = Post(userId: 1, title: "t", text: "b")
        try await api.save(&post, options: RequestOptions(timeout: .seconds(3)))
        let request = try #require(transport.sent.current.first)
        #expect(request.method == .post)
        #expect(request.url.absoluteString == "http://api.example/v1/posts")
        #expect(request.timeout == .seconds(3))
        #expect(!request.isIdempotent)
        #expect(request.headers["accept"] == "application/json")
        #expect(request.headers["Content-Type"] == "application/json")
        let body = try JSONValue(parsing: request.body ?? [])
        #expect(body == ["userId": 1, "title": "t", "body": "b"])
        #expect(post.id == 9)
    }

    @Test func asyncHTTPClientTransportReturnsEveryStatus() async throws {
        try await withTestServer { server in
            let transport = AsyncHTTPClientTransport()
            let missing = try await transport.send(RemoteRequest(method: .get, url: server.baseURL.appendingPathComponent("posts/0")))
            #expect(missing.status == 404)
            let found = try await transport.send(RemoteRequest(method: .get, url: server.baseURL.appendingPathComponent("users/1")))
            #expect(found.status == 200 && found.headers["etag"] != nil)
        }
    }

    #if canImport(FoundationNetworking) || canImport(Darwin)
    @Test func urlSessionTransport() async throws {
        try await withTestServer { server in
            let store = RemoteStore(baseURL: server.baseURL, transport: URLSessionTransport())
            let user = try await store.fetch(User.self, id: 1)
            #expect(user.name == "Leanne Graham")
            var post = Post(userId: 1, title: "via URLSession", text: "")
            try await store.save(&post)
            #expect(post.id == 101)
            #expect(await remoteError { _ = try await store.fetch(User.self, id: 99) }?.status == 404)
        }
    }
    #endif
}

@Suite("Retry policy")
struct RetryPolicyTests {
    @Test func retryAfterIsHonouredAndCapped() {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100), maxDelay: .seconds(5), jitter: 0)
        #expect(policy.delay(beforeRetry: 1, retryAfter: "2") == .seconds(2))
        #expect(policy.delay(beforeRetry: 1, retryAfter: "1e300") == .seconds(5))
        #expect(policy.delay(beforeRetry: 1, retryAfter: "Fri, 31 Dec 9999 23:59:59 GMT") == .seconds(5))
        // Not a number or a date (or infinite): exponential backoff instead.
        #expect(policy.delay(beforeRetry: 1, retryAfter: "inf") == .milliseconds(100))
        #expect(policy.delay(beforeRetry: 3, retryAfter: "soon") == .milliseconds(400))
        #expect(policy.delay(beforeRetry: 40, retryAfter: nil) == .seconds(5))
    }
}
