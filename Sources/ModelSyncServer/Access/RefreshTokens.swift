import Foundation
import ModelSyncJSON

/// SHA-256, which refresh tokens are stored by. `ModelSyncServerAuth` has one
/// (`SHA256TokenDigest`, swift-crypto's); it is a protocol so that the JSON server never
/// links a cryptography library.
public protocol RefreshTokenDigest: Sendable {
    /// The SHA-256 digest (32 bytes) of `bytes`.
    func sha256(_ bytes: [UInt8]) -> [UInt8]
}

/// How the built-in accounts hand out refresh tokens: with it, `/register` and `/login` also
/// answer a `refreshToken`, which `POST /token` exchanges for a new access token and a new
/// refresh token (the one sent is then used up), and `POST /logout` revokes.
///
/// - Each token is 32 random bytes (base64url) and its family's id, stored only as the bytes'
///   SHA-256: the data file or database alone signs no one in. A family keeps two tokens at
///   most (the current one and the one before), however long it lives.
/// - Tokens rotate: a token is exchanged once. Sending a used token again revokes every token
///   descended from the same sign-in (its family), as the OAuth 2.0 security BCP asks: of a thief
///   and the app, the second to refresh reveals the theft and both are signed out.
/// - A lost answer is not a theft: within ``retryWindow`` of its exchange, and while its
///   successor is unused, a token may be sent again and answers the same successor. The
///   successor is stored sealed with a key derived from the token it replaces (the XOR of
///   SHA-256 of that token and a label), so only a caller holding the old token can open it.
public struct RefreshTokenPolicy: Sendable {
    /// Hashes tokens for storage.
    public var digest: any RefreshTokenDigest
    /// How long a refresh token stays valid unused; each exchange gives a new one this long (so
    /// an app used at least this often stays signed in). 30 days by default.
    public var lifetime: Duration
    /// How long after its exchange a token may be sent again for its (unused) successor, when
    /// the answer to the exchange was lost. 60 seconds by default; zero turns retries off.
    public var retryWindow: Duration

    /// The longest ``lifetime``: ten years. Beyond it an expiry would leave the dates both
    /// backends store (and `Int` seconds) behind.
    public static let maximumLifetime = Duration.seconds(10 * 365 * 24 * 60 * 60)

    /// Creates a policy; a `lifetime` above ``maximumLifetime`` is that.
    public init(digest: any RefreshTokenDigest, lifetime: Duration = .seconds(30 * 24 * 60 * 60), retryWindow: Duration = .seconds(60)) {
        self.digest = digest
        self.lifetime = min(lifetime, Self.maximumLifetime)
        self.retryWindow = min(retryWindow, Self.maximumLifetime)
    }
}

/// A refresh token as a backend keeps it: its hash, never the token.
package struct StoredRefreshToken: Sendable, Equatable {
    /// The base64url SHA-256 of the token's bytes.
    package var hash: String
    /// The account it signs in.
    package var userID: String
    /// The sign-in it descends from (every token of one login shares it).
    package var family: String
    package var expires: Date
    /// When it was exchanged, nil while unused.
    package var rotated: Date?
    /// Its successor's hash, once exchanged.
    package var successor: String?
    /// Its successor, sealed with a key only the token itself gives (see ``RefreshTokenPolicy``).
    package var sealedSuccessor: String?

    package init(hash: String, userID: String, family: String, expires: Date, rotated: Date? = nil, successor: String? = nil, sealedSuccessor: String? = nil) {
        (self.hash, self.userID, self.family, self.expires) = (hash, userID, family, expires)
        (self.rotated, self.successor, self.sealedSuccessor) = (rotated, successor, sealedSuccessor)
    }

    init?(hash: String, saved: JSONValue) {
        guard let userID = saved["user"]?.stringValue, let family = saved["family"]?.stringValue,
              let expires = saved["expires"]?.doubleValue
        else { return nil }
        // A hand-edited file's dates are kept within what `saved` writes back as `Int`s.
        func date(_ seconds: Double) -> Date { Date(timeIntervalSince1970: min(max(seconds, 0), Self.latestSeconds)) }
        self.init(
            hash: hash, userID: userID, family: family, expires: date(expires),
            rotated: saved["rotatedMs"]?.doubleValue.map { date($0 / 1000) },
            successor: saved["successor"]?.stringValue, sealedSuccessor: saved["sealed"]?.stringValue)
    }

    /// The end of year 9999.
    static let latestSeconds: Double = 253_402_300_799

    var saved: JSONValue {
        var object: JSONObject = [
            "user": .string(userID), "family": .string(family), "expires": .number(JSONNumber(Int(expires.timeIntervalSince1970.rounded(.down)))),
        ]
        // Milliseconds: the retry window is short.
        if let rotated { object["rotatedMs"] = .number(JSONNumber(Int((rotated.timeIntervalSince1970 * 1000).rounded()))) }
        if let successor { object["successor"] = .string(successor) }
        if let sealedSuccessor { object["sealed"] = .string(sealedSuccessor) }
        return .object(object)
    }
}

