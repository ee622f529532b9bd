import Foundation
import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

/// A todo of a user: `/users/1/todos`.
@Model
struct Todo: Equatable {
    var id: Int?
    var userId: Int = 0
    var title: String
}

extension Todo: RemoteResource {
    static let remote = RemoteConfiguration(path: "todos")
}

/// A line of an order, keyed by both: `/order-lines/7,3` (the default path of a composite id).
@Model
struct OrderLine: Equatable {
    @PrimaryKey var orderId: Int
    @PrimaryKey var line: Int
    var product: String
}

extension OrderLine: RemoteResource {
    static let remote = RemoteConfiguration(path: "order-lines")
}

/// A shipment of an order line: `/order-lines/7,3/shipments`.
@Model
struct Shipment: Equatable {
    var id: Int?
    var carrier: String
}

extension Shipment: RemoteResource {
    static let remote = RemoteConfiguration(path: "shipments")
}

/// An item of an order, at a path of its own: `/orders/7/items/3`.
@Model
struct OrderItem: Equatable {
    @PrimaryKey var orderId: String
    @PrimaryKey var number: String
    var product: String = ""
}

extension OrderItem: RemoteResource {
    static let remote = RemoteConfiguration(path: "items")

    static func remotePath(for id: RemoteID) throws -> [String] {
        ["orders", id.parts[0], "items", id.parts[1]]
    }
}

/// A resource whose path builder leaves a segment empty.
@Model
struct Misrouted {
    var id: Int
}

extension Misrouted: RemoteResource {
    static let remote = RemoteConfiguration(path: "misrouted")
    static func remotePath(for id: RemoteID) throws -> [String] { ["misrouted", "", id.parts[0]] }
}

/// Parent ids that must stay one path segment, and the nested path the server must receive.
private let hostileParentIDs: [(id: String, path: String)] = [
    ("../users", "/posts/..%2Fusers/comments"),
    ("1/comments/2", "/posts/1%2Fcomments%2F2/comments"),
    ("..", "/posts/%2E%2E/comments"),
    (".", "/posts/%2E/comments"),
    ("a\u{0}b", "/posts/a%00b/comments"),
    ("\u{0}", "/posts/%00/comments"),
    ("caf\u{E9}\u{1F600}", "/posts/caf%C3%A9%F0%9F%98%80/comments"),
    ("1?_embed=x#y", "/posts/1%3F_embed%3Dx%23y/comments"),
]

@Suite("RemoteStore: nested resources from a parent id")
struct NestedByIDTests {
    private let todos: JSONValue = [
        "users": [["id": 1, "name": "Ann"], ["id": 2, "name": "Bob"]],
        "todos": [["id": 1, "userId": 1, "title": "a"], ["id": 2, "userId": 2, "title": "b"], ["id": 3, "userId": 1, "title": "c"]],
    ]

    @Test func listsChildrenFromAParentIDAlone() async throws {
        try await withStore(data: todos) { store, server async throws in
            let mine = try await store.list(Todo.self, of: User.self, parentID: 1)
            #expect(mine.map(\.id) == [1, 3])
            #expect(server.uris == ["/users/1/todos"])
            // The same request as from a parent value.
            let user = User(id: 1, name: "Ann")
            #expect(try await store.list(Todo.self, of: user, parameters: ["_sort": "id"]) == mine)
            #expect(server.uris.last == "/users/1/todos?_sort=id")
        }
    }

    @Test func createsUnderAParentIDAlone() async throws {
        try await withStore(data: todos) { store, server async throws in
            var todo = Todo(title: "new")
            try await store.create(&todo, in: User.self, parentID: 2)
            #expect(todo.id == 4)
            #expect(todo.userId == 2)
            #expect(server.recordedRequests.map { "\($0.method) \($0.uri)" } == ["POST /users/2/todos"])
            #expect(try await store.list(Todo.self, of: User.self, parentID: 2).map(\.title) == ["b", "new"])
        }
    }

    @Test func pagesOfANestedCollection() async throws {
        try await withStore { store, server async throws in
            var pages: [[Int]] = []
            for try await page in store.pages(Comment.self, of: Post.self, parentID: 1, pagination: .pages(size: 2)) {
                pages.append(page.compactMap(\.id))
            }
            #expect(pages == [[1, 2], [3, 4], [5]])
            #expect(server.uris == ["/posts/1/comments?_limit=2&_page=1", "/posts/1/comments?_limit=2&_page=2", "/posts/1/comments?_limit=2&_page=3"])

            // From a parent value, following json-server's `Link` headers.
            server.clearRecordedRequests()
            let post = try await store.fetch(Post.self, id: 2)
            var linked: [[Int]] = []
            for try await page in store.pages(Comment.self, of: post, parameters: ["_page": 1, "_limit": 3], pagination: .linkHeader) {
                linked.append(page.compactMap(\.id))
            }
            #expect(linked == [[6, 7, 8], [9, 10]])
            #expect(server.uris.dropFirst().first == "/posts/2/comments?_limit=3&_page=1")
        }
    }

