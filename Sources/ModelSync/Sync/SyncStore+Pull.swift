import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

/// What one ``SyncStore/pull(_:)-(M.Type)`` did.
public struct PullSummary: Sendable, Hashable {
    /// Records stored (new or changed).
    public var upserted = 0
    /// Local rows deleted because the server deleted them.
    public var deleted = 0
    /// Rows with pending local changes that the server had changed: resolved by the policy.
    public var conflicts = 0
    /// Whether the whole collection was read: the server has no change feed, or the cursor was
    /// older than the feed's tombstones.
    public var fullResync = false
    /// Requests sent.
    public var requests = 0
}

extension SyncStore {
    /// Brings `type`'s local rows up to date with the server, keeping pending local changes.
    ///
    /// - Against a server with a change feed (`modelsync-server`): asks for the changes since
    ///   the stored cursor (`GET /posts?_since=<cursor>`, ``pullPageSize`` at a time), and
    ///   applies each page in one transaction: upserts, deletions (tombstones) and the new
    ///   cursor. A cursor older than the server keeps tombstones for (410) starts over with a
    ///   full resync.
    /// - Against a server without one (Django REST Framework, json-server), which answers the
    ///   plain list: a full reconcile reads the whole list (paging as set by
    ///   ``configure(_:conflicts:version:pagination:)``), stores it, and deletes the local rows
    ///   the server no longer has, in one transaction.
    ///
    /// Rows with pending local changes are rebased: the local edits stay on top of the
    /// server's record, and a field changed on both sides goes through the model's
    /// ``ConflictPolicy``. Pulls and pushes never run at the same time.
    ///
    /// - Throws: a ``/ModelSyncRemote/RemoteError`` (nothing is changed), ``SyncError``, or a
    ///   `SQLiteError`.
    @discardableResult
    public func pull<M: SyncedModel>(_ type: M.Type) async throws -> PullSummary {
        try await pull(M.self, stages: nil)
    }

    /// ``pull(_:)-(M.Type)``, timing where its time goes (for benchmarks; the plain `pull` times
    /// nothing).
    @_spi(Benchmarks)
    public func pullTimingStages<M: SyncedModel>(_ type: M.Type) async throws -> (summary: PullSummary, stages: PullStageTimes) {
        let clock = PullStageClock()
        let summary = try await pull(M.self, stages: clock)
        return (summary, clock.times)
    }

    /// One answer of the feed, read: a page and its records decoded, or what to do instead.
    private enum FetchedFeed<M: SyncedModel>: Sendable {
        case page(PulledPage<M>)
        /// The cursor is older than the server's tombstones: resync, then follow the feed from here.
        case gone(horizon: String)
        /// The server ignored `_since`: it has no feed.
        case noFeed
    }

    private func pull<M: SyncedModel>(_ type: M.Type, stages: PullStageClock?) async throws -> PullSummary {
        try await pull(M.self, from: PullSource(model: M.schema.name), stages: stages)
    }

