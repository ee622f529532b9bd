import HummingbirdBcrypt
import ModelSyncServer
import NIOPosix

/// Hashes the server's account passwords with bcrypt (hummingbird-auth's), on a thread pool.
///
/// ```swift
/// let hasher = try BcryptPasswordHasher()  // cost 12
/// let hash = try await hasher.hash("correct horse battery staple")
/// try await hasher.verify("correct horse battery staple", against: hash)  // true
/// ```
///
/// bcrypt takes a quarter of a second of CPU at cost 12, by design; both ``hash(_:)`` and
/// ``verify(_:against:)`` run on a `NIOThreadPool` (the singleton by default), never on Swift
/// concurrency's cooperative pool, whose few threads would stall every other request.
///
/// ## Passwords longer than 72 bytes
///
/// bcrypt reads at most the first 72 bytes of a password, and stops at a NUL byte: passwords
/// that differ only after that would share a hash. Rather than pre-hash (which would make hashes
/// that no other bcrypt verifies, json-server-auth's among them), ``hash(_:)`` refuses a password
/// of more than ``maximumPasswordLength`` UTF-8 bytes, or one with a NUL, with
/// ``PasswordHashingError``: `/register` can answer 400. ``verify(_:against:)`` answers false for
/// such a password, since no hash made here can match it.
///
/// ## Hashes made elsewhere
///
/// ``verify(_:against:)`` checks any bcrypt hash of versions `2a`, `2b` and `2y` (PHP's, the same
/// algorithm as `2b`) at any cost from 4 to 31, so that accounts imported from json-server-auth
/// (bcryptjs, `$2a$10$`) keep their passwords. Anything else is false, quickly.
public struct BcryptPasswordHasher: PasswordHasher {
    /// The cost used when none is given: 2¹² rounds.
    public static let defaultCost = 12
    /// The lowest cost accepted for new hashes (OWASP's floor).
    public static let minimumCost = 10
    /// The highest cost bcrypt has.
    public static let maximumCost = 31
    /// The longest password hashed, in UTF-8 bytes: what bcrypt reads.
    public static let maximumPasswordLength = 72

    /// The cost of new hashes: log₂ of the rounds.
    public let cost: Int
    private let threadPool: NIOThreadPool

    /// A hasher that makes hashes of `cost`.
    ///
    /// - Parameters:
    ///   - cost: log₂ of the rounds, from ``minimumCost`` to ``maximumCost``; each step doubles
    ///     the time.
    ///   - threadPool: Where bcrypt runs; NIO's singleton pool by default.
    /// - Throws: ``PasswordHashingError/costOutOfRange(_:)``.
    public init(cost: Int = BcryptPasswordHasher.defaultCost, threadPool: NIOThreadPool = .singleton) throws(PasswordHashingError) {
        guard (Self.minimumCost...Self.maximumCost).contains(cost) else { throw .costOutOfRange(cost) }
        self.cost = cost
        self.threadPool = threadPool
    }

