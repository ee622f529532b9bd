import Foundation
import ModelSyncRemote
import ModelSyncServer
import Testing

@Suite("RemoteStore: pagination")
struct PaginationTests {
    private func collect(_ pages: RemotePages<Comment>) async throws -> [[Int]] {
        var result: [[Int]] = []
        for try await page in pages { result.append(page.compactMap(\.id)) }
        return result
    }

    @Test func offsetAndLimit() async throws {
        try await withStore { store, server async throws in
            let pages = try await collect(store.pages(Comment.self, parameters: ["post": 1], pagination: .offset(limit: 2)))
            #expect(pages == [[1, 2], [3, 4], [5]])
            #expect(server.uris.first == "/comments?_limit=2&_start=0&postId=1")
        }
    }

    @Test func pageNumbersStopAtTheTotal() async throws {
        try await withStore { store, server async throws in
            let pages = try await collect(store.pages(Comment.self, parameters: ["post": 2], pagination: .pages(size: 5)))
            #expect(pages == [[6, 7, 8, 9, 10]])
            #expect(server.recordedRequests.count == 1)
        }
    }

    @Test func linkHeaders() async throws {
        try await withStore { store, server async throws in
            let pages = try await collect(store.pages(
                Comment.self, parameters: ["post": 3, "_page": 1, "_limit": 2], pagination: .linkHeader
            ))
            #expect(pages == [[11, 12], [13, 14], [15]])
            #expect(server.recordedRequests.count == 3)
        }
    }

    @Test func djangoRestFrameworkNextURLs() async throws {
        // Two pages in DRF's shape, served as singular resources; `next` needs the server's port.
        try await withStore(data: ["page1": [:], "page2": [:]]) { store, server async throws in
            let base = server.baseURL.absoluteString
            let first: JSONValue = ["count": 3, "next": .string("\(base)/page2"), "previous": nil,
                                    "results": [["id": 1, "body": "a"], ["id": 2, "body": "b"]]]
            let second: JSONValue = ["count": 3, "next": nil, "previous": .string("\(base)/page1"),
                                     "results": [["id": 3, "body": "c"]]]
            _ = try await store.send(RemoteRequest(method: .put, url: server.baseURL.appendingPathComponent("page1"), body: first.jsonBytes()))
            _ = try await store.send(RemoteRequest(method: .put, url: server.baseURL.appendingPathComponent("page2"), body: second.jsonBytes()))
            server.clearRecordedRequests()
            var pages: [[Int]] = []
            for try await page in store.pages(PagedComment.self, pagination: .nextURL()) { pages.append(page.compactMap(\.id)) }
            #expect(pages == [[1, 2], [3]])
            #expect(server.uris == ["/page1", "/page2"])
        }
    }
}

/// Comments listed from `/page1`, a Django REST Framework page.
@Model
struct PagedComment {
    var id: Int?
    var body: String
}

extension PagedComment: RemoteResource {
    static let remote = RemoteConfiguration(path: "page1")
}

@Suite("RemoteStore: errors")
struct RemoteErrorTests {
    @Test func statusErrorsCarryTheBody() async throws {
        try await withStore { store, _ async throws in
            let error = await remoteError { _ = try await store.fetch(Post.self, id: 12345) }
            guard let status = error?.statusError else { Issue.record("expected status, got \(String(describing: error))"); return }
            #expect(status.status == 404)
            #expect(status.response.text.contains("12345"))
            #expect(status.request.method == "GET")
            #expect(status.fieldErrors.isEmpty)
        }
    }

    @Test func fieldErrorsByProperty() async throws {
        try await withStore { store, server async throws in
            // Rails' shape, keyed by JSON keys; `body` is the JSON key of Post.text.
            server.inject(Fault(.status(422, body: ["errors": ["body": ["can't be blank"], "title": ["is too short", "is taken"]]])))
            var post = Post(userId: 1, title: "x", text: "")
            let error = await remoteError { try await store.save(&post) }
            guard let status = error?.statusError else { Issue.record("expected status, got \(String(describing: error))"); return }
            #expect(status.status == 422)
            #expect(status.fieldErrors == ["text": ["can't be blank"], "title": ["is too short", "is taken"]])
            #expect(post.id == nil)
        }
    }

    @Test func fieldErrorShapes() async throws {
        try await withStore { store, server async throws in
            let shapes: [JSONValue] = [
                ["title": ["required"]],
                ["errors": [["field": "title", "message": "required"]]],
                ["detail": [["loc": ["body", "title"], "msg": "required"]]],
            ]
            for shape in shapes {
                server.inject(Fault(.status(400, body: shape)))
                let error = await remoteError { _ = try await store.list(Post.self) }
                guard let status = error?.statusError else { Issue.record("no status error for \(shape)"); continue }
                #expect(status.fieldErrors == ["title": ["required"]], "\(shape)")
            }
        }
    }

    @Test func decodingErrorsNameTheKeyPath() async throws {
        try await withStore { store, server async throws in
            _ = try await store.send(RemoteRequest(
                method: .patch, url: server.baseURL.appendingPathComponent("users/3"), body: Array(#"{"name": {"first": "C"}}"#.utf8)
            ))
            var strict = RemoteStore.Options()
            strict.decoder = JSONModelDecoder(mode: .strict)
            let strictStore = RemoteStore(baseURL: server.baseURL, options: strict)
            let error = await remoteError { _ = try await strictStore.list(User.self, parameters: ["_limit": 5]) }
            guard let failure = error?.decodingFailure else { Issue.record("expected decoding, got \(String(describing: error))"); return }
            #expect(failure.error.path.description == "[2].name")
            #expect(failure.response.status == 200)
        }
    }

    @Test func aFailedSaveLeavesTheModelAlone() async throws {
        try await withStore { store, server async throws in
            let original = try await store.fetch(Post.self, id: 1)
            var post = original
            server.inject(Fault(.status(500), times: 1))
            #expect(await remoteError { try await store.save(&post) }?.status == 500)
            #expect(post == original)
        }
    }
}
