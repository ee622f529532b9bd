import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import Testing

/// The transport seam: delivers every request to the server, but loses the response of the
/// first `POST` (as a dropped connection after the server committed).
private final class LosesFirstCreateResponse: HTTPTransport {
    struct LostResponse: Error {}
    private let real = AsyncHTTPClientTransport()
    private let lost = Locked(false)

    func send(_ request: RemoteRequest) async throws -> RemoteResponse {
        let response = try await real.send(request)
        if request.method == .post, lost.withLock({ lost in defer { lost = true }; return !lost }) { throw LostResponse() }
        return response
    }
}

@Suite struct IdempotencyTests {
    @Test func theServerAnswersARepeatedKeyWithTheFirstResponse() async throws {
        try await withTestServer(data: ["notes": []]) { server in
            let api = RemoteStore(baseURL: server.baseURL)
            let url = try await api.resourceURL(for: SyncNote.self)
            var headers = HeaderFields()
            headers["Idempotency-Key"] = "key-1"
            let request = RemoteRequest(method: .post, url: url, body: Array(#"{"title":"once"}"#.utf8))
            let first = try await api.send(request, options: RequestOptions(headers: headers))
            let second = try await api.send(request, options: RequestOptions(headers: headers))
            #expect(first.status == 201 && second.status == 201)
            #expect(try JSONValue(parsing: first.body) == JSONValue(parsing: second.body))
            #expect(second.headers["Idempotent-Replayed"] == "true")
            #expect(try await serverRecords(server, "notes").count == 1)

            // The same key with another body is refused; a key differing only in its bytes
            // (NFC "é" against NFD "e\u{301}") is another key.
            let other = RemoteRequest(method: .post, url: url, body: Array(#"{"title":"twice"}"#.utf8))
            await #expect(throws: RemoteError.self) { try await api.send(other, options: RequestOptions(headers: headers)) }
            headers["Idempotency-Key"] = "caf\u{E9}"
            _ = try await api.send(request, options: RequestOptions(headers: headers))
            headers["Idempotency-Key"] = "cafe\u{301}"
            _ = try await api.send(request, options: RequestOptions(headers: headers))
            #expect(try await serverRecords(server, "notes").count == 3)
        }
    }

    @Test func aCreateWhoseResponseWasLostIsNotDuplicated() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sync")
        defer { directory.remove() }
        try await withTestServer(data: ["notes": []]) { server in
            let database = try Database(path: directory.path("app.sqlite"), models: [SyncNote.self])
            let remote = RemoteStore(baseURL: server.baseURL, transport: LosesFirstCreateResponse())
            let sync = SyncStore(remote: remote, database: database, models: [SyncNote.self])
            var note = SyncNote(id: nil, title: "exactly once")
            try await sync.save(&note)
            await #expect(throws: SyncError.self) { try await sync.push() }
            #expect(try await serverRecords(server, "notes").count == 1)
            try await sync.push()
            #expect(try await serverRecords(server, "notes").count == 1)
            let rows = try await database.read { db in try SyncNote.all(db) }
            #expect(rows.map(\.id) == [1])
            #expect(writeRequests(server).filter { $0.method == "POST" }.count == 2)
        }
    }
}
