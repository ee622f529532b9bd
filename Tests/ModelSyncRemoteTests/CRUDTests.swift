import Foundation
import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

@Suite("RemoteStore: fetch, list, save, delete, nested resources, parameters")
struct CRUDTests {
    @Test func fetchesByID() async throws {
        try await withStore { store, server async throws in
            let post = try await store.fetch(Post.self, id: 3)
            #expect(post.id == 3 && post.userId == 1)
            #expect(server.uris == ["/posts/3"])
        }
    }

    @Test func fetchIntoAModelRefreshesIt() async throws {
        try await withStore { store, _ async throws in
            var post = Post(id: 2, userId: 0, title: "stale", text: "")
            try await store.fetch(&post)
            #expect(post.title != "stale" && post.userId == 1)
        }
    }

    @Test func aFailedFetchLeavesTheModelAlone() async throws {
        try await withStore { store, _ async throws in
            let original = Post(id: 999, userId: 5, title: "mine", text: "kept")
            var post = original
            let error = await remoteError { try await store.fetch(&post) }
            #expect(error?.status == 404)
            #expect(post == original)
        }
    }

    @Test func listsWithParametersNamedByProperty() async throws {
        try await withStore { store, server async throws in
            let comments = try await store.list(Comment.self, parameters: ["post": 2, "_sort": "id", "_order": "desc"])
            #expect(comments.map(\.id) == [10, 9, 8, 7, 6])
            #expect(server.uris == ["/comments?_order=desc&_sort=id&postId=2"])
        }
    }

    @Test func listResultGivesTheRawResponse() async throws {
        try await withStore { store, _ async throws in
            let result = try await store.listResult(Post.self, parameters: ["_limit": 3])
            #expect(result.value.count == 3)
            #expect(result.response.status == 200)
            #expect(result.response.headers["X-Total-Count"] == "100")
            #expect(!result.response.body.isEmpty)
        }
    }

    @Test func parameterPrecedence() async throws {
        try await withStore(configure: { options in
            options.defaultParameters = { ["lang": "en", "post": 9, "_limit": 1] }
        }) { store, server async throws in
            // Store defaults < model properties (Comment sends `post`) < call parameters.
            var comment = Comment(id: 7, post: 2, body: "")
            try await store.fetch(&comment, parameters: ["lang": "fr"])
            #expect(server.uris.last == "/comments/7?_limit=1&lang=fr&postId=2")
            _ = try await store.list(Comment.self, parameters: ["_limit": 2])
            #expect(server.uris.last == "/comments?_limit=2&lang=en&postId=9")
        }
    }

    @Test func saveWithoutIDPostsAndTakesTheNewID() async throws {
        try await withStore { store, server async throws in
            var post = Post(userId: 1, title: "new", text: "hello")
            let response = try await store.save(&post)
            #expect(response.status == 201)
            #expect(post.id == 101)
            #expect(server.recordedRequests.last?.method == "POST")
            #expect(try await store.fetch(Post.self, id: 101) == post)
        }
    }

    @Test func saveWithIDPuts() async throws {
        try await withStore { store, server async throws in
            var post = try await store.fetch(Post.self, id: 1)
            post.title = "edited"
            try await store.save(&post)
            #expect(server.recordedRequests.last?.method == "PUT")
            #expect(try await store.fetch(Post.self, id: 1).title == "edited")
        }
    }

    @Test func patchSendsOnlyChangedFields() async throws {
        try await withStore { store, server async throws in
            let original = try await store.fetch(Post.self, id: 1)
            // Someone else changes the title meanwhile; a PATCH of the body keeps their title.
            var theirs = original
            theirs.title = "theirs"
            try await store.save(&theirs)
            var mine = original
            mine.text = "my body"
            try await store.save(&mine, patchingChangesFrom: original)
            #expect(server.recordedRequests.last?.method == "PATCH")
            #expect(mine.title == "theirs" && mine.text == "my body")
        }
    }

    @Test func deletes() async throws {
        try await withStore { store, _ async throws in
            let post = try await store.fetch(Post.self, id: 4)
            try await store.delete(post)
            #expect(await remoteError { _ = try await store.fetch(Post.self, id: 4) }?.status == 404)
            try await store.delete(Post.self, id: 5)
            #expect(await remoteError { try await store.delete(Post.self, id: 5) }?.status == 404)
        }
    }

    @Test func aModelWithoutIDCannotBeDeleted() async throws {
        try await withStore { store, server async throws in
            let error = await remoteError { try await store.delete(Post(userId: 1, title: "", text: "")) }
            guard error?.code == .missingID, let model = error?.model else { Issue.record("expected missingID, got \(String(describing: error))"); return }
            #expect(model == "Post")
            #expect(server.recordedRequests.isEmpty)
        }
    }

    @Test func nestedResources() async throws {
        try await withStore { store, server async throws in
            let post = try await store.fetch(Post.self, id: 3)
            let comments = try await store.list(Comment.self, of: post)
            #expect(comments.map(\.id) == [11, 12, 13, 14, 15])
            var comment = Comment(body: "nested")
            try await store.create(&comment, in: post)
            #expect(comment.id == 501 && comment.post == 3)
            #expect(server.recordedRequests.last?.uri == "/posts/3/comments")
        }
    }

    @Test func baseURLProviderIsEvaluatedPerRequest() async throws {
        try await withStore { store, first async throws in
            try await withTestServer { second in
                Album.base.withLock { $0 = first.baseURL }
                _ = try await store.fetch(Album.self, id: 1)
                Album.base.withLock { $0 = second.baseURL }
                _ = try await store.fetch(Album.self, id: 2)
                #expect(first.uris == ["/users/1"])
                #expect(second.uris == ["/users/2"])
            }
        }
    }
}

/// A resource whose base URL is looked up on every request.
@Model
struct Album {
    var id: Int
    var name: String
}

extension Album: RemoteResource {
    static let base = Locked<URL?>(nil)
    static let remote = RemoteConfiguration(path: "users", baseURLProvider: {
        guard let url = base.current else { throw RemoteError.invalidURL("no base URL yet") }
        return url
    })
}

/// A user inside envelopes: items under `data`, lists under `data.items`.
@Model
struct WrappedUser: Equatable {
    var id: Int
    var name: String
}

extension WrappedUser: RemoteResource {
    static let remote = RemoteConfiguration(path: "wrapped", itemKey: "data", listKey: "data.items")
}

@Suite("RemoteStore: envelopes")
struct EnvelopeTests {
    @Test func itemsAndListsInsideEnvelopes() async throws {
        // `/wrapped/1` answers {"id": 1, "data": {…}}; a list is read from `data.items` of a
        // singular resource reached through an interceptor.
        let data: JSONValue = [
            "wrapped": [["id": 1, "data": ["id": 1, "name": "Ada"]]],
            "page": ["data": ["items": [["id": 1, "name": "Ada"], ["id": 2, "name": "Grace"]]]],
        ]
        try await withStore(data: data, configure: { options in
            options.interceptors = [ClosureInterceptor { request in
                if request.url.path == "/wrapped" { request.url = request.url.deletingLastPathComponent().appendingPathComponent("page") }
            }]
        }) { store, _ async throws in
            #expect(try await store.fetch(WrappedUser.self, id: 1) == WrappedUser(id: 1, name: "Ada"))
            #expect(try await store.list(WrappedUser.self).map(\.name) == ["Ada", "Grace"])
        }
    }
}
