import Foundation
import ModelSync
import ModelSyncCore
import ModelSyncJSON
@testable import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncServerPostgres
import ModelSyncTesting
import NIOHTTP1
import ServerTestSupport
import Testing

/// The built-in accounts under attack: who becomes an admin, what `*` opens, how
/// long a token outlives its account's rights, imported password hashes, rate limits, and the
/// answers that must not reveal rows. Real JWTs (the per-request check reads their generation),
/// stand-in password hashes unless bcrypt is the point.
@Suite struct AccountSecurityTests {
    /// An email is normalized on every write of the accounts collection (SQLite's index): a
    /// megabyte of text is refused before the linear work, and an ordinary address is kept.
    @Test func anEmailIsBoundedBeforeItIsNormalized() {
        #expect(StoredAccount.normalizedEmail(" Ann@Example.org ") == "ann@example.org")
        #expect(StoredAccount.normalizedEmail("a@" + String(repeating: "b", count: 1_000_000)) == nil)
        #expect(StoredAccount.normalizedEmail(String(repeating: " ", count: 5_000) + "ann@example.org") == nil)
    }

    static let secret = Data("a test secret of at least thirty-two bytes".utf8)

    static func access(
        admins: [String] = [], rateLimits: AccountRateLimits? = nil, rules: JSONValue = AccessTests.rules, passwords: any PasswordHasher = TestPasswords()
    ) async throws -> AccessControl {
        let tokens = try await JWTAccessTokens(secret: secret)
        return AccessControl(
            rules: try AccessRules(json: rules), tokens: tokens,
            accounts: BuiltInAccounts(
                issuer: tokens, passwords: passwords, refreshTokens: RefreshTokenPolicy(digest: SHA256TokenDigest()), admins: admins,
                rateLimits: rateLimits))
    }

    func withAccounts(
        _ backend: Backend, data: JSONValue = AccessTests.data, access: AccessControl? = nil, _ body: (TestServer, String) async throws -> Void
    ) async throws {
        let resolved: AccessControl
        if let access { resolved = access } else { resolved = try await Self.access() }
        let options = ServerOptions(access: resolved)
        try await withServer(data, options: options, backend: backend) { server, base in try await body(server, base) }
    }

    struct SignedIn {
        var accessToken: String
        var refreshToken: String
        var id: String
        var bearer: [(String, String)] { [("Authorization", "Bearer \(accessToken)")] }
    }

