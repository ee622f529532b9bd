import Foundation
import ModelSyncCore
#if canImport(Glibc)
import Glibc
#endif

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

    /// `body` in its turn, on one of ``LowPriorityThreads`` rather than the cooperative pool.
    package func runOffPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await turns.run {
            try await withCheckedThrowingContinuation { continuation in
                LowPriorityThreads.shared.run { continuation.resume(with: Result { try body() }) }
            }
        }
    }
}

/// The process's threads for costly reads, at a lower scheduling priority (nice 10 on Linux):
/// when every core is busy, the kernel gives a cheap request's thread the larger share, so a
/// read by id waits less behind a filter.
package final class LowPriorityThreads: Sendable {
    static let shared = LowPriorityThreads(count: CostlyReads.defaultWidth)

    private let jobs = Locked([@Sendable () -> Void]())
    private let ready = DispatchSemaphore(value: 0)
    private static let members = Locked(Set<pthread_t>())

    /// Whether the calling thread is one of these (tests check where costly work ran).
    package static var isCurrentThreadOne: Bool {
        members.withLock { $0.contains(pthread_self()) }
    }

    /// Starts `count` threads, which live as long as the process (as a thread pool's do).
    private init(count: Int) {
        for _ in 0..<max(1, count) {
            let thread = Thread { [jobs, ready] in
                _ = Self.members.withLock { $0.insert(pthread_self()) }
                Self.lowerPriority()
                while true {
                    ready.wait()
                    if let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { job() }
                }
            }
            thread.start()
        }
    }

    /// Runs `job` on the next free thread, in arrival order.
    func run(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    private static func lowerPriority() {
        #if os(Linux)
        // Nice 10, for the calling thread only (Linux keeps a nice value per thread). SCHED_IDLE
        // measured the same p99 beside four hostile clients, and would starve lists under a
        // load of cheap requests that fills every core.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #else
        Thread.current.qualityOfService = .utility
        #endif
    }
}
