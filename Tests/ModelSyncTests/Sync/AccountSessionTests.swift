import Foundation
@testable import ModelSync
import ModelSyncCore
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncTesting
import Testing

/// `AccountSession` against the bundled server in-process over loopback: sign-in, tokens in
/// the storage, refreshes before expiry and after a 401 (one for concurrent requests), the end of
/// a session whose refresh is refused, and a `SyncStore` that follows it.
@Suite struct AccountSessionTests {
    static let rules: JSONValue = ["notes": 600, "replies": 600]

    /// Tokens `s:<user>:<role>:<serial>` whose lifetime the test picks, and which the test can
    /// make the server refuse (``revokeIssued()``): a 401 on demand, no clock involved.
    final class SerialTokens: AccessTokenVerifier, AccessTokenIssuer {
        let lifetime: Duration
        private let counters = Locked((next: 1, minimum: 1))
        init(lifetime: Duration) { self.lifetime = lifetime }

        var accessTokenLifetime: Duration? { lifetime }

        func accessToken(for userID: String, role: String?) async throws -> String {
            let serial = counters.withLock { counters in
                defer { counters.next += 1 }
                return counters.next
            }
            return "s:\(userID):\(role ?? ""):\(serial)"
        }

        func caller(for token: String) async throws -> Caller {
            let parts = token.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 4, parts[0] == "s", let serial = Int(parts[3]) else { throw AccessTokenError.malformed }
            guard serial >= counters.withLock({ $0.minimum }) else { throw AccessTokenError.expired }
            return Caller(userID: String(parts[1]), role: parts[2].isEmpty ? nil : String(parts[2]))
        }

        /// Every token issued so far is refused from now on.
        func revokeIssued() {
            counters.withLock { $0.minimum = $0.next }
        }
    }

    struct PlainPasswords: PasswordHasher {
        func hash(_ password: String) async throws -> String { "plain:" + password }
        func verify(_ password: String, against hash: String) async throws -> Bool { hash == "plain:" + password }
    }

    /// Sends through AsyncHTTPClient, counting the session's refreshes; can fail the next
    /// refreshes without reaching the server, and hold them until the test lets them go.
    final class WatchedTransport: HTTPTransport {
        private let inner = AsyncHTTPClientTransport()
        private let state = Locked((refreshes: 0, failures: 0, held: false, statuses: [(path: String, status: Int)]()))
        /// Runs after every refresh's answer (e.g. to make the server refuse what it just issued).
        let afterRefresh = Locked<(@Sendable () -> Void)?>(nil)
        private let gate = Gate()
        let answers = AsyncStream<Int>.makeStream()

        var refreshes: Int { state.withLock { $0.refreshes } }
        /// The statuses answered to requests whose path starts with `path`, in order.
        func statuses(_ path: String) -> [Int] { state.withLock { $0.statuses.filter { $0.path.hasPrefix(path) }.map(\.status) } }
        func failNextRefresh() { state.withLock { $0.failures += 1 } }
        func holdRefreshes() { state.withLock { $0.held = true } }
        func releaseRefreshes() async { await gate.open() }

        func send(_ request: RemoteRequest) async throws -> RemoteResponse {
            if request.url.path.hasSuffix("/token") {
                let (fail, held) = state.withLock { state -> (Bool, Bool) in
                    state.refreshes += 1
                    defer { if state.failures > 0 { state.failures -= 1 } }
                    return (state.failures > 0, state.held)
                }
                if fail { throw RemoteError.transport(TransportFailure(request: RequestSummary(request), reason: "injected")) }
                if held { await gate.wait() }
            }
            let response = try await inner.send(request)
            if request.url.path.hasSuffix("/token"), let hook = afterRefresh.withLock({ $0 }) { hook() }
            state.withLock { $0.statuses.append((request.url.path, response.status)) }
            answers.continuation.yield(response.status)
            return response
        }
    }

    /// Closed until opened; then every waiter goes on.
    actor Gate {
        private var isOpen = false
        private var waiters: [CheckedContinuation<Void, Never>] = []
        func wait() async {
            guard !isOpen else { return }
            await withCheckedContinuation { waiters.append($0) }
        }
        func open() {
            isOpen = true
            for waiter in waiters { waiter.resume() }
            waiters = []
        }
    }

    struct Fixture {
        var server: TestServer
        var tokens: SerialTokens
        var transport: WatchedTransport
        var storage: InMemorySessionTokenStorage
        var session: AccountSession
        var remote: RemoteStore
        var directory: TemporaryDirectory
    }

