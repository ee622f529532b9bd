import Foundation
import HTTPTypes
import Hummingbird

/// Accounts, tokens and access rules: with them in ``ServerOptions/access``, every request is
/// made by a ``Caller`` (its bearer token's user, or anonymous), and every path answers only
/// what the rules let that caller read or write.
///
/// ```swift
/// let tokens = try JWTAccessTokens(secret: secret)          // ModelSyncServerAuth
/// let access = AccessControl(
///     rules: try AccessRules(json: ["posts": 644, "messages": 600]), tokens: tokens,
///     accounts: BuiltInAccounts(issuer: tokens, passwords: BcryptPasswordHasher()))
/// let server = try await SyncServer.start(file: url, options: ServerOptions(access: access))
/// ```
public struct AccessControl: Sendable {
    /// Who may read and write each collection.
    public var rules: AccessRules
    /// Verifies the bearer tokens of requests.
    public var tokens: any AccessTokenVerifier
    /// The built-in accounts (`POST /register`, `/login`); nil serves none (tokens come from an
    /// identity provider of your own).
    public var accounts: BuiltInAccounts?

    /// Creates the access control of a server.
    public init(rules: AccessRules, tokens: any AccessTokenVerifier, accounts: BuiltInAccounts? = nil) {
        self.rules = rules
        self.tokens = tokens
        self.accounts = accounts
    }
}

/// The server's own accounts, compatible with json-server-auth: `POST /register` (`/signup`)
/// and `POST /login` (`/signin`) take `email` and `password` and answer
/// `{"accessToken": …, "user": {…}}`. The password's hash and the account's role are kept apart
/// from the `users` records, so that no path can serve them and no user can set a role.
public struct BuiltInAccounts: Sendable {
    /// Signs the access tokens of signed-in accounts.
    public var issuer: any AccessTokenIssuer
    /// Hashes and checks passwords.
    public var passwords: any PasswordHasher
    /// The shortest password accepted at registration.
    public var minimumPasswordLength: Int
    /// Refresh tokens (`POST /token`, `/logout`); nil hands out none, as json-server-auth.
    public var refreshTokens: RefreshTokenPolicy?
    /// The emails of existing accounts the server makes admins when it starts (the first admin,
    /// who then sets others' roles with `PUT /_accounts/<id>/role`). Only an account that exists
    /// then is promoted, never one registered later: registering proves no one owns an address.
    /// Create the first admin's account offline (`modelsync-server admin <email>`) or register it
    /// before the start.
    public var admins: Set<String>
    /// How often logins, registrations and refreshes may be tried, and how many password hashes
    /// run at once; nil sets no limit (`modelsync-server --access` sets the defaults).
    public var rateLimits: AccountRateLimits?

    /// Creates the accounts' configuration.
    public init(
        issuer: any AccessTokenIssuer, passwords: any PasswordHasher, minimumPasswordLength: Int = 8,
        refreshTokens: RefreshTokenPolicy? = nil, admins: [String] = [], rateLimits: AccountRateLimits? = nil
    ) {
        self.issuer = issuer
        self.passwords = passwords
        self.minimumPasswordLength = minimumPasswordLength
        self.refreshTokens = refreshTokens
        self.admins = Set(admins.compactMap(StoredAccount.normalizedEmail))
        self.rateLimits = rateLimits
    }
}

/// Names the caller of each request from its `Authorization: Bearer <token>`: anonymous
/// without one, 401 (`WWW-Authenticate: Bearer error="invalid_token"`) for one that does not
/// verify, is not a bearer token, or comes twice.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = SyncServerContext
    let tokens: any AccessTokenVerifier
    /// The built-in accounts' store, when the server has them: a token issued for one of them
    /// is checked against the account as it is now.
    var accounts: CurrentAccounts?

    /// Longer headers are refused before the verifier sees them.
    static let maximumHeaderLength = 16 * 1024

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await authenticated(request, context: context, next: next)
        // The answer depends on who asks: a shared cache must keep one caller's apart from another's.
        response.headers[.vary] = response.headers[.vary].map { "\($0), Authorization" } ?? "Authorization"
        return response
    }

    private func authenticated(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let headers = request.headers[values: .authorization]
        guard !headers.isEmpty else { return try await next(request, context) }
        guard headers.count == 1, let header = headers.first, header.utf8.count <= Self.maximumHeaderLength else {
            throw APIError.unauthenticated("send one Authorization header", invalidToken: true)
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError.unauthenticated("the Authorization header must be Bearer <token>", invalidToken: true)
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        var context = context
        do {
            context.caller = try await tokens.caller(for: token)
        } catch let error as AccessTokenError {
            throw APIError.unauthenticated("\(error)", invalidToken: true)
        } catch {
            throw APIError.unauthenticated("the token could not be verified", invalidToken: true)
        }
        if let accounts { context.caller = try await accounts.current(context.caller) }
        return try await next(request, context)
    }
}

/// The check of every request whose token names a built-in account's generation
/// (``Caller/accountGeneration``): the account must still exist, at that generation, and its
/// role is the one stored now, not the one the token was issued with. One lookup by user id:
/// in memory for the JSON file, an indexed read for PostgreSQL.
struct CurrentAccounts: Sendable {
    let store: any ServerAccountStore
    let collection: String

    func current(_ caller: Caller) async throws -> Caller {
        guard let generation = caller.accountGeneration, let userID = caller.userID else { return caller }
        guard let account = try await store.currentAccount(userID: userID, in: collection), account.generation == generation else {
            throw APIError.unauthenticated("the token was revoked (account deleted, password changed or signed out everywhere); sign in again", invalidToken: true)
        }
        var current = caller
        current.role = account.role
        return current
    }
}
