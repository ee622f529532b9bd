import Foundation
import ModelSyncJSON
import ModelSyncServer
import ServerTestSupport
import Testing

@Suite("Routes: collections, items, singular resources, nested routes")
struct RoutesTests {
    @Test(arguments: Backend.allCases) func listsACollection(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.GET, "\(base)/posts")
            #expect(reply.status == 200)
            #expect(reply.ids == [1, 2, 3, 4, 5])
            #expect(reply.header("X-Total-Count") == "5")
            #expect(reply.header("Content-Type")?.hasPrefix("application/json") == true)
        }
    }

    @Test(arguments: Backend.allCases) func getsAnItem(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.GET, "\(base)/posts/3")
            #expect(reply.status == 200)
            #expect(reply.json?["title"] == "gamma ray")
        }
    }

    @Test(arguments: Backend.allCases) func createAssignsTheNextID(backend: Backend) async throws {
        try await withServer(backend: backend) { server, base async throws in
            let reply = try await send(.POST, "\(base)/posts", body: #"{"userId": 1, "title": "new"}"#)
            #expect(reply.status == 201)
            #expect(reply.json == ["id": 6, "userId": 1, "title": "new"])
            #expect(try await server.data["posts"]?[5]?["title"] == "new")
        }
    }

    @Test(arguments: Backend.allCases) func aNullIDAsksForTheNextID(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.POST, "\(base)/posts", body: #"{"id": null, "title": "new"}"#)
            #expect(reply.status == 201)
            #expect(reply.json?["id"] == 6)
            #expect(try await send(.GET, "\(base)/posts/6").json?["title"] == "new")
        }
    }

    @Test(arguments: Backend.allCases) func createKeepsAGivenID(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.POST, "\(base)/posts", body: #"{"id": 40, "title": "mine"}"#)
            #expect(reply.status == 201)
            #expect(reply.json?["id"] == 40)
            #expect(try await send(.GET, "\(base)/posts/40").status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func putReplacesAnItem(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.PUT, "\(base)/posts/1", body: #"{"title": "replaced"}"#)
            #expect(reply.status == 200)
            #expect(reply.json == ["id": 1, "title": "replaced"])
            #expect(try await send(.GET, "\(base)/posts/1").json == ["id": 1, "title": "replaced"])
        }
    }

    @Test(arguments: Backend.allCases) func patchMergesIntoAnItem(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.PATCH, "\(base)/posts/1", body: #"{"id": 1, "title": "patched"}"#)
            #expect(reply.status == 200)
            #expect(reply.json?["title"] == "patched")
            #expect(reply.json?["views"] == 10)
        }
    }

    @Test(arguments: Backend.allCases) func deleteRemovesAnItem(backend: Backend) async throws {
        try await withServer(backend: backend) { server, base async throws in
            #expect(try await send(.DELETE, "\(base)/posts/2").status == 200)
            #expect(try await send(.GET, "\(base)/posts/2").status == 404)
            #expect(try await server.data["posts"]?.arrayValue?.count == 4)
        }
    }

    @Test(arguments: Backend.allCases) func singularResources(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/profile").json == ["name": "typicode"])
            #expect(try await send(.PATCH, "\(base)/profile", body: #"{"age": 3}"#).json == ["name": "typicode", "age": 3])
            #expect(try await send(.PUT, "\(base)/profile", body: #"{"name": "x"}"#).json == ["name": "x"])
            #expect(try await send(.POST, "\(base)/profile", body: "{}").status == 405)
        }
    }

    @Test(arguments: Backend.allCases) func nestedRoutesListChildren(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.GET, "\(base)/posts/1/comments")
            #expect(reply.ids == [1, 2])
            #expect(reply.header("X-Total-Count") == "2")
            #expect(try await send(.GET, "\(base)/posts/1/comments?_sort=id&_order=desc").ids == [2, 1])
        }
    }

    @Test(arguments: Backend.allCases) func nestedRoutesCreateChildren(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let reply = try await send(.POST, "\(base)/posts/2/comments", body: #"{"body": "nested"}"#)
            #expect(reply.status == 201)
            #expect(reply.json == ["id": 4, "body": "nested", "postId": 2])
            #expect(try await send(.GET, "\(base)/posts/2/comments").ids == [3, 4])
        }
    }

    @Test(arguments: Backend.allCases) func databaseRoute(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/db").json == sampleData)
        }
    }

    @Test(arguments: Backend.allCases) func corsHeadersAndPreflight(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let preflight = try await send(.OPTIONS, "\(base)/posts", headers: [
                ("Origin", "http://app.example"), ("Access-Control-Request-Method", "PATCH"),
                ("Access-Control-Request-Headers", "Authorization"),
            ])
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "http://app.example")
            #expect(preflight.header("Access-Control-Allow-Methods")?.contains("PATCH") == true)
            let allowed = Set((preflight.header("Access-Control-Allow-Headers") ?? "").lowercased().split(separator: ", "))
            #expect(allowed.isSuperset(of: ["authorization", "if-match", "idempotency-key", "modelsync-protocol", "last-event-id"]))
            // The answer itself names the origin and the headers a browser's script may read.
            let reply = try await send(.GET, "\(base)/posts", headers: [("Origin", "http://app.example")])
            #expect(reply.header("Access-Control-Allow-Origin") == "http://app.example")
            let exposed = Set((reply.header("Access-Control-Expose-Headers") ?? "").split(separator: ", "))
            #expect(exposed.isSuperset(of: ["ETag", "Link", "X-Total-Count", "Idempotent-Replayed", "ModelSync-Protocol"]))
            // Without an Origin, a request is not a cross-origin one: no CORS headers.
            #expect(try await send(.GET, "\(base)/posts").header("Access-Control-Allow-Origin") == nil)
        }
    }
}