    func pull<M: SyncedModel>(_ type: M.Type, from source: PullSource, stages: PullStageClock?) async throws -> PullSummary {
        register(M.self)
        let key = try SyncKey(M.self)
        return try await exclusively(.pulling) {
            var summary = PullSummary()
            try await prepareBookkeeping()
            let (cursor, knowsVersions) = try await database.write { db in
                if let subscription = source.subscription, try SubscriptionBookkeeping.find(subscription, db) == nil {
                    throw SyncFilterError(reason: "no subscription \(subscription): it was ended")
                }
                return (try SyncBookkeeping.cursor(source.cursorResource, db), try SyncBookkeeping.hasVersions(model: key.model, db))
            }
            let start = cursor ?? "0"
            // Without a known version when the pull starts (a first sync), no change can be the
            // echo of this client's own write (pushes wait for pulls), so no page looks versions
            // up: at a million rows, those lookups were a B-tree probe per row.
            let pages = PullPages(knowsVersions: knowsVersions, source: source, stages: stages)
            var fetched = await fetchFeed(M.self, key: key, source, after: start, stages: stages)
            summary.requests += 1
            while true {
                switch try fetched.get() {
                case .gone where source.subscription != nil:
                    // Read again from the beginning (a filtered read carries only what matches);
                    // what the subscription held and the read does not hold again goes at its end.
                    summary.fullResync = true
                    try await database.write { db in try self.markStale(source, db) }
                    fetched = await fetchFeed(M.self, key: key, source, after: "0", stages: stages)
                    summary.requests += 1
                case .gone(let horizon):
                    try await reconcile(M.self, key: key, source, feedCursor: horizon, &summary)
                    fetched = await fetchFeed(M.self, key: key, source, after: horizon, stages: stages)
                    summary.requests += 1
                case .noFeed:
                    try await reconcile(M.self, key: key, source, feedCursor: nil, &summary)
                    return summary
                case .page(let pulled):
                    let page = pulled.feed
                    guard page.more else {
                        try await apply(pulled, key: key, pages, &summary, last: true)
                        return finished(key, summary)
                    }
                    // The next page is fetched and decoded while this one is written: the
                    // server's and the decoder's time hide behind the database's, and at most
                    // two pages are in memory. A write that fails cancels the fetch.
                    async let following = fetchFeed(M.self, key: key, source, after: page.next, stages: stages)
                    try await apply(pulled, key: key, pages, &summary, last: false)
                    let waitStart = stages?.now
                    fetched = await following
                    stages?.add(\.waiting, since: waitStart)
                    summary.requests += 1
                }
            }
        }
    }

    private func finished(_ key: SyncKey, _ summary: PullSummary) -> PullSummary {
        logger.debug("pull finished", metadata: [
            "model": "\(key.model)", "upserted": "\(summary.upserted)", "deleted": "\(summary.deleted)", "conflicts": "\(summary.conflicts)"])
        return summary
    }

