import Foundation
import JWTKit
import ModelSyncCore
import ModelSyncServer

/// Access tokens as JSON Web Tokens: verifies the bearer tokens of requests and, with a secret,
/// signs the tokens of the server's own accounts.
///
/// Configure it with an HS256 secret (the contents of `--jwt-secret-file`), with the public keys
/// of an identity provider (a JWKS document: RS256 and ES256 keys, `--jwks`), or with both:
///
/// ```swift
/// let secret = try Data(contentsOf: URL(fileURLWithPath: "jwt-secret"))
/// let tokens = try await JWTAccessTokens(secret: secret, issuer: "https://auth.example.com")
/// let token = try await tokens.accessToken(for: "42", role: "editor")
/// let caller = try await tokens.caller(for: token)  // user 42 (editor)
/// ```
///
/// Verifying a token checks, in this order:
/// - its length (at most ``maximumTokenLength`` bytes) and form: three base64url parts, a JSON
///   header and a JSON object as payload, no `crit` header;
/// - its `alg`, which must be one of ``algorithms``: `none` never is;
/// - its signature, with the secret for HS256, or with the JWKS key its `kid` names (a token
///   without a `kid` may be signed by any of the JWKS's keys for its algorithm);
/// - `exp` (required) and `nbf`, allowing ``leeway`` for clocks that disagree;
/// - `iss` and `aud`, when ``issuer`` and ``audience`` are set;
/// - `sub`, a string or an integer, which becomes ``/ModelSyncServer/Caller/userID``.
///
/// The role claim (``roleClaim``) becomes ``/ModelSyncServer/Caller/role`` when it is a string;
/// a token without it names a caller without a role. Every refusal is an
/// ``/ModelSyncServer/AccessTokenError``.
///
/// jwt-kit does the signing and checks the signatures; this type chooses the key and checks the
/// claims.
public struct JWTAccessTokens: AccessTokenVerifier, AccessTokenIssuer {
    /// The default name of the claim that holds the role.
    public static let defaultRoleClaim = "role"
    /// The claim of an issued token that holds its account's generation
    /// (``/ModelSyncServer/Caller/accountGeneration``). Read only from HS256 tokens, which this
    /// server's secret signs: an identity provider's tokens never name a built-in account.
    public static let generationClaim = "modelsync_gen"
    /// The shortest HS256 secret accepted, in bytes: as long as the hash (RFC 7518, 3.2).
    public static let minimumSecretLength = 32
    /// The longest token verified, in bytes; a longer one is ``/ModelSyncServer/AccessTokenError/malformed``
    /// before any parsing.
    public static let maximumTokenLength = 8 * 1024
    /// The longest ``lifetime`` accepted: about 68 years.
    public static let maximumLifetime = Duration.seconds(Int32.max)

    /// The `iss` a token must have, or nil to accept any (or none).
    public let issuer: String?
    /// The value a token's `aud` (a string or an array) must contain, or nil to accept any.
    public let audience: String?
    /// The claim that holds the caller's role: a top-level claim, or a dotted path into nested
    /// objects such as `app_metadata.role` (a top-level claim named with the dots wins).
    public let roleClaim: String
    /// How long an issued token is valid.
    public let lifetime: Duration
    /// How far `exp` and `nbf` may be off, for clocks that disagree.
    public let leeway: Duration
    /// The algorithms a token may be signed with: `HS256` with a secret, `RS256` and `ES256`
    /// for the JWKS's keys of those kinds.
    public let algorithms: Set<String>

    /// Signs and checks HS256; nil without a secret.
    private let secretKeys: JWTKeyCollection?
    /// The JWKS's keys, each in a collection of its own, so that jwt-kit never falls back to
    /// another key than the one chosen here.
    private let publicKeys: [PublicKey]
    /// Decodes a token's claims, with the role claim's path in its user info.
    private let parser: DefaultJWTParser
    private let verified = VerifiedTokens()

    private struct PublicKey: Sendable {
        /// The JWK's `kid`, nil when it has none.
        var kid: String?
        /// `RS256` or `ES256`.
        var algorithm: String
        var keys: JWTKeyCollection
    }

