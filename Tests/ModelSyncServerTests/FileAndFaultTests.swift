import AsyncHTTPClient
import Foundation
import ModelSyncJSON
@testable import ModelSyncServer
import ModelSyncTesting
import ServerTestSupport
import Testing

@Suite("The database file: saved atomically, never corrupted")
struct FileTests {
    private let contents = #"{"posts": [{"id": 1, "title": "one"}], "profile": {"name": "me"}}"#

    @Test func writesAreSavedToTheFile() async throws {
        try await withDatabaseFile(contents) { file async throws in
            let server = try await TestServer.start(file: file)
            let reply = try await send(.POST, "\(server.baseURL)/posts", body: #"{"title": "two"}"#)
            await server.shutdown()
            #expect(reply.status == 201)
            let saved = try JSONValue(parsing: Array(try Data(contentsOf: file)))
            #expect(saved["posts"]?[1] == ["id": 2, "title": "two"])
            #expect(saved["profile"] == ["name": "me"])
            // Only db.json is left: the temporary file was renamed over it.
            let names = try FileManager.default.contentsOfDirectory(atPath: file.deletingLastPathComponent().path)
            #expect(names == ["db.json"])
        }
    }

    @Test func badRequestsLeaveTheFileUntouched() async throws {
        try await withDatabaseFile(contents) { file async throws in
            let server = try await TestServer.start(file: file)
            let base = server.baseURL.absoluteString
            #expect(try await send(.POST, "\(base)/posts", body: "{oops").status == 400)
            #expect(try await send(.PUT, "\(base)/posts/1", body: #"{"id": 9}"#).status == 400)
            #expect(try await send(.DELETE, "\(base)/posts/7").status == 404)
            await server.shutdown()
            #expect(String(decoding: try Data(contentsOf: file), as: UTF8.self) == contents)
        }
    }

    @Test func aFailedSaveChangesNothing() async throws {
        try await withDatabaseFile(contents) { file async throws in
            let server = try await TestServer.start(file: file)
            // The directory is moved away while the request runs: the save fails (even for root),
            // and the data stays as it was.
            let directory = file.deletingLastPathComponent()
            let away = directory.appendingPathExtension("away")
            try FileManager.default.moveItem(at: directory, to: away)
            let reply = try await send(.POST, "\(server.baseURL)/posts", body: #"{"title": "two"}"#)
            try FileManager.default.moveItem(at: away, to: directory)
            let data = try await server.data
            await server.shutdown()
            #expect(reply.status == 500)
            #expect(reply.json?["error"] != nil)
            // The cause goes to the log; the client learns no path of the server's.
            #expect(!String(decoding: reply.body, as: UTF8.self).contains(directory.lastPathComponent))
            #expect(data["posts"]?.arrayValue?.count == 1)
            #expect(String(decoding: try Data(contentsOf: file), as: UTF8.self) == contents)
        }
    }

    @Test func concurrentWritesAreSavedTogetherAndLoseNothing() async throws {
        try await withDatabaseFile(contents) { file async throws in
            let server = try await TestServer.start(file: file)
            let base = server.baseURL.absoluteString
            // 24 writers at once: most arrive while another save runs and are saved with the next.
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for writer in 0..<24 {
                    group.addTask {
                        let created = try await send(.POST, "\(base)/posts", body: #"{"title": "w\#(writer)"}"#)
                        let edited = try await send(.PATCH, "\(base)/profile", body: #"{"w\#(writer)": true}"#)
                        return [created.status, edited.status]
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let served = try await server.data
            await server.shutdown()
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 201 })
            #expect(served["posts"]?.arrayValue?.count == 25)
            #expect(served["profile"]?.objectValue?.count == 25)
            // What a new server loads from the file is what the first one served.
            let reloaded = try await TestServer.start(file: file)
            let loaded = try await reloaded.data
            await reloaded.shutdown()
            #expect(loaded == served)
        }
    }

    @Test func aFailedSaveFailsEveryWriteItHeld() async throws {
        try await withDatabaseFile(contents) { file async throws in
            let server = try await TestServer.start(file: file)
            let base = server.baseURL.absoluteString
            let directory = file.deletingLastPathComponent()
            let away = directory.appendingPathExtension("away")
            try FileManager.default.moveItem(at: directory, to: away)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<8 {
                    group.addTask { try await send(.POST, "\(base)/posts", body: #"{"title": "w\#(writer)"}"#).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            try FileManager.default.moveItem(at: away, to: directory)
            // None was kept, so none took an id: the next create gets 2.
            let next = try await send(.POST, "\(base)/posts", body: #"{"title": "two"}"#)
            await server.shutdown()
            #expect(statuses == Array(repeating: 500, count: 8))
            #expect(next.json?["id"] == 2)
        }
    }

    @Test func readOnlyNeverWritesTheFile() async throws {
        try await withDatabaseFile(contents) { file async throws in
            let server = try await TestServer.start(file: file, options: ServerOptions(readOnly: true))
            #expect(try await send(.PATCH, "\(server.baseURL)/profile", body: "{}").status == 405)
            await server.shutdown()
            #expect(String(decoding: try Data(contentsOf: file), as: UTF8.self) == contents)
        }
    }

    @Test func unreadableFilesAreReported() async throws {
        try await withDatabaseFile("[1, 2]") { file async throws in
            await #expect(throws: ServerError.notAnObject) { try await TestServer.start(file: file) }
            try Data("{broken".utf8).write(to: file)
            await #expect(throws: ServerError.self) { try await TestServer.start(file: file) }
            let missing = file.deletingLastPathComponent().appendingPathComponent("missing.json")
            await #expect(throws: ServerError.self) { try await TestServer.start(file: missing) }
        }
    }
}

@Suite("Fault injection, delay and request log")
struct FaultTests {
    @Test func statusFaultsAnswerTheNextRequests() async throws {
        try await withServer { server, base async throws in
            server.inject(Fault(.status(503, retryAfter: 2), times: 2))
            let first = try await send(.GET, "\(base)/posts/1")
            #expect(first.status == 503)
            #expect(first.header("Retry-After") == "2")
            #expect(try await send(.GET, "\(base)/posts/1").status == 503)
            #expect(try await send(.GET, "\(base)/posts/1").status == 200)
        }
    }

    @Test func fractionsPickAShareOfRequests() async throws {
        try await withServer { server, base async throws in
            server.inject(Fault(.status(500), fraction: 0))
            #expect(try await send(.GET, "\(base)/posts").status == 200)
            server.clearFaults()
            server.inject(Fault(.status(502), fraction: 1))
            #expect(try await send(.GET, "\(base)/posts").status == 502)
            #expect(try await send(.GET, "\(base)/posts").status == 502)
        }
    }

    @Test func droppedConnectionsFailTheClient() async throws {
        try await withServer { server, base async throws in
            server.inject(Fault(.dropConnection))
            await #expect(throws: (any Error).self) { try await send(.GET, "\(base)/posts") }
            #expect(try await send(.GET, "\(base)/posts").status == 200)
        }
    }

    @Test func delayOutlastsAShortClientTimeout() async throws {
        try await withServer(delay: .milliseconds(500)) { server, base async throws in
            await #expect(throws: HTTPClientError.deadlineExceeded) {
                try await send(.GET, "\(base)/posts", timeout: .milliseconds(50))
            }
            server.setDelay(.zero)
            #expect(try await send(.GET, "\(base)/posts").status == 200)
        }
    }

    @Test func requestsAreRecorded() async throws {
        try await withServer { server, base async throws in
            _ = try await send(.GET, "\(base)/posts?_page=2", headers: [("X-Trace", "abc")])
            let request = try #require(server.recordedRequests.last)
            #expect(request.method == "GET")
            #expect(request.uri == "/posts?_page=2")
            #expect(request.header("x-trace") == "abc")
            server.clearRecordedRequests()
            #expect(server.recordedRequests.isEmpty)
        }
    }

    /// Past its limit the log keeps the newest requests, across the trims that keep it short; a
    /// limit of 0 or less records nothing, and `Int.max` records without overflowing.
    @Test(arguments: [3, 1, 0, -2, Int.max])
    func theRequestLogKeepsTheNewest(limit: Int) async throws {
        try await withServer(requestLogLimit: limit) { server, base async throws in
            for page in 1...8 { _ = try await send(.GET, "\(base)/posts?_page=\(page)") }
            let kept = min(max(limit, 0), 8)
            #expect(server.recordedRequests.map(\.uri) == (9 - kept..<9).map { "/posts?_page=\($0)" })
        }
    }

    /// The log never holds more than twice its limit, however many requests it records, and its
    /// entries are always the newest `limit`, in order.
    @Test(arguments: [1, 3, 1_000])
    func theRequestLogStaysBounded(limit: Int) {
        var log = RequestLog(limit: limit)
        var held = 0
        for index in 0..<10_000 {
            log.append(RecordedRequest(method: "GET", uri: "/\(index)", headers: []))
            held = max(held, log.recorded.count)
        }
        #expect(held <= 2 * limit)
        #expect(log.entries.map(\.uri) == (10_000 - limit..<10_000).map { "/\($0)" })
    }

    @Test func shutdownStopsListening() async throws {
        let server = try await TestServer.start(data: sampleData)
        let base = server.baseURL.absoluteString
        #expect(try await send(.GET, "\(base)/posts").status == 200)
        await server.shutdown()
        await server.shutdown()
        await #expect(throws: (any Error).self) { try await send(.GET, "\(base)/posts", timeout: .seconds(2)) }
    }
}
