import Foundation
import JWTKit

/// The claims of a token being verified: what the checks and the caller need, decoded before the
/// signature is checked (and used only after).
struct Claims: JWTPayload {
    /// Carries ``JWTAccessTokens/roleClaim`` into the decoding. (Its initializer is failable, though
    /// it never fails for a string.)
    static let roleClaimKey = CodingUserInfoKey(rawValue: "ModelSyncServerAuth.roleClaim")

    /// `sub` as a string: a string as it is, an integer in decimal; nil when missing or another type.
    var subject: String?
    /// `exp`, in seconds since 1970.
    var expiration: Double?
    /// `nbf`, in seconds since 1970.
    var notBefore: Double?
    var issuer: String?
    /// `aud`: one string or an array of them.
    var audience: [String]
    /// The role claim, when it is a string.
    var role: String?
    /// ``JWTAccessTokens/generationClaim``, when it is an integer.
    var generation: Int?

    init(from decoder: any Decoder) throws {
        // A payload that is not a JSON object throws here: a malformed token.
        let container = try decoder.container(keyedBy: ClaimKey.self)
        if let string = try? container.decode(String.self, forKey: "sub") {
            subject = string.isEmpty ? nil : string
        } else if let integer = try? container.decode(Int64.self, forKey: "sub") {
            subject = String(integer)
        } else if let number = try? container.decode(Double.self, forKey: "sub"), let integer = Int64(exactly: number) {
            subject = String(integer)
        }
        expiration = try Self.numericDate(container, "exp")
        notBefore = try Self.numericDate(container, "nbf")
        issuer = try container.decodeIfPresent(String.self, forKey: "iss")
        if let one = try? container.decode(String.self, forKey: "aud") {
            audience = [one]
        } else {
            audience = try container.decodeIfPresent([String].self, forKey: "aud") ?? []
        }
        generation = try? container.decodeIfPresent(Int.self, forKey: ClaimKey(stringValue: JWTAccessTokens.generationClaim))
        if let key = Self.roleClaimKey, let claim = decoder.userInfo[key] as? String {
            role = Self.role(at: claim, in: container)
        }
    }

    /// A NumericDate (RFC 7519, 2): a finite number, or nil when missing; another type throws.
    private static func numericDate(_ container: KeyedDecodingContainer<ClaimKey>, _ key: ClaimKey) throws -> Double? {
        guard let value = try container.decodeIfPresent(Double.self, forKey: key) else { return nil }
        guard value.isFinite else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not a finite number")
        }
        return value
    }

    /// The string at `claim`: a top-level claim of that name, else the dotted path through nested
    /// objects. Any other type, or a missing step, is no role.
    private static func role(at claim: String, in container: KeyedDecodingContainer<ClaimKey>) -> String? {
        let whole = ClaimKey(stringValue: claim)
        if container.contains(whole) { return try? container.decode(String.self, forKey: whole) }
        var path = claim.split(separator: ".").map { ClaimKey(stringValue: String($0)) }
        guard path.count > 1, let last = path.popLast() else { return nil }
        var current = container
        for key in path {
            guard let next = try? current.nestedContainer(keyedBy: ClaimKey.self, forKey: key) else { return nil }
            current = next
        }
        return try? current.decode(String.self, forKey: last)
    }

    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(self, .init(codingPath: [], debugDescription: "verified claims are not encoded"))
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// The claims of an issued token.
struct IssuedClaims: JWTPayload {
    var subject: String
    /// The role claim's name and value.
    var role: (claim: String, value: String)?
    var issuedAt: Int
    var expiration: Int
    var issuer: String?
    var audience: String?
    /// The account's generation (``JWTAccessTokens/generationClaim``), for the built-in accounts.
    var generation: Int?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ClaimKey.self)
        try container.encode(subject, forKey: "sub")
        if let role { try container.encode(role.value, forKey: ClaimKey(stringValue: role.claim)) }
        try container.encodeIfPresent(generation, forKey: ClaimKey(stringValue: JWTAccessTokens.generationClaim))
        try container.encode(issuedAt, forKey: "iat")
        try container.encode(expiration, forKey: "exp")
        try container.encodeIfPresent(issuer, forKey: "iss")
        try container.encodeIfPresent(audience, forKey: "aud")
    }

    init(subject: String, role: (claim: String, value: String)?, issuedAt: Int, expiration: Int, issuer: String?, audience: String?, generation: Int? = nil) {
        self.generation = generation
        self.subject = subject
        self.role = role
        self.issuedAt = issuedAt
        self.expiration = expiration
        self.issuer = issuer
        self.audience = audience
    }

    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "issued claims are not decoded"))
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// What jwt-kit decodes when it checks a signature: anything, since ``Claims`` has been decoded
/// already.
struct AnyPayload: JWTPayload {
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {}
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A claim's name, any string.
struct ClaimKey: CodingKey, ExpressibleByStringLiteral {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }
}

/// A JWKS document whose keys are decoded one by one, so that a key jwt-kit does not know (an
/// `oct` or `OKP` key, an unknown `alg`) is skipped rather than refusing the document.
struct LenientJWKS: Decodable {
    struct Entry: Decodable {
        var key: JWK?
        /// `sig`, `enc`, or nil.
        var use: String?

        private enum CodingKeys: String, CodingKey { case use }

        init(from decoder: any Decoder) throws {
            key = try? JWK(from: decoder)
            use = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .use)
        }
    }

    var keys: [Entry]
}
