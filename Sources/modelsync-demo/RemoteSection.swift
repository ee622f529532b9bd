import Foundation
import ModelSync
import ModelSyncServer

@Model
struct DemoPost: SQLModel, Equatable {
    var id: Int?
    var userId: Int
    var title: String
    @JSON("body") var text: String
}

extension DemoPost: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

@Model
struct DemoComment: SQLModel {
    var id: Int?
    var postId: Int = 0
    var email: String = ""
    var body: String
}

extension DemoComment: RemoteResource {
    static let remote = RemoteConfiguration(path: "comments")
}

/// REST: RemoteStore against the bundled json-server-compatible server, started in-process on a
/// free port over a SQLite file holding jsonplaceholder-shaped sample data.
enum RemoteSection {
    static func run() async throws {
        section("REST with RemoteStore")
        // A request log, to show what the client sent.
        let recorder = RequestRecorderMiddleware()
        try await withSQLiteServer(data: SyncServer.sampleData, options: ServerOptions(middleware: [recorder]), directory: "modelsync-demo-rest") {
            server, _ in try await tour(server, recorder)
        }
    }

    private static func tour(_ server: SyncServer, _ recorder: RequestRecorderMiddleware) async throws {
        step("Started modelsync-server in-process", "\(server.baseURL)  (users, posts, comments, profile)")

        var options = RemoteStore.Options()
        options.interceptors = [HeaderInterceptor("X-Demo-Client") { "modelsync-demo" }]
        let api = RemoteStore(baseURL: server.baseURL, options: options)

        let post = try await api.fetch(DemoPost.self, id: 1)
        step("fetch(DemoPost.self, id: 1)  →  GET /posts/1", "#\(post.id ?? 0) by user \(post.userId): \(post.title)")

        var pages: [String] = []
        for try await page in api.pages(DemoPost.self, parameters: ["userId": 2], pagination: .pages(size: 4)) {
            pages.append("page \(pages.count + 1): ids \(page.compactMap(\.id))")
        }
        step("pages(DemoPost.self, parameters: [\"userId\": 2], pagination: .pages(size: 4))", pages.joined(separator: "\n"))

        var draft = DemoPost(userId: 1, title: "Hello from ModelSync", text: "Saved with POST")
        try await api.save(&draft)
        step("save(&newPost)  →  POST /posts (the id flows back)", "id = \(draft.id ?? 0)")

        draft.title = "Edited with PUT"
        try await api.save(&draft)
        step("save(&post)  →  PUT /posts/\(draft.id ?? 0)", draft.title)

        let loaded = draft
        draft.text = "Only this field is sent"
        try await api.save(&draft, patchingChangesFrom: loaded)
        step("save(&post, patchingChangesFrom: loaded)  →  PATCH with the changed field", "body = \(draft.text)")

        let comments = try await api.list(DemoComment.self, of: post)
        var reply = DemoComment(email: "demo@example.com", body: "Nice post")
        try await api.create(&reply, in: post)
        step("list(DemoComment.self, of: post), create(&comment, in: post)",
             "GET /posts/1/comments: \(comments.count) comments\nPOST /posts/1/comments: comment \(reply.id ?? 0) with postId \(reply.postId)")

        try await api.delete(draft)
        let gone = await statusOf { _ = try await api.fetch(DemoPost.self, id: draft.id ?? 0) }
        step("delete(post)  →  DELETE /posts/\(draft.id ?? 0)", "fetching it again: \(gone)")

        let header = recorder.requests.last?.header("X-Demo-Client") ?? "missing"
        step("An interceptor adds a header to every request", "X-Demo-Client: \(header)")

        let first = try await api.fetchResult(DemoPost.self, id: 2)
        let second = try await api.fetchResult(DemoPost.self, id: 2)
        let sent = recorder.requests.last?.header("If-None-Match") ?? "none"
        step("ETag revalidation: the second fetch sends If-None-Match",
             "ETag \(first.response.headers["ETag"] ?? "none"), sent \(sent)\nserver answered 304; body served from cache: \(second.response.isFromCache)")
    }

    /// The outcome of a call that is expected to fail with an HTTP status.
    private static func statusOf(_ call: () async throws -> Void) async -> String {
        do {
            try await call()
            return "succeeded"
        } catch let error as RemoteError {
            return error.status.map { "HTTP \($0)" } ?? "\(error)"
        } catch {
            return "\(error)"
        }
    }
}
