import Foundation
import HTTPTypes
import ModelSyncCore

/// How often the built-in accounts' routes (`POST /login`, `/register`, `/token`, and the password
/// change) may be tried, and how many password hashes run at once.
///
/// Each attempt counts against its client's address and, for `/login` and `/register`, against
/// the email it names; past either limit the server answers 429 with `Retry-After` (seconds) and
/// runs no password hash. Each limit is a bucket of `attempts` that refills evenly over `window`:
/// 10 per minute lets a burst of 10, then one every 6 seconds.
///
/// The per-account limit also slows a guesser who spreads over many addresses; the price is that
/// such a guesser can keep the owner out of logins for as long as it keeps trying. Limits are per
/// server process: several servers over one database each count their own.
public struct AccountRateLimits: Sendable, Equatable {
    /// Attempts per client address in ``window``.
    public var perAddress: Int
    /// Attempts per account (the email a login or registration names) in ``window``.
    public var perAccount: Int
    /// The time over which each limit refills.
    public var window: Duration
    /// Password hashes (bcrypt) that run at once; further logins wait their turn without holding
    /// a thread.
    public var concurrentPasswordHashes: Int

    /// Creates limits: by default 30 attempts per address and 10 per account per minute, and as
    /// many hashes at once as the machine has cores.
    public init(
        perAddress: Int = 30, perAccount: Int = 10, window: Duration = .seconds(60),
        concurrentPasswordHashes: Int = max(1, ProcessInfo.processInfo.activeProcessorCount)
    ) {
        self.perAddress = max(1, perAddress)
        self.perAccount = max(1, perAccount)
        self.window = window > .zero ? window : .seconds(1)
        self.concurrentPasswordHashes = max(1, concurrentPasswordHashes)
    }
}

/// Token buckets by key (`address:…`, `account:…`), for ``AccountRateLimits``.
final class AttemptLimiter: Sendable {
    /// Keys kept at most; when full, the buckets that have refilled go, and if none had, all.
    static let capacity = 100_000

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private let buckets = Locked([String: Bucket]())

    /// Takes one attempt from each of `keys` (limit each), or none and the seconds until all
    /// have one again.
    func attempt(_ keys: [(key: String, limit: Int)], window: Duration, now: Double) -> Int? {
        let seconds = max(window.timeInterval, 0.001)
        return buckets.withLock { buckets in
            if buckets.count >= Self.capacity {
                // A bucket untouched for a window is full again: the same as none.
                buckets = buckets.filter { now - $0.value.updated < seconds }
                if buckets.count >= Self.capacity { buckets.removeAll(keepingCapacity: true) }
            }
            var refilled: [(key: String, bucket: Bucket)] = []
            var wait = 0.0
            for (key, limit) in keys {
                let rate = Double(limit) / seconds
                var bucket = buckets[key] ?? Bucket(tokens: Double(limit), updated: now)
                bucket.tokens = min(Double(limit), bucket.tokens + (now - bucket.updated) * rate)
                bucket.updated = now
                if bucket.tokens < 1 { wait = max(wait, (1 - bucket.tokens) / rate) }
                refilled.append((key, bucket))
            }
            // All or nothing: a refused attempt takes from no bucket.
            for entry in refilled {
                buckets[entry.key] = Bucket(tokens: entry.bucket.tokens - (wait == 0 ? 1 : 0), updated: now)
            }
            // Capped: a window of years would make a wait past `Int`, which traps when converted.
            return wait == 0 ? nil : max(1, Int(min(wait.rounded(.up), 1e9)))
        }
    }
}

/// A counting semaphore for async code: ``run(_:)`` waits for a permit by suspending (never by
/// blocking a thread), in arrival order.
package final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Locked<State>

    package init(permits: Int) {
        state = Locked(State(available: max(1, permits)))
    }

    package func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

extension APIError {
    /// A 429 with `Retry-After`.
    static func tooManyAttempts(retryAfter seconds: Int) -> APIError {
        var error = APIError(status: .tooManyRequests, message: "too many attempts; try again in \(seconds) s")
        error.headers[.retryAfter] = String(seconds)
        return error
    }
}
