import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

/// What one ``SyncStore/pull(_:)`` did.
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
    /// The most changes one feed request asks for.
    static let feedPageSize = 1_000

    /// Brings `type`'s local rows up to date with the server, keeping pending local changes.
    ///
    /// - Against a server with a change feed (`modelsync-server`): asks for the changes since
    ///   the stored cursor (`GET /posts?_since=<cursor>`), and applies each page in one
    ///   transaction: upserts, deletions (tombstones) and the new cursor. A cursor older than the
    ///   server keeps tombstones for (410) starts over with a full resync.
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
        register(M.self)
        let key = try SyncKey(M.self)
        return try await withPushGate(.pulling) {
            var summary = PullSummary()
            try await prepareBookkeeping()
            var cursor = try await database.write { db in try SyncBookkeeping.cursor(key.model, db) } ?? "0"
            while true {
                let url = try await remote.resourceURL(for: M.self).appending(queryItems: [
                    URLQueryItem(name: "_since", value: cursor), URLQueryItem(name: "_limit", value: String(Self.feedPageSize)),
                ])
                let response: RemoteResponse
                summary.requests += 1
                do {
                    response = try await remote.send(RemoteRequest(method: .get, url: url), options: RequestOptions(headers: Self.protocolHeaders))
                } catch let error as RemoteError where error.status == 410 {
                    // Tombstones older than the cursor are gone: read everything, then follow
                    // the feed from its horizon.
                    guard case .status(let failure) = error, let body = try? JSONValue(parsing: failure.response.body),
                          let horizon = try? SyncFeedGone(json: body).horizon else {
                        throw error
                    }
                    try await reconcile(M.self, key: key, feedCursor: horizon, &summary)
                    cursor = horizon
                    continue
                }
                // Parsed once: records decode straight from the document's bytes (not from each
                // record written out again), the rest is read as values.
                let document = try JSONDocument(bytes: response.body)
                let body = try JSONValue(document: document)
                guard SyncFeedPage.isFeedPage(body) else {
                    // The server ignored `_since` (a plain list, or a paged envelope): it has no feed.
                    try await reconcile(M.self, key: key, feedCursor: nil, &summary)
                    break
                }
                let page: SyncFeedPage
                do {
                    page = try SyncFeedPage(json: body)
                } catch {
                    throw SyncError.unexpectedFeed(model: key.model, reason: "\(error)")
                }
                let decoder = remote.options.decoder
                let models = try page.changes.indices.map { index -> M? in
                    guard !page.changes[index].isDeletion else { return nil }
                    return try decoder.decode(M.self, from: document, at: JSONPath([.key("changes"), .index(index), .key("record")]))
                }
                try await apply(M.self, key: key, changes: page.changes, models: models, cursor: page.next, &summary)
                cursor = page.next
                guard page.more else { break }
            }
            logger.debug("pull finished", metadata: [
                "model": "\(key.model)", "upserted": "\(summary.upserted)", "deleted": "\(summary.deleted)", "conflicts": "\(summary.conflicts)"])
            return summary
        }
    }

    /// Applies one page of the feed and stores the cursor, in one transaction.
    private func apply<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, changes: [SyncChange], models: [M?], cursor: String, _ summary: inout PullSummary
    ) async throws {
        let (outcomes, conflicts, followUps) = try await database.write { db in
            var outcomes: [RowOutcome<M>] = []
            var conflicts: [SyncConflict] = []
            var followUps: [@Sendable () -> Void] = []
            let pending = try self.pendingKeys(key, db)
            var ownCreates = try self.sentCreates(key, db)
            // The rows' versions in one statement, to skip the echoes of this client's own writes.
            let stored = try SyncBookkeeping.versions(model: key.model, keys: changes.map { $0.record?[key.path] ?? $0.id }, db)
            for (change, model) in zip(changes, models) {
                let record = change.record
                let keyValue = record?[key.path] ?? change.id
                guard keyValue != .null else {
                    throw SyncError.unexpectedFeed(model: key.model, reason: "a change names no record")
                }
                let version = change.etag
                if let origin = change.createdWith, let create = ownCreates.removeValue(forKey: origin), let model {
                    // This client's create, whose answer was lost: the record is its row.
                    if let followUp = try self.acknowledgeFromFeed(create, key: key, keyValue, model, version: version, db) { followUps.append(followUp) }
                    continue
                }
                // A change in the feed is a change: stored without comparing.
                let (outcome, conflict) = try self.rebase(
                    M.self, key: key, keyValue, server: record, version: version, pendingKeys: pending, storedVersions: stored, skipsUnchanged: false,
                    decoded: model, db)
                outcomes.append(outcome)
                if let conflict { conflicts.append(conflict) }
            }
            try SyncBookkeeping.setCursor(cursor, key.model, db)
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
    private func reconcile<M: SyncedModel>(_ type: M.Type, key: SyncKey, feedCursor: String?, _ summary: inout PullSummary) async throws {
        summary.fullResync = true
        var records: [JSONValue] = []
        if let pagination = state.withLock({ $0.paginations[key.model] }) {
            let pages = remote.pages(M.self, pagination: pagination)
            for try await page in pages {
                summary.requests += 1
                records += try page.map(codec.encode)
            }
        } else {
            summary.requests += 1
            records = try await remote.list(M.self).map(codec.encode)
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
            if let feedCursor { try SyncBookkeeping.setCursor(feedCursor, key.model, db) }
            return (outcomes, conflicts)
        }
        finish(outcomes, conflicts, &summary)
    }

    private func finish<M: SyncedModel>(_ outcomes: [RowOutcome<M>], _ conflicts: [SyncConflict], _ summary: inout PullSummary) {
        for outcome in outcomes {
            outcome.apply(to: identityMap)
            switch outcome {
            case .stored: summary.upserted += 1
            case .removed: summary.deleted += 1
            case .unchanged: break
            }
        }
        summary.conflicts += conflicts.count
        report(conflicts)
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
