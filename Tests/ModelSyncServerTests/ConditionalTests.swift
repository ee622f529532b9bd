import Foundation
import ModelSyncJSON
import ModelSyncServer
import ServerTestSupport
import Testing

@Suite("Conditional requests: ETag, If-None-Match, If-Match, Last-Modified")
struct ConditionalTests {
    @Test(arguments: Backend.allCases) func itemsAndListsHaveETags(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let item = try await send(.GET, "\(base)/posts/1")
            let list = try await send(.GET, "\(base)/posts")
            let etag = try #require(item.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
            #expect(list.header("ETag") != nil && list.header("ETag") != etag)
            #expect(try await send(.GET, "\(base)/posts/1").header("ETag") == etag)
        }
    }

    @Test(arguments: Backend.allCases) func ifNoneMatchAnswers304(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let etag = try #require(try await send(.GET, "\(base)/posts?userId=1").header("ETag"))
            let cached = try await send(.GET, "\(base)/posts?userId=1", headers: [("If-None-Match", etag)])
            #expect(cached.status == 304)
            #expect(cached.body.isEmpty)
            _ = try await send(.PATCH, "\(base)/posts/1", body: #"{"title": "changed"}"#)
            #expect(try await send(.GET, "\(base)/posts?userId=1", headers: [("If-None-Match", etag)]).status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func ifMatchAnswers412WhenTheItemChanged(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let etag = try #require(try await send(.GET, "\(base)/posts/1").header("ETag"))
            let first = try await send(.PATCH, "\(base)/posts/1", body: #"{"title": "mine"}"#, headers: [("If-Match", etag)])
            #expect(first.status == 200)
            let stale = try await send(.PUT, "\(base)/posts/1", body: #"{"title": "theirs"}"#, headers: [("If-Match", etag)])
            #expect(stale.status == 412)
            #expect(try await send(.DELETE, "\(base)/posts/1", headers: [("If-Match", etag)]).status == 412)
            #expect(try await send(.GET, "\(base)/posts/1").json?["title"] == "mine")
            let current = try #require(first.header("ETag"))
            #expect(try await send(.DELETE, "\(base)/posts/1", headers: [("If-Match", current)]).status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func ifModifiedSinceAnswers304(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base async throws in
            let modified = try #require(try await send(.GET, "\(base)/posts").header("Last-Modified"))
            #expect(try await send(.GET, "\(base)/posts", headers: [("If-Modified-Since", modified)]).status == 304)
            // A write in the same second as the read must still move Last-Modified forward.
            #expect(try await send(.PATCH, "\(base)/posts/1", body: #"{"title": "fresh"}"#).status == 200)
            let list = try await send(.GET, "\(base)/posts", headers: [("If-Modified-Since", modified)])
            #expect(list.status == 200)
            #expect(list.json?[0]?["title"] == "fresh")
            let item = try await send(.GET, "\(base)/posts/1", headers: [("If-Modified-Since", modified)])
            #expect(item.status == 200)
            #expect(item.json?["title"] == "fresh")
            let earlier = "Sat, 01 Jan 2000 00:00:00 GMT"
            #expect(try await send(.GET, "\(base)/posts", headers: [("If-Modified-Since", earlier)]).status == 200)
        }
    }
}
