/// Who makes a request: a user (the `sub` of a verified token) and their role, or nobody.
public struct Caller: Sendable, Hashable, CustomStringConvertible {
    /// The user's id, as a string (a token's `sub`); nil for an anonymous request.
    public var userID: String?
    /// The user's role (a token's role claim); `admin` bypasses the access rules.
    public var role: String?
    /// The generation of the built-in account the token was issued for (see
    /// ``AccessTokenIssuer/accessToken(for:role:generation:)``); nil for a token of another
    /// issuer. Under built-in accounts the server checks it, and takes the role, from the
    /// account as it is at each request: a role change, a deletion, a password change or a
    /// sign-out everywhere takes effect on the caller's next request.
    public var accountGeneration: Int?

    /// Creates a caller.
    public init(userID: String?, role: String? = nil, accountGeneration: Int? = nil) {
        self.userID = userID
        self.role = role
        self.accountGeneration = accountGeneration
    }

    /// A request without a token.
    public static let anonymous = Caller(userID: nil)

    /// The role that bypasses every access rule.
    public static let adminRole = "admin"

    /// Whether the caller is signed in.
    public var isSignedIn: Bool { userID != nil }

    /// Whether the caller's role bypasses the access rules.
    public var isAdmin: Bool { role == Self.adminRole }

    public var description: String {
        guard let userID else { return "anonymous" }
        return role.map { "user \(userID) (\($0))" } ?? "user \(userID)"
    }
}

/// Verifies a bearer token and names its caller. `ModelSyncServerAuth` has one for JWTs (HS256
/// secrets, RS256/ES256 keys from a JWKS); an app may bring its own.
public protocol AccessTokenVerifier: Sendable {
    /// The caller the token names.
    ///
    /// - Throws: ``AccessTokenError`` when the token is malformed, wrongly signed, expired, not
    ///   yet valid, or for another issuer or audience. The server answers 401 to any error.
    func caller(for token: String) async throws -> Caller
}

/// Signs access tokens for the built-in accounts (`POST /login`).
public protocol AccessTokenIssuer: Sendable {
    /// A signed access token naming `userID` (as `sub`) and `role`.
    func accessToken(for userID: String, role: String?) async throws -> String

    /// A signed access token naming `userID`, `role` and the account's `generation`, which the
    /// verifier gives back as ``Caller/accountGeneration``: the server refuses the token once the
    /// account has moved past it (a password change, a sign-out everywhere). The default leaves
    /// the generation out (``accessToken(for:role:)``): such tokens then live until they expire.
    func accessToken(for userID: String, role: String?, generation: Int) async throws -> String

    /// How long an issued token is valid: `/login`, `/register` and `/token` answer it as
    /// `expiresIn` (seconds), so that a client refreshes in time. Nil (the default) leaves it out.
    var accessTokenLifetime: Duration? { get }
}

extension AccessTokenIssuer {
    public var accessTokenLifetime: Duration? { nil }

    public func accessToken(for userID: String, role: String?, generation: Int) async throws -> String {
        try await accessToken(for: userID, role: role)
    }
}

/// Hashes and checks the built-in accounts' passwords (bcrypt in `ModelSyncServerAuth`).
public protocol PasswordHasher: Sendable {
    /// A salted hash of `password`, to store.
    func hash(_ password: String) async throws -> String
    /// Whether `password` matches the stored `hash`; false (never an error) for a hash that is
    /// not one this hasher made.
    func verify(_ password: String, against hash: String) async throws -> Bool
}

/// Why a token was refused. Every kind is answered 401 with `WWW-Authenticate: Bearer`.
///
/// A struct with static members, not an enum (as Hummingbird's `HTTPError` and postgres-nio's
/// `PSQLError`): a new kind of failure is a new ``Code`` value, which breaks no caller's exhaustive
/// `switch`. Compare ``code`` with the static members, or the whole error for equality.
public struct AccessTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of an ``AccessTokenError``; compare it with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case malformed, unsupportedAlgorithm, unknownKey, badSignature, expired, notYetValid, wrongIssuerOrAudience, noSubject
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not a token at all: not three base64url parts, a header or payload that is not JSON,
        /// too long.
        public static let malformed = Code(.malformed)
        /// An algorithm the verifier does not accept (`none` among them) (``algorithm``).
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// A key id (`kid`) the verifier has no key for.
        public static let unknownKey = Code(.unknownKey)
        /// The signature does not verify.
        public static let badSignature = Code(.badSignature)
        /// `exp` has passed.
        public static let expired = Code(.expired)
        /// `nbf` is still to come.
        public static let notYetValid = Code(.notYetValid)
        /// `iss` or `aud` is not the one configured.
        public static let wrongIssuerOrAudience = Code(.wrongIssuerOrAudience)
        /// No `sub`, or one that is not a string or number.
        public static let noSubject = Code(.noSubject)

        public var description: String { base.rawValue }
    }

    /// What kind of refusal this is.
    public let code: Code
    /// The algorithm refused, for ``Code/unsupportedAlgorithm``.
    public let algorithm: String?

    private init(_ code: Code, algorithm: String? = nil) { (self.code, self.algorithm) = (code, algorithm) }

    /// Not a token at all.
    public static let malformed = AccessTokenError(.malformed)
    /// An algorithm the verifier does not accept.
    public static func unsupportedAlgorithm(_ algorithm: String) -> AccessTokenError { AccessTokenError(.unsupportedAlgorithm, algorithm: algorithm) }
    /// A key id the verifier has no key for.
    public static let unknownKey = AccessTokenError(.unknownKey)
    /// The signature does not verify.
    public static let badSignature = AccessTokenError(.badSignature)
    /// `exp` has passed.
    public static let expired = AccessTokenError(.expired)
    /// `nbf` is still to come.
    public static let notYetValid = AccessTokenError(.notYetValid)
    /// `iss` or `aud` is not the one configured.
    public static let wrongIssuerOrAudience = AccessTokenError(.wrongIssuerOrAudience)
    /// No usable `sub`.
    public static let noSubject = AccessTokenError(.noSubject)

    public var description: String {
        switch code {
        case .malformed: "the token is malformed"
        case .unsupportedAlgorithm: "the token's algorithm \(algorithm ?? "?") is not accepted"
        case .unknownKey: "the token names an unknown key"
        case .badSignature: "the token's signature does not verify"
        case .expired: "the token has expired"
        case .notYetValid: "the token is not valid yet"
        case .wrongIssuerOrAudience: "the token is for another issuer or audience"
        case .noSubject: "the token names no subject"
        default: "the token was refused (\(code))"
        }
    }
}
