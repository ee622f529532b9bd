import Foundation
import Logging
import ModelSyncJSON
@testable import ModelSyncServer
import ModelSyncServerAuth
@testable import ModelSyncServerPostgres
@testable import ModelSyncServerSQLite
import ModelSyncTesting
import NIOHTTP1
import ServerTestSupport
import Testing

/// Refresh tokens and roles of the built-in accounts: over HTTP on a JSON-file server (access
/// rules are the JSON backend's so far), and the storage rules on both backends.
@Suite struct RefreshTokenTests {
    static let digest = SHA256TokenDigest()

    static func access(lifetime: Duration = .seconds(3600), retryWindow: Duration = .seconds(60), admins: [String] = []) throws -> AccessControl {
        AccessControl(
            rules: try AccessRules(json: AccessTests.rules), tokens: TestTokens(),
            accounts: BuiltInAccounts(
                issuer: TestTokens(), passwords: TestPasswords(),
                refreshTokens: RefreshTokenPolicy(digest: digest, lifetime: lifetime, retryWindow: retryWindow), admins: admins))
    }

    func withAccounts(
        _ backend: Backend = .jsonDocument, lifetime: Duration = .seconds(3600), retryWindow: Duration = .seconds(60), admins: [String] = [],
        _ body: (TestServer, String) async throws -> Void
    ) async throws {
        let options = ServerOptions(access: try Self.access(lifetime: lifetime, retryWindow: retryWindow, admins: admins))
        try await withServer(AccessTests.data, options: options, backend: backend) { server, base in try await body(server, base) }
    }

    struct SignedIn {
        var accessToken: String
        var refreshToken: String
        var id: String
    }