    @Test func djangoRestFrameworkPagesOfANestedCollection() async throws {
        // DRF's `/posts/9/comments?limit=2`: its envelopes served by the server's canned answers.
        try await withStore { store, server async throws in
            let base = server.baseURL.absoluteString
            server.inject(Fault(.status(200, body: [
                "count": 3, "next": .string("\(base)/posts/9/comments?limit=2&offset=2"), "previous": nil,
                "results": [["id": 41, "postId": 9, "body": "a"], ["id": 42, "postId": 9, "body": "b"]],
            ])))
            server.inject(Fault(.status(200, body: [
                "count": 3, "next": nil, "previous": .string("\(base)/posts/9/comments?limit=2"),
                "results": [["id": 43, "postId": 9, "body": "c"]],
            ])))
            let pages = store.pages(Comment.self, of: Post.self, parentID: 9, parameters: ["limit": 2], pagination: .nextURL())
            var received: [[Int]] = []
            for try await page in pages { received.append(page.compactMap(\.id)) }
            #expect(received == [[41, 42], [43]])
            #expect(pages.end == .complete)
            #expect(server.uris == ["/posts/9/comments?limit=2", "/posts/9/comments?limit=2&offset=2"])
        }
    }

    @Test(arguments: hostileParentIDs)
    func aParentIDIsOnePathSegment(id: String, path: String) async throws {
        try await withStore { store, server async throws in
            _ = try? await store.list(Comment.self, of: Post.self, parentID: id)
            var comment = Comment(body: "x")
            _ = try? await store.create(&comment, in: Post.self, parentID: id)
            // No such post: 404, which ends the pages with an error.
            let pages = store.pages(Comment.self, of: Post.self, parentID: id)
            #expect(await remoteError { for try await _ in pages {} }?.status == 404)
            #expect(server.uris == [path, path, path + "?_limit=10&_page=1"])
            // Nothing was created anywhere: `../users` once reached another collection.
            #expect(try await store.list(User.self).count == 10)
            #expect(try await store.list(Comment.self).count == 500)
        }
    }

    @Test func anEmptyParentIDIsMissing() async throws {
        try await withStore { store, server async throws in
            let error = await remoteError { _ = try await store.list(Comment.self, of: Post.self, parentID: "") }
            guard error?.code == .missingID, let model = error?.model else { Issue.record("expected missingID, got \(String(describing: error))"); return }
            #expect(model == "Post")
            #expect(server.uris.isEmpty)
        }
    }
}

@Suite("RemoteStore: composite keys and path builders")
struct CompositeKeyTests {
    private let lines: JSONValue = ["order-lines": [["id": "7,3", "orderId": 7, "line": 3, "product": "tea"]], "shipments": []]

