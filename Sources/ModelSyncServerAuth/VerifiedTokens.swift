import Foundation
import ModelSyncCore
import ModelSyncServer

/// The callers of tokens already verified, until each token expires.
///
/// A client sends the same access token with every request for as long as it lives (an hour by
/// default); verifying it each time costs a parse, a signature and a hop to jwt-kit's key
/// collection actor, which every request would queue on. A token is remembered only once its
/// signature and claims checked out, by its bytes (`String` equality would let a token with a
/// KELVIN SIGN for a `K` hit the entry of the one that was verified), so only its holder can
/// hit the entry.
/// Bounded: when full, the expired entries go, and if none had, all of them.
final class VerifiedTokens: @unchecked Sendable {
    static let capacity = 10_000

    private struct Entry {
        var caller: Caller
        /// Seconds since 1970 until which the token is valid (its `exp` plus the leeway).
        var validUntil: Double
    }

    // Guards `entries`; never held across a suspension.
    private let lock = NSLock()
    private var entries: [ExactText: Entry] = [:]

    /// The caller of `token` if it was verified and is still valid at `now`.
    func caller(for token: String, now: Double) -> Caller? {
        lock.withLock {
            let key = ExactText(token)
            guard let entry = entries[key] else { return nil }
            guard now < entry.validUntil else {
                entries[key] = nil
                return nil
            }
            return entry.caller
        }
    }

    /// Remembers a verified token's caller until `validUntil`.
    func remember(_ token: String, _ caller: Caller, validUntil: Double, now: Double) {
        lock.withLock {
            if entries.count >= Self.capacity {
                entries = entries.filter { now < $0.value.validUntil }
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[ExactText(token)] = Entry(caller: caller, validUntil: validUntil)
        }
    }
}
