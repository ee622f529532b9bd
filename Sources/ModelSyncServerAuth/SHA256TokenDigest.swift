import Crypto
import ModelSyncServer

/// SHA-256 by swift-crypto: the digest that refresh tokens are stored by.
///
/// ```swift
/// BuiltInAccounts(issuer: tokens, passwords: BcryptPasswordHasher(),
///                 refreshTokens: RefreshTokenPolicy(digest: SHA256TokenDigest()))
/// ```
public struct SHA256TokenDigest: RefreshTokenDigest {
    /// Creates the digest.
    public init() {}

    public func sha256(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }
}
