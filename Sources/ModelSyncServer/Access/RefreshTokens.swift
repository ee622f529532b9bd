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
/// - Each token is 32 random bytes (base64url), stored only as its SHA-256: the data file or
///   database alone signs no one in.
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

    /// Creates a policy.
    public init(digest: any RefreshTokenDigest, lifetime: Duration = .seconds(30 * 24 * 60 * 60), retryWindow: Duration = .seconds(60)) {
        self.digest = digest
        self.lifetime = lifetime
        self.retryWindow = retryWindow
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
        self.init(
            hash: hash, userID: userID, family: family, expires: Date(timeIntervalSince1970: expires),
            rotated: saved["rotatedMs"]?.doubleValue.map { Date(timeIntervalSince1970: $0 / 1000) },
            successor: saved["successor"]?.stringValue, sealedSuccessor: saved["sealed"]?.stringValue)
    }

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

    /// What to do with `token` (nil: unknown), whose successor `successorUnused` says is
    /// unused, at `now`. The same rules for every backend.
    package static func decide(_ token: StoredRefreshToken?, successorUnused: Bool, now: Date, retryWindow: Duration) -> Decision {
        guard let token, token.expires > now else { return .invalid }
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

/// A refresh token's bytes and text, and what is derived from them.
package struct RefreshToken: Sendable {
    package static let byteCount = 32
    package let bytes: [UInt8]

    /// A new random token.
    package init() {
        var generator = SystemRandomNumberGenerator()
        bytes = (0..<Self.byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// The token a client sent, nil for text that is not one (any length, alphabet or padding
    /// other than 43 base64url characters): such text never reaches storage.
    package init?(text: String) {
        guard text.utf8.count == 43, let bytes = Base64URL.decode(text), bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    package var text: String { Base64URL.encode(bytes) }

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

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    package var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
