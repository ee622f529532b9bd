import Foundation
import Hummingbird
import ModelSyncJSON

/// A built-in account's credentials, as a backend keeps them: never inside the user's record.
package struct StoredAccount: Sendable, Equatable {
    /// The id of the account's record in the accounts collection, as text.
    package var userID: String
    /// The password's hash (see ``PasswordHasher``).
    package var passwordHash: String
    /// The role, set only by an admin or the operator: never by registration or by the user.
    package var role: String?

    package init(userID: String, passwordHash: String, role: String? = nil) {
        (self.userID, self.passwordHash, self.role) = (userID, passwordHash, role)
    }

    init?(saved: JSONValue) {
        guard let userID = saved["user"].flatMap(scalarText), let hash = saved["hash"]?.stringValue else { return nil }
        self.init(userID: userID, passwordHash: hash, role: saved["role"]?.stringValue)
    }

    var saved: JSONValue {
        var object: JSONObject = ["user": .string(userID), "hash": .string(passwordHash)]
        if let role { object["role"] = .string(role) }
        return .object(object)
    }

    /// An email as accounts are keyed by it: trimmed, in Unicode's canonical composition and
    /// lowercased, so that one address typed two ways is one account. Nil for text that is not
    /// an address (no `@`, a control character, longer than 254 bytes).
    package static func normalizedEmail(_ given: String) -> String? {
        let email = given.trimmingCharacters(in: .whitespacesAndNewlines).precomposedStringWithCanonicalMapping.lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, email.utf8.count <= 254,
              !email.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return email
    }
}

extension ServerRoutes {
    /// `POST /register` (`/signup`) and `POST /login` (`/signin`), json-server-auth's routes.
    func accountRoutes(_ accounts: BuiltInAccounts, rules: AccessRules) -> [Route] {
        let service = AccountService(backend: backend, accounts: accounts, collection: rules.accountsCollection)
        let register: Handler = { request, _ in try await service.register(try await readBody(request)) }
        let login: Handler = { request, _ in try await service.login(try await readBody(request)) }
        return [
            Route(path: "/register", handlers: [.post: register]), Route(path: "/signup", handlers: [.post: register]),
            Route(path: "/login", handlers: [.post: login]), Route(path: "/signin", handlers: [.post: login]),
        ]
    }
}

/// Registration and login over a backend.
struct AccountService: Sendable {
    let backend: any ServerBackend
    let accounts: BuiltInAccounts
    let collection: String
    /// A hash of no one's password, checked when a login names an unknown email, so that such
    /// a login takes as long as one with a wrong password (no account enumeration by timing).
    /// Made when the routes are, so that the first such login waits no longer than the others.
    private let decoy: Task<String, any Error>

    init(backend: any ServerBackend, accounts: BuiltInAccounts, collection: String) {
        (self.backend, self.accounts, self.collection) = (backend, accounts, collection)
        let passwords = accounts.passwords
        decoy = Task { try await passwords.hash(UUID().uuidString) }
    }

    func register(_ body: JSONValue) async throws -> Response {
        let (email, password) = try credentials(body)
        guard password.count >= accounts.minimumPasswordLength else {
            throw APIError.badRequest("the password must have at least \(accounts.minimumPasswordLength) characters")
        }
        var profile = body.objectValue ?? JSONObject()
        // Neither the password nor a role becomes part of the record; the id is the server's.
        for member in ["password", "role", "id"] { profile[member] = nil }
        profile["email"] = .string(email)
        let hash = try await accounts.passwords.hash(password)
        let (user, account) = try await backend.register(email: email, passwordHash: hash, profile: profile, in: collection)
        return try await answer(user: user, account: account, status: .created)
    }

    func login(_ body: JSONValue) async throws -> Response {
        let (email, password) = try credentials(body)
        guard let (user, account) = try await backend.account(email: email, in: collection) else {
            _ = try await accounts.passwords.verify(password, against: decoy.value)
            throw Self.incorrect
        }
        guard try await accounts.passwords.verify(password, against: account.passwordHash) else { throw Self.incorrect }
        return try await answer(user: user, account: account, status: .ok)
    }

    /// One answer for an unknown email and a wrong password.
    private static let incorrect = APIError.badRequest("incorrect email or password")

    private func credentials(_ body: JSONValue) throws -> (email: String, password: String) {
        guard let given = body["email"]?.stringValue, let email = StoredAccount.normalizedEmail(given) else {
            throw APIError.badRequest("email and password are required; email must be an address")
        }
        guard let password = body["password"]?.stringValue, !password.isEmpty else {
            throw APIError.badRequest("email and password are required")
        }
        return (email, password)
    }

    private func answer(user: JSONValue, account: StoredAccount, status: HTTPResponse.Status) async throws -> Response {
        let token = try await accounts.issuer.accessToken(for: account.userID, role: account.role)
        return ServerRoutes.json(["accessToken": .string(token), "user": user], status: status)
    }
}
