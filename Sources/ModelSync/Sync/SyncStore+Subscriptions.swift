import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncRemote
import ModelSyncSQLite

/// Part of a collection that a ``SyncStore`` keeps on the device: the rows of one model that
/// match a ``SyncFilter``, under the caller's access rules. Made by
/// ``SyncStore/subscribe(_:where:ttl:)``; stored in the database, so it outlives the app's run.
public struct SyncSubscription: Sendable, Hashable, Identifiable {
    /// The model's name and the filter's query (`Card?boardId=7`): subscribing twice with the
    /// same filter gives the same subscription.
    public let id: String
    /// The model's name (its schema's).
    public let model: String
    /// The filter as the feed's query string (``SyncFilter/query``).
    public let filter: String
    /// How long the subscription lasts after it was last subscribed, in seconds; nil: until
    /// ``SyncStore/unsubscribe(_:)``.
    public let timeToLive: Double?
    /// When it ends, unless subscribed again before; nil: never.
    public let expiresAt: Date?
    /// Whether a pull of it has reached the end of its feed once (its first sync is done).
    public let hasSynced: Bool

    init(model: String, filter: String, timeToLive: Double?, expiresAt: Date?, hasSynced: Bool = false) {
        self.id = model + "?" + filter
        self.model = model
        self.filter = filter
        self.timeToLive = timeToLive
        self.expiresAt = expiresAt
        self.hasSynced = hasSynced
    }

    init(row: [SQLValue]) {
        func real(_ value: SQLValue) -> Double? {
            switch value {
            case .real(let number): number
            case .integer(let number): Double(number)
            default: nil
            }
        }
        self.init(model: row[1].textValue ?? "", filter: row[2].textValue ?? "", timeToLive: real(row[3]),
                  expiresAt: real(row[4]).map(Date.init(timeIntervalSince1970:)), hasSynced: row[5].integerValue == 1)
    }
}

/// Why a subscription could not be made.
public struct SyncFilterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the filter.
    public let reason: String

    public var description: String { "the subscription's filter cannot be sent: \(reason)" }
}

extension SyncStore {
    /// Keeps on the device the rows of `type` that match `filter`, under the caller's access
    /// rules; `pull(_:)` (or a running ``startLivePull(_:)``) brings them.
    ///
    /// ```swift
    /// let board = try await sync.subscribe(Card.self, where: .field(\.boardId, equals: 7), ttl: .seconds(7 * 86_400))
    /// try await sync.waitForFirstSync(board)   // the board's cards are local now
    /// try await sync.unsubscribe(board)        // they go, unless another subscription holds them
    /// ```
    ///
    /// - Subscriptions may overlap: a row stays while any subscription holds it, or the model is
    ///   pulled whole (`pull(_:)` of a model), or it has local changes not yet sent.
    /// - A row that changes so that it no longer matches leaves the device (the feed sends it as
    ///   `"left"`); one that comes to match arrives.
    /// - Subscribing again with the same filter returns the same subscription and renews its
    ///   time to live. A subscription past its time to live ends as ``unsubscribe(_:)`` ends it,
    ///   at the next subscribe, pull of subscriptions or listing.
    ///
    /// Against `modelsync-server`, each subscription follows the collection's feed with the
    /// filter (`GET /cards?_since=<cursor>&boardId=7`); against a server without a feed, a pull
    /// reads the filtered list.
    ///
    /// - Throws: ``SyncFilterError`` for a filter that cannot be sent; a `SQLiteError`.
    @discardableResult
    public func subscribe<M: SyncedModel>(_ type: M.Type, where filter: SyncFilter<M>, ttl: Duration? = nil) async throws -> SyncSubscription {
        if let problem = filter.problem { throw SyncFilterError(reason: problem) }
        _ = try SyncKey(M.self)
        register(M.self)
        try await prepareBookkeeping()
        try await removeExpiredSubscriptions()
        let seconds = ttl.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let made = SyncSubscription(model: M.schema.name, filter: filter.query, timeToLive: seconds, expiresAt: seconds.map { Date().addingTimeInterval($0) })
        let stored = try await database.write { db in
            try SubscriptionBookkeeping.upsert(made, db)
            return try SubscriptionBookkeeping.find(made.id, db) ?? made
        }
        followInLivePull(M.self)
        return stored
    }

