import Foundation
import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

@Suite("RemoteStore: interceptors, retries, timeouts, caching")
struct BehaviourTests {
    @Test func interceptorAddsAHeader() async throws {
        try await withStore(configure: { options in
            options.interceptors = [HeaderInterceptor("X-Client") { "modelsync-tests" }]
        }) { store, server async throws in
            _ = try await store.fetch(User.self, id: 1)
            #expect(server.recordedRequests.last?.header("X-Client") == "modelsync-tests")
        }
    }

    @Test func interceptorRewritesTheURL() async throws {
        try await withStore(configure: { options in
            options.interceptors = [ClosureInterceptor { request in
                request.url = URL(string: request.url.absoluteString.replacingOccurrences(of: "/users/", with: "/posts/")) ?? request.url
            }]
        }) { store, server async throws in
            _ = try await store.fetch(Post.self, id: 7)
            let user = try await store.fetch(User.self, id: 7)
            #expect(server.uris == ["/posts/7", "/posts/7"])
            #expect(user.name == "")
        }
    }

    @Test func tokenRefreshRetriesOnce() async throws {
        let tokens = Locked(["expired", "fresh"])
        try await withStore(configure: { options in
            options.interceptors = [ClosureInterceptor(
                prepare: { request in request.headers["Authorization"] = "Bearer \(tokens.current.first ?? "none")" },
                inspect: { response, _ in
                    guard response.status == 401 else { return .proceed }
                    tokens.withLock { if !$0.isEmpty { $0.removeFirst() } }
                    return .retry
                }
            )]
        }) { store, server async throws in
            server.inject(Fault(.status(401), times: 1))
            let user = try await store.fetch(User.self, id: 2)
            #expect(user.id == 2)
            #expect(server.recordedRequests.map { $0.header("Authorization") } == ["Bearer expired", "Bearer fresh"])
            // A second 401 after the refresh is an error, not a loop.
            server.inject(Fault(.status(401), times: 2))
            #expect(await remoteError { _ = try await store.fetch(User.self, id: 2) }?.status == 401)
        }
    }