    func signIn(_ base: String, _ path: String, _ email: String, password: String = "long enough") async throws -> SignedIn {
        let reply = try await send(.POST, base + path, body: #"{"email":"\#(email)","password":"\#(password)"}"#)
        #expect(reply.status == 201 || reply.status == 200, "\(path) \(email): \(reply.status)")
        return SignedIn(
            accessToken: try #require(reply.json?["accessToken"]?.stringValue), refreshToken: try #require(reply.json?["refreshToken"]?.stringValue),
            id: try #require(reply.json?["user"]?["id"].flatMap(scalarText)))
    }

    /// An admin's token that names no account (an operator's, signed with the secret): its role
    /// is the token's own.
    static func operatorToken() async throws -> [(String, String)] {
        let token = try await JWTAccessTokens(secret: secret).accessToken(for: "9", role: "admin")
        return [("Authorization", "Bearer \(token)")]
    }

    func refresh(_ base: String, _ token: String) async throws -> Reply {
        try await send(.POST, base + "/token", body: #"{"refreshToken":"\#(token)"}"#)
    }

    // MARK: 1. The first admin

    /// Registering the email `--admin` names makes no one an admin: only an account that exists
    /// when the server starts is promoted.
    @Test(arguments: Backend.allCases) func registeringTheAdminsEmailGivesNoRole(backend: Backend) async throws {
        try await withAccounts(backend, access: try await Self.access(admins: ["root@example.org"])) { _, base async throws in
            let squatter = try await signIn(base, "/register", "root@example.org")
            #expect(try await send(.GET, base + "/db", headers: squatter.bearer).status == 403)
            let again = try await signIn(base, "/login", "root@example.org")
            #expect(try await send(.GET, base + "/db", headers: again.bearer).status == 403)
        }
    }

    /// An account that exists at the start is promoted; the offline command makes the first one.
    @Test func theAdminIsAnAccountThatExistsAtTheStartOrIsMadeOffline() async throws {
        try await withDatabaseFile(#"{"users": [], "messages": []}"#) { file in
            let plain = try await SyncServer.start(file: file, options: ServerOptions(access: try await Self.access()))
            _ = try await signIn(plain.baseURL.absoluteString, "/register", "early@example.org")
            await plain.shutdown()
            let made = try await SyncServer.makeAdmin(email: "First@Example.org", password: "offline secret", passwords: TestPasswords(), file: file)
            #expect(made.created)
            let server = try await SyncServer.start(file: file, options: ServerOptions(access: try await Self.access(admins: ["early@example.org"])))
            let base = server.baseURL.absoluteString
            do {
                let first = try await signIn(base, "/login", "first@example.org", password: "offline secret")
                #expect(try await send(.GET, base + "/db", headers: first.bearer).status == 200)
                let early = try await signIn(base, "/login", "early@example.org")
                #expect(try await send(.GET, base + "/db", headers: early.bearer).status == 200)
            } catch {
                await server.shutdown()
                throw error
            }
            await server.shutdown()
        }
    }

    @Test func theFirstAdminIsMadeOfflineInPostgreSQL() async throws {
        var database = try TestPostgres.database()
        try await SyncServer.importData(["users": [], "messages": []], into: database)
        let made = try await SyncServer.makeAdmin(email: "first@example.org", password: "offline secret", passwords: TestPasswords(), database: database)
        #expect(made.created)
        try await TestPostgres.ensureAccessRole(database)
        database = database.withRole(TestPostgres.accessRole)
        let server = try await SyncServer.start(database: database, options: ServerOptions(access: try await Self.access()))
        do {
            let first = try await signIn(server.baseURL.absoluteString, "/login", "first@example.org", password: "offline secret")
            #expect(try await send(.GET, server.baseURL.absoluteString + "/db", headers: first.bearer).status == 200)
        } catch {
            await server.shutdown()
            await TestPostgres.drop(database)
            throw error
        }
        await server.shutdown()
        await TestPostgres.drop(database)
    }

    // MARK: 3. The accounts collection

    /// `{"*": 664}` opens every other collection, not the accounts.
    @Test(arguments: Backend.allCases) func theWildcardDoesNotOpenTheAccounts(backend: Backend) async throws {
        let options = ServerOptions(access: AccessControl(
            rules: try AccessRules(json: ["*": 664]), tokens: TestTokens(), accounts: BuiltInAccounts(issuer: TestTokens(), passwords: TestPasswords())))
        try await withServer(AccessTests.data, options: options, backend: backend) { _, base async throws in
            let ann = [("Authorization", "Bearer test:1:")]
            #expect(try await send(.GET, base + "/users", headers: ann).ids == [1])
            #expect(try await send(.DELETE, base + "/users/2", headers: ann).status == 404)
            #expect(try await send(.GET, base + "/messages", headers: ann).ids == [1, 2])
        }
        #expect(try AccessRules(json: ["*": 664, "users": 640]).rule(for: "users")?.mode == AccessRules.Mode(640))
    }

    /// Deleting an account's record ends its account: its tokens stop working at once and its
    /// email is free again.
    @Test(arguments: Backend.allCases) func deletingTheRecordEndsTheAccount(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await signIn(base, "/register", "ann@example.org")
            #expect(try await send(.GET, base + "/messages", headers: ann.bearer).status == 200)
            #expect(try await send(.DELETE, base + "/users/\(ann.id)", headers: try await Self.operatorToken()).status == 200)
            #expect(try await send(.GET, base + "/messages", headers: ann.bearer).status == 401)
            #expect(try await refresh(base, ann.refreshToken).status == 401)
            #expect(try await send(.POST, base + "/register", body: #"{"email":"ann@example.org","password":"long enough"}"#).status == 201)
        }
    }

    // MARK: 5. Tokens follow their account

    @Test(arguments: Backend.allCases) func aRoleChangeTakesEffectOnTheNextRequest(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await signIn(base, "/register", "ann@example.org")
            let asOperator = try await Self.operatorToken()
            #expect(try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: #"{"role":"admin"}"#, headers: asOperator).status == 200)
            let admin = try await signIn(base, "/login", "ann@example.org")
            #expect(try await send(.GET, base + "/db", headers: admin.bearer).status == 200)
            #expect(try await send(.PUT, base + "/_accounts/\(ann.id)/role", body: #"{"role":null}"#, headers: asOperator).status == 200)
            // The same token, demoted.
            #expect(try await send(.GET, base + "/db", headers: admin.bearer).status == 403)
        }
    }

    @Test(arguments: Backend.allCases) func aPasswordChangeEndsTheOtherSessions(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let phone = try await signIn(base, "/register", "ann@example.org")
            let laptop = try await signIn(base, "/login", "ann@example.org")
            let path = base + "/_accounts/\(laptop.id)/password"
            #expect(try await send(.POST, path, body: #"{"password":"wrong one","newPassword":"a new secret"}"#, headers: laptop.bearer).status == 400)
            #expect(try await send(.POST, path, body: #"{"password":"long enough","newPassword":"a new secret"}"#).status == 401)
            let changed = try await send(.POST, path, body: #"{"password":"long enough","newPassword":"a new secret"}"#, headers: laptop.bearer)
            #expect(changed.status == 200)
            let fresh = try #require(changed.json?["accessToken"]?.stringValue)
            for old in [phone, laptop] {
                #expect(try await send(.GET, base + "/messages", headers: old.bearer).status == 401)
                #expect(try await refresh(base, old.refreshToken).status == 401)
            }
            #expect(try await send(.GET, base + "/messages", headers: [("Authorization", "Bearer \(fresh)")]).status == 200)
            #expect(try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"long enough"}"#).status == 400)
            _ = try await signIn(base, "/login", "ann@example.org", password: "a new secret")
            // Another user's account: refused.
            let bob = try await signIn(base, "/register", "bob@example.org")
            #expect(try await send(.POST, path, body: #"{"password":"a new secret","newPassword":"bob's now"}"#, headers: bob.bearer).status == 403)
        }
    }

    @Test(arguments: Backend.allCases) func signingOutEverywhereEndsEverySession(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let phone = try await signIn(base, "/register", "ann@example.org")
            let laptop = try await signIn(base, "/login", "ann@example.org")
            let bob = try await signIn(base, "/register", "bob@example.org")
            #expect(try await send(.POST, base + "/_accounts/\(phone.id)/logout", headers: bob.bearer).status == 403)
            #expect(try await send(.POST, base + "/_accounts/\(phone.id)/logout", headers: phone.bearer).status == 204)
            for old in [phone, laptop] {
                #expect(try await send(.GET, base + "/messages", headers: old.bearer).status == 401)
                #expect(try await refresh(base, old.refreshToken).status == 401)
            }
            // Bob's sessions go on; Ann signs in again.
            #expect(try await send(.GET, base + "/messages", headers: bob.bearer).status == 200)
            #expect(try await refresh(base, bob.refreshToken).status == 200)
            let again = try await signIn(base, "/login", "ann@example.org")
            #expect(try await send(.GET, base + "/messages", headers: again.bearer).status == 200)
        }
    }

