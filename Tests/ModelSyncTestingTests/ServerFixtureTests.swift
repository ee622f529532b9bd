import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Testing

let postsData: JSONValue = ["posts": [["id": 1, "userId": 1, "title": "Hello", "body": "First"]]]

@Suite("Testing: the server as a fixture", .serialized)
struct ServerFixtureTests {
    static let shared = SharedTestServer(data: postsData)

    @Test func withTestServerStartsOnAFreePortAndShutsDown() async throws {
        let baseURL = try await withTestServer(data: postsData) { server async throws -> URL in
            #expect(server.port != 0)
            let api = RemoteStore(baseURL: server.baseURL)
            #expect(try await api.fetch(Post.self, id: 1).title == "Hello")
            return server.baseURL
        }
        let api = RemoteStore(baseURL: baseURL, options: { var o = RemoteStore.Options(); o.retry = .none; return o }())
        await #expect(throws: RemoteError.self) { try await api.fetch(Post.self, id: 1) }
    }

    @Test func aFileFixtureIsServedFromACopy() async throws {
        let directory = try TemporaryDirectory()
        let fixture = directory.url.appendingPathComponent("db.json")
        try Data(postsData.jsonBytes()).write(to: fixture)
        try await withTestServer(file: fixture) { server in
            let api = RemoteStore(baseURL: server.baseURL)
            var post = Post(userId: 2, title: "New")
            try await api.save(&post)
            #expect(try await api.list(Post.self).count == 2)
        }
        #expect(try JSONValue(parsing: Array(Data(contentsOf: fixture))) == postsData)
    }

    @Test func resetPutsBackDataFaultsRequestsAndDelay() async throws {
        try await withTestServer(data: postsData, delay: .milliseconds(1)) { server in
            let api = RemoteStore(baseURL: server.baseURL)
            var post = Post(userId: 2, title: "New")
            try await api.save(&post)
            server.inject(Fault(.status(500), times: nil))
            server.setDelay(.seconds(5))
            try await server.reset()
            #expect(try await server.data == postsData)
            #expect(server.recordedRequests.isEmpty)
            #expect(try await api.list(Post.self).map(\.title) == ["Hello"])  // no fault, no 5 s delay
        }
    }

    @Test func resetPutsBackTheDataOfAFileServer() async throws {
        let directory = try TemporaryDirectory()
        let fixture = directory.url.appendingPathComponent("db.json")
        try Data(postsData.jsonBytes()).write(to: fixture)
        try await withTestServer(file: fixture) { server in
            var post = Post(userId: 2, title: "New")
            try await RemoteStore(baseURL: server.baseURL).save(&post)
            #expect(try await server.data != postsData)
            try await server.reset()
            #expect(try await server.data == postsData)
            #expect(try await RemoteStore(baseURL: server.baseURL).list(Post.self).count == 1)
        }
    }

    @Test(arguments: 1...3)
    func aSharedServerIsResetBeforeEachTest(run: Int) async throws {
        try await Self.shared.withServer { server in
            #expect(try await server.data == postsData)
            #expect(server.recordedRequests.isEmpty)
            let api = RemoteStore(baseURL: server.baseURL)
            var post = Post(userId: run, title: "Run \(run)")
            try await api.save(&post)
            #expect(post.id == 2)
        }
    }

    @Test(.testServer(data: postsData))
    func theTraitHandsTheTestAServer() async throws {
        let server = try #require(TestScope.server)
        #expect(try await RemoteStore(baseURL: server.baseURL).fetch(Post.self, id: 1).title == "Hello")
    }
}
