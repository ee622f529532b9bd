import Foundation
import ModelSyncJSON

/// Roles and refresh tokens in the bookkeeping (``Bookkeeping/accounts``,
/// ``Bookkeeping/refreshTokens``), each change saved with the data by one atomic write.
extension JSONFileBackend {
    package func account(userID: String, in collection: String) -> StoredAccount? {
        guard root[collection]?.arrayValue?.contains(where: { hasID($0, userID) }) == true else { return nil }
        return book.accounts.values.first { $0.userID.isIdentical(to: userID) }
    }

    package func setRole(_ role: String?, userID: String) async throws -> StoredAccount? {
        try await write({ _, book -> StoredAccount? in
            guard let email = book.accounts.first(where: { $0.value.userID.isIdentical(to: userID) })?.key else { return nil }
            book.accounts[email]?.role = role
            return book.accounts[email]
        }, changed: { $0 != nil })
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
