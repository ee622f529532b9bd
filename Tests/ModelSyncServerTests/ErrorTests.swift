import Foundation
import ModelSyncJSON
import ModelSyncServer
import ModelSyncTesting
import NIOHTTP1
import ServerTestSupport
import Testing

@Suite("Bad input: every mistake gets its status and a message, and changes nothing")
struct ErrorTests {
    /// Sends a bad request and checks its status, its `{"error": …}` body and that the data is
    /// unchanged.
    private func expectRejected(
        _ method: HTTPMethod, _ path: String, body: String? = nil, status: Int, mentioning: String? = nil, backend: Backend
    ) async throws {
        try await withServer(backend: backend) { server, base async throws in
            let reply = try await send(method, "\(base)\(path)", body: body)
            #expect(reply.status == status)
            let message = try #require(reply.json?["error"]?.stringValue)
            if let mentioning { #expect(message.contains(mentioning)) }
            #expect(try await server.data == sampleData)
        }
    }

    @Test(arguments: Backend.allCases) func malformedJSONIs400(backend: Backend) async throws {
        try await expectRejected(.POST, "/posts", body: #"{"title": "#, status: 400, mentioning: "malformed JSON", backend: backend)
    }

    @Test(arguments: Backend.allCases) func aBodyThatIsNotAnObjectIs400(backend: Backend) async throws {
        try await expectRejected(.POST, "/posts", body: "[1, 2]", status: 400, mentioning: "JSON object", backend: backend)
        try await expectRejected(.PATCH, "/posts/1", body: "42", status: 400, backend: backend)
        try await expectRejected(.PUT, "/profile", body: "\"x\"", status: 400, backend: backend)
    }

    @Test(arguments: Backend.allCases) func aMissingBodyIs400(backend: Backend) async throws {
        try await expectRejected(.POST, "/posts", status: 400, backend: backend)
    }

    @Test(arguments: Backend.allCases) func unknownCollectionIs404(backend: Backend) async throws {
        try await expectRejected(.GET, "/nothing", status: 404, mentioning: "nothing", backend: backend)
        try await expectRejected(.POST, "/nothing", body: "{}", status: 404, backend: backend)
        try await expectRejected(.GET, "/nothing/1/comments", status: 404, backend: backend)
    }

    @Test(arguments: Backend.allCases) func unknownIDIs404(backend: Backend) async throws {
        try await expectRejected(.GET, "/posts/99", status: 404, mentioning: "99", backend: backend)
        try await expectRejected(.PUT, "/posts/99", body: "{}", status: 404, backend: backend)
        try await expectRejected(.DELETE, "/posts/99", status: 404, backend: backend)
        try await expectRejected(.POST, "/posts/99/comments", body: "{}", status: 404, backend: backend)
    }

    @Test(arguments: Backend.allCases) func aBodyOverTheLimitIs413(backend: Backend) async throws {
        try await withServer(options: ServerOptions(maxBodySize: 64), backend: backend) { server, base async throws in
            let big = #"{"title": "\#(String(repeating: "x", count: 200))"}"#
            #expect(try await send(.POST, "\(base)/posts", body: big).status == 413)
            #expect(try await server.data == sampleData)
        }
    }

    @Test(arguments: Backend.allCases) func anIDThatDiffersFromTheURLIs400(backend: Backend) async throws {
        try await expectRejected(.PUT, "/posts/1", body: #"{"id": 2, "title": "x"}"#, status: 400, mentioning: "differs", backend: backend)
        try await expectRejected(.PATCH, "/posts/1", body: #"{"id": "one"}"#, status: 400, backend: backend)
    }

    @Test(arguments: Backend.allCases) func aDuplicateIDIs409(backend: Backend) async throws {
        try await expectRejected(.POST, "/posts", body: #"{"id": 1}"#, status: 409, backend: backend)
    }

    @Test(arguments: Backend.allCases) func malformedQueryParametersAre400(backend: Backend) async throws {
        try await expectRejected(.GET, "/posts?_page=0", status: 400, mentioning: "_page", backend: backend)
        try await expectRejected(.GET, "/posts?_limit=many", status: 400, backend: backend)
        try await expectRejected(.GET, "/posts?title_like=%5B", status: 400, mentioning: "regular expression", backend: backend)
        try await expectRejected(.GET, "/posts?_embed=nothing", status: 404, backend: backend)
    }

    @Test(arguments: Backend.allCases) func methodsARouteDoesNotSupportAre405(backend: Backend) async throws {
        try await expectRejected(.POST, "/posts/1", body: "{}", status: 405, backend: backend)
        try await expectRejected(.DELETE, "/posts", status: 405, backend: backend)
        try await expectRejected(.DELETE, "/profile", status: 405, backend: backend)
    }

    @Test(arguments: Backend.allCases) func readOnlyRejectsWrites(backend: Backend) async throws {
        try await withServer(options: ServerOptions(readOnly: true), backend: backend) { server, base async throws in
            #expect(try await send(.POST, "\(base)/posts", body: "{}").status == 405)
            #expect(try await send(.DELETE, "\(base)/posts/1").status == 405)
            #expect(try await send(.GET, "\(base)/posts/1").status == 200)
            #expect(try await server.data == sampleData)
        }
    }

    @Test func startRejectsDataThatIsNotAnObject() async throws {
        await #expect(throws: ServerError.notAnObject) { try await SyncServer.start(data: [1, 2]) }
    }

    @Test(arguments: Backend.allCases) func startRejectsATakenPort(backend: Backend) async throws {
        try await withServer(backend: backend) { server, _ async throws in
            await #expect(throws: ServerError.self) { try await SyncServer.start(data: [:], port: server.port) }
        }
    }
}