    @Test func aCompositeIdIsOneSegmentOfItsParts() async throws {
        try await withStore(data: lines) { store, server async throws in
            var line = try await store.fetch(OrderLine.self, id: RemoteID(7, 3))
            #expect(line == OrderLine(orderId: 7, line: 3, product: "tea"))
            line.product = "coffee"
            try await store.save(&line)
            try await store.fetch(&line)
            #expect(line.product == "coffee")
            _ = try? await store.list(Shipment.self, of: line)
            _ = try? await store.list(Shipment.self, of: OrderLine.self, parentID: RemoteID(7, 3))
            try await store.delete(line)
            #expect(server.recordedRequests.map { "\($0.method) \($0.uri)" } == [
                "GET /order-lines/7,3", "PUT /order-lines/7,3", "GET /order-lines/7,3",
                "GET /order-lines/7,3/shipments", "GET /order-lines/7,3/shipments", "DELETE /order-lines/7,3",
            ])
            #expect(try await store.list(OrderLine.self).isEmpty)
            #expect(try await store.resourceURL(for: OrderLine.self, id: RemoteID(7, 3)).path == "/order-lines/7,3")
        }
    }

    @Test func aPathBuilderPlacesTheRecord() async throws {
        try await withStore { store, server async throws in
            // The bundled server has no four-segment routes: the path it received is what counts.
            #expect(await remoteError { _ = try await store.fetch(OrderItem.self, id: RemoteID(7, 3)) }?.status == 404)
            let hostile = OrderItem(orderId: "../users", number: "..", product: "x")
            #expect(await remoteError { try await store.delete(hostile) }?.status == 404)
            #expect(await remoteError { _ = try await store.fetch(OrderItem.self, id: RemoteID("a/b\u{0}", "\u{E9}.")) }?.status == 404)
            #expect(server.recordedRequests.map { "\($0.method) \($0.uri)" } == [
                "GET /orders/7/items/3", "DELETE /orders/..%2Fusers/items/%2E%2E", "GET /orders/a%2Fb%00/items/%C3%A9.",
            ])
            #expect(try await store.list(User.self).count == 10)
        }
    }

    @Test func idsThatCannotBeAPathAreRefusedBeforeSending() async throws {
        try await withStore(data: lines) { store, server async throws in
            // A part holding the separator would read as two parts.
            let separator = await remoteError { _ = try await store.fetch(OrderLine.self, id: RemoteID("7,3", 1)) }
            guard separator?.code == .invalidURL else { Issue.record("expected invalidURL, got \(String(describing: separator))"); return }
            // Also when Swift sees no comma: "," followed by a combining mark is one Character.
            let hidden = await remoteError { _ = try await store.fetch(OrderLine.self, id: RemoteID("7,\u{301}3", 1)) }
            guard hidden?.code == .invalidURL else { Issue.record("expected invalidURL, got \(String(describing: hidden))"); return }
            // Too few or too many parts.
            let short = await remoteError { _ = try await store.fetch(OrderLine.self, id: 7) }
            guard short?.code == .invalidURL else { Issue.record("expected invalidURL, got \(String(describing: short))"); return }
            let long = await remoteError { _ = try await store.fetch(Post.self, id: RemoteID(1, 2)) }
            guard long?.code == .invalidURL else { Issue.record("expected invalidURL, got \(String(describing: long))"); return }
            // An empty part is a missing id.
            let empty = await remoteError { _ = try await store.fetch(OrderLine.self, id: RemoteID(7, "")) }
            guard empty?.code == .missingID else { Issue.record("expected missingID, got \(String(describing: empty))"); return }
            // A path builder's empty segment.
            let misrouted = await remoteError { _ = try await store.fetch(Misrouted.self, id: 1) }
            guard misrouted?.code == .invalidURL else { Issue.record("expected invalidURL, got \(String(describing: misrouted))"); return }
            #expect(server.uris.isEmpty)
        }
    }
}

/// A member whose age one call sends as a bracket.
@Model
struct Member: Equatable {
    var id: Int?
    var name: String
    var age: Int
}

extension Member: RemoteResource {
    static let remote = RemoteConfiguration(path: "members")
}

@Suite("RemoteStore: per-call encoding")
struct PerCallEncodingTests {
    private let youth = JSONEncodingOverride<Member>.field(\.age) { $0 <= 20 ? "Youth" : "Adult" }

    /// The member as the server stores it.
    private func stored(_ id: Int?, _ store: RemoteStore, _ server: TestServer) async throws -> JSONValue {
        let url = server.baseURL.appendingPathComponent("members/\(id ?? 0)")
        return try JSONValue(parsing: await store.send(RemoteRequest(method: .get, url: url)).body)
    }

    @Test func anOverrideEncodesOneCallsBody() async throws {
        try await withStore(data: ["members": [], "users": [["id": 1, "name": "Ann"]]]) { store, server async throws in
            var member = Member(name: "Ann", age: 20)
            try await store.save(&member, encoding: [youth])
            // The server got "Youth"; the model keeps its own value (the answer's "Youth" is not read back).
            #expect(member == Member(id: 1, name: "Ann", age: 20))
            #expect(try await stored(member.id, store, server)["age"] == "Youth")

            // The next plain call sends the model's own encoding.
            try await store.save(&member)
            #expect(try await stored(member.id, store, server)["age"] == 20)

            // PATCH: an override of an unchanged property sends nothing; a changed one its form.
            let original = member
            member.name = "Anne"
            try await store.save(&member, patchingChangesFrom: original, encoding: [youth])
            #expect(try await stored(member.id, store, server)["age"] == 20)
            member.age = 30
            try await store.save(&member, patchingChangesFrom: original, encoding: [youth])
            #expect(try await stored(member.id, store, server)["age"] == "Adult")
            #expect(member == Member(id: 1, name: "Anne", age: 30))

            // Nested creation takes overrides too.
            var child = Member(name: "Kid", age: 9)
            try await store.create(&child, in: User.self, parentID: 1, encoding: [youth])
            #expect(child.age == 9)
            #expect(try await stored(child.id, store, server)["age"] == "Youth")
        }
    }
}
