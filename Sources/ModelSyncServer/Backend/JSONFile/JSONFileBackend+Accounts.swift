import Foundation
import ModelSyncJSON

/// The built-in accounts in the bookkeeping (``Bookkeeping/accounts``,
/// ``Bookkeeping/refreshTokens``): credentials, roles and refresh tokens, each change saved with
/// the data by one atomic write.
extension JSONFileBackend: ServerAccountStore {
    package func register(
        email: String, passwordHash: String, profile: JSONObject, in collection: String
    ) async throws -> (user: JSONValue, account: StoredAccount) {
        let (now, limits) = (Date(), feedLimits)
        return try await write { root, book in
            let records = root[collection]?.arrayValue ?? []
            // A record's email counts only for a record without an account (data imported without
            // accounts): an account's own record is its user's to edit, and an email typed there
            // must not take another's registration.
            let taken = records.contains { record in
                record["email"]?.stringValue.flatMap(StoredAccount.normalizedEmail) == email && recordID(of: record).map { book.account(userID: $0) == nil } ?? true
            }
            guard book.accounts[email] == nil, !taken else { throw APIError(status: 409, message: "an account with this email exists") }
            if root[collection] == nil { root[collection] = .array([]) }
            let created = try ItemWrite.create(collection: collection, body: profile)
                .apply(ItemOperation(write: .create(collection: collection, body: profile)), to: &root, &book, now: now, limits: limits)
            guard let userID = recordID(of: created.body) else { throw APIError(status: 500, message: "the account's record has no id") }
            let account = StoredAccount(userID: userID, passwordHash: passwordHash)
            book.setAccount(account, email: email)
            return (created.body, account)
        }
    }

    package func account(email: String, in collection: String) -> (user: JSONValue, account: StoredAccount)? {
        guard let account = book.accounts[email],
              let user = root[collection]?.arrayValue?.first(where: { hasID($0, account.userID) })
        else { return nil }
        return (user, account)
    }

    package func account(userID: String, in collection: String) -> StoredAccount? {
        guard root[collection]?.arrayValue?.contains(where: { hasID($0, userID) }) == true else { return nil }
        return book.account(userID: userID)?.account
    }

    package func currentAccount(userID: String, in collection: String) -> StoredAccount? {
        // A deleted record takes its credentials with it (``Bookkeeping/endAccount(userID:)``).
        book.account(userID: userID)?.account
    }

    package func setRole(_ role: String?, userID: String) async throws -> StoredAccount? {
        try await write({ _, book -> StoredAccount? in
            guard case (let email, var account)? = book.account(userID: userID) else { return nil }
            account.role = role
            book.setAccount(account, email: email)
            return account
        }, changed: { $0 != nil })
    }

    package func endSessions(userID: String, newPasswordHash: String?) async throws -> StoredAccount? {
        try await write({ _, book -> StoredAccount? in
            guard case (let email, var account)? = book.account(userID: userID) else { return nil }
            account.generation += 1
            if let newPasswordHash { account.passwordHash = newPasswordHash }
            book.setAccount(account, email: email)
            book.refreshTokens = book.refreshTokens.filter { !$0.value.userID.isIdentical(to: userID) }
            return account
        }, changed: { $0 != nil })
    }

    package func adoptPasswordHashes(in collection: String, isHash: @Sendable (String) -> Bool) async throws -> Int {
        try await write({ root, book -> Int in
            guard var records = root[collection]?.arrayValue else { return 0 }
            var adopted = 0
            for index in records.indices {
                guard var record = records[index].objectValue, let password = record["password"] else { continue }
                // The hash goes whatever happens: no path may serve it.
                record["password"] = nil
                records[index] = .object(record)
                adopted += 1
                // A new version: the feed and the streams carry the record without it.
                _ = book.recordWrite(collection: collection, record: records[index])
                guard let hash = password.stringValue, isHash(hash), let userID = recordID(of: .object(record)),
                      let email = record["email"]?.stringValue.flatMap(StoredAccount.normalizedEmail),
                      book.accounts[email] == nil, book.account(userID: userID) == nil
                else { continue }
                book.setAccount(StoredAccount(userID: userID, passwordHash: hash), email: email)
            }
            if adopted > 0 { root[collection] = .array(records) }
            return adopted
        }, changed: { $0 > 0 })
    }

    package func storeRefreshToken(_ token: StoredRefreshToken) async throws {
        let now = Date()
        try await write { _, book in
            Self.dropExpiredRefreshTokens(&book, now: now)
            book.refreshTokens[token.hash] = token
        }
    }

    package func refreshToken(hash: String) -> StoredRefreshToken? {
        book.refreshTokens[hash]
    }

    package func exchangeRefreshToken(
        hash: String, family: String, successorHash: String, sealedSuccessor: String, successorExpires: Date, now: Date, retryWindow: Duration
    ) async throws -> RefreshTokenExchange {
        try await write({ _, book -> (RefreshTokenExchange, Bool) in
            let token = book.refreshTokens[hash]
            let successorUnused = token?.successor.flatMap { book.refreshTokens[$0] }.map { $0.rotated == nil } ?? false
            let familyKnown = token == nil && book.refreshTokens.values.contains { $0.family == family }
            let decision = RefreshTokenExchange.decide(
                token, family: family, familyKnown: familyKnown, successorUnused: successorUnused, now: now, retryWindow: retryWindow)
            switch decision {
            case .invalid:
                // Only an expired token goes: anything else changes nothing (no file is written).
                guard let token, token.expires <= now else { return (.invalid, false) }
                book.refreshTokens[token.hash] = nil
                return (.invalid, true)
            case .rotate:
                guard var token else { return (.invalid, false) }
                Self.dropExpiredRefreshTokens(&book, now: now)
                (token.rotated, token.successor, token.sealedSuccessor) = (now, successorHash, sealedSuccessor)
                // The token before this one is of no use now (its successor is used): gone.
                book.refreshTokens = book.refreshTokens.filter { $0.value.family != token.family || $0.value.rotated == nil }
                book.refreshTokens[hash] = token
                book.refreshTokens[successorHash] = StoredRefreshToken(
                    hash: successorHash, userID: token.userID, family: token.family, expires: successorExpires)
                return (.rotated(userID: token.userID), true)
            case .retry(let sealed):
                return (.retried(userID: token?.userID ?? "", sealedSuccessor: sealed), false)
            case .revokeFamily:
                book.refreshTokens = book.refreshTokens.filter { $0.value.family != family }
                return (.reused, true)
            }
        }, changed: { $0.1 }).0
    }

    package func revokeRefreshTokens(family: String) async throws {
        _ = try await write({ _, book -> Bool in
            let before = book.refreshTokens.count
            book.refreshTokens = book.refreshTokens.filter { $0.value.family != family }
            return book.refreshTokens.count != before
        }, changed: { $0 })
    }

    /// Expired tokens are of no use, not even to detect a reuse (an expired token is refused
    /// anyway): they go with the next token stored.
    private static func dropExpiredRefreshTokens(_ book: inout Bookkeeping, now: Date) {
        if book.refreshTokens.values.contains(where: { $0.expires <= now }) {
            book.refreshTokens = book.refreshTokens.filter { $0.value.expires > now }
        }
    }
}