    /// The client's side: `AccountSession` changes the password (this device goes on, the others
    /// end) and signs out everywhere.
    @Test func anAccountSessionChangesItsPasswordAndSignsOutEverywhere() async throws {
        try await withAccounts(.jsonDocument) { server, base async throws in
            let phone = AccountSession(baseURL: server.baseURL, storage: InMemorySessionTokenStorage())
            let laptop = AccountSession(baseURL: server.baseURL, storage: InMemorySessionTokenStorage())
            try await phone.register(email: "ann@example.org", password: "long enough")
            try await laptop.logIn(email: "ann@example.org", password: "long enough")
            try await phone.changePassword(current: "long enough", new: "a new secret")
            let token = try #require(try await phone.accessToken())
            #expect(try await send(.GET, base + "/messages", headers: [("Authorization", "Bearer \(token)")]).status == 200)
            await #expect(throws: AccountSessionError.self) { try await laptop.refresh() }
            try await phone.signOutEverywhere()
            #expect(try await phone.accessToken() == nil)
            #expect(try await send(.GET, base + "/messages", headers: [("Authorization", "Bearer \(token)")]).status == 401)
        }
    }

    // MARK: 6. json-server-auth's hashes

    /// A `users` record's json-server-auth hash becomes the account's password and is served
    /// nowhere.
    @Test(arguments: Backend.allCases) func importedPasswordHashesMoveToTheAccounts(backend: Backend) async throws {
        let bcrypt = try BcryptPasswordHasher(cost: 10)
        let hash = try await bcrypt.hash("old password")
        let data: JSONValue = [
            "users": [["id": 1, "email": "Old@Example.org", "password": .string(hash)], ["id": 2, "email": "plain@example.org", "password": "not a hash"]],
            "messages": [],
        ]
        let access = try await Self.access(passwords: bcrypt)
        try await withAccounts(backend, data: data, access: access) { _, base async throws in
            let old = try await signIn(base, "/login", "old@example.org", password: "old password")
            #expect(old.id == "1")
            let admin = try await Self.operatorToken()
            for path in ["/users", "/users/1", "/db", "/_changes", "/users?_since=0", "/_changes?collections=users"] {
                let body = String(decoding: try await send(.GET, base + path, headers: admin).body, as: UTF8.self)
                #expect(!body.contains("$2") && !body.contains("not a hash") && !body.contains("password"), "\(path): \(body)")
            }
        }
    }