    /// Configures verification, and issuing when `secret` is given.
    ///
    /// - Parameters:
    ///   - secret: The HS256 secret, at least ``minimumSecretLength`` bytes, used as it is (a file
    ///     that ends with a newline includes it: trim it first if the other issuers do not use
    ///     it). Needed to issue tokens.
    ///   - jwks: A JWKS document (`{"keys": [...]}`) with the identity provider's public keys.
    ///     Its RSA keys verify RS256 and its P-256 keys ES256; other keys (encryption keys, other
    ///     curves, other algorithms) are skipped.
    ///   - issuer: The `iss` tokens must have, and issued tokens get.
    ///   - audience: The `aud` tokens must include, and issued tokens get.
    ///   - roleClaim: The claim that holds the role; ``defaultRoleClaim`` by default.
    ///   - lifetime: How long an issued token is valid, in whole seconds; one hour by default.
    ///   - leeway: How far `exp` and `nbf` may be off; a minute by default.
    /// - Throws: ``ConfigurationError`` for no secret and no JWKS, a short secret, a JWKS that is
    ///   not one or has no RS256 or ES256 key, a key that does not load, an empty role claim, a
    ///   lifetime under a second or over ``maximumLifetime``, or a JWKS without both an
    ///   `audience` and an `issuer` (``ConfigurationError/jwksWithoutAudience``,
    ///   ``ConfigurationError/jwksWithoutIssuer``).
    public init(
        secret: Data? = nil,
        jwks: Data? = nil,
        issuer: String? = nil,
        audience: String? = nil,
        roleClaim: String = JWTAccessTokens.defaultRoleClaim,
        lifetime: Duration = .seconds(60 * 60),
        leeway: Duration = .seconds(60)
    ) async throws(ConfigurationError) {
        guard secret != nil || jwks != nil else { throw .noKeys }

        guard !roleClaim.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
            throw .invalidRoleClaim(roleClaim)
        }
        // Whole seconds (`exp` is written as one), and no overflow when added to the time.
        guard lifetime >= .seconds(1), lifetime <= Self.maximumLifetime else {
            throw .invalidDuration("the lifetime must be from a second to \(Self.maximumLifetime)")
        }
        guard leeway >= .zero else { throw .invalidDuration("the leeway must not be negative") }

        var algorithms: Set<String> = []
        if let secret {
            guard secret.count >= Self.minimumSecretLength else { throw .secretTooShort(byteCount: secret.count) }
            secretKeys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            algorithms.insert("HS256")
        } else {
            secretKeys = nil
        }
        if let jwks {
            publicKeys = try await Self.loadKeys(jwks)
            // An identity provider's keys sign tokens for all its tenants and apps: without naming
            // this one's audience and the provider, any token those keys ever signed would do.
            guard let audience, !audience.isEmpty else { throw .jwksWithoutAudience }
            guard let issuer, !issuer.isEmpty else { throw .jwksWithoutIssuer }
            algorithms.formUnion(publicKeys.map(\.algorithm))
        } else {
            publicKeys = []
        }