    /// Ends `subscription`: the rows it held leave the device, except those another
    /// subscription holds, those of a model pulled whole, and those with local changes not yet
    /// sent. Waits for a running push or pull.
    public func unsubscribe(_ subscription: SyncSubscription) async throws {
        try await prepareBookkeeping()
        try await exclusively(.idle) {
            try await end([subscription.id])
        }
    }

    /// The subscriptions, by id (those past their time to live end first).
    public func subscriptions() async throws -> [SyncSubscription] {
        try await prepareBookkeeping()
        try await removeExpiredSubscriptions()
        return try await database.read { db in try SubscriptionBookkeeping.all(db) }
    }

    /// Brings the rows `subscription` holds up to date with the server, as
    /// `pull(_:)` of a model does for a whole collection.
    ///
    /// - Throws: ``SyncError/unknownModel(_:)`` when the subscription's model was not given to
    ///   the store (in `models:` or by a save or subscribe in this run); what `pull(_:)` of a model throws.
    @discardableResult
    public func pull(_ subscription: SyncSubscription) async throws -> PullSummary {
        guard let type = state.withLock({ $0.models[subscription.model] }) else { throw SyncError.unknownModel(subscription.model) }
        func open<M: SyncedModel>(_ type: M.Type) async throws -> PullSummary {
            try await pull(M.self, from: PullSource(subscription: subscription.id, model: subscription.model, filter: subscription.filter), stages: nil)
        }
        return try await open(type)
    }

    /// Pulls every subscription (of `collection`'s model only, when given), ending those past
    /// their time to live first. Subscriptions of models the store does not know are left.
    @discardableResult
    public func pullSubscriptions() async throws -> PullSummary {
        try await pullSubscriptions(ofCollection: nil)
    }

    @discardableResult
    func pullSubscriptions(ofCollection collection: String?) async throws -> PullSummary {
        var total = PullSummary()
        var pulled: [String: any SyncedModel.Type] = [:]
        for subscription in try await subscriptions() {
            guard let type = state.withLock({ $0.models[subscription.model] }) else { continue }
            if let collection, Self.collection(of: type) != collection { continue }
            let summary = try await pull(subscription)
            total.upserted += summary.upserted
            total.deleted += summary.deleted
            total.conflicts += summary.conflicts
            total.requests += summary.requests
            total.fullResync = total.fullResync || summary.fullResync
            pulled[subscription.model] = type
        }
        // Once every subscription of a model is current, a row none holds is one none will
        // bring: swept then, not after one subscription's pull (a row another subscription is
        // about to hold would vanish and come back).
        for (model, type) in pulled.sorted(by: { $0.key < $1.key }) where needsSweep(model) {
            let removed = try await exclusively(.pulling) { try await database.write { db in try Self.sweepUnheld(type, db) } }
            swept(model)
            forget(type, removed)
            total.deleted += removed.count
        }
        return total
    }

    /// Returns once `subscription` has been pulled to the end of its feed at least once: at
    /// once when it has, else after a pull (which a running pull of it goes before).
    public func waitForFirstSync(_ subscription: SyncSubscription) async throws {
        try await prepareBookkeeping()
        let synced = try await database.read { db in try SubscriptionBookkeeping.find(subscription.id, db)?.hasSynced }
        guard let synced else { throw SyncFilterError(reason: "no subscription \(subscription.id): it was ended") }
        if !synced { try await pull(subscription) }
    }

    // MARK: Inside