    /// Asks the feed for the changes after `cursor` and decodes them. Never throws, so that a
    /// prefetch's error reaches the loop only when the loop gets to it.
    private func fetchFeed<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, _ source: PullSource, after cursor: String, stages: PullStageClock?
    ) async -> Result<FetchedFeed<M>, any Error> {
        do {
            var url = try await remote.resourceURL(for: M.self).appending(queryItems: [
                URLQueryItem(name: "_since", value: cursor), URLQueryItem(name: "_limit", value: String(pullPageSize)),
            ])
            if let filter = source.filter { url = try Self.appending(query: filter, to: url) }
            let response: RemoteResponse
            let httpStart = stages?.now
            do {
                response = try await remote.send(RemoteRequest(method: .get, url: url), options: RequestOptions(headers: Self.protocolHeaders))
            } catch let error as RemoteError where error.status == 410 {
                // Tombstones older than the cursor are gone: read everything, then follow the
                // feed from its horizon.
                guard let failure = error.statusError, let body = try? JSONValue(parsing: failure.response.body),
                      let horizon = try? SyncFeedGone(json: body).horizon else {
                    throw error
                }
                return .success(.gone(horizon: horizon))
            }
            stages?.add(\.http, since: httpStart)
            let decodeStart = stages?.now
            defer { stages?.add(\.decode, since: decodeStart) }
            // Parsed once: the changes' members are read in place and their records decode
            // straight from the document's bytes (a row with local changes reads its record as
            // a value when it needs it).
            let document = try JSONDocument(bytes: response.body)
            let feed: SyncFeedDocument
            do {
                guard let read = try SyncFeedDocument(document: document) else { return .success(.noFeed) }
                feed = read
            } catch {
                throw SyncError.unexpectedFeed(model: key.model, reason: "\(error)")
            }
            let models = try remote.options.decoder.decode(M.self, at: feed.changes.map(\.record), in: document)
            return .success(.page(PulledPage(feed: feed, models: models)))
        } catch {
            return .failure(error)
        }
    }

    /// Applies one page of the feed and stores the cursor, in one transaction; `last`: the
    /// feed's end (a subscription's first sync is done, and a read again has held all it will).
    private func apply<M: SyncedModel>(
        _ pulled: PulledPage<M>, key: SyncKey, _ pages: PullPages, _ summary: inout PullSummary, last: Bool
    ) async throws {
        let applyStart = pages.stages?.now
        defer { pages.stages?.add(\.apply, since: applyStart) }
        let source = pages.source
        let (outcomes, conflicts, followUps) = try await database.write { db in
            var outcomes: [RowOutcome<M>] = []
            var conflicts: [SyncConflict] = []
            var followUps: [@Sendable () -> Void] = []
            let changes = pulled.feed.changes
            let pending = try self.pendingKeys(key, db)
            let holds = try source.subscription.map { try SubscriptionHolds(subscription: $0, model: key.model, db) }
            var ownCreates = try self.sentCreates(key, db)
            let keys = try changes.indices.map { try pulled.key(at: $0, path: key.path) }
            // The rows' versions in one statement, to skip the echoes of this client's own writes.
            // Kept as the page writes them: see below.
            var stored = pages.knowsVersions ? try SyncBookkeeping.versions(model: key.model, keys: keys, db) : [:]
            outcomes.reserveCapacity(changes.count)
            var rows = ServerRows<M>(model: key.model)
            for (index, change) in changes.enumerated() {
                let keyValue = keys[index]
                guard keyValue != .null else {
                    throw SyncError.unexpectedFeed(model: key.model, reason: "a change names no record")
                }
                let version = change.etag
                let model = pulled.models[index]
                if let holds {
                    // A row leaving the filter goes only when nothing else keeps it.
                    guard try holds.note(change, keyValue, pending: pending, db) else { continue }
                }
                if let origin = change.createdWith, let create = ownCreates.removeValue(forKey: origin), let model {
                    // This client's create, whose answer was lost: the record is its row.
                    try rows.write(db)
                    if let followUp = try self.acknowledgeFromFeed(create, key: key, keyValue, model, version: version, db) { followUps.append(followUp) }
                    continue
                }
                // Keys as bookkeeping writes them, only when there is something to compare with
                // (a first sync has neither pending changes nor known versions).
                let keyText = pending.isEmpty && stored.isEmpty ? nil : keyValue.jsonText
                guard let keyText, pending.contains(keyText) else {
                    // No local change: the record is the row. A change in the feed is a change,
                    // stored without comparing.
                    outcomes.append(try self.storeFromServer(
                        key: key, keyValue, model, version: version, storedVersion: keyText.flatMap { stored[$0] }, into: &rows, db))
                    // The version the row has now. A row can change twice in a page (a deletion,
                    // then the record created again under its key): the later change is compared
                    // with what the earlier one left, or the record looks like an echo of the
                    // version it had before its deletion and is never stored.
                    if let keyText { stored[keyText] = model == nil ? nil : version }
                    continue
                }
                try rows.write(db)
                let (outcome, conflict) = try self.rebase(
                    M.self, key: key, keyValue, server: try pulled.record(at: index), version: version, pendingKeys: pending, storedVersions: stored,
                    skipsUnchanged: false, decoded: model, db)
                outcomes.append(outcome)
                if let conflict { conflicts.append(conflict) }
            }
            try rows.write(db)
            try SyncBookkeeping.setCursor(pulled.feed.next, source.cursorResource, db)
            if last, let subscription = source.subscription {
                try self.releaseStale(subscription, M.self, key: key, &outcomes, db)
                try SubscriptionBookkeeping.setSynced(subscription, db)
            }
            return (outcomes, conflicts, followUps)
        }
        finish(outcomes, conflicts, &summary)
        for followUp in followUps { followUp() }
    }

    /// This client's creates that were sent and not acknowledged, by idempotency key.
    private func sentCreates(_ key: SyncKey, _ db: SQLiteConnection) throws -> [String: OutboxRecord] {
        var creates: [String: OutboxRecord] = [:]
        for entry in try SyncBookkeeping.sentCreates(model: key.model, db) {
            if let idempotencyKey = entry.idempotencyKey { creates[idempotencyKey] = entry }
        }
        return creates
    }

    /// Acknowledges a create that the feed shows applied (its answer was lost), unless local
    /// changes of the row wait behind it: those need the version the create made, which only
    /// the create's own (replayed) answer gives, so the push acknowledges it then. Returns the
    /// identity-map part, to run after the commit.
    private func acknowledgeFromFeed<M: SyncedModel>(
        _ create: OutboxRecord, key: SyncKey, _ serverKey: JSONValue, _ value: M, version: String?, _ db: SQLiteConnection
    ) throws -> (@Sendable () -> Void)? {
        let later = try SyncBookkeeping.entries(model: key.model, create.localKey, db).filter { $0.sequence != create.sequence }
        guard later.isEmpty else { return nil }
        let (stored, children) = try acknowledgeCreate(create, key: key, serverKey: serverKey, value, version: version, db)
        return afterCreate(create, stored: stored, children: children)
    }

    /// Reads the whole collection and makes the local table equal to it (pending local changes
    /// rebased on top), in one transaction; stores `feedCursor` when given.
    private func reconcile<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, _ source: PullSource, feedCursor: String?, _ summary: inout PullSummary
    ) async throws {
        summary.fullResync = true
        var records: [JSONValue] = []
        let parameters = source.listParameters
        if let pagination = state.withLock({ $0.paginations[key.model] }) {
            let pages = remote.pages(M.self, parameters: parameters, pagination: pagination)
            for try await page in pages {
                summary.requests += 1
                records += try page.map(codec.encode)
            }
        } else {
            summary.requests += 1
            records = try await remote.list(M.self, parameters: parameters).map(codec.encode)
        }
        if let subscription = source.subscription {
            return try await reconcile(M.self, key: key, subscription: subscription, records, feedCursor: feedCursor, source, &summary)
        }
        let serverRecords = records
        let (outcomes, conflicts) = try await database.write { db in
            var outcomes: [RowOutcome<M>] = []
            var conflicts: [SyncConflict] = []
            var seen = Set<String>()
            let pending = try self.pendingKeys(key, db)
            for record in serverRecords {
                guard let keyValue = record[key.path], keyValue != .null else { continue }
                seen.insert(keyValue.jsonText)
                let (outcome, conflict) = try self.rebase(
                    M.self, key: key, keyValue, server: record, version: self.version(M.self, etag: nil, record: record), pendingKeys: pending, db)
                outcomes.append(outcome)
                if let conflict { conflicts.append(conflict) }
            }
            // Local rows the server no longer has, except those created locally and not sent yet.
            let column = quoteIdentifier(key.column)
            for row in try db.rows("SELECT \(column) FROM \(quoteIdentifier(key.table))") {
                guard let value = row.first, let keyValue = JSONValue(primaryKey: value), !seen.contains(keyValue.jsonText) else { continue }
                let (outcome, conflict) = try self.rebase(M.self, key: key, keyValue, server: nil, version: nil, pendingKeys: pending, db)
                outcomes.append(outcome)
                if let conflict { conflicts.append(conflict) }
            }
            // A server without a feed gets the beginning, which it ignores: the cursor records
            // that the model is pulled whole, which subscriptions read (``SubscriptionHolds``).
            try SyncBookkeeping.setCursor(feedCursor ?? "0", source.cursorResource, db)
            return (outcomes, conflicts)
        }
        finish(outcomes, conflicts, &summary)
    }

    func finish<M: SyncedModel>(_ outcomes: [RowOutcome<M>], _ conflicts: [SyncConflict], _ summary: inout PullSummary) {
        // Asked once for the page, not once a row: a first sync (the app has read nothing
        // yet) offers the map thousands of rows it would not take.
        let offersStored = !identityMap.isIdle
        for outcome in outcomes {
            switch outcome {
            case .stored:
                summary.upserted += 1
                if offersStored { outcome.apply(to: identityMap) }
            case .removed:
                summary.deleted += 1
                outcome.apply(to: identityMap)
            case .unchanged: break
            }
        }
        summary.conflicts += conflicts.count
        report(conflicts)
    }
}

