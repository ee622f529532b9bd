import Foundation
import Hummingbird
import Logging
import ModelSyncJSON

/// A built-in account's credentials, as a backend keeps them: never inside the user's record.
package struct StoredAccount: Sendable, Equatable {
    /// The id of the account's record in the accounts collection, as text.
    package var userID: String
    /// The password's hash (see ``PasswordHasher``).
    package var passwordHash: String
    /// The role, set only by an admin or the operator: never by registration or by the user.
    package var role: String?
    /// Moves on with each password change and sign-out everywhere: access tokens issued for an
    /// earlier generation are refused from then on (``Caller/accountGeneration``).
    package var generation: Int

    package init(userID: String, passwordHash: String, role: String? = nil, generation: Int = 0) {
        (self.userID, self.passwordHash, self.role, self.generation) = (userID, passwordHash, role, generation)
    }

    init?(saved: JSONValue) {
        guard let userID = saved["user"].flatMap(scalarText), let hash = saved["hash"]?.stringValue else { return nil }
        self.init(userID: userID, passwordHash: hash, role: saved["role"]?.stringValue, generation: saved["generation"]?.intValue ?? 0)
    }

    var saved: JSONValue {
        var object: JSONObject = ["user": .string(userID), "hash": .string(passwordHash)]
        if let role { object["role"] = .string(role) }
        if generation != 0 { object["generation"] = .number(JSONNumber(generation)) }
        return .object(object)
    }

    /// An email as accounts are keyed by it: trimmed, in Unicode's canonical composition and
    /// lowercased, so that one address typed two ways is one account. Nil for text that is not
    /// an address (no `@`, a control character, longer than 254 bytes).
    package static func normalizedEmail(_ given: String) -> String? {
        // Bounded before the linear work below (run on every write of the accounts collection on
        // SQLite): no text this long trims and composes to 254 bytes but one padded absurdly.
        guard given.utf8.count <= 4_096 else { return nil }
        let email = given.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping.lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, email.utf8.count <= 254,
              !email.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return email
    }
}

extension SyncServerContext {
    /// The client's IP address (without the port), what the rate limits count by.
    var clientAddress: String {
        remoteAddress?.ipAddress ?? "unknown"
    }
}

/// Registration and login over a backend's account store.
struct AccountService: Sendable {
    let store: any ServerAccountStore
    let accounts: BuiltInAccounts
    let collection: String
    /// A hash of no one's password, checked when a login names an unknown email, so that such
    /// a login takes as long as one with a wrong password (no account enumeration by timing).
    /// Made when the routes are, so that the first such login waits no longer than the others.
    private let decoy: Task<String, any Error>
    private let limiter = AttemptLimiter()
    /// Bounds the password hashes running at once (``AccountRateLimits/concurrentPasswordHashes``).
    private let hashing: AsyncSemaphore?

    init(store: any ServerAccountStore, accounts: BuiltInAccounts, collection: String) {
        (self.store, self.accounts, self.collection) = (store, accounts, collection)
        let passwords = accounts.passwords
        decoy = Task { try await passwords.hash(UUID().uuidString) }
        hashing = accounts.rateLimits.map { AsyncSemaphore(permits: $0.concurrentPasswordHashes) }
    }

    /// At the start, before requests: moves json-server-auth's password hashes out of the
    /// records into the credentials, and makes the ``BuiltInAccounts/admins`` that exist admins
    /// (logging each, and each email with no account).
    static func prepare(store: any ServerAccountStore, accounts: BuiltInAccounts, collection: String, logger: Logger) async throws {
        let moved = try await store.adoptPasswordHashes(in: collection) { Self.isPasswordHash($0) }
        if moved > 0 { logger.notice("moved the passwords of \(moved) \(collection) records to their accounts' credentials") }
        for email in accounts.admins.sorted() {
            guard let (_, account) = try await store.account(email: email, in: collection) else {
                logger.warning("--admin \(email): no account has this email, so none was made an admin (create it with `modelsync-server admin \(email)`)")
                continue
            }
            if account.role != Caller.adminRole { _ = try await store.setRole(Caller.adminRole, userID: account.userID) }
            logger.notice("--admin \(email): the account \(account.userID) is an admin")
        }
    }

    /// Whether a record's `password` is a bcrypt hash, as json-server-auth (bcryptjs) makes them.
    static func isPasswordHash(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 60 && text.hasPrefix("$2") && bytes[3] == UInt8(ascii: "$") && bytes[6] == UInt8(ascii: "$")
    }

    func register(_ body: JSONValue, from address: String) async throws -> Response {
        let (email, password) = try credentials(body)
        try limit(address: address, account: email)
        guard password.count >= accounts.minimumPasswordLength else {
            throw APIError.badRequest("the password must have at least \(accounts.minimumPasswordLength) characters")
        }
        var profile = body.objectValue ?? JSONObject()
        // Neither the password nor a role becomes part of the record; the id is the server's.
        for member in ["password", "role", "id"] { profile[member] = nil }
        profile["email"] = .string(email)
        let hash = try await hashed { try await accounts.passwords.hash(password) }
        let (user, account) = try await store.register(email: email, passwordHash: hash, profile: profile, in: collection)
        return try await answer(user: user, account: account, status: .created)
    }

    func login(_ body: JSONValue, from address: String) async throws -> Response {
        let (email, password) = try credentials(body)
        try limit(address: address, account: email)
        guard let (user, account) = try await store.account(email: email, in: collection) else {
            let decoy = try await decoy.value
            _ = try await hashed { try await accounts.passwords.verify(password, against: decoy) }
            throw Self.incorrect
        }
        guard try await hashed({ try await accounts.passwords.verify(password, against: account.passwordHash) }) else { throw Self.incorrect }
        return try await answer(user: user, account: account, status: .ok)
    }

