import ModelSyncCore
import ModelSyncServer

/// Single writes that arrive while another is committing queue up, and then commit together in
/// one transaction: every write holds the state row's lock (writes from every server go one at
/// a time), so under load the lock, the `BEGIN`/`COMMIT` round trips and the `NOTIFY` are paid
/// once per group instead of once per write.
///
/// No task of its own: the first write to arrive leads, commits the queue as one group, hands
/// each write its outcome and passes the lead to the first write that queued meanwhile.
final class GroupCommit: Sendable {
    typealias Outcome = Result<ItemWrite.Result, any Error>

    /// The most writes one transaction commits.
    static let largestGroup = 64

    private enum Turn {
        case finished(Outcome)
        case lead
    }

    private struct Waiter {
        let operation: ItemOperation
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct Queue {
        var waiting: [Waiter] = []
        /// Whether a write leads; when none does, nothing waits.
        var led = false
    }

    private let queue = Locked(Queue())

    /// How many writes wait for a group to take them (the leader's among them until it does).
    var waitingCount: Int { queue.withLock { $0.waiting.count } }

    /// Commits `operation`, alone or with the writes that queue with it.
    /// - Parameter commit: commits a group of writes in order, an outcome for each (run when
    ///   this write leads).
    func submit(_ operation: ItemOperation, commit: ([ItemOperation]) async -> [Outcome]) async -> Outcome {
        let turn = await withCheckedContinuation { continuation in
            let leads = queue.withLock { queue in
                queue.waiting.append(Waiter(operation: operation, continuation: continuation))
                defer { queue.led = true }
                return !queue.led
            }
            if leads { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .finished(let outcome):
            return outcome
        case .lead:
            // The leader is first in the queue: it queued first, or was handed the lead as first.
            let group = queue.withLock { queue in
                let group = Array(queue.waiting.prefix(Self.largestGroup))
                queue.waiting.removeFirst(group.count)
                return group
            }
            var outcomes = await commit(group.map(\.operation))
            // A commit answers every write; should it not, the rest fail rather than wait forever.
            while outcomes.count < group.count { outcomes.append(.failure(ServerError.database("a grouped write got no answer"))) }
            let next = queue.withLock { queue in
                if queue.waiting.isEmpty { queue.led = false }
                return queue.waiting.first
            }
            for (waiter, outcome) in zip(group, outcomes).dropFirst() { waiter.continuation.resume(returning: .finished(outcome)) }
            next?.continuation.resume(returning: .lead)
            return outcomes[0]
        }
    }
}
