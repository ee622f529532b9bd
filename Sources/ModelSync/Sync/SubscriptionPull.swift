import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

/// What a pull reads: a model's whole collection, or a subscription's part of it.
struct PullSource: Sendable {
    /// The subscription's id; nil for the whole collection.
    var subscription: String?
    var model: String
    /// The filter's query string (a subscription's).
    var filter: String?

    /// Where its cursor is stored.
    var cursorResource: String { subscription.map(SubscriptionBookkeeping.cursorResource) ?? model }

    /// The filter as a list's parameters, for a server without a feed.
    var listParameters: RemoteParameters {
        var parameters: RemoteParameters = [:]
        for pair in (filter ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts[0].removingPercentEncoding else { continue }
            let value = JSONValue.string(parts.count > 1 ? parts[1].removingPercentEncoding ?? "" : "")
            switch parameters[name] {
            case nil: parameters[name] = value
            case .array(let values)?: parameters[name] = .array(values + [value])
            case let first?: parameters[name] = .array([first, value])
            }
        }
        return parameters
    }
}

/// What a page of a subscription's feed does to the rows it holds.
struct SubscriptionHolds {
    let subscription: String
    let model: String
    /// The model is pulled whole too: its rows stay whatever the subscription says.
    let wholeCollection: Bool

    init(subscription: String, model: String, _ db: SQLiteConnection) throws {
        self.subscription = subscription
        self.model = model
        wholeCollection = try SyncBookkeeping.cursor(model, db) != nil
    }

    /// Records what `change` does to the subscription's rows; false when the page must leave the
    /// row alone (it left the filter, and something else keeps it).
    func note(_ change: SyncFeedDocument.Change, _ keyValue: JSONValue, pending: Set<String>, _ db: SQLiteConnection) throws -> Bool {
        let key = try keyValue.primaryKeySQLValue(model: model)
        if change.leftFilter {
            // A row this subscription did not hold is none of its business: another one may be
            // about to hold it (a row this device created, say).
            guard try SubscriptionBookkeeping.release(subscription, key: key, db) else { return false }
            // A row kept for its pending change goes once it is sent (a sweep after the push).
            if wholeCollection || pending.contains(keyValue.jsonText) { return false }
            return try !SubscriptionBookkeeping.isHeld(model: model, key: key, db)
        }
        if change.isDeletion {
            try SubscriptionBookkeeping.releaseEverywhere(model: model, key: key, db)
        } else {
            try SubscriptionBookkeeping.hold(subscription, model: model, key: key, db)
        }
        return true
    }
}

extension SyncStore {
    /// A subscription's reconcile: the filtered list's records are its rows; those it held
    /// before and the list lacks go, unless something else keeps them.
    func reconcile<M: SyncedModel>(
        _ type: M.Type, key: SyncKey, subscription: String, _ records: [JSONValue], feedCursor: String?, _ source: PullSource,
        _ summary: inout PullSummary
    ) async throws {
        let (outcomes, conflicts) = try await database.write { db in
            var outcomes: [RowOutcome<M>] = []
            var conflicts: [SyncConflict] = []
            try self.markStale(source, db)
            let pending = try self.pendingKeys(key, db)
            for record in records {
                guard let keyValue = record[key.path], keyValue != .null else { continue }
                try SubscriptionBookkeeping.hold(subscription, model: key.model, key: keyValue.primaryKeySQLValue(model: key.model), db)
                let (outcome, conflict) = try self.rebase(
                    M.self, key: key, keyValue, server: record, version: self.version(M.self, etag: nil, record: record), pendingKeys: pending, db)
                outcomes.append(outcome)
                if let conflict { conflicts.append(conflict) }
            }
            try self.releaseStale(subscription, M.self, key: key, &outcomes, db)
            try SubscriptionBookkeeping.setSynced(subscription, db)
            if let feedCursor { try SyncBookkeeping.setCursor(feedCursor, source.cursorResource, db) }
            return (outcomes, conflicts)
        }
        finish(outcomes, conflicts, &summary)
    }

    func markStale(_ source: PullSource, _ db: SQLiteConnection) throws {
        if let subscription = source.subscription { try SubscriptionBookkeeping.markStale(subscription, db) }
    }

    /// Releases the rows a read again did not hold again, removing those nothing else keeps.
    func releaseStale<M: SyncedModel>(
        _ subscription: String, _ type: M.Type, key: SyncKey, _ outcomes: inout [RowOutcome<M>], _ db: SQLiteConnection
    ) throws {
        let stale = try SubscriptionBookkeeping.releaseStale(subscription, db)
        for removed in try Self.removeUnheld(M.self, keys: stale, db) { outcomes.append(.removed(removed)) }
    }

    /// `url` with `query` (already percent-encoded) added to its query.
    static func appending(query: String, to url: URL) throws -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { throw RemoteError.invalidURL(url.absoluteString) }
        components.percentEncodedQuery = [components.percentEncodedQuery, query].compactMap { $0?.isEmpty == false ? $0 : nil }.joined(separator: "&")
        guard let result = components.url else { throw RemoteError.invalidURL(url.absoluteString) }
        return result
    }
}
