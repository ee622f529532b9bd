import Foundation
import ModelSyncJSON
@testable import ModelSyncServer
import ModelSyncTesting
import ServerTestSupport
import Testing

/// What a client needs from the server when it never heard an answer: every write takes an
/// `Idempotency-Key` and its retry gets the first answer; an id is never given twice; the server
/// can itself apply a write and lose the answer, for clients' tests.
@Suite struct UnknownOutcomeTests {
    static let data: JSONValue = ["posts": [["id": 1, "title": "a"], ["id": 2, "title": "b"]]]

    @Test(arguments: Backend.allCases) func updatesAndDeletesAreReplayedByTheirKey(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { server, url in
            let base = url + "/"
            let first = try await send(.PATCH, base + "posts/1", body: #"{"title": "a2"}"#, headers: [("If-Match", #""1""#), ("Idempotency-Key", "p1")])
            #expect(first.status == 200 && first.header("ETag") == #""3""#)
            _ = try await send(.PATCH, base + "posts/1", body: #"{"title": "other writer"}"#)
            // The retry of the applied write: its first answer, not a 412, and nothing changes.
            let retry = try await send(.PATCH, base + "posts/1", body: #"{"title": "a2"}"#, headers: [("If-Match", #""1""#), ("Idempotency-Key", "p1")])
            #expect(retry.status == 200 && retry.header("Idempotent-Replayed") == "true" && retry.header("ETag") == #""3""#)
            #expect(retry.json?["title"]?.stringValue == "a2")
            #expect(try await server.data["posts"]?[0]?["title"]?.stringValue == "other writer")
            // The key is bound to its request: another body, method or id is a client error.
            #expect(try await send(.PATCH, base + "posts/1", body: #"{"title": "a3"}"#, headers: [("Idempotency-Key", "p1")]).status == 422)
            #expect(try await send(.PATCH, base + "posts/2", body: #"{"title": "a2"}"#, headers: [("Idempotency-Key", "p1")]).status == 422)
            #expect(try await send(.DELETE, base + "posts/1", headers: [("Idempotency-Key", "p1")]).status == 422)
            // A key holding NUL (a batch can carry one) is refused alike on both backends.
            let nul = try await send(.POST, base + "_batch", body: #"{"operations": [{"method": "POST", "path": "/posts", "headers": {"Idempotency-Key": "a\u0000b"}, "body": {}}]}"#)
            #expect(nul.json?["results"]?[0]?["status"]?.intValue == 400)

            let deleted = try await send(.DELETE, base + "posts/2", headers: [("Idempotency-Key", "d1")])
            #expect(deleted.status == 200)
            let deletedAgain = try await send(.DELETE, base + "posts/2", headers: [("Idempotency-Key", "d1")])
            #expect(deletedAgain.status == 200 && deletedAgain.header("Idempotent-Replayed") == "true")
            // A batch's operations take keys too, and share them with single requests.
            let batch = try await send(.POST, base + "_batch", body: """
                {"operations": [{"method": "PATCH", "path": "/posts/1", "headers": {"If-Match": "\\"1\\"", "Idempotency-Key": "p1"}, "body": {"title": "a2"}}]}
                """)
            #expect(batch.json?["results"]?[0]?["status"]?.intValue == 200 && batch.json?["results"]?[0]?["replayed"]?.boolValue == true)
            #expect(batch.json?["results"]?[0]?["etag"]?.stringValue == #""3""#)
        }
    }

    @Test(arguments: Backend.allCases) func anIDIsNeverGivenTwice(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { server, url in
            let base = url + "/"
            #expect(try await send(.DELETE, base + "posts/2").status == 200)
            let created = try await send(.POST, base + "posts", body: #"{"title": "new"}"#)
            #expect(created.json?["id"]?.intValue == 3)
            // Every record deleted, through a batch too: the next id still goes above them all.
            _ = try await send(.POST, base + "_batch", body: #"{"operations": [{"method": "DELETE", "path": "/posts/1"}, {"method": "DELETE", "path": "/posts/3"}]}"#)
            let batch = try await send(.POST, base + "_batch", body: #"{"operations": [{"method": "POST", "path": "/posts", "body": {"title": "x"}}, {"method": "POST", "path": "/posts", "body": {"title": "y"}}]}"#)
            #expect(batch.json?["results"]?.arrayValue?.compactMap { $0["body"]?["id"]?.intValue } == [4, 5])
            #expect(try await send(.POST, base + "posts", body: #"{"title": "z"}"#).json?["id"]?.intValue == 6)
            // The mark is saved with the data: an export and import keeps it.
            let exported = try await server.data
            #expect(exported["posts"]?.arrayValue?.count == 3)
        }
    }

    @Test func theMarkSurvivesARestartOfTheJSONDocument() async throws {
        try await withDatabaseFile(#"{"posts": [{"id": 1}, {"id": 2}]}"#) { file in
            let server = try await TestServer.start(file: file)
            #expect(try await send(.DELETE, server.baseURL.absoluteString + "/posts/2").status == 200)
            await server.shutdown()
            let restarted = try await TestServer.start(file: file)
            #expect(try await send(.POST, restarted.baseURL.absoluteString + "/posts", body: "{}").json?["id"]?.intValue == 3)
            await restarted.shutdown()
        }
    }

    @Test(arguments: Backend.allCases) func aLostAnswerFaultAppliesTheWrite(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { server, url in
            server.inject(Fault(.loseAnswer))
            await #expect(throws: (any Error).self) {
                _ = try await send(.POST, url + "/posts", body: #"{"title": "c"}"#, headers: [("Idempotency-Key", "c1")])
            }
            #expect(try await server.data["posts"]?.arrayValue?.count == 3)
            let retry = try await send(.POST, url + "/posts", body: #"{"title": "c"}"#, headers: [("Idempotency-Key", "c1")])
            #expect(retry.status == 201 && retry.header("Idempotent-Replayed") == "true" && retry.json?["id"]?.intValue == 3)
        }
    }
}
