import Foundation

/// Reads whose cost the caller chooses (a filter, `q` or `_like` over a whole collection) take
/// turns: at most ``width`` at once, off the cooperative pool.
///
/// Request handlers share the cooperative pool, one thread per core. A scan there holds its
/// thread for its whole run, so a few clients sending costly filters at once held every thread,
/// and a read by id waited behind them (`server_get_id_under_like`). Bounded to one fewer than
/// the cores, costly reads leave a core to everything else; past the bound they wait by
/// suspending, so the clients that send them slow down each other, not the server.
package final class CostlyReads: Sendable {
    /// One fewer than the machine's cores, and at least one.
    package static var defaultWidth: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }

    /// How many costly reads run at once.
    package let width: Int
    private let turns: AsyncSemaphore

    package init(width: Int = CostlyReads.defaultWidth) {
        self.width = max(1, width)
        turns = AsyncSemaphore(permits: self.width)
    }

    /// `body` in its turn, on the calling task: for work that already runs on a thread of its
    /// own (a SQLite reader's).
    package func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await turns.run(body)
    }

    /// `body` in its turn, on a Dispatch thread rather than the cooperative pool.
    package func runOffPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await turns.run {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
            }
        }
    }
}