    /// Ends the subscriptions `ids` and removes the rows nothing else keeps (run exclusively).
    private func end(_ ids: [String]) async throws {
        let models = state.withLock { $0.models }
        let removed: [(String, [JSONValue])] = try await database.write { db in
            var removed: [(String, [JSONValue])] = []
            for id in ids {
                guard let subscription = try SubscriptionBookkeeping.find(id, db) else { continue }
                let keys = try SubscriptionBookkeeping.remove(id, db)
                guard let type = models[subscription.model] else { continue }
                removed.append((subscription.model, try Self.removeUnheld(type, keys: keys, db)))
            }
            return removed
        }
        for (model, keys) in removed {
            guard let type = models[model] else { continue }
            forget(type, keys)
        }
        changed()
    }

    /// Ends the subscriptions past their time to live.
    func removeExpiredSubscriptions() async throws {
        let now = Date().timeIntervalSince1970
        let expired = try await database.read { db in
            try db.rows("SELECT id FROM modelsync_subscriptions WHERE expires_at IS NOT NULL AND expires_at <= ?", [.real(now)]).compactMap { $0.first?.textValue }
        }
        guard !expired.isEmpty else { return }
        try await exclusively(.idle) { try await end(expired) }
    }

    /// Deletes the rows of `keys` that no subscription holds, whose model is not pulled whole,
    /// and that have no outbox entries; returns the keys deleted.
    static func removeUnheld(_ type: any SyncedModel.Type, keys: [SQLValue], _ db: SQLiteConnection) throws -> [JSONValue] {
        func open<M: SyncedModel>(_ type: M.Type) throws -> [JSONValue] {
            let key = try SyncKey(M.self)
            guard try SyncBookkeeping.cursor(key.model, db) == nil, !keys.isEmpty else { return [] }
            let pending = try SyncBookkeeping.keysWithEntries(model: key.model, db)
            var removed: [JSONValue] = []
            try SyncBookkeeping.deferForeignKeys(db)
            for value in keys {
                guard let keyValue = JSONValue(primaryKey: value), !pending.contains(keyValue.jsonText),
                      try !SubscriptionBookkeeping.isHeld(model: key.model, key: value, db) else { continue }
                try SyncBookkeeping.setVersion(nil, model: key.model, keyValue, db)
                try db.execute("DELETE FROM \(quoteIdentifier(key.table)) WHERE \(quoteIdentifier(key.column)) = ?", [value])
                if db.changes > 0 { removed.append(keyValue) }
            }
            return removed
        }
        return try open(type)
    }

    /// Deletes `type`'s rows that nothing keeps (see ``removeUnheld(_:keys:_:)``): a row kept
    /// for its pending change once that change is sent, a row this device created that matches
    /// no subscription once the server has it. Run by ``pullSubscriptions()`` once all of the
    /// model's subscriptions are current, when none ran in this run or a push acknowledged
    /// anything since.
    static func sweepUnheld(_ type: any SyncedModel.Type, _ db: SQLiteConnection) throws -> [JSONValue] {
        func open<M: SyncedModel>(_ type: M.Type) throws -> [JSONValue] {
            let key = try SyncKey(M.self)
            guard try SyncBookkeeping.cursor(key.model, db) == nil else { return [] }
            return try removeUnheld(M.self, keys: SubscriptionBookkeeping.unheld(model: key.model, table: key.table, column: key.column, db), db)
        }
        return try open(type)
    }

    /// Whether `model`'s rows need a sweep: none ran in this run, or a push acknowledged
    /// something since the last.
    func needsSweep(_ model: String) -> Bool {
        state.withLock { !$0.sweptModels.contains(model) }
    }

    func swept(_ model: String) {
        state.withLock { _ = $0.sweptModels.insert(model) }
    }

    /// Drops removed rows from the identity map.
    func forget(_ type: any SyncedModel.Type, _ keys: [JSONValue]) {
        func open<M: SyncedModel>(_ type: M.Type) {
            for key in keys {
                if let identity = key.identityKey(of: M.self) { identityMap.remove(M.self, key: identity) }
            }
        }
        open(type)
    }
}