    func register(_ base: String, _ email: String) async throws -> SignedIn {
        let reply = try await send(.POST, base + "/register", body: #"{"email":"\#(email)","password":"long enough"}"#)
        #expect(reply.status == 201)
        return SignedIn(
            accessToken: try #require(reply.json?["accessToken"]?.stringValue), refreshToken: try #require(reply.json?["refreshToken"]?.stringValue),
            id: try #require(reply.json?["user"]?["id"].flatMap(scalarText)))
    }

    func refresh(_ base: String, _ token: String, headers: [(String, String)] = []) async throws -> Reply {
        try await send(.POST, base + "/token", body: JSONValue.object(["refreshToken": .string(token)]).jsonText, headers: headers)
    }

    @Test(arguments: Backend.allCases) func loginAndRegisterAnswerARefreshTokenThatRotates(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            #expect(RefreshToken(text: ann.refreshToken) != nil)
            let login = try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"long enough"}"#)
            #expect(login.status == 200)
            let second = try #require(login.json?["refreshToken"]?.stringValue)
            #expect(second != ann.refreshToken)

            let first = try await refresh(base, ann.refreshToken)
            #expect(first.status == 200)
            let next = try #require(first.json?["refreshToken"]?.stringValue)
            #expect(next != ann.refreshToken && first.json?["accessToken"]?.stringValue == "test:\(ann.id):")
            // The new one works, and again; the login's own family is untouched by all this.
            let after = try await refresh(base, next)
            #expect(after.status == 200)
            #expect(try await refresh(base, second).status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func reusingARotatedTokenRevokesItsWholeFamily(backend: Backend) async throws {
        try await withAccounts(backend, retryWindow: .zero) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            let other = try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"long enough"}"#)
            let otherToken = try #require(other.json?["refreshToken"]?.stringValue)
            let rotated = try #require(try await refresh(base, ann.refreshToken).json?["refreshToken"]?.stringValue)
            // A thief replays the first token: refused, and the family dies with it.
            let replay = try await refresh(base, ann.refreshToken)
            #expect(replay.status == 401)
            #expect(replay.json?["error"]?.stringValue?.contains("revoked") == true)
            #expect(try await refresh(base, rotated).status == 401)
            // Another sign-in of the same account is another family.
            #expect(try await refresh(base, otherToken).status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func logoutRevokesTheFamilyAndIsIdempotent(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            let next = try #require(try await refresh(base, ann.refreshToken).json?["refreshToken"]?.stringValue)
            let body = JSONValue.object(["refreshToken": .string(next)]).jsonText
            #expect(try await send(.POST, base + "/logout", body: body).status == 204)
            #expect(try await refresh(base, next).status == 401)
            // Again (its answer was lost, say): the same.
            #expect(try await send(.POST, base + "/logout", body: body).status == 204)
            // Another user's token with one's own access token: refused, and left alone.
            let bob = try await register(base, "bob@example.org")
            let bobBody = JSONValue.object(["refreshToken": .string(bob.refreshToken)]).jsonText
            #expect(try await send(.POST, base + "/logout", body: bobBody, headers: [("Authorization", "Bearer \(ann.accessToken)")]).status == 401)
            #expect(try await refresh(base, bob.refreshToken).status == 200)
        }
    }

    @Test func anExpiredRefreshTokenIsRefused() async throws {
        try await withAccounts(lifetime: .zero) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            let reply = try await refresh(base, ann.refreshToken)
            #expect(reply.status == 401)
            #expect(reply.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        }
    }

    /// The answer of a refresh is lost: the same token, sent again within the window, answers
    /// the same successor (twice too); once the successor has been used, the old token is a
    /// reuse and revokes the family.
    @Test func aLostRefreshAnswerIsRetriedForTheSameSuccessor() async throws {
        try await withAccounts { server, base async throws in
            let ann = try await register(base, "ann@example.org")
            server.inject(Fault(.loseAnswer))
            await #expect(throws: (any Error).self) { try await refresh(base, ann.refreshToken) }
            let retried = try await refresh(base, ann.refreshToken)
            #expect(retried.status == 200)
            let successor = try #require(retried.json?["refreshToken"]?.stringValue)
            #expect(try await refresh(base, ann.refreshToken).json?["refreshToken"]?.stringValue == successor)
            let used = try await refresh(base, successor)
            #expect(used.status == 200)
            #expect(try await refresh(base, ann.refreshToken).status == 401)
            #expect(try await refresh(base, try #require(used.json?["refreshToken"]?.stringValue)).status == 401)
        }
    }

    @Test(arguments: [
        ("", 400), ("not a token", 401), (String(repeating: "A", count: 10 * 1024), 401), ("\u{0}" + String(repeating: "A", count: 42), 401),
        (String(repeating: "A", count: 43), 401), (String(repeating: "A", count: 42) + "=", 401),
        (String(repeating: "A", count: 43) + "." + String(repeating: "A", count: 22), 401), (String(repeating: ".", count: 66), 401),
    ])
    func hostileRefreshTokensAreRefused(token: String, status: Int) async throws {
        try await withAccounts { _, base async throws in
            _ = try await register(base, "ann@example.org")
            #expect(try await refresh(base, token).status == status)
            #expect(try await send(.POST, base + "/logout", body: JSONValue.object(["refreshToken": .string(token)]).jsonText).status == (status == 400 ? 400 : 204))
        }
    }

    @Test func malformedBodiesAndOtherUsersTokensAreRefused() async throws {
        try await withAccounts { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            let bob = try await register(base, "bob@example.org")
            for body in [#"{}"#, #"[]"#, #"{"refreshToken": 7}"#, #"{"refreshToken": null}"#, #""text""#] {
                #expect(try await send(.POST, base + "/token", body: body).status == 400, "\(body)")
            }
            #expect(try await send(.POST, base + "/token", body: "{").status == 400)
            // Bob's token with Ann's access token: refused, and Bob's family is left alone.
            #expect(try await refresh(base, bob.refreshToken, headers: [("Authorization", "Bearer \(ann.accessToken)")]).status == 401)
            #expect(try await refresh(base, bob.refreshToken).status == 200)
        }
    }

    @Test(arguments: Backend.allCases) func anAdminSetsRolesAndTheNextAccessTokenCarriesThem(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            #expect(ann.accessToken == "test:\(ann.id):")
            let asRoot = [("Authorization", "Bearer test:9:admin")]
            let set = try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: #"{"role":"editor"}"#, headers: asRoot)
            #expect(set.status == 200 && set.json?["role"] == "editor")
            let refreshed = try await refresh(base, ann.refreshToken)
            #expect(refreshed.json?["accessToken"]?.stringValue == "test:\(ann.id):editor")
            // The role stays the account's: the login reads it too; null removes it.
            let login = try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"long enough"}"#)
            #expect(login.json?["accessToken"]?.stringValue == "test:\(ann.id):editor")
            #expect(try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: #"{"role":null}"#, headers: asRoot).json?["role"] == .null)
            let next = try #require(refreshed.json?["refreshToken"]?.stringValue)
            #expect(try await refresh(base, next).json?["accessToken"]?.stringValue == "test:\(ann.id):")
            // Unknown accounts, bad roles.
            #expect(try await send(.PUT, base + "/_accounts/999/role", body: #"{"role":"x"}"#, headers: asRoot).status == 404)
            for body in [#"{"role": 7}"#, #"{}"#, #"{"role": ""}"#, #"{"role": "a\u0000b"}"#, "[1]"] {
                #expect(try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: body, headers: asRoot).status == 400, "\(body)")
            }
        }
    }

    @Test(arguments: Backend.allCases) func onlyAnAdminSetsRoles(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            let own = try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: #"{"role":"admin"}"#, headers: [("Authorization", "Bearer \(ann.accessToken)")])
            #expect(own.status == 403)
            #expect(try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: #"{"role":"admin"}"#).status == 401)
            // Nor through the record, nor at registration.
            let patched = try await send(.PATCH, base + "/users/\(ann.id)", body: #"{"role":"admin"}"#, headers: [("Authorization", "Bearer \(ann.accessToken)")])
            #expect(patched.status == 200)
            #expect(try await refresh(base, ann.refreshToken).json?["accessToken"]?.stringValue == "test:\(ann.id):")
        }
    }

    /// An account whose record an admin deleted refreshes no more (as it logs in no more).
    @Test(arguments: Backend.allCases) func aDeletedAccountRefreshesNoMore(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await register(base, "ann@example.org")
            #expect(try await send(.DELETE, base + "/users/\(ann.id)", headers: [("Authorization", "Bearer test:9:admin")]).status == 200)
            #expect(try await refresh(base, ann.refreshToken).status == 401)
            #expect(try await refresh(base, ann.refreshToken).status == 401)
        }
    }

    /// An operator's admin email that registered before the start: the server makes it one when
    /// it starts; one registered after stays a plain account.
    @Test func theBootstrapAdminIsAnAccountThatExistsAtTheStart() async throws {
        try await withDatabaseFile(#"{"users": []}"#) { file in
            let plain = try await SyncServer.start(file: file, options: ServerOptions(access: try Self.access()))
            _ = try await register(plain.baseURL.absoluteString, "root@example.org")
            await plain.shutdown()
            let server = try await SyncServer.start(file: file, options: ServerOptions(access: try Self.access(admins: ["root@example.org", "late@example.org"])))
            let login = try await send(.POST, server.baseURL.absoluteString + "/login", body: #"{"email":"root@example.org","password":"long enough"}"#)
            let late = try await send(.POST, server.baseURL.absoluteString + "/register", body: #"{"email":"late@example.org","password":"long enough"}"#)
            await server.shutdown()
            #expect(login.json?["accessToken"]?.stringValue?.hasSuffix(":admin") == true)
            #expect(late.json?["accessToken"]?.stringValue?.hasSuffix(":admin") == false)
        }
    }

    /// Tokens and roles are saved with the data: a restarted server still refreshes.
    @Test func refreshTokensOutliveARestart() async throws {
        try await withDatabaseFile(#"{"users": []}"#) { file in
            let first = try await SyncServer.start(file: file, options: ServerOptions(access: try Self.access()))
            let ann = try await register(first.baseURL.absoluteString, "ann@example.org")
            await first.shutdown()
            let saved = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            #expect(saved.contains("refreshTokens") && !saved.contains(ann.refreshToken))
            let second = try await SyncServer.start(file: file, options: ServerOptions(access: try Self.access()))
            let reply = try await refresh(second.baseURL.absoluteString, ann.refreshToken)
            await second.shutdown()
            #expect(reply.status == 200)
        }
    }

    /// The documented answers of the accounts' operations (the OpenAPI suite skips them: they
    /// need access control).
    @Test func theAccountOperationsAnswerAsDocumented() async throws {
        try await withAccounts() { _, base async throws in
            let paths = try #require(SyncServer.openAPIDocument["paths"]?.objectValue)
            func documented(_ path: String, _ method: String) -> Set<Int> {
                Set(paths[path]?[method]?["responses"]?.objectValue?.keys.compactMap { Int($0) } ?? [])
            }
            let root = try await register(base, "root@example.org")
            var answers: [(String, String, Int)] = []
            for path in ["/register", "/signup"] {
                answers.append((path, "post", try await send(.POST, base + path, body: #"{"email":"x\#(path.dropFirst())@example.org","password":"long enough"}"#).status))
                answers.append((path, "post", try await send(.POST, base + path, body: #"{"email":"x\#(path.dropFirst())@example.org","password":"long enough"}"#).status))
                answers.append((path, "post", try await send(.POST, base + path, body: "{}").status))
            }
            for path in ["/login", "/signin"] {
                answers.append((path, "post", try await send(.POST, base + path, body: #"{"email":"root@example.org","password":"long enough"}"#).status))
                answers.append((path, "post", try await send(.POST, base + path, body: #"{"email":"root@example.org","password":"wrong one"}"#).status))
            }
            answers.append(("/token", "post", try await refresh(base, root.refreshToken).status))
            answers.append(("/token", "post", try await refresh(base, root.refreshToken + "x").status))
            answers.append(("/logout", "post", try await send(.POST, base + "/logout", body: #"{"refreshToken": "x"}"#).status))
            answers.append(("/logout", "post", try await send(.POST, base + "/logout", body: "{}").status))
            let asRoot = [("Authorization", "Bearer test:9:admin")]
            let asRootUser = [("Authorization", "Bearer \(root.accessToken)")]
            let password = base + "/_accounts/\(root.id)/password"
            answers.append(("/_accounts/{id}/password", "post", try await send(.POST, password, body: #"{"password":"wrong one","newPassword":"long enough"}"#, headers: asRootUser).status))
            answers.append(("/_accounts/{id}/password", "post", try await send(.POST, password, body: #"{"password":"long enough","newPassword":"long enough"}"#).status))
            answers.append(("/_accounts/{id}/password", "post", try await send(.POST, password, body: #"{"password":"long enough","newPassword":"long enough"}"#, headers: asRootUser).status))
            answers.append(("/_accounts/{id}/password", "post", try await send(.POST, base + "/_accounts/77/password", body: #"{"password":"x","newPassword":"long enough"}"#, headers: asRootUser).status))
            answers.append(("/_accounts/{id}/logout", "post", try await send(.POST, base + "/_accounts/\(root.id)/logout", headers: asRootUser).status))
            answers.append(("/_accounts/{id}/logout", "post", try await send(.POST, base + "/_accounts/\(root.id)/logout").status))
            answers.append(("/_accounts/{id}/logout", "post", try await send(.POST, base + "/_accounts/77/logout", headers: asRoot).status))
            answers.append(("/_accounts/{id}/role", "put", try await send(.PUT, base + "/_accounts/\(root.id)/role", body: #"{"role":"admin"}"#, headers: asRoot).status))
            answers.append(("/_accounts/{id}/role", "put", try await send(.PUT, base + "/_accounts/77/role", body: #"{"role":"admin"}"#, headers: asRoot).status))
            answers.append(("/_accounts/{id}/role", "put", try await send(.PUT, base + "/_accounts/77/role", body: #"{"role":"admin"}"#).status))
            for (path, method, status) in answers {
                #expect(documented(path, method).contains(status), "\(method.uppercased()) \(path): \(status) is not documented")
            }
        }
    }

    // MARK: Storage, on both backends

    @Test(arguments: Backend.allCases) func theBackendsKeepTheExchangeRules(backend: Backend) async throws {
        try await withBackend(backend) { store in
            let now = Date()
            let later = now.addingTimeInterval(3600)
            func exchange(_ hash: String, _ family: String, to successor: String, at time: Date = now) async throws -> RefreshTokenExchange {
                try await store.exchangeRefreshToken(
                    hash: hash, family: family, successorHash: successor, sealedSuccessor: "sealed-" + successor, successorExpires: later,
                    now: time, retryWindow: .seconds(60))
            }
            try await store.storeRefreshToken(StoredRefreshToken(hash: "a", userID: "1", family: "f", expires: later))
            try await store.storeRefreshToken(StoredRefreshToken(hash: "z", userID: "2", family: "g", expires: later))
            try await store.storeRefreshToken(StoredRefreshToken(hash: "old", userID: "2", family: "h", expires: now.addingTimeInterval(-1)))
            #expect(try await store.refreshToken(hash: "a")?.userID == "1")
            #expect(try await exchange("nope", "nofamily", to: "n") == .invalid)
            #expect(try await exchange("old", "h", to: "n") == .invalid)
            #expect(try await store.refreshToken(hash: "old") == nil)
            // A stored token named with another family is not that token.
            #expect(try await exchange("a", "g", to: "n") == .invalid)
            // a → b, then a again within the window: b's sealed form, b unchanged.
            #expect(try await exchange("a", "f", to: "b") == .rotated(userID: "1"))
            #expect(try await store.refreshToken(hash: "b")?.family == "f")
            #expect(try await exchange("a", "f", to: "c", at: now.addingTimeInterval(1)) == .retried(userID: "1", sealedSuccessor: "sealed-b"))
            #expect(try await store.refreshToken(hash: "c") == nil)
            // b is used: a is of no use and goes; sent again, it is a reuse by its family, which
            // goes (b's successor too); g stays.
            #expect(try await exchange("b", "f", to: "d") == .rotated(userID: "1"))
            #expect(try await store.refreshToken(hash: "a") == nil)
            #expect(try await store.refreshToken(hash: "b")?.rotated != nil)
            #expect(try await exchange("a", "f", to: "e", at: now.addingTimeInterval(2)) == .reused)
            for hash in ["a", "b", "d"] { #expect(try await store.refreshToken(hash: hash) == nil) }
            #expect(try await exchange("a", "f", to: "e") == .invalid)
            // Out of the window, even with the successor unused: a reuse.
            #expect(try await exchange("z", "g", to: "y") == .rotated(userID: "2"))
            #expect(try await exchange("z", "g", to: "x", at: now.addingTimeInterval(61)) == .reused)
            #expect(try await store.refreshToken(hash: "y") == nil)
            // Sign-out.
            try await store.storeRefreshToken(StoredRefreshToken(hash: "k", userID: "3", family: "k", expires: later))
            try await store.revokeRefreshTokens(family: "k")
            #expect(try await store.refreshToken(hash: "k") == nil)
        }
    }

    /// However many times a family refreshes, it keeps two tokens: the storage does not grow
    /// with the refreshes.
    @Test(arguments: Backend.allCases) func aFamilyKeepsTwoTokens(backend: Backend) async throws {
        try await withBackend(backend) { store in
            let later = Date().addingTimeInterval(3600)
            try await store.storeRefreshToken(StoredRefreshToken(hash: "t0", userID: "1", family: "f", expires: later))
            for step in 0..<20 {
                let outcome = try await store.exchangeRefreshToken(
                    hash: "t\(step)", family: "f", successorHash: "t\(step + 1)", sealedSuccessor: "s", successorExpires: later, now: Date(),
                    retryWindow: .seconds(60))
                #expect(outcome == .rotated(userID: "1"))
            }
            let kept = try await (0...20).asyncFilter { try await store.refreshToken(hash: "t\($0)") != nil }
            #expect(kept == [19, 20])
        }
    }

    /// Two exchanges of one token at once: one rotates, the other is the retry of its lost
    /// answer (never two successors in one family).
    @Test(arguments: Backend.allCases) func concurrentExchangesOfOneTokenGiveOneSuccessor(backend: Backend) async throws {
        try await withBackend(backend) { store in
            let later = Date().addingTimeInterval(3600)
            try await store.storeRefreshToken(StoredRefreshToken(hash: "a", userID: "1", family: "f", expires: later))
            async let first = store.exchangeRefreshToken(hash: "a", family: "f", successorHash: "b1", sealedSuccessor: "s1", successorExpires: later, now: Date(), retryWindow: .seconds(60))
            async let second = store.exchangeRefreshToken(hash: "a", family: "f", successorHash: "b2", sealedSuccessor: "s2", successorExpires: later, now: Date(), retryWindow: .seconds(60))
            let outcomes = try await [first, second]
            #expect(outcomes.filter { if case .rotated = $0 { true } else { false } }.count == 1)
            #expect(outcomes.filter { if case .retried = $0 { true } else { false } }.count == 1)
            let successors = try await [store.refreshToken(hash: "b1"), store.refreshToken(hash: "b2")].compactMap { $0 }
            #expect(successors.count == 1)
        }
    }

    private func withBackend(_ backend: Backend, _ body: (any ServerAccountStore) async throws -> Void) async throws {
        switch backend {
        case .jsonDocument:
            try await body(JSONFileBackend(root: ["users": []], file: nil, feedLimits: FeedLimits()))
        case .postgres:
            let database = try TestPostgres.database()
            let store = try await PostgresBackend.open(database, initialData: ["users": []], feedLimits: FeedLimits(), logger: Logger(label: "test"))
            do {
                try await body(store)
            } catch {
                Issue.record(error)
            }
            await store.close()
            await TestPostgres.drop(database)
        case .sqlite:
            let directory = try TemporaryDirectory(prefix: "modelsync-refresh-tokens")
            defer { directory.remove() }
            let store = try await SQLiteBackend.open(path: directory.path("data.sqlite"), initialData: ["users": []], feedLimits: FeedLimits(), logger: Logger(label: "test"))
            do {
                try await body(store)
            } catch {
                Issue.record(error)
            }
            await store.close()
        }
    }
}

extension Sequence {
    fileprivate func asyncFilter(_ keep: (Element) async throws -> Bool) async rethrows -> [Element] {
        var kept: [Element] = []
        for element in self where try await keep(element) { kept.append(element) }
        return kept
    }
}

extension JSONValue {
    /// The value as compact JSON text.
    fileprivate var jsonText: String { String(decoding: jsonBytes(), as: UTF8.self) }
}

/// Lifetimes and dates at the edges never trap: `Int.max` seconds, a hand-edited file's 1e300.
@Suite struct RefreshTokenBoundsTests {
    struct Digest: RefreshTokenDigest {
        func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(bytes.prefix(32)) }
    }

    @Test func lifetimesAreBoundedAndSavedDatesKeptInRange() throws {
        let policy = RefreshTokenPolicy(digest: Digest(), lifetime: .seconds(Int64.max), retryWindow: .seconds(Int64.max))
        #expect(policy.lifetime == RefreshTokenPolicy.maximumLifetime && policy.retryWindow == RefreshTokenPolicy.maximumLifetime)
        let hostile: JSONValue = ["user": "1", "family": "f", "expires": .number(try #require(JSONNumber(text: "1e300"))), "rotatedMs": -5]
        let token = try #require(StoredRefreshToken(hash: "h", saved: hostile))
        #expect(token.expires.timeIntervalSince1970 == StoredRefreshToken.latestSeconds)
        #expect(token.rotated?.timeIntervalSince1970 == 0)
        // Written back without trapping, and read again the same.
        #expect(StoredRefreshToken(hash: "h", saved: token.saved) == token)
    }
}