/// What every page of one pull shares.
private struct PullPages: Sendable {
    /// Whether a row of the model had a known server version when the pull started.
    let knowsVersions: Bool
    let source: PullSource
    let stages: PullStageClock?
}

extension SyncStore {
    // MARK: Writing a page's rows

    /// ``storeFromServer(key:_:_:version:storedVersion:skipsUnchanged:_:)`` for a pulled
    /// page's row without local changes: a record (and its version) joins `batch`, written with
    /// the page's others in a few multi-row statements; a deletion writes the batch first, then
    /// deletes at once.
    func storeFromServer<M: SyncedModel>(
        key: SyncKey, _ keyValue: JSONValue, _ server: M?, version: String, storedVersion: String?, into batch: inout ServerRows<M>,
        _ db: SQLiteConnection
    ) throws -> RowOutcome<M> {
        guard let server else {
            try batch.write(db)
            return try storeFromServer(key: key, keyValue, server, version: version, storedVersion: storedVersion, skipsUnchanged: false, db)
        }
        // The echo of this client's own write.
        if storedVersion == version { return .unchanged }
        batch.append(server, key: keyValue, version: version)
        return .stored(server)
    }
}

/// Rows of a pulled page that become the server's records, and their versions, gathered to be
/// written together: a statement per row (two, with its version) cost a first sync more than
/// the rows. The page writes them before anything else reads or writes the rows or the
/// bookkeeping (a deletion, a rebase, an acknowledgement) and before its cursor, all in the
/// page's transaction, so the outcome is the same as writing each row at its turn.
struct ServerRows<M: SyncedModel> {
    let model: String
    private var rows: [M] = []
    private var versions: [RowVersion] = []

