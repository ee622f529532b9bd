import Foundation
import ModelSyncCore
import ModelSyncRemote
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncTesting

// What the tests of `AccountSession` (ModelSyncRemoteTests) and of a `SyncStore` that follows a
// session (ModelSyncTests) share: the bundled server with built-in accounts in-process, tokens
// the test can revoke, a transport that counts and holds refreshes.

/// The access rules of the session tests' server: `notes` and `replies` are their owners'.
package let sessionRules: JSONValue = ["notes": 600, "replies": 600]

/// A note as the session tests read and write it over REST.
@Model
package struct SessionNote: Equatable {
    package var id: Int?
    package var title: String

    package init(id: Int?, title: String) {
        (self.id, self.title) = (id, title)
    }
}

extension SessionNote: RemoteResource {
    package static let remote = RemoteConfiguration(path: "notes")
}

/// Tokens `s:<user>:<role>:<serial>` whose lifetime the test picks, and which the test can
/// make the server refuse (``revokeIssued()``): a 401 on demand, no clock involved.
package final class SerialTokens: AccessTokenVerifier, AccessTokenIssuer {
    package let lifetime: Duration
    private let counters = Locked((next: 1, minimum: 1))
    package init(lifetime: Duration) { self.lifetime = lifetime }

    package var accessTokenLifetime: Duration? { lifetime }

    package func accessToken(for userID: String, role: String?) async throws -> String {
        let serial = counters.withLock { counters in
            defer { counters.next += 1 }
            return counters.next
        }
        return "s:\(userID):\(role ?? ""):\(serial)"
    }

    package func caller(for token: String) async throws -> Caller {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "s", let serial = Int(parts[3]) else { throw AccessTokenError.malformed }
        guard serial >= counters.withLock({ $0.minimum }) else { throw AccessTokenError.expired }
        return Caller(userID: String(parts[1]), role: parts[2].isEmpty ? nil : String(parts[2]))
    }

    /// Every token issued so far is refused from now on.
    package func revokeIssued() {
        counters.withLock { $0.minimum = $0.next }
    }
}

package struct PlainPasswords: PasswordHasher {
    package init() {}
    package func hash(_ password: String) async throws -> String { "plain:" + password }
    package func verify(_ password: String, against hash: String) async throws -> Bool { hash == "plain:" + password }
}

/// Sends through AsyncHTTPClient, counting the session's refreshes; can fail the next
/// refreshes without reaching the server, and hold them until the test lets them go.
package final class WatchedTransport: HTTPTransport {
    private let inner = AsyncHTTPClientTransport()
    private let state = Locked((refreshes: 0, failures: 0, held: false, statuses: [(path: String, status: Int)]()))
    /// Runs after every refresh's answer (e.g. to make the server refuse what it just issued).
    package let afterRefresh = Locked<(@Sendable () -> Void)?>(nil)
    private let gate = Gate()
    package let answers = AsyncStream<Int>.makeStream()

    package var refreshes: Int { state.withLock { $0.refreshes } }
    /// The statuses answered to requests whose path starts with `path`, in order.
    package func statuses(_ path: String) -> [Int] { state.withLock { $0.statuses.filter { $0.path.hasPrefix(path) }.map(\.status) } }
    package func failNextRefresh() { state.withLock { $0.failures += 1 } }
    package func holdRefreshes() { state.withLock { $0.held = true } }
    package func releaseRefreshes() async { await gate.open() }

    package func send(_ request: RemoteRequest) async throws -> RemoteResponse {
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
package actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    package func wait() async {
        guard !isOpen else { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    package func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

package struct SessionFixture {
    package var server: TestServer
    package var tokens: SerialTokens
    package var transport: WatchedTransport
    package var storage: InMemorySessionTokenStorage
    package var session: AccountSession
    package var remote: RemoteStore
    package var directory: TemporaryDirectory
}

package func withSessionFixture(
    lifetime: Duration = .seconds(3600), issuer: (any AccessTokenIssuer & AccessTokenVerifier)? = nil,
    passwords: any PasswordHasher = PlainPasswords(), _ body: (SessionFixture) async throws -> Void
) async throws {
    let tokens = SerialTokens(lifetime: lifetime)
    let access = AccessControl(
        rules: try AccessRules(json: sessionRules), tokens: issuer ?? tokens,
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
        try await body(SessionFixture(server: server, tokens: tokens, transport: transport, storage: storage, session: session, remote: remote, directory: directory))
    }
}

/// The error `body` throws, as a `RemoteError`.
package func remoteError(_ body: () async throws -> Void) async -> RemoteError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? RemoteError
    }
}

package func authorization(_ server: TestServer, _ path: String) -> [String?] {
    server.recordedRequests.filter { $0.uri.hasPrefix(path) }.map { $0.header("Authorization") }
}