    /// Counts an attempt against the client's address (and the account named): 429 past a limit.
    func limit(address: String, account: String? = nil) throws {
        guard let limits = accounts.rateLimits else { return }
        var keys = [(key: "address:" + address, limit: limits.perAddress)]
        if let account { keys.append((key: "account:" + account, limit: limits.perAccount)) }
        if let wait = limiter.attempt(keys, window: limits.window, now: Date().timeIntervalSince1970) {
            throw APIError.tooManyAttempts(retryAfter: wait)
        }
    }

    /// Runs a password hash within the bound on hashes at once.
    func hashed<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let hashing else { return try await body() }
        return try await hashing.run(body)
    }

    /// One answer for an unknown email and a wrong password.
    static let incorrect = APIError.badRequest("incorrect email or password")

    private func credentials(_ body: JSONValue) throws -> (email: String, password: String) {
        guard let given = body["email"]?.stringValue, let email = StoredAccount.normalizedEmail(given) else {
            throw APIError.badRequest("email and password are required; email must be an address")
        }
        guard let password = body["password"]?.stringValue, !password.isEmpty else {
            throw APIError.badRequest("email and password are required")
        }
        return (email, password)
    }

    /// The answer of a sign-in: an access token, a refresh token of a new family (with refresh
    /// tokens), and the user's record.
    func answer(user: JSONValue, account: StoredAccount, status: HTTPResponse.Status) async throws -> Response {
        var answer = try await signedIn(account)
        answer["user"] = user
        return ServerRoutes.json(.object(answer), status: status)
    }

    /// An access token and, with refresh tokens, the first refresh token of a new family (every
    /// token that descends from this sign-in).
    func signedIn(_ account: StoredAccount) async throws -> JSONObject {
        var answer = try await tokens(for: account)
        if let policy = accounts.refreshTokens {
            let token = RefreshToken()
            try await store.storeRefreshToken(StoredRefreshToken(
                hash: token.hash(policy.digest), userID: account.userID, family: token.family, expires: Date().addingTimeInterval(policy.lifetime.timeInterval)))
            answer["refreshToken"] = .string(token.text)
        }
        return answer
    }

    /// An access token for the account at its generation (and its lifetime, when the issuer
    /// tells it).
    func tokens(for account: StoredAccount) async throws -> JSONObject {
        let token = try await accounts.issuer.accessToken(for: account.userID, role: account.role, generation: account.generation)
        var answer: JSONObject = ["accessToken": .string(token)]
        if let lifetime = accounts.issuer.accessTokenLifetime { answer["expiresIn"] = .number(JSONNumber(lifetime.components.seconds)) }
        return answer
    }
}

extension AccountService {
    /// Makes the account of `email` an admin with the password of `passwordHash`, creating it
    /// (and its record in `collection`) when there is none: the first admin, made offline. An
    /// existing account's sessions end (its password changed). Returns the account's user id and
    /// whether it was created.
    static func makeAdmin(email: String, passwordHash: String, collection: String, store: any ServerAccountStore) async throws -> (userID: String, created: Bool) {
        if let (_, account) = try await store.account(email: email, in: collection) {
            _ = try await store.endSessions(userID: account.userID, newPasswordHash: passwordHash)
            _ = try await store.setRole(Caller.adminRole, userID: account.userID)
            return (account.userID, false)
        }
        let (_, account) = try await store.register(email: email, passwordHash: passwordHash, profile: ["email": .string(email)], in: collection)
        _ = try await store.setRole(Caller.adminRole, userID: account.userID)
        return (account.userID, true)
    }
}

extension SyncServer {
    /// Makes `email`'s built-in account an admin with `password` (creating the account and its
    /// record in `accountsCollection` when there is none), in a JSON file: the first admin, made
    /// before the server starts (`modelsync-server admin <email> db.json`). Stop a server that
    /// serves the file first: it would write its own copy back over this.
    ///
    /// - Returns: The account's user id and whether it was created.
    /// - Throws: ``ServerError`` for a file that cannot be read or saved or an email that is not
    ///   an address, and what `passwords` throws.
    public static func makeAdmin(
        email: String, password: String, passwords: any PasswordHasher, file: URL, accountsCollection: String = "users"
    ) async throws -> (userID: String, created: Bool) {
        let backend = JSONFileBackend(root: try JSONFileBackend.load(file), file: file, feedLimits: FeedLimits())
        return try await makeAdmin(email: email, password: password, passwords: passwords, closing: backend, accountsCollection: accountsCollection)
    }

    /// ``makeAdmin(email:password:passwords:file:accountsCollection:)`` over any backend (the
    /// JSON file's, PostgreSQL's, SQLite's), which it closes when done, whether or not it succeeded.
    package static func makeAdmin(
        email: String, password: String, passwords: any PasswordHasher, closing backend: any ServerBackend & ServerAccountStore, accountsCollection: String
    ) async throws -> (userID: String, created: Bool) {
        do {
            guard let email = StoredAccount.normalizedEmail(email) else { throw ServerError.unsupported("an admin needs an email address, not \(email)") }
            let hash = try await passwords.hash(password)
            let made = try await AccountService.makeAdmin(email: email, passwordHash: hash, collection: accountsCollection, store: backend)
            await backend.close()
            return made
        } catch {
            await backend.close()
            throw error
        }
    }
}