    init(model: String) {
        self.model = model
    }

    mutating func append(_ row: M, key: JSONValue, version: String) {
        rows.append(row)
        versions.append(RowVersion(model: model, key: key, version: version))
    }

    /// Writes the gathered rows and versions, and forgets them.
    mutating func write(_ db: SQLiteConnection) throws {
        guard !rows.isEmpty else { return }
        try RowVersion.upsertAll(versions, db)
        try M.upsertAll(rows, db)
        rows.removeAll(keepingCapacity: true)
        versions.removeAll(keepingCapacity: true)
    }
}

/// A page of the feed as a pull applies it: the page read in place, and its records decoded as
/// models; a row that needs its record as a value (one with local changes, to rebase) reads it
/// from the document.
struct PulledPage<M: SyncedModel>: Sendable {
    let feed: SyncFeedDocument
    let models: [M?]

    /// The record of change `index` as a value; nil for a deletion.
    func record(at index: Int) throws -> JSONValue? {
        try feed.changes[index].record.flatMap { try feed.document.value(at: $0) }
    }

    /// The key of change `index`'s row: its record's member at `path`, or the change's id.
    func key(at index: Int, path: JSONPath) throws -> JSONValue {
        let change = feed.changes[index]
        return try change.record.flatMap { try feed.document.value(at: $0, path: path) } ?? change.id
    }
}

extension JSONValue {
    /// A primary-key column's value as JSON: integers and text.
    init?(primaryKey value: SQLValue) {
        switch value {
        case .integer(let integer): self = .number(JSONNumber(integer))
        case .text(let text): self = .string(text)
        default: return nil
        }
    }
}

/// Where a ``SyncStore/pullTimingStages(_:)`` spent its time, summed over its pages. The fetch
/// and decode of the next page overlap the write of the current one, so the stages can add up
/// to more than the pull's wall time.
@_spi(Benchmarks)
public struct PullStageTimes: Sendable, Hashable {
    /// Waiting for the feed's answers (the request, the server, the body).
    public var http: Duration = .zero
    /// Parsing the pages and decoding their records.
    public var decode: Duration = .zero
    /// The pages' write transactions: upserts, deletions, bookkeeping, the identity map.
    public var apply: Duration = .zero
    /// The pull waiting for the next page after writing one (what the overlap did not hide).
    public var waiting: Duration = .zero
}

/// Sums a pull's stage times; a pull without one (every pull but a benchmark's) reads no clock.
final class PullStageClock: Sendable {
    private let state = Locked(PullStageTimes())

    var now: ContinuousClock.Instant { ContinuousClock.now }

    var times: PullStageTimes { state.current }

    func add(_ stage: WritableKeyPath<PullStageTimes, Duration> & Sendable, since start: ContinuousClock.Instant?) {
        guard let start else { return }
        let elapsed = start.duration(to: ContinuousClock.now)
        state.withLock { $0[keyPath: stage] += elapsed }
    }
}