    // MARK: 4. Rate limits

    @Test func loginsAreLimitedPerAccountAndPerAddress() async throws {
        let limits = AccountRateLimits(perAddress: 5, perAccount: 3, window: .seconds(3600))
        try await withAccounts(.jsonDocument, access: try await Self.access(rateLimits: limits)) { _, base async throws in
            _ = try await signIn(base, "/register", "ann@example.org")
            for _ in 0..<2 {
                #expect(try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"wrong one"}"#).status == 400)
            }
            let limited = try await send(.POST, base + "/login", body: #"{"email":"ann@example.org","password":"long enough"}"#)
            #expect(limited.status == 429)
            #expect(Int(limited.header("Retry-After") ?? "") ?? 0 >= 1)
            // Another account from the same address: until the address's limit.
            #expect(try await send(.POST, base + "/register", body: #"{"email":"bob@example.org","password":"long enough"}"#).status == 201)
            #expect(try await send(.POST, base + "/login", body: #"{"email":"bob@example.org","password":"long enough"}"#).status == 200)
            #expect(try await send(.POST, base + "/login", body: #"{"email":"cy@example.org","password":"long enough"}"#).status == 429)
        }
    }

    /// A refused attempt names its wait, whatever the window: one of a century (a wait past
    /// `Int` in seconds' fractions) answers a capped wait instead of trapping.
    @Test func aRefusedAttemptNamesItsWaitEvenOverAHugeWindow() {
        let limiter = AttemptLimiter()
        let keys = [(key: "address:a", limit: 1)]
        for window in [Duration.seconds(60), .seconds(Int64.max)] {
            let limiter = AttemptLimiter()
            #expect(limiter.attempt(keys, window: window, now: 0) == nil)
            let wait = limiter.attempt(keys, window: window, now: 0)
            #expect((wait ?? 0) >= 1, "window \(window)")
        }
        // A refused attempt takes nothing: after its wait, one attempt passes again.
        #expect(limiter.attempt(keys, window: .seconds(60), now: 0) == nil)
        #expect(limiter.attempt(keys, window: .seconds(60), now: 1) == 59)
        #expect(limiter.attempt(keys, window: .seconds(60), now: 61) == nil)
    }

    /// At most `permits` bodies run at once; the others wait and all finish.
    @Test func theSemaphoreBoundsTheHashesAtOnce() async throws {
        let semaphore = AsyncSemaphore(permits: 2)
        let counts = Locked((active: 0, most: 0))
        let (entered, enteredSink) = AsyncStream<Void>.makeStream()
        let releases = Locked([CheckedContinuation<Void, Never>]())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    try await semaphore.run {
                        counts.withLock { $0.active += 1; $0.most = max($0.most, $0.active) }
                        await withCheckedContinuation { continuation in
                            releases.withLock { $0.append(continuation) }
                            enteredSink.yield()
                        }
                        counts.withLock { $0.active -= 1 }
                    }
                }
            }
            var iterator = entered.makeAsyncIterator()
            // Each entry is let go in turn: the next may then enter.
            for _ in 0..<5 {
                _ = await iterator.next()
                let next = releases.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                next?.resume()
            }
            try await group.waitForAll()
        }
        #expect(counts.current.most <= 2 && counts.current.active == 0)
    }

    // MARK: 7, 8, 9. Answers that reveal nothing, owners, emails

    @Test(arguments: Backend.allCases) func anonymousWritesThatNeedALoginAre401(backend: Backend) async throws {
        try await withServer(AccessTests.data, options: try AccessTests.options(), backend: backend) { _, base async throws in
            #expect(try await send(.PATCH, base + "/messages/2", body: #"{"text":"x"}"#).status == 401)
            #expect(try await send(.DELETE, base + "/messages/2").status == 401)
            #expect(try await send(.DELETE, base + "/messages/99").status == 401)
            // Signed in, a row one may not read stays missing.
            #expect(try await send(.DELETE, base + "/messages/2", headers: AccessTests.Who.ann.headers).status == 404)
        }
    }

    @Test(arguments: Backend.allCases) func anAdminsCreateIsTheAdmins(backend: Backend) async throws {
        try await withServer(AccessTests.data, options: try AccessTests.options(), backend: backend) { _, base async throws in
            let created = try await send(.POST, base + "/messages", body: #"{"text":"mine"}"#, headers: AccessTests.Who.admin.headers)
            #expect(created.status == 201 && created.json?["userId"] == 9)
            let given = try await send(.POST, base + "/messages", body: #"{"text":"Bob's","userId":2}"#, headers: AccessTests.Who.admin.headers)
            #expect(given.json?["userId"] == 2)
        }
    }

    @Test(arguments: Backend.allCases) func anExplicitIDRevealsNoRow(backend: Backend) async throws {
        try await withServer(AccessTests.data, options: try AccessTests.options(), backend: backend) { _, base async throws in
            let taken = try await send(.POST, base + "/messages", body: #"{"id":2,"text":"x"}"#, headers: AccessTests.Who.ann.headers)
            #expect(taken.status == 403 && !String(decoding: taken.body, as: UTF8.self).contains("2"))
            // One's own row: the usual 409.
            #expect(try await send(.POST, base + "/messages", body: #"{"id":1,"text":"x"}"#, headers: AccessTests.Who.ann.headers).status == 409)
        }
    }

    @Test(arguments: Backend.allCases) func anEmailInOnesOwnRecordTakesNoOnesRegistration(backend: Backend) async throws {
        try await withAccounts(backend) { _, base async throws in
            let ann = try await signIn(base, "/register", "ann@example.org")
            #expect(try await send(.PATCH, base + "/users/\(ann.id)", body: #"{"email":"victim@example.org"}"#, headers: ann.bearer).status == 200)
            #expect(try await send(.POST, base + "/register", body: #"{"email":"victim@example.org","password":"long enough"}"#).status == 201)
            // A record without an account (imported) still holds its email.
            #expect(try await send(.POST, base + "/register", body: #"{"email":"bob@example.com","password":"long enough"}"#).status == 409)
        }
    }

    /// Anonymous callers' keys are scoped by their address: one client's key never replays
    /// another's answer.
    @Test func anonymousIdempotencyKeysAreScopedByAddress() throws {
        let rules = try AccessRules(json: AccessTests.rules)
        func scope(_ address: String) -> String? {
            var access = rules.access(to: "guestbook", for: .anonymous)
            access.clientAddress = address
            return ItemOperation(write: .create(collection: "guestbook", body: [:]), idempotencyKey: "k", access: access).idempotencyScope
        }
        #expect(scope("10.0.0.1") != scope("10.0.0.2"))
        #expect(scope("10.0.0.1") == scope("10.0.0.1"))
    }
}