    func withFixture(
        lifetime: Duration = .seconds(3600), issuer: (any AccessTokenIssuer & AccessTokenVerifier)? = nil,
        passwords: any PasswordHasher = PlainPasswords(), _ body: (Fixture) async throws -> Void
    ) async throws {
        let tokens = SerialTokens(lifetime: lifetime)
        let access = AccessControl(
            rules: try AccessRules(json: Self.rules), tokens: issuer ?? tokens,
            accounts: BuiltInAccounts(issuer: issuer ?? tokens, passwords: passwords, refreshTokens: RefreshTokenPolicy(digest: SHA256TokenDigest())))
        let directory = try TemporaryDirectory(prefix: "modelsync-session")
        defer { directory.remove() }
        try await withTestServer(data: ["notes": [], "replies": [], "users": []], options: ServerOptions(access: access)) { server in
            let transport = WatchedTransport()
            let storage = InMemorySessionTokenStorage()
            let session = AccountSession(baseURL: server.baseURL, transport: transport, storage: storage)
            var options = RemoteStore.Options()
            options.interceptors.append(session)
            let remote = RemoteStore(baseURL: server.baseURL, transport: transport, options: options)
            try await body(Fixture(server: server, tokens: tokens, transport: transport, storage: storage, session: session, remote: remote, directory: directory))
        }
    }