/// What exchanging a refresh token did.
package enum RefreshTokenExchange: Sendable, Equatable {
    /// The token was unused: it is used up now, and the successor given is stored.
    case rotated(userID: String)
    /// The token was exchanged moments ago and its successor is unused (the answer was lost):
    /// the same successor again, sealed as stored.
    case retried(userID: String, sealedSuccessor: String)
    /// The token had been exchanged already: its whole family is revoked.
    case reused
    /// No such token, or it has expired.
    case invalid

    /// What to do with the token sent, stored as `token` (nil: not stored, or no longer) and
    /// naming `family` (which `familyKnown` says still has tokens), whose successor
    /// `successorUnused` says is unused, at `now`. The same rules for every backend.
    ///
    /// A family keeps only its current token and the one before (for the retry of a lost
    /// answer): an older token of a live family is not stored, and is a reuse by its family.
    package static func decide(
        _ token: StoredRefreshToken?, family: String, familyKnown: Bool, successorUnused: Bool, now: Date, retryWindow: Duration
    ) -> Decision {
        guard let token else { return familyKnown ? .revokeFamily : .invalid }
        guard token.family == family, token.expires > now else { return .invalid }
        guard let rotated = token.rotated else { return .rotate }
        if successorUnused, now.timeIntervalSince(rotated) < retryWindow.timeInterval, let sealed = token.sealedSuccessor {
            return .retry(sealedSuccessor: sealed)
        }
        return .revokeFamily
    }

    package enum Decision: Sendable, Equatable {
        case rotate
        case retry(sealedSuccessor: String)
        case revokeFamily
        case invalid
    }
}

/// A refresh token: 32 random bytes, and the id of its family (16 random bytes, shared by every
/// token descended from one sign-in), as text `<bytes>.<family>` in base64url. Only the bytes
/// are secret and hashed; the family lets the server recognise an old token of a live family
/// (a reuse) without keeping every token it ever gave.
package struct RefreshToken: Sendable {
    package static let byteCount = 32
    package static let familyByteCount = 16
    package let bytes: [UInt8]
    package let family: String

    /// A new random token of `family` (nil: of a new family).
    package init(family: String? = nil) {
        self.init(bytes: Self.random(Self.byteCount), family: family ?? Base64URL.encode(Self.random(Self.familyByteCount)))
    }

    package init(bytes: [UInt8], family: String) {
        (self.bytes, self.family) = (bytes, family)
    }

    /// The token a client sent, nil for text that is not one (any other length, alphabet,
    /// padding or shape): such text never reaches storage.
    package init?(text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard text.utf8.count == 43 + 1 + 22, parts.count == 2,
              let bytes = Base64URL.decode(String(parts[0])), bytes.count == Self.byteCount,
              let family = Base64URL.decode(String(parts[1])), family.count == Self.familyByteCount
        else { return nil }
        self.init(bytes: bytes, family: String(parts[1]))
    }

    package var text: String { Base64URL.encode(bytes) + "." + family }

    /// The hash it is stored by.
    package func hash(_ digest: any RefreshTokenDigest) -> String {
        Base64URL.encode(digest.sha256(bytes))
    }

    /// `successor` sealed (or, given a sealed successor, opened) with the key this token gives:
    /// SHA-256 of the token and a label, which its stored hash does not reveal.
    package func seal(_ successor: [UInt8], _ digest: any RefreshTokenDigest) -> [UInt8] {
        let key = digest.sha256(bytes + Array("modelsync successor".utf8))
        return zip(successor, key).map { $0 ^ $1 }
    }

    private static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// base64url without padding (RFC 4648 §5).
package enum Base64URL {
    package static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    package static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 < 0x80 && ($0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || isAlphanumeric($0)) }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        // Only the canonical spelling: one token, one text.
        guard encode(Array(data)) == text else { return nil }
        return Array(data)
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
