import Foundation
import ModelSyncJSON

/// Where a server keeps its built-in accounts: their credentials (never inside the user's
/// record), roles, generations and refresh tokens. Every backend is one, beside being a
/// ``ServerBackend``: the JSON file (`JSONFileBackend+Accounts.swift`), SQLite and PostgreSQL
/// (each in its `+Accounts` file). ``AccountService`` (`/register`, `/login`, `/token`, …) and
/// the check of each request's account (``CurrentAccounts``) use only this.
///
/// An account's record is a row of the accounts collection like any other; writes that touch
/// both (a registration, a record's deletion) are one write of the backend.
package protocol ServerAccountStore: Sendable {
    // MARK: Registration and sign-in (Access/Accounts.swift)

    /// Creates a built-in account in one write: a record in `collection` (`profile` with a new
    /// id) and its credentials. Throws a 409 ``APIError`` when the email is taken.
    func register(email: String, passwordHash: String, profile: JSONObject, in collection: String) async throws -> (user: JSONValue, account: StoredAccount)

    /// The record and credentials of the account with this (normalized) email, if any.
    func account(email: String, in collection: String) async throws -> (user: JSONValue, account: StoredAccount)?

    // MARK: Roles and refresh tokens (Access/RefreshTokens.swift)

    /// The credentials of the account whose record in `collection` has this id, if both exist
    /// (an account whose record was deleted signs no one in).
    func account(userID: String, in collection: String) async throws -> StoredAccount?

    /// Sets (nil: removes) the role of the account whose record has this id; nil when there is
    /// no such account.
    func setRole(_ role: String?, userID: String) async throws -> StoredAccount?

    /// Keeps a new refresh token (and drops the expired ones).
    func storeRefreshToken(_ token: StoredRefreshToken) async throws

    /// The refresh token with this hash, if it is kept.
    func refreshToken(hash: String) async throws -> StoredRefreshToken?

    /// Exchanges the refresh token with this hash, of `family`, in one write, as
    /// ``RefreshTokenExchange/decide(_:family:familyKnown:successorUnused:now:retryWindow:)``
    /// says: a rotation stores the successor (`successorHash`, in the token's family, for its
    /// user), marks the token used and drops the family's older tokens; a reuse revokes the
    /// family.
    func exchangeRefreshToken(
        hash: String, family: String, successorHash: String, sealedSuccessor: String, successorExpires: Date, now: Date, retryWindow: Duration
    ) async throws -> RefreshTokenExchange

    /// Revokes every refresh token of a family (a sign-out, a reuse).
    func revokeRefreshTokens(family: String) async throws

    // MARK: The accounts as they are now (Access/Accounts.swift)

    /// The credentials of the account of `userID` as they are now, without reading its record:
    /// every request with a built-in account's token is checked against them, so this is one
    /// lookup by id. Deleting the record removes them (in the same write).
    func currentAccount(userID: String, in collection: String) async throws -> StoredAccount?

    /// Ends every session of the account of `userID` in one write: its generation moves on (its
    /// access tokens are refused from the next request) and its refresh tokens go; with
    /// `newPasswordHash`, its password changes too. Nil when there is no such account.
    func endSessions(userID: String, newPasswordHash: String?) async throws -> StoredAccount?

    /// Moves the password hashes that json-server-auth keeps in the records of `collection`
    /// (`"password": "$2a$10$…"`) to the accounts' credentials, for records with an email and no
    /// account yet, and removes every record's `password` (each such record gets a new version,
    /// so that the feed carries it without). Returns how many records had one.
    func adoptPasswordHashes(in collection: String, isHash: @Sendable (String) -> Bool) async throws -> Int
}