        self.issuer = issuer
        self.audience = audience
        self.roleClaim = roleClaim
        self.lifetime = lifetime
        self.leeway = leeway
        self.algorithms = algorithms
        let decoder = JSONDecoder()
        if let key = Claims.roleClaimKey { decoder.userInfo[key] = roleClaim }
        parser = DefaultJWTParser(jsonDecoder: decoder)
    }

    /// The caller a token names, once its signature and claims check out.
    ///
    /// - Throws: ``/ModelSyncServer/AccessTokenError``, and no other error, for any token that
    ///   is refused.
    public func caller(for token: String) async throws(AccessTokenError) -> Caller {
        // Bounded before parsing: the token comes from anyone who can reach the server.
        guard !token.isEmpty, token.utf8.count <= Self.maximumTokenLength else { throw .malformed }
        if let caller = verified.caller(for: token, now: Date().timeIntervalSince1970) { return caller }
        let bytes = Array(token.utf8)
        let header: JWTHeader
        let claims: Claims
        do {
            (header, claims, _) = try parser.parse(bytes, as: Claims.self)
        } catch {
            throw .malformed
        }
        guard let algorithm = header.alg else { throw .malformed }
        // No extension is understood, so any critical one refuses the token (RFC 7515, 4.1.11).
        guard header.fields["crit"] == nil else { throw .malformed }
        guard algorithms.contains(algorithm) else { throw .unsupportedAlgorithm(algorithm) }

        try await verifySignature(bytes, algorithm: algorithm, kid: header.kid)
        try check(claims)
        guard let subject = claims.subject else { throw .noSubject }
        let caller = Caller(userID: subject, role: claims.role, accountGeneration: algorithm == "HS256" ? claims.generation : nil)
        if let expiration = claims.expiration {
            verified.remember(token, caller, validUntil: expiration + leeway.timeInterval, now: Date().timeIntervalSince1970)
        }
        return caller
    }

    /// Checks the signature with the key the header names, by jwt-kit.
    private func verifySignature(_ token: [UInt8], algorithm: String, kid: String?) async throws(AccessTokenError) {
        let candidates: [JWTKeyCollection]
        if algorithm == "HS256", let secretKeys {
            candidates = [secretKeys]
        } else if let kid {
            let named = publicKeys.filter { $0.kid == kid }
            guard !named.isEmpty else { throw .unknownKey }
            candidates = named.filter { $0.algorithm == algorithm }.map(\.keys)
            guard !candidates.isEmpty else { throw .unsupportedAlgorithm(algorithm) }
        } else {
            candidates = publicKeys.filter { $0.algorithm == algorithm }.map(\.keys)
        }
        for keys in candidates {
            // Any failure (a signature of the wrong size, a key that refuses it) is a bad signature.
            if (try? await keys.verify(token, as: AnyPayload.self)) != nil { return }
        }
        throw .badSignature
    }

    /// Checks `exp`, `nbf`, `iss` and `aud`.
    private func check(_ claims: Claims) throws(AccessTokenError) {
        let now = Date().timeIntervalSince1970
        let leeway = leeway.timeInterval
        // A token without `exp` would never expire: not one this server accepts.
        guard let expiration = claims.expiration else { throw .malformed }
        guard now - leeway < expiration else { throw .expired }
        if let notBefore = claims.notBefore, now + leeway < notBefore { throw .notYetValid }
        if let issuer, claims.issuer != issuer { throw .wrongIssuerOrAudience }
        if let audience, !claims.audience.contains(audience) { throw .wrongIssuerOrAudience }
    }

    /// An HS256 token for `userID` (`sub`) with `role` (under ``roleClaim``, left out when nil),
    /// `iat`, `exp` (now plus ``lifetime``), and `iss` and `aud` when configured.
    ///
    /// - Throws: ``ConfigurationError/noSigningSecret`` when configured without a secret.
    public func accessToken(for userID: String, role: String?) async throws -> String {
        try await signed(for: userID, role: role, generation: nil)
    }

    /// ``accessToken(for:role:)`` with the account's `generation` in ``generationClaim``: the
    /// server refuses the token once the account has moved past it.
    public func accessToken(for userID: String, role: String?, generation: Int) async throws -> String {
        try await signed(for: userID, role: role, generation: generation)
    }

    private func signed(for userID: String, role: String?, generation: Int?) async throws -> String {
        guard let secretKeys else { throw ConfigurationError.noSigningSecret }
        let issuedAt = Int(Date().timeIntervalSince1970)
        let claims = IssuedClaims(
            subject: userID,
            role: role.map { (roleClaim, $0) },
            issuedAt: issuedAt,
            expiration: issuedAt + Int(lifetime.components.seconds),
            issuer: issuer,
            audience: audience,
            generation: generation
        )
        return try await secretKeys.sign(claims)
    }

    /// ``lifetime``: the `expiresIn` of `/login`'s answer.
    public var accessTokenLifetime: Duration? { lifetime }

    /// Loads the RS256 and ES256 keys of a JWKS document, each in a collection of its own.
    private static func loadKeys(_ jwks: Data) async throws(ConfigurationError) -> [PublicKey] {
        let document: LenientJWKS
        do {
            document = try JSONDecoder().decode(LenientJWKS.self, from: jwks)
        } catch {
            throw .invalidJWKS("not a JSON object with a \"keys\" array")
        }
        var keys: [PublicKey] = []
        for (index, entry) in document.keys.enumerated() {
            guard var jwk = entry.key, entry.use == nil || entry.use == "sig" else { continue }
            let algorithm: String
            switch jwk.keyType {
            case .rsa where jwk.algorithm == nil || jwk.algorithm == .rs256:
                algorithm = "RS256"
            case .ecdsa where (jwk.algorithm == nil || jwk.algorithm == .es256) && jwk.curve == .ecdsa(.p256):
                algorithm = "ES256"
            default:
                continue
            }
            let kid = jwk.keyIdentifier?.string
            // jwt-kit wants a kid; one the token can never name stands in for a missing one.
            if kid == nil { jwk.keyIdentifier = JWKIdentifier(string: " jwks key \(index)") }
            jwk.algorithm = JWK.Algorithm(rawValue: algorithm)
            let collection = JWTKeyCollection()
            do {
                try await collection.add(jwk: jwk)
                // Loads the key now, so that a broken one is refused here rather than per token.
                _ = try await collection.getKey(alg: algorithm)
            } catch {
                throw .invalidKey(kid: kid, reason: String(describing: error))
            }
            keys.append(PublicKey(kid: kid, algorithm: algorithm, keys: collection))
        }
        guard !keys.isEmpty else { throw .invalidJWKS("no RS256 or ES256 signing key") }
        return keys
    }
}

