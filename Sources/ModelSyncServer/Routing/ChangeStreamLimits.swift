import Foundation
import ModelSyncCore

/// Bounds on the change streams (`GET /_changes/stream`): no client makes the server hold
/// without limit what it does not read, nor opens streams without limit (see
/// ``ServerOptions/changeStreamLimits``).
public struct ChangeStreamLimits: Sendable, Hashable {
    /// The most events (changes and keep-alives) one stream holds for a client that reads them
    /// slower than they come. One more, and the server closes the stream's connection: the
    /// client, reconnecting with its `Last-Event-ID`, reads the rest from the feed, and nothing
    /// is lost. 1,000 by default.
    public var bufferedEvents: Int
    /// The most streams one caller may have open at once: per user when signed in, per client
    /// address when anonymous. One more is answered 429. Nil sets no limit; 16 by default.
    public var streamsPerCaller: Int?

    /// Creates limits.
    public init(bufferedEvents: Int = 1_000, streamsPerCaller: Int? = 16) {
        self.bufferedEvents = max(1, bufferedEvents)
        self.streamsPerCaller = streamsPerCaller
    }
}

/// The change streams open per caller, for ``ChangeStreamLimits/streamsPerCaller``.
package final class OpenStreams: Sendable {
    private let counts = Locked<[String: Int]>([:])

    package init() {}

    /// A place for one more stream of `caller`, or nil when it has `limit` open already. The
    /// stream holds the place until it is released (the answer's body, once written or dropped).
    package func open(for caller: String, limit: Int?) -> Place? {
        let taken = counts.withLock { counts in
            let open = counts[caller] ?? 0
            if let limit, open >= limit { return false }
            counts[caller] = open + 1
            return true
        }
        return taken ? Place(caller: caller, streams: self) : nil
    }

    /// How many streams `caller` has open.
    package func count(for caller: String) -> Int {
        counts.withLock { $0[caller] ?? 0 }
    }

    fileprivate func close(_ caller: String) {
        counts.withLock { counts in
            let open = (counts[caller] ?? 1) - 1
            counts[caller] = open > 0 ? open : nil
        }
    }

    /// One open stream's place: given back when the last reference to it goes, however the
    /// stream ended (or if its body never ran).
    package final class Place: Sendable {
        private let caller: String
        private let streams: OpenStreams

        fileprivate init(caller: String, streams: OpenStreams) {
            (self.caller, self.streams) = (caller, streams)
        }

        deinit { streams.close(caller) }
    }
}