    /// A salted bcrypt hash of `password` (`$2b$`, 60 characters).
    ///
    /// - Throws: ``PasswordHashingError/passwordTooLong(byteCount:)`` and
    ///   ``PasswordHashingError/passwordContainsNUL``; an error of the thread pool when it has
    ///   been shut down.
    public func hash(_ password: String) async throws -> String {
        let length = password.utf8.count
        guard length <= Self.maximumPasswordLength else { throw PasswordHashingError.passwordTooLong(byteCount: length) }
        guard !password.utf8.contains(0) else { throw PasswordHashingError.passwordContainsNUL }
        let cost = UInt8(cost)
        return try await threadPool.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether `password` matches `hash`.
    ///
    /// False, without running bcrypt, for a hash that is not a bcrypt hash and for a password
    /// ``hash(_:)`` refuses. To answer a login for an unknown account as slowly as one for a
    /// known account, verify against a hash made once at the same cost.
    ///
    /// - Throws: Only an error of the thread pool, when it has been shut down.
    public func verify(_ password: String, against hash: String) async throws -> Bool {
        guard password.utf8.count <= Self.maximumPasswordLength, !password.utf8.contains(0),
            let hash = Self.normalized(hash)
        else { return false }
        return try await threadPool.runIfActive { Bcrypt.verify(password, hash: hash) }
    }

    /// `hash` when it is a well-formed bcrypt hash, with `$2y$` read as `$2b$` (the C code knows
    /// only `a` and `b`); nil otherwise.
    static func normalized(_ hash: String) -> String? {
        let bytes = Array(hash.utf8)
        // $2x$NN$ then 53 characters of bcrypt's base64: 22 of salt, 31 of hash.
        guard bytes.count == 60, bytes[0] == UInt8(ascii: "$"), bytes[1] == UInt8(ascii: "2"), bytes[3] == UInt8(ascii: "$"),
            bytes[6] == UInt8(ascii: "$")
        else { return nil }
        let version = bytes[2]
        guard version == UInt8(ascii: "a") || version == UInt8(ascii: "b") || version == UInt8(ascii: "y") else { return nil }
        let digits = bytes[4...5]
        guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let cost = Int(digits[4] - UInt8(ascii: "0")) * 10 + Int(digits[5] - UInt8(ascii: "0"))
        guard (4...Self.maximumCost).contains(cost), bytes[7...].allSatisfy(Self.isBcryptBase64) else { return nil }
        return version == UInt8(ascii: "y") ? "$2b" + hash.dropFirst(3) : hash
    }

    private static func isBcryptBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            false
        }
    }
}

/// Why ``BcryptPasswordHasher`` refused a cost or a password.
///
/// A struct with static members, not an enum (as Hummingbird's `HTTPError` and postgres-nio's
/// `PSQLError`): a new kind of failure is a new ``Code`` value, which breaks no caller's exhaustive
/// `switch`. Compare ``code`` with the static members, or the whole error for equality.
public struct PasswordHashingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of a ``PasswordHashingError``; compare it with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable { case costOutOfRange, passwordTooLong, passwordContainsNUL }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A cost outside ``BcryptPasswordHasher/minimumCost`` to ``BcryptPasswordHasher/maximumCost`` (``cost``).
        public static let costOutOfRange = Code(.costOutOfRange)
        /// A password longer than ``BcryptPasswordHasher/maximumPasswordLength`` UTF-8 bytes, which
        /// bcrypt would cut (``byteCount``).
        public static let passwordTooLong = Code(.passwordTooLong)
        /// A password with a NUL byte, where bcrypt would stop reading.
        public static let passwordContainsNUL = Code(.passwordContainsNUL)

        public var description: String { base.rawValue }
    }

    /// What was refused.
    public let code: Code
    /// The cost refused, for ``Code/costOutOfRange``.
    public let cost: Int?
    /// The password's length in UTF-8 bytes, for ``Code/passwordTooLong``.
    public let byteCount: Int?

    private init(_ code: Code, cost: Int? = nil, byteCount: Int? = nil) { (self.code, self.cost, self.byteCount) = (code, cost, byteCount) }

    /// A cost outside the range bcrypt takes.
    public static func costOutOfRange(_ cost: Int) -> PasswordHashingError { PasswordHashingError(.costOutOfRange, cost: cost) }
    /// A password longer than bcrypt reads.
    public static func passwordTooLong(byteCount: Int) -> PasswordHashingError { PasswordHashingError(.passwordTooLong, byteCount: byteCount) }
    /// A password with a NUL byte.
    public static let passwordContainsNUL = PasswordHashingError(.passwordContainsNUL)

    /// The reason, in a sentence for a log or a command line.
    public var description: String {
        switch code {
        case .costOutOfRange:
            "bcrypt cost \(cost ?? 0) is outside \(BcryptPasswordHasher.minimumCost)...\(BcryptPasswordHasher.maximumCost)"
        case .passwordTooLong:
            "the password has \(byteCount ?? 0) bytes; bcrypt reads at most \(BcryptPasswordHasher.maximumPasswordLength)"
        case .passwordContainsNUL: "the password contains a NUL character"
        default: "the password was refused (\(code))"
        }
    }
}