extension JWTAccessTokens {
    /// Why ``JWTAccessTokens`` could not be configured, or could not issue a token.
    public enum ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
        /// Neither a secret nor a JWKS: nothing to verify tokens with.
        case noKeys
        /// The HS256 secret is shorter than ``JWTAccessTokens/minimumSecretLength``.
        case secretTooShort(byteCount: Int)
        /// The JWKS document is not one, or has no RS256 or ES256 signing key.
        case invalidJWKS(String)
        /// A JWKS key of a supported kind that does not load (an RSA key shorter than 2048 bits,
        /// a point not on the curve).
        case invalidKey(kid: String?, reason: String)
        /// The role claim is empty, or a dotted path with an empty part.
        case invalidRoleClaim(String)
        /// The lifetime is not positive, or the leeway is negative.
        case invalidDuration(String)
        /// Issuing needs the HS256 secret, and none was given.
        case noSigningSecret
        /// A JWKS without an audience: an identity provider's keys sign tokens for every app
        /// and tenant it serves, so the audience must name this one.
        case jwksWithoutAudience
        /// A JWKS without an issuer: keys shared by several issuers (or republished elsewhere)
        /// would let any of them in.
        case jwksWithoutIssuer

        /// The reason, in a sentence for a log or a command line.
        public var description: String {
            switch self {
            case .noKeys: "no JWT secret and no JWKS: nothing to verify tokens with"
            case .secretTooShort(let count): "the JWT secret has \(count) bytes; at least \(JWTAccessTokens.minimumSecretLength) are needed"
            case .invalidJWKS(let reason): "the JWKS is invalid: \(reason)"
            case .invalidKey(let kid, let reason): "the JWKS key \(kid ?? "without kid") does not load: \(reason)"
            case .invalidRoleClaim(let claim): "the role claim \"\(claim)\" is not a claim name or a dotted path"
            case .invalidDuration(let reason): "invalid token duration: \(reason)"
            case .noSigningSecret: "issuing access tokens needs a JWT secret"
            case .jwksWithoutAudience: "a JWKS needs an audience (--jwt-audience): the identity provider's keys sign tokens for other apps too"
            case .jwksWithoutIssuer: "a JWKS needs an issuer (--jwt-issuer): tokens of another issuer with the same keys would be accepted"
            }
        }
    }
}