    /// The error `body` throws, as a `RemoteError`.
    func remoteError(_ body: () async throws -> Void) async -> RemoteError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? RemoteError
        }
    }

    func authorization(_ server: TestServer, _ path: String) -> [String?] {
        server.recordedRequests.filter { $0.uri.hasPrefix(path) }.map { $0.header("Authorization") }
    }

    @Test func aSignedInSessionAuthorizesRequestsAndKeepsItsTokens() async throws {
        try await withFixture { f in
            let events = f.session.events()
            #expect(try await f.session.restore() == .signedOut)
            let user = try await f.session.register(email: "ann@example.org", password: "long enough", profile: ["name": "Ann"])
            let id = try #require(user["id"]?.intValue)
            #expect(f.session.state == .signedIn(userID: String(id)))
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == .signedIn(userID: String(id)))
            let stored = try #require(await f.storage.loadTokens())
            #expect(stored.accessToken.hasPrefix("s:\(id)::") && stored.refreshToken != nil && stored.expiresAt != nil)

            var note = SyncNote(id: nil, title: "mine")
            try await f.remote.save(&note)
            #expect(authorization(f.server, "/notes").last == "Bearer \(stored.accessToken)")
            #expect(try await f.remote.list(SyncNote.self).map(\.title) == ["mine"])
            // Another session over the same storage is signed in without signing in.
            let again = AccountSession(baseURL: f.server.baseURL, storage: f.storage)
            #expect(try await again.restore() == .signedIn(userID: String(id)))
            // Without the session, the notes are closed.
            let error = await remoteError { _ = try await RemoteStore(baseURL: f.server.baseURL).list(SyncNote.self) }
            #expect(error?.status == 401)
        }
    }

    @Test func aRefreshComesBeforeARequestWhoseTokenIsAboutToExpire() async throws {
        try await withFixture(lifetime: .seconds(10)) { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let first = try #require(f.session.tokens)
            _ = try await f.remote.list(SyncNote.self)
            #expect(f.transport.refreshes == 1)
            let refreshed = try #require(f.session.tokens)
            #expect(refreshed.accessToken != first.accessToken && refreshed.refreshToken != first.refreshToken)
            #expect(authorization(f.server, "/notes").last == "Bearer \(refreshed.accessToken)")
            #expect(await f.storage.loadTokens() == refreshed)
        }
    }

    @Test func a401RefreshesOnceAndSendsTheRequestAgain() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.tokens.revokeIssued()
            #expect(try await f.remote.list(SyncNote.self).isEmpty)
            #expect(f.transport.refreshes == 1)
            let sent = authorization(f.server, "/notes")
            #expect(sent.count == 2 && sent[0] != sent[1])
            #expect(f.transport.statuses("/notes") == [401, 200])
        }
    }

    @Test func a401OnTheResendRefreshesNoMore() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.tokens.revokeIssued()
            // The refreshed token is refused too (an account gone, a key rotated).
            let tokens = f.tokens
            f.transport.afterRefresh.withLock { $0 = { tokens.revokeIssued() } }
            let error = await remoteError { _ = try await f.remote.list(SyncNote.self) }
            #expect(error?.status == 401)
            #expect(f.transport.statuses("/notes") == [401, 401])
            #expect(f.transport.refreshes == 1)
        }
    }

    @Test func concurrentRequestsShareOneRefresh() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.tokens.revokeIssued()
            f.transport.holdRefreshes()
            var answers = f.transport.answers.stream.makeAsyncIterator()
            async let first = f.remote.list(SyncNote.self)
            async let second = f.remote.list(SyncNote.self)
            // Both requests are refused before the refresh may go on.
            var refused = 0
            while refused < 2, let status = await answers.next() { if status == 401 { refused += 1 } }
            await f.transport.releaseRefreshes()
            _ = try await (first, second)
            #expect(f.transport.refreshes == 1)
            // Each request refused once, then answered (304 when the other's answer is cached by then).
            let statuses = f.transport.statuses("/notes")
            #expect(statuses.count == 4 && statuses.filter { $0 == 401 }.count == 2 && statuses.allSatisfy { [200, 304, 401].contains($0) })
        }
    }

    @Test func aRefusedRefreshEndsTheSession() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let events = f.session.events()
            // Signed out elsewhere (the family is revoked): the next refresh is refused.
            let refreshToken = try #require(f.session.tokens?.refreshToken)
            _ = try await f.transport.send(RemoteRequest(
                method: .post, url: f.server.baseURL.appendingPathComponent("logout"), headers: ["Content-Type": "application/json"],
                body: JSONValue.object(["refreshToken": .string(refreshToken)]).jsonBytes()))
            await #expect(throws: AccountSessionError.refreshRefused(status: 401, message: "the refresh token is unknown, expired or revoked; sign in again")) {
                try await f.session.refresh()
            }
            #expect(f.session.state == .signedOut)
            #expect(await f.storage.loadTokens() == nil)
            var iterator = events.makeAsyncIterator()
            if case .signedOut(let error)? = await iterator.next() { #expect(error != nil) } else { Issue.record("no sign-out event") }
            await #expect(throws: AccountSessionError.notSignedIn) { try await f.session.refresh() }
            // Requests go without a token now.
            let error = await remoteError { _ = try await f.remote.list(SyncNote.self) }
            #expect(error?.status == 401 && authorization(f.server, "/notes").last == .some(nil))
        }
    }

    /// The refresh's answer is lost: the tokens are kept, and the next refresh sends the same
    /// refresh token, which the server answers with the same successor: still signed in.
    @Test func aLostRefreshAnswerKeepsTheSession() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.server.inject(Fault(.loseAnswer))
            await #expect(throws: (any Error).self) { try await f.session.refresh() }
            try await f.session.refresh()
            #expect(f.session.state != .signedOut)
            try await f.session.refresh()
            f.tokens.revokeIssued()
            #expect(try await f.remote.list(SyncNote.self).isEmpty)
        }
    }

    @Test func aSyncStorePausedBy401ResumesOnceTheSessionRefreshes() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let database = try Database(path: f.directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
            let sync = SyncStore(remote: f.remote, database: database, models: [SyncNote.self, SyncReply.self])
            sync.use(f.session)
            // The token is refused and the refresh after the 401 cannot reach the server.
            f.tokens.revokeIssued()
            f.transport.failNextRefresh()
            var note = SyncNote(id: nil, title: "offline")
            try await sync.save(&note)
            await #expect(throws: SyncError.paused(status: 401)) { try await sync.push() }
            #expect(try await sync.status().isPaused)
            sync.startAutomaticPush()
            var updates = sync.statusUpdates().makeAsyncIterator()
            try await f.session.refresh()
            while let status = await updates.next(), status.isPaused || status.pendingCount > 0 {}
            #expect(try await f.server.data["notes"]?.arrayValue?.compactMap { $0["title"]?.stringValue } == ["offline"])
            sync.stopAutomaticPush()
        }
    }

    /// Another user's sign-in leaves a paused outbox paused: its changes are the last user's.
    @Test func onlyTheSameUsersSignInResumesTheOutbox() {
        var lastUser: String? = nil
        #expect(SyncStore.resumes(after: .signedIn(userID: "1"), lastUser: &lastUser))
        #expect(SyncStore.resumes(after: .refreshed(userID: "1"), lastUser: &lastUser))
        #expect(!SyncStore.resumes(after: .signedOut(nil), lastUser: &lastUser))
        #expect(SyncStore.resumes(after: .signedIn(userID: "1"), lastUser: &lastUser))
        #expect(!SyncStore.resumes(after: .signedIn(userID: "2"), lastUser: &lastUser))
        #expect(lastUser == "2")
    }

    @Test func signingOutClearsTheLocalDataAndRevokesTheTokens() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let database = try Database(path: f.directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
            let sync = SyncStore(remote: f.remote, database: database, models: [SyncNote.self, SyncReply.self])
            var pushed = SyncNote(id: nil, title: "pushed")
            try await sync.save(&pushed)
            try await sync.push()
            _ = try await sync.pull(SyncNote.self)
            var pending = SyncNote(id: nil, title: "pending")
            try await sync.save(&pending)
            let refreshToken = try #require(f.session.tokens?.refreshToken)
            try await sync.signOut(f.session)

            #expect(f.session.state == .signedOut)
            let kept = await f.storage.loadTokens()
            #expect(kept == nil)
            #expect(try await database.read { db in try SyncNote.all(db) }.isEmpty)
            #expect(try await sync.status().pendingCount == 0)
            let leftovers = try await database.read { db in
                try ["modelsync_outbox", "modelsync_row_versions", "modelsync_cursors", "modelsync_key_rewrites"].map { table in
                    try db.scalar("SELECT count(*) FROM \(table)")
                }
            }
            #expect(leftovers.allSatisfy { $0 == .integer(0) })
            // The server revoked the refresh token.
            let answer = try await f.transport.send(RemoteRequest(
                method: .post, url: f.server.baseURL.appendingPathComponent("token"), headers: ["Content-Type": "application/json"],
                body: JSONValue.object(["refreshToken": .string(refreshToken)]).jsonBytes()))
            #expect(answer.status == 401)
        }
    }

    /// JWTs end to end: jwt-kit signs, the session reads `expiresIn`, and a token that expires
    /// within the margin is refreshed before use.
    @Test func jwtTokensEndToEnd() async throws {
        let jwt = try await JWTAccessTokens(secret: Data("a test secret of at least thirty-two bytes".utf8), lifetime: .seconds(20), leeway: .zero)
        try await withFixture(issuer: jwt, passwords: try BcryptPasswordHasher(cost: BcryptPasswordHasher.minimumCost)) { f in
            let user = try await f.session.register(email: "jo@example.org", password: "correct horse")
            let tokens = try #require(f.session.tokens)
            #expect(tokens.userID == user["id"].flatMap { $0.intValue.map(String.init) })
            let expiresAt = try #require(tokens.expiresAt)
            #expect(expiresAt > Date() && expiresAt <= Date().addingTimeInterval(21))
            var note = SyncNote(id: nil, title: "signed")
            try await f.remote.save(&note)
            // Twenty seconds to live, thirty of margin: refreshed before the request.
            #expect(f.transport.refreshes == 1)
            #expect(try await f.remote.list(SyncNote.self).map(\.title) == ["signed"])
            await f.session.signOut()
            let error = await remoteError { _ = try await f.remote.list(SyncNote.self) }
            #expect(error?.status == 401)
        }
    }

    // MARK: README, "Users and access"

    @Model
    struct Note: SQLModel {
        var id: Int?
        var title: String
    }

    @Test func readmeUsersAndAccessExample() async throws {
        try await withFixture { f in
            try await f.session.register(email: "ann@example.com", password: "correct horse")
            let (url, directory) = (f.server.baseURL, f.directory.url)
            let db = try Database(path: directory.appendingPathComponent("app.sqlite").path, models: [Note.self])

            let session = AccountSession(baseURL: url, storage: InMemorySessionTokenStorage())  // a Keychain-backed storage in an app
            var options = RemoteStore.Options()
            options.interceptors.append(session)                  // Authorization: Bearer …, refreshed in time
            let sync = SyncStore(remote: RemoteStore(baseURL: url, options: options), database: db, models: [Note.self])
            sync.use(session)                                     // a push paused by a 401 resumes after the next refresh

            try await session.logIn(email: "ann@example.com", password: "correct horse")
            var note = Note(id: nil, title: "Mine")
            try await sync.save(&note)
            try await sync.push()
            let events = session.events()                         // .signedIn, .refreshed, .signedOut(error)

            try await sync.signOut(session)                       // revokes the refresh token; clears the synced
                                                                  // tables, outbox, cursors and row versions
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == .signedOut(nil))
            #expect(try await f.server.data["notes"]?.arrayValue?.count == 1)
            #expect(try await db.read { db in try Note.all(db) }.isEmpty)

            let userID = session.tokens?.userID ?? "signed-out"
            let perUser = try Database(path: directory.appendingPathComponent("\(userID).sqlite").path, models: [Note.self])
            #expect(try await perUser.read { db in try Note.all(db) }.isEmpty)
        }
    }
}

extension AccountSessionTests.Note: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}
