import Foundation
import ModelSyncCore

/// When and how often idempotent requests are retried: exponential backoff with jitter, and
/// `Retry-After` honoured.
///
/// Only requests whose ``RemoteRequest/isIdempotent`` is true are retried (GET, HEAD, PUT,
/// DELETE, OPTIONS by default; a POST only when the caller marks it).
public struct RetryPolicy: Sendable {
    /// The most attempts in all, the first included (1: no retries).
    public var maxAttempts: Int
    /// The wait before the first retry; doubled for each further one.
    public var baseDelay: Duration
    /// The longest wait, also the cap on `Retry-After`.
    public var maxDelay: Duration
    /// The share of each wait that is random, from 0 (none) to 1 (full jitter).
    public var jitter: Double
    /// The statuses worth retrying.
    public var retryableStatuses: Set<Int>
    /// Whether connection failures and timeouts are retried.
    public var retriesTransportErrors: Bool

    /// Creates a policy; the defaults retry twice, after about 0.2 s and 0.4 s.
    public init(
        maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10),
        jitter: Double = 0.5, retryableStatuses: Set<Int> = [408, 429, 502, 503, 504], retriesTransportErrors: Bool = true
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = min(max(jitter, 0), 1)
        self.retryableStatuses = retryableStatuses
        self.retriesTransportErrors = retriesTransportErrors
    }

    /// Never retries.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The wait before retry number `retry` (1 for the first), honouring `Retry-After` (seconds
    /// or an HTTP date) when the server sent one.
    func delay(beforeRetry retry: Int, retryAfter: String?) -> Duration {
        if let retryAfter {
            // Capped before converting, so that "1e300" or a date in year 9999 cannot overflow.
            let cap = maxDelay.timeInterval
            if let seconds = Double(retryAfter.trimmingCharacters(in: .whitespaces)), seconds.isFinite, seconds >= 0 {
                return .milliseconds(Int64(min(seconds, cap) * 1000))
            }
            if let date = HTTPDate.parse(retryAfter) {
                return .milliseconds(Int64(min(max(0, date.timeIntervalSinceNow), cap) * 1000))
            }
        }
        let exponential = baseDelay * (1 << min(retry - 1, 30))
        let capped = min(exponential, maxDelay)
        return capped * (1 - jitter * Double.random(in: 0...1))
    }
}
