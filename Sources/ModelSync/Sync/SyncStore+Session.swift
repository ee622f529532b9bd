import Foundation
import ModelSyncRemote
import ModelSyncSQLite

extension SyncStore {
    /// Follows `session`: an outbox paused by a 401 resumes by itself once the session
    /// signs in or refreshes its token. (Add the session to the ``remote``'s interceptors too:
    /// that is what authorizes the requests.) A later call replaces the session followed.
    ///
    /// ```swift
    /// let session = AccountSession(baseURL: url, storage: KeychainTokens())
    /// var options = RemoteStore.Options()
    /// options.interceptors.append(session)
    /// let sync = SyncStore(remote: RemoteStore(baseURL: url, options: options), database: db, models: [Note.self])
    /// sync.use(session)
    /// ```
    ///
    /// A sign-in as *another* user does not resume the outbox: its changes are the last user's,
    /// and must not reach the server as the new one's. Sign out with ``signOut(_:keepingLocalData:)``
    /// (which clears them) before another user signs in, or call ``resume()`` knowingly.
    public func use(_ session: AccountSession) {
        let events = session.events()
        let initialUser = session.tokens?.userID
        let watch = Task { [weak self] in
            var lastUser = initialUser
            for await event in events {
                if Self.resumes(after: event, lastUser: &lastUser) {
                    self?.resume()
                } else if case .signedIn = event {
                    self?.logger.notice("another user signed in; the outbox keeps the last user's changes and stays paused")
                }
            }
        }
        state.withLock { state in
            state.sessionWatch?.cancel()
            state.sessionWatch = watch
        }
    }

    /// Whether `event` resumes the outbox: a refresh does, a sign-in as the user signed in
    /// before (or the first) does, another user's does not; `lastUser` follows the sign-ins.
    static func resumes(after event: AccountSessionEvent, lastUser: inout String?) -> Bool {
        switch event {
        case .refreshed:
            return true
        case .signedIn(let userID):
            defer { lastUser = userID }
            // By bytes: two ids Swift calls equal are two users.
            guard let lastUser else { return true }
            return userID.map(lastUser.isIdentical) ?? false
        case .signedOut:
            return false
        }
    }

    /// Signs out of `session` (see ``/ModelSyncRemote/AccountSession/signOut()``) and, unless
    /// `keepingLocalData`, forgets what the signed-in user had here: ``clearLocalData()``. The
    /// outbox's unsent changes are lost with it: push first (``push()``) to keep them.
    ///
    /// An app whose users share a device may instead keep one database file per user (say
    /// `<Application Support>/<user id>.sqlite`) and open the signed-in user's: nothing is
    /// cleared then, and switching back finds the data and outbox as they were.
    public func signOut(_ session: AccountSession, keepingLocalData: Bool = false) async throws {
        // Cleared first: killed in between, the device holds no one's data under a live session
        // (the next pull reads it again), never the last user's outbox with no session, which
        // the next user's sign-in would push as theirs.
        if !keepingLocalData { try await clearLocalData() }
        await session.signOut()
    }

    /// Deletes, in one transaction, every row of the synced models' tables (those given to
    /// ``init(remote:database:models:identityMap:backoff:maxConcurrentRequests:maxBatchSize:pullPageSize:logger:)``
    /// or saved since), the outbox, the feed cursors, the row versions, the key rewrites and the
    /// subscriptions; and empties the identity map. The next pull reads everything again.
    public func clearLocalData() async throws {
        try await prepareBookkeeping()
        let tables = state.withLock { state in Array(Set(state.models.values.map { $0.sqlTable.name })).sorted() }
        // Alone, as a push or pull is: a push in flight would otherwise acknowledge its entries
        // into the emptied tables, a pull store the last user's rows after them.
        try await exclusively(.idle) {
            try await database.write { db in
                for table in tables where try db.scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]) != nil {
                    try db.execute("DELETE FROM \(quoteIdentifier(table))")
                }
                for model in [OutboxRecord.self, KeyRewrite.self, RowVersion.self, PullCursor.self] as [any SQLModel.Type] {
                    try db.execute("DELETE FROM \(quoteIdentifier(model.sqlTable.name))")
                }
                try SubscriptionBookkeeping.removeAll(db)
                self.outboxChanged()
            }
        }
        identityMap.removeAll()
        state.withLock { state in
            state.pausedStatus = nil
            state.lastError = nil
            state.conflictCount = 0
            state.recentConflicts = []
        }
        changed()
    }
}
