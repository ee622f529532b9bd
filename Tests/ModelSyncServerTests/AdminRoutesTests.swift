import AsyncHTTPClient
import Foundation
import NIOCore
import ModelSyncJSON
@testable import ModelSyncServer
import ModelSyncServerSQLite
import ModelSyncTesting
import Prometheus
import ServerTestSupport
import Testing

/// The routes behind the console beyond the data's own: an admin resets a password, reads the
/// metrics, the collections' counts, the open streams and the latest writes, and (SQLite)
/// downloads a backup. Admins only under access rules; without rules, this machine only.
@Suite struct AdminRoutesTests {
    static let admin = AccessTests.Who.admin.headers
    static let ann = AccessTests.Who.ann.headers

    // MARK: Passwords

    /// An admin sets a password without the current one; every session of the account ends, as
    /// when its user changes it.
    @Test(arguments: Backend.allCases) func anAdminResetsAPasswordAndTheAccountsSessionsEnd(backend: Backend) async throws {
        let accounts = AccountSecurityTests()
        try await accounts.withAccounts(backend) { _, base async throws in
            let phone = try await accounts.signIn(base, "/register", "ann@example.org")
            let laptop = try await accounts.signIn(base, "/login", "ann@example.org")
            let path = base + "/_accounts/\(phone.id)/password"
            let asOperator = try await AccountSecurityTests.operatorToken()
            #expect(try await send(.PUT, path, body: #"{"newPassword":"set by the admin"}"#).status == 401)
            #expect(try await send(.PUT, path, body: #"{"newPassword":"set by her own"}"#, headers: phone.bearer).status == 403)
            #expect(try await send(.PUT, path, body: #"{"newPassword":"x"}"#, headers: asOperator).status == 400)
            #expect(try await send(.PUT, path, body: #"{"password":"set by the admin"}"#, headers: asOperator).status == 400)
            #expect(try await send(.PUT, base + "/_accounts/999/password", body: #"{"newPassword":"set by the admin"}"#, headers: asOperator).status == 404)
            #expect(try await send(.GET, base + "/messages", headers: phone.bearer).status == 200)
            let reset = try await send(.PUT, path, body: #"{"newPassword":"set by the admin"}"#, headers: asOperator)
            #expect(reset.status == 204 && reset.body.isEmpty)
            for old in [phone, laptop] {
                #expect(try await send(.GET, base + "/messages", headers: old.bearer).status == 401)
                #expect(try await accounts.refresh(base, old.refreshToken).status == 401)
            }
            #expect(try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"long enough"}"#).status == 400)
            let again = try await accounts.signIn(base, "/login", "ann@example.org", password: "set by the admin")
            #expect(try await send(.GET, base + "/messages", headers: again.bearer).status == 200)
        }
    }

    // MARK: Metrics

    /// `/_metrics` is the admins' under access rules (a scraper sends an admin's token), and this
    /// machine's without rules, as the console.
    @Test func theMetricsAreForAdminsUnderRulesAndForThisMachineWithout() async throws {
        var options = try AccessTests.options()
        options.prometheus = PrometheusCollectorRegistry()
        try await withServer(AccessTests.data, options: options) { _, base in
            #expect(try await send(.GET, base + "/_metrics").status == 401)
            #expect(try await send(.GET, base + "/_metrics", headers: Self.ann).status == 403)
            let metrics = try await send(.GET, base + "/_metrics", headers: Self.admin)
            #expect(metrics.status == 200 && metrics.header("Content-Type")?.hasPrefix("text/plain") == true)
            #expect(try await send(.HEAD, base + "/_metrics").status == 401)
        }
        try await withServer(options: ServerOptions(prometheus: PrometheusCollectorRegistry())) { _, base in
            #expect(try await send(.GET, base + "/_metrics").status == 200)
            let elsewhere = try await send(.GET, base + "/_metrics", headers: [("Host", "metrics.example")])
            #expect(elsewhere.status == 403 && elsewhere.json?["error"]?.stringValue?.contains("loopback") == true)
        }
    }

    // MARK: Collections

    /// Each collection's rows, counted by the backend; the singular resources without a count.
    @Test(arguments: Backend.allCases) func theCollectionsAreCounted(backend: Backend) async throws {
        func counts(_ reply: Reply) -> [String: JSONValue] {
            var counts: [String: JSONValue] = [:]
            for entry in reply.json?["collections"]?.arrayValue ?? [] {
                if let name = entry["name"]?.stringValue { counts[name] = entry["rows"] ?? .null }
            }
            return counts
        }
        try await withServer(backend: backend) { _, base in
            let answer = try await send(.GET, base + "/_admin/collections")
            #expect(answer.status == 200)
            #expect(answer.json?["collections"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["comments", "posts", "profile", "users"])
            #expect(counts(answer) == ["comments": 3, "posts": 5, "profile": .null, "users": 2])
            #expect(answer.json?["collections"]?.arrayValue?.first { $0["name"] == "profile" }?["kind"] == "singular")
            #expect(try await send(.POST, base + "/posts", body: #"{"title": "sixth"}"#).status == 201)
            #expect(counts(try await send(.GET, base + "/_admin/collections"))["posts"] == 6)
            #expect(try await send(.HEAD, base + "/_admin/collections").body.isEmpty)
            #expect(try await send(.GET, base + "/_admin/collections", headers: [("Host", "evil.example")]).status == 403)
        }
        try await withServer(AccessTests.data, options: try AccessTests.options(), backend: backend) { _, base in
            #expect(try await send(.GET, base + "/_admin/collections").status == 401)
            #expect(try await send(.GET, base + "/_admin/collections", headers: Self.ann).status == 403)
            let answer = try await send(.GET, base + "/_admin/collections", headers: Self.admin)
            #expect(counts(answer) == ["comments": 1, "guestbook": 0, "messages": 2, "posts": 2, "profile": .null, "secrets": 1, "users": 2])
        }
    }

    // MARK: Sync

    /// The open streams say whose they are and what they follow, and leave the list when they
    /// end; the latest writes' answers, requests' and batches', say which were replays and
    /// conflicts.
    @Test(arguments: Backend.allCases) func theOpenStreamsAndTheLatestWritesAreListed(backend: Backend) async throws {
        var options = try AccessTests.options()
        options.keepAliveInterval = .milliseconds(50)
        try await withServer(AccessTests.data, options: options, backend: backend) { _, base in
            #expect(try await send(.GET, base + "/_admin/streams", headers: Self.ann).status == 403)
            #expect(try await send(.GET, base + "/_admin/writes").status == 401)
            do {
                var request = HTTPClientRequest(url: base + "/_changes/stream?collections=posts,comments")
                request.headers.add(name: "Authorization", value: "Bearer test:1:")
                let stream = try await HTTPClient.shared.execute(request, timeout: .minutes(5))
                #expect(stream.status == .ok)
                let open = try await send(.GET, base + "/_admin/streams", headers: Self.admin)
                let listed = try #require(open.json?["streams"]?.arrayValue)
                #expect(listed.count == 1)
                #expect(listed.first?["user"] == "1" && listed.first?["role"] == .null && listed.first?["collections"] == ["comments", "posts"])
                #expect(listed.first?["address"]?.stringValue.map(ConsolePolicy.isLoopback(address:)) == true)
                #expect(listed.first?["opened"]?.stringValue?.hasSuffix("Z") == true)
                // The client goes (the response dropped cancels it): the stream's next keep-alive
                // fails, and it leaves the list.
                for try await _ in stream.body { break }
            }
            var streamsLeft = 1
            for _ in 0..<600 where streamsLeft > 0 {
                streamsLeft = try await send(.GET, base + "/_admin/streams", headers: Self.admin).json?["streams"]?.arrayValue?.count ?? -1
                if streamsLeft > 0 { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(streamsLeft == 0)

            let key = [("Idempotency-Key", "ann-1")]
            let created = try await send(.POST, base + "/posts", body: #"{"title": "new"}"#, headers: Self.ann + key)
            #expect(created.status == 201)
            let id = try #require(created.json?["id"].flatMap(scalarText))
            #expect(try await send(.POST, base + "/posts", body: #"{"title": "new"}"#, headers: Self.ann + key).header("Idempotent-Replayed") == "true")
            #expect(try await send(.PATCH, base + "/posts/1", body: #"{"title": "late"}"#, headers: Self.ann + [("If-Match", #""999""#)]).status == 412)
            #expect(try await send(.POST, base + "/posts", body: #"{"id": 1, "title": "again"}"#, headers: Self.ann).status == 409)
            let batch = try await send(.POST, base + "/_batch", body: #"{"operations": [{"method": "DELETE", "path": "/posts/2"}]}"#, headers: Self.ann)
            #expect(batch.json?["results"]?.arrayValue?.first?["status"] == 403)

            let answer = try await send(.GET, base + "/_admin/writes", headers: Self.admin)
            #expect(answer.status == 200 && answer.json?["capacity"] == 200)
            let writes = try #require(answer.json?["writes"]?.arrayValue)
            #expect(writes.count == 5)
            let summary = writes.map { write in
                let flags = ["replayed", "conflict", "batch"].map { String(write[$0] == true) }
                return ([write["method"]?.stringValue ?? "-", write["id"]?.stringValue ?? "-", String(write["status"]?.intValue ?? 0)] + flags).joined(separator: " ")
            }
            #expect(summary == [
                "DELETE 2 403 false false true", "POST 1 409 false true false", "PATCH 1 412 false true false",
                "POST \(id) 201 true false false", "POST \(id) 201 false false false",
            ])
            #expect(writes.allSatisfy { $0["user"] == "1" && $0["collection"] == "posts" })
        }
    }

    /// At most `capacity` answers are kept, the oldest dropped first, and each is listed newest
    /// first.
    @Test func theLatestWritesAreBounded() {
        let activity = SyncActivity(capacity: 3)
        for id in 1...5 {
            let operation = ItemOperation(write: .delete(collection: "posts", id: String(id)))
            activity.record([operation], [.success(ItemWrite.Result(status: 200, body: ["id": .number(JSONNumber(id))]))], inBatch: false)
        }
        #expect(activity.recentWrites.map(\.id) == ["5", "4", "3"])
        let long = String(repeating: "x", count: 1_000)
        activity.record([ItemOperation(write: .delete(collection: long, id: long))], [.failure(APIError.notFound("gone"))], inBatch: true)
        let newest = activity.recentWrites[0]
        #expect(newest.collection.count == 201 && newest.id?.count == 201 && newest.status == 404 && newest.inBatch)
        #expect(activity.recentWrites.count == 3)
    }

    // MARK: Backups

    /// On SQLite an admin downloads one consistent copy of the database (a file a server
    /// serves again); the temporary copy is deleted once sent.
    @Test func anAdminDownloadsASQLiteBackup() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-backup")
        defer { directory.remove() }
        let database = directory.url.appendingPathComponent("data.sqlite")
        let server = try await TestServer.start(options: try AccessTests.options()) {
            try await SyncServer.start(data: AccessTests.data, sqlite: database.path, options: $0)
        }
        let base = server.baseURL.absoluteString
        do {
            #expect(try await send(.GET, base + "/_admin/backup").status == 401)
            #expect(try await send(.GET, base + "/_admin/backup", headers: Self.ann).status == 403)
            #expect(try await send(.POST, base + "/posts", body: #"{"title": "after the start"}"#, headers: Self.ann).status == 201)
            let backup = try await send(.GET, base + "/_admin/backup", headers: Self.admin)
            #expect(backup.status == 200 && backup.header("Content-Type") == "application/vnd.sqlite3")
            #expect(backup.header("Content-Disposition")?.hasPrefix(#"attachment; filename="modelsync-backup-"#) == true)
            #expect(backup.header("Content-Length") == String(backup.body.count))
            #expect(backup.body.starts(with: Array("SQLite format 3\u{0}".utf8)))
            let copy = directory.url.appendingPathComponent("copy.sqlite")
            try Data(backup.body).write(to: copy)
            let data = try await SyncServer.exportData(fromSQLite: copy.path)
            #expect(data["posts"]?.arrayValue?.count == 3 && data["profile"] == ["name": "the site"])
            // Deleted once its last byte is written, which may come just after the client has it.
            var left = ["?"]
            for _ in 0..<600 where !left.isEmpty {
                left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains(".backup-") }
                if !left.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(left.isEmpty)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// A copy that a server stopped while sending it left beside the file is removed when a server
    /// opens the file again.
    @Test func aBackupLeftByAStoppedServerIsRemovedAtTheNextStart() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-backup")
        defer { directory.remove() }
        let database = directory.url.appendingPathComponent("data.sqlite")
        let stale = directory.url.appendingPathComponent(".data.sqlite.backup-left-over")
        let other = directory.url.appendingPathComponent(".other.sqlite.backup-kept")
        for file in [stale, other] { try Data("x".utf8).write(to: file) }
        let server = try await SyncServer.start(data: AccessTests.data, sqlite: database.path)
        await server.shutdown()
        #expect(!FileManager.default.fileExists(atPath: stale.path))
        #expect(FileManager.default.fileExists(atPath: other.path))
    }

    /// The other backends make none: 404, after the caller's check.
    @Test(arguments: [Backend.jsonDocument, .postgres]) func otherBackendsMakeNoBackup(backend: Backend) async throws {
        try await withServer(backend: backend) { _, base in
            let answer = try await send(.GET, base + "/_admin/backup")
            #expect(answer.status == 404 && answer.json?["error"]?.stringValue?.contains("SQLite") == true)
            #expect(try await send(.GET, base + "/_admin/backup", headers: [("Host", "evil.example")]).status == 403)
        }
    }

    /// One backup at a time, and a download that stalls holds no named copy: while a client that
    /// stopped reading holds the first download open, the copy's name is gone from beside the
    /// file and another request is answered 503 with `Retry-After`; once that client goes, the
    /// next backup is made.
    @Test(.timeLimit(.minutes(10))) func oneBackupAtATimeAndAStalledOneLeavesNoCopy() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-backup")
        defer { directory.remove() }
        let database = directory.url.appendingPathComponent("data.sqlite")
        // About 20 MB: more than the sockets between server and client hold, so the server waits
        // on a client that reads no more.
        let filler = JSONValue.string(String(repeating: "x", count: 2_000))
        let data: JSONValue = ["notes": .array((1...10_000).map { ["id": .number(JSONNumber($0)), "text": filler] })]
        let server = try await TestServer.start(options: ServerOptions()) { try await SyncServer.start(data: data, sqlite: database.path, options: $0) }
        let base = server.baseURL.absoluteString
        func copies() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains(".backup-") } }
        do {
            let stalled = try await RawConnection.open(port: server.baseURL.port ?? 0)
            try await stalled.channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "GET /_admin/backup HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
                // Its head and the first bytes of the copy, then nothing more read.
                var (received, chunks) = ([UInt8](), inbound.makeAsyncIterator())
                func bodyBegun() -> Bool { received.firstRange(of: Array("\r\n\r\n".utf8)).map { $0.upperBound < received.count } ?? false }
                while !bodyBegun(), let chunk = try await chunks.next() { received += chunk.readableBytesView }
                #expect(String(decoding: received.prefix(12), as: UTF8.self) == "HTTP/1.1 200")
                #expect(try copies().isEmpty)
                let second = try await send(.GET, base + "/_admin/backup")
                #expect(second.status == 503 && second.header("Retry-After") != nil && second.json?["error"]?.stringValue?.contains("backup") == true)
            }
            // That client gone, its download ends, and the next one is made (read whole here:
            // larger than the test client's answers).
            var answer = ""
            for _ in 0..<600 where !answer.hasPrefix("HTTP/1.1 200") {
                answer = try await RawConnection.open(port: server.baseURL.port ?? 0)
                    .exchange(head: "GET /_admin/backup HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                if !answer.hasPrefix("HTTP/1.1 200") { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(answer.hasPrefix("HTTP/1.1 200") && answer.utf8.count > 16_000_000)
            #expect(try copies().isEmpty)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// Without access rules, a proxy on this machine does not pass the loopback check: a request
    /// that says it was forwarded is refused by the console and the admin routes.
    @Test func aForwardedRequestIsNoLoopbackRequest() async throws {
        try await withServer(options: ServerOptions()) { _, base in
            #expect(try await send(.GET, base + "/_console").status == 200)
            #expect(try await send(.GET, base + "/_admin/collections").status == 200)
            for header in [("X-Forwarded-For", "203.0.113.9"), ("Forwarded", "for=203.0.113.9;proto=https")] {
                for path in ["/_console", "/_admin/collections", "/_admin/backup"] {
                    let refused = try await send(.GET, base + path, headers: [header])
                    #expect(refused.status == 403 && refused.json?["error"]?.stringValue?.contains("Forwarded") == true, "\(header.0) \(path)")
                }
            }
        }
    }
}