    @Test func retriesIdempotentRequests() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(503), times: 1))
            server.inject(Fault(.status(502), times: 1))
            let post = try await store.fetch(Post.self, id: 1)
            #expect(post.id == 1)
            #expect(server.recordedRequests.count == 3)
        }
    }

    /// Without Retry-After the retry would wait an hour (no jitter); with `Retry-After: 0` it goes
    /// again at once. No clock is read: a retry that waited would run into the time limit.
    @Test(.timeLimit(.minutes(5))) func honoursRetryAfter() async throws {
        let slow = { (options: inout RemoteStore.Options) in
            options.retry = RetryPolicy(maxAttempts: 2, baseDelay: .seconds(3_600), maxDelay: .seconds(3_600), jitter: 0)
        }
        try await withStore(configure: slow) { store, server async throws in
            server.inject(Fault(.status(429, retryAfter: 0), times: 1))
            _ = try await store.list(User.self)
            #expect(server.recordedRequests.count == 2)
        }
    }

    @Test func givesUpAfterMaxAttempts() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(504), times: 5))
            let error = await remoteError { _ = try await store.fetch(Post.self, id: 1) }
            #expect(error?.status == 504)
            #expect(server.recordedRequests.count == 3)
        }
    }

    @Test func neverRetriesAPostUnlessMarked() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(503), times: 1))
            var post = Post(userId: 1, title: "once", text: "")
            #expect(await remoteError { try await store.save(&post) }?.status == 503)
            #expect(post.id == nil)
            #expect(server.recordedRequests.count == 1)
            server.inject(Fault(.status(503), times: 1))
            try await store.save(&post, options: RequestOptions(isIdempotent: true))
            #expect(post.id == 101)
            #expect(server.recordedRequests.count == 3)
        }
    }

    @Test func doesNotRetryOtherStatuses() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.status(500), times: 1))
            #expect(await remoteError { _ = try await store.fetch(Post.self, id: 1) }?.status == 500)
            #expect(server.recordedRequests.count == 1)
        }
    }

    @Test func retriesDroppedConnections() async throws {
        try await withStore { store, server async throws in
            server.inject(Fault(.dropConnection, times: 1))
            _ = try await store.fetch(Post.self, id: 1)
            #expect(server.recordedRequests.count == 2)
        }
    }

    @Test func aClosedPortIsATransportError() async throws {
        let url = try await withTestServer(data: [:]) { $0.baseURL }  // shut down: nothing listens there now
        var options = RemoteStore.Options()
        options.retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1))
        let store = RemoteStore(baseURL: url, options: options)
        let error = await remoteError { _ = try await store.fetch(Post.self, id: 1) }
        guard let failure = error?.transportFailure else { Issue.record("expected transport, got \(String(describing: error))"); return }
        #expect(failure.request.method == "GET")
        #expect(failure.request.url.path == "/posts/1")
    }

    @Test func perRequestTimeout() async throws {
        try await withStore(configure: { $0.retry = .none }) { store, server async throws in
            server.inject(Fault(.delay(.milliseconds(400)), times: 1))
            let error = await remoteError {
                _ = try await store.fetch(Post.self, id: 1, options: RequestOptions(timeout: .milliseconds(40)))
            }
            guard error?.code == .timeout, let request = error?.request else { Issue.record("expected timeout, got \(String(describing: error))"); return }
            #expect(request.url.path == "/posts/1")
            #expect(try await store.fetch(Post.self, id: 1).id == 1)
        }
    }

    @Test func timeoutsAreRetried() async throws {
        // Many attempts: only the first is held (far beyond the timeout), but a machine starved
        // by the rest of the suite may answer later ones late too; the test is about the retry,
        // not about how fast an answer comes.
        try await withStore(configure: { $0.retry = RetryPolicy(maxAttempts: 20, baseDelay: .milliseconds(2)) }) { store, server async throws in
            server.inject(Fault(.delay(.seconds(6)), times: 1))
            let post = try await store.fetch(Post.self, id: 1, options: RequestOptions(timeout: .seconds(2)))
            #expect(post.id == 1)
            #expect(server.recordedRequests.count >= 2)
        }
    }

    @Test func etagRevalidationServesTheCachedBody() async throws {
        try await withStore { store, server async throws in
            let first = try await store.fetchResult(Post.self, id: 1)
            let second = try await store.fetchResult(Post.self, id: 1)
            #expect(!first.response.isFromCache)
            #expect(second.response.isFromCache)
            #expect(second.value == first.value)
            let revalidation = try #require(server.recordedRequests.last)
            #expect(revalidation.header("If-None-Match") == first.response.headers["ETag"])
            #expect(revalidation.header("If-Modified-Since") == first.response.headers["Last-Modified"])
            // A change on the server gives a fresh body.
            var post = first.value
            post.title = "changed"
            try await store.save(&post)
            let third = try await store.fetchResult(Post.self, id: 1)
            #expect(!third.response.isFromCache && third.value.title == "changed")
        }
    }

    /// One user's cached answer is never another's: a 304 says the data did not change, not
    /// whose copy of it the client holds.
    @Test func cachedAnswersAreKeptPerCredentials() async throws {
        try await withStore { store, server async throws in
            let url = server.baseURL.appending(path: "posts/1")
            func get(as user: String) async throws -> RemoteResponse {
                try await store.send(RemoteRequest(method: .get, url: url, headers: ["Authorization": "Bearer \(user)"]))
            }
            #expect(try await get(as: "ann").isFromCache == false)
            #expect(try await get(as: "ann").isFromCache == true)
            // Bob's first request carries no validator of Ann's, so it gets a body of its own.
            #expect(try await get(as: "bob").isFromCache == false)
            #expect(server.recordedRequests.last?.header("If-None-Match") == nil)
            #expect(try await get(as: "bob").isFromCache == true)
        }
    }

    @Test func cachingCanBeTurnedOff() async throws {
        try await withStore(configure: { $0.caching = false }) { store, server async throws in
            _ = try await store.fetch(Post.self, id: 1)
            _ = try await store.fetch(Post.self, id: 1)
            #expect(server.recordedRequests.allSatisfy { $0.header("If-None-Match") == nil })
        }
    }

    @Test func defaultAndCallHeaders() async throws {
        try await withStore(configure: { $0.headers["X-App"] = "demo" }) { store, server async throws in
            _ = try await store.fetch(User.self, id: 1, options: RequestOptions(headers: ["X-Call": "1"]))
            let request = try #require(server.recordedRequests.last)
            #expect(request.header("X-App") == "demo")
            #expect(request.header("X-Call") == "1")
            #expect(request.header("Accept") == "application/json")
        }
    }
}
