import ModelSyncRemote

/// How a ``CachedStore`` read meets the network and the cache (the identity map, then the
/// database). For "cached, then fresh", use the `…CachedThenFresh` methods, which deliver two
/// values.
public enum CachePolicy: Sendable, Equatable {
    /// Only the server; the cache is written to but never read.
    case remoteOnly
    /// Only the cache; no request is made.
    case cacheOnly
    /// The server, and the cache when the network fails (connection errors, timeouts, 5xx
    /// statuses): the result then says so in ``CachedResult/networkError``. Any other answer
    /// (a 404, say) is not a network failure and is thrown.
    case remoteElseCache
}

/// A value read through a ``CachedStore``, and where it came from.
public struct CachedResult<Value: Sendable>: Sendable {
    /// Where a value came from.
    public enum Source: Sendable, Equatable {
        /// A response from the server.
        case remote
        /// The identity map or the database.
        case cache
    }

    /// The value.
    public let value: Value
    /// Where it came from.
    public let source: Source
    /// Under ``CachePolicy/remoteElseCache``, the network failure that the cache stood in for.
    public let networkError: RemoteError?

    /// Whether the value is the cache standing in for a failed network read.
    public var isFallback: Bool { networkError != nil }
}

/// One delivery of a cached-then-fresh read: first what the cache holds, then the server's
/// answer.
public enum CacheUpdate<Value: Sendable>: Sendable {
    /// The cached value, delivered first.
    case cached(Value)
    /// Delivered first when the cache holds nothing.
    case notCached
    /// The server's value, delivered second; it has replaced the cached one in the identity map
    /// and the database.
    case fresh(Value)

    /// The value delivered, if any.
    public var value: Value? {
        switch self {
        case .cached(let value), .fresh(let value): value
        case .notCached: nil
        }
    }
}

/// A cache-only read found nothing.
public struct NotCachedError: Error, Sendable, CustomStringConvertible {
    /// The model type's name.
    public let model: String
    /// The id asked for, or nil for a list.
    public let id: String?

    public var description: String {
        id.map { "\(model) \($0) is not cached" } ?? "no \(model) list is cached (the store has no database)"
    }
}

extension RemoteError {
    /// Whether the network failed (no answer, a timeout, or a 5xx status), as opposed to the
    /// server answering with an error.
    var isNetworkFailure: Bool {
        code == .transport || code == .timeout || (status ?? 0) >= 500
    }
}
