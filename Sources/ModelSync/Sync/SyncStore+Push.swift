import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    // MARK: Replay

    /// Sends the queued entries in order until the queue is empty, one push at a time.
    ///
    /// Each acknowledgement is applied in one transaction: the server's fields into the row
    /// (unless newer local changes are queued for it), a temporary key rewritten, the entry
    /// deleted. A 400 / 422 parks the entry and the push goes on with other rows.
    ///
    /// - Throws: ``SyncError/paused(status:)`` after a 401 (the queue stays paused until
    ///   ``resume()``); ``SyncError/willRetry(sequence:underlying:)`` when an entry failed with a
    ///   transport error, 5xx or 429 and stays queued; a `SQLiteError`.
    @discardableResult
    public func push() async throws -> PushSummary {
        try await exclusively(.pushing) { try await pushQueued() }
    }

    private func pushQueued() async throws -> PushSummary {
        state.withLock { $0.resumptionsAtPush = $0.resumptions }
        var summary = PushSummary()
        // The first failure that stops the push (a retryable error, a pause); entries already
        // sent are still awaited, so that their acknowledgements are applied.
        var stop: (any Error)?
        let width = min(max(1, maxConcurrentRequests), PushScheduler.windowSize / 2)
        var scheduler = PushScheduler()
        try await withThrowingTaskGroup(of: [(OutboxRecord, Result<SendOutcome, any Error>)].self) { group in
            // Requests (or batches) in flight.
            var running = 0
            while true {
                if stop == nil, let status = state.withLock({ $0.pausedStatus }) { stop = SyncError.paused(status: status) }
                // A server that takes batches gets the independent entries in batches, two in
                // flight (one when `maxConcurrentRequests` is 1); any other gets them one per
                // request, `width` in flight.
                let batching = maxBatchSize > 1 && state.withLock({ $0.takesBatches }) != false
                if stop == nil && running < (batching ? min(2, width) : width) {
                    let started: [OutboxRecord]
                    do {
                        started = try await startIndependentEntries(limit: batching ? maxBatchSize : width - running, &scheduler)
                    } catch {
                        stop = error
                        started = []
                    }
                    if batching && started.count > 1 {
                        running += 1
                        group.addTask { await self.sendBatch(started) }
                    } else {
                        for entry in started {
                            running += 1
                            group.addTask { [(entry, await self.sendAlone(entry))] }
                        }
                    }
                }
                guard running > 0, let outcomes = try await group.next() else { break }
                running -= 1
                for (entry, result) in outcomes {
                    scheduler.finish(entry.sequence)
                    state.withLock { _ = $0.inFlight.remove(entry.sequence) }
                    await count(result, of: entry, into: &summary, stop: &stop)
                }
            }
        }
        if let stop {
            logger.debug("push stopped; entries stay queued", metadata: ["sent": "\(summary.sent)", "reason": "\(stop)"])
            throw stop
        }
        state.withLock { $0.lastError = nil }
        summary.remaining = try await pendingCount()
        logger.debug("push finished", metadata: ["sent": "\(summary.sent)", "parked": "\(summary.parked)", "remaining": "\(summary.remaining)"])
        return summary
    }

    /// Counts what sending `entry` came to. A failure is recorded (the entry parked, or kept
    /// for a retry); the first one that stops the push is kept in `stop`.
    private func count(
        _ result: Result<SendOutcome, any Error>, of entry: OutboxRecord, into summary: inout PushSummary, stop: inout (any Error)?
    ) async {
        switch result {
        case .success(.acknowledged):
            summary.sent += 1
            // A row kept only for this change, or created outside every subscription, may go now.
            state.withLock { _ = $0.sweptModels.remove(entry.model) }
        case .success(.conflictResolved):
            // The entry was rewritten against the server's record; it goes again if needed.
            summary.conflicts += 1
        case .failure(let failure):
            do {
                if try await handleFailure(failure, of: entry) { summary.parked += 1 } else if stop == nil {
                    stop = SyncError.willRetry(sequence: entry.sequence, underlying: "\(failure)")
                }
            } catch {
                if stop == nil { stop = error }
            }
        }
    }

    /// Marks as in flight up to `limit` of the oldest pending entries that depend on no
    /// earlier unfinished entry (``PushScheduler/next(limit:inFlight:)`` chooses them), and
    /// returns them. The queue's head is read again when the outbox changed otherwise than by
    /// this push's acknowledgements (``SyncStore/State/outboxGeneration``), or when every entry
    /// read has started.
    func startIndependentEntries(limit: Int, _ scheduler: inout PushScheduler) async throws -> [OutboxRecord] {
        while true {
            let (generation, inFlight) = state.withLock { ($0.outboxGeneration, $0.inFlight) }
            if generation != scheduler.generation {
                scheduler = try await readWindow()
                continue
            }
            let started: [OutboxRecord]
            switch scheduler.next(limit: limit, inFlight: inFlight) {
            case .readOn:
                // Everything read has been sent: read on.
                scheduler = try await readWindow()
                if scheduler.isExhausted { return [] }
                continue
            case .start(let entries):
                started = entries
            }
            // Marked only if no save or rewrite changed the outbox since it was read: a save
            // coalesces into an entry only while it is not in flight (see `openEntries`).
            let marked = state.withLock { state -> Bool in
                guard state.outboxGeneration == scheduler.generation else { return false }
                state.inFlight.formUnion(started.map(\.sequence))
                return true
            }
            guard marked else { continue }
            // Frozen before their requests leave: the server may apply them from now on.
            // (A retry's entries are marked already: no transaction for them.)
            let sequences = started.filter { !$0.sent }.map(\.sequence)
            if !sequences.isEmpty {
                do {
                    try await database.write { db in try SyncBookkeeping.markSent(sequences, db) }
                } catch {
                    state.withLock { $0.inFlight.subtract(started.map(\.sequence)) }
                    throw error
                }
            }
            return started.map { entry in
                var entry = entry
                entry.sent = true
                return entry
            }
        }
    }

    private func readWindow() async throws -> PushScheduler {
        let models = state.withLock { $0.models }
        try await prepareBookkeeping()
        return try await database.write { db in
            // Read inside the transaction: a change after it bumps the generation again.
            let generation = self.state.withLock { $0.outboxGeneration }
            let rows = try SyncBookkeeping.queue(db, limit: PushScheduler.windowSize)
            let pending = rows.filter { $0.state == .pending }.count
            return PushScheduler(
                entries: try rows.map { ($0, try OutboxDependencies($0, models)) }, generation: generation,
                truncated: pending >= PushScheduler.windowSize)
        }
    }

    /// What sending an entry came to.
    enum SendOutcome: Sendable {
        /// The server applied it; the entry is gone.
        case acknowledged
        /// The server's record had changed (412) or gone (404): the policy rewrote the entry.
        case conflictResolved
    }

    /// Sends one entry in a request of its own.
    func sendAlone(_ entry: OutboxRecord) async -> Result<SendOutcome, any Error> {
        do {
            guard let type = state.withLock({ $0.models[entry.model] }) else { throw SyncError.unknownModel(entry.model) }
            return .success(try await send(type, entry))
        } catch {
            return .failure(error)
        }
    }

    private func send<M: SyncedModel>(_ type: M.Type, _ entry: OutboxRecord) async throws -> SendOutcome {
        let (request, options) = try await request(M.self, for: entry)
        let answer: Result<WriteAnswer, any Error>
        do {
            answer = .success(try WriteAnswer(try await remote.send(request, options: options), M.self))
        } catch {
            answer = .failure(error)
        }
        return try await handle(M.self, entry, answer)
    }

    /// The request that carries an entry.
    func request<M: SyncedModel>(_ type: M.Type, for entry: OutboxRecord) async throws -> (RemoteRequest, RequestOptions) {
        let key = try SyncKey(M.self)
        var headers = Self.protocolHeaders
        switch entry.operation {
        case .create:
            var body = entry.body
            if entry.temporaryKey { body[key.path] = nil }
            headers[SyncProtocol.idempotencyKeyHeader] = entry.idempotencyKey ?? "modelsync-\(entry.sequence)"
            // Safe to resend: the key makes the server answer a repeat with the first response.
            return (RemoteRequest(method: .post, url: try await remote.resourceURL(for: M.self), body: Self.wrapped(body, M.self)),
                    RequestOptions(headers: headers, isIdempotent: true))
        case .update, .delete:
            guard let id = SyncKey.urlSegment(entry.localKey) else { throw SyncError.unsupportedKey(model: key.model) }
            if let version = entry.serverVersion { headers["If-Match"] = version }
            headers[SyncProtocol.idempotencyKeyHeader] = entry.idempotencyKey ?? "modelsync-\(entry.sequence)"
            let url = try await remote.resourceURL(for: M.self, id: id)
            let request = entry.operation == .update
                ? RemoteRequest(method: .patch, url: url, body: Self.wrapped(entry.body, M.self)) : RemoteRequest(method: .delete, url: url)
            // Safe to resend: a server that keeps keys answers a repeat with the first answer,
            // and a stale `If-Match` is refused rather than applied twice.
            return (request, RequestOptions(headers: headers, isIdempotent: true))
        }
    }

    /// The headers of every sync request: the protocol version.
    static var protocolHeaders: HeaderFields {
        var headers = HeaderFields()
        headers[SyncProtocol.versionHeader] = String(SyncProtocol.version)
        return headers
    }

    // MARK: Automatic replay

    /// Starts pushing in the background: after every local change, and after a failure again
    /// with ``backoff`` until the queue is empty or paused. Calling it again does nothing.
    public func startAutomaticPush() {
        state.withLock { state in
            guard state.automaticPush == nil else { return }
            state.automaticPush = Task { [weak self] in
                guard let wakeUps = self?.wakeUps else { return }
                for await _ in wakeUps {
                    guard let self else { return }
                    await self.pushWithBackoff()
                }
            }
        }
        wake.yield()
    }

    /// Stops the background pushing started by ``startAutomaticPush()``.
    public func stopAutomaticPush() {
        state.withLock { state in
            state.automaticPush?.cancel()
            state.automaticPush = nil
        }
    }

    private func pushWithBackoff() async {
        var delay = backoff.initial
        while !Task.isCancelled {
            do {
                try await push()
                return
            } catch let error as SyncError where error.code == .paused {
                return
            } catch {
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, backoff.maximum)
            }
        }
    }
}
