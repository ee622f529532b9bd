import Foundation
import Hummingbird
import ModelSyncJSON

extension AccountService {
    /// `POST /token` `{"refreshToken": …}`: a new access token and a new refresh token; the one
    /// sent is used up (see ``RefreshTokenPolicy``). 400 without a token, 401 for one that is
    /// unknown, expired, revoked, used already (which revokes its family), or another signed-in
    /// user's.
    func refresh(_ body: JSONValue, caller: Caller) async throws -> Response {
        guard let policy = accounts.refreshTokens else { throw APIError.notFound("no refresh tokens here") }
        let sent = try refreshToken(in: body)
        guard let token = RefreshToken(text: sent) else { throw Self.invalidGrant }
        let hash = token.hash(policy.digest)
        if caller.isSignedIn {
            // A token presented with someone else's access token is refused, and left alone.
            guard let stored = try await store.refreshToken(hash: hash), caller.userID.map(stored.userID.isIdentical) == true else { throw Self.invalidGrant }
        }
        let successor = RefreshToken(family: token.family)
        let sealed = Base64URL.encode(token.seal(successor.bytes, policy.digest))
        let now = Date()
        let exchange = try await store.exchangeRefreshToken(
            hash: hash, family: token.family, successorHash: successor.hash(policy.digest), sealedSuccessor: sealed,
            successorExpires: now.addingTimeInterval(policy.lifetime.timeInterval), now: now, retryWindow: policy.retryWindow)
        let (userID, given): (String, [UInt8])
        switch exchange {
        case .rotated(let user):
            (userID, given) = (user, successor.bytes)
        case .retried(let user, let sealedSuccessor):
            guard let sealedBytes = Base64URL.decode(sealedSuccessor), sealedBytes.count == RefreshToken.byteCount else { throw Self.invalidGrant }
            (userID, given) = (user, token.seal(sealedBytes, policy.digest))
        case .reused:
            throw APIError.unauthenticated("this refresh token was used already: every token of its sign-in is revoked; sign in again")
        case .invalid:
            throw Self.invalidGrant
        }
        // The role as it is now: a change reaches the next access token. An account whose record
        // is gone signs no one in (as at login): its tokens go.
        guard let account = try await store.account(userID: userID, in: collection) else {
            try await store.revokeRefreshTokens(family: token.family)
            throw Self.invalidGrant
        }
        var answer = try await tokens(for: account)
        answer["refreshToken"] = .string(RefreshToken(bytes: given, family: token.family).text)
        return ServerRoutes.json(.object(answer), status: .ok)
    }

    /// `POST /logout` `{"refreshToken": …}`: revokes the token's family; 204 also for a token
    /// that is unknown already (signing out twice is done once), 401 for another signed-in
    /// user's.
    func logOut(_ body: JSONValue, caller: Caller) async throws -> Response {
        guard let policy = accounts.refreshTokens else { throw APIError.notFound("no refresh tokens here") }
        let sent = try refreshToken(in: body)
        guard let token = RefreshToken(text: sent), let stored = try await store.refreshToken(hash: token.hash(policy.digest)) else {
            return Response(status: .noContent)
        }
        if let userID = caller.userID, !stored.userID.isIdentical(to: userID) { throw Self.invalidGrant }
        try await store.revokeRefreshTokens(family: stored.family)
        return Response(status: .noContent)
    }

    /// `POST /_accounts/<id>/password` `{"password": "<current>", "newPassword": "<new>"}`: the
    /// account's own user only, with the current password. Every other session ends (access
    /// tokens from the next request, refresh tokens at once); the answer signs this one in again
    /// as `/login` does. 400 for a wrong current password or a short new one, 401 anonymous, 403
    /// for another account.
    func changePassword(userID: String, _ body: JSONValue, caller: Caller, from address: String) async throws -> Response {
        guard let callerID = caller.userID else { throw APIError.unauthenticated("sign in to change your password") }
        guard callerID.isIdentical(to: userID) else { throw APIError(status: .forbidden, message: "only the account's own user changes its password") }
        guard let current = body["password"]?.stringValue, let new = body["newPassword"]?.stringValue else {
            throw APIError.badRequest(#"send {"password": "<current>", "newPassword": "<new>"}"#)
        }
        try limit(address: address, account: "id:" + userID)
        guard new.count >= accounts.minimumPasswordLength else {
            throw APIError.badRequest("the password must have at least \(accounts.minimumPasswordLength) characters")
        }
        guard let account = try await store.account(userID: userID, in: collection) else { throw APIError.notFound("no account with id \(userID)") }
        guard try await hashed({ try await accounts.passwords.verify(current, against: account.passwordHash) }) else { throw Self.incorrect }
        let hash = try await hashed { try await accounts.passwords.hash(new) }
        guard let changed = try await store.endSessions(userID: userID, newPasswordHash: hash) else { throw APIError.notFound("no account with id \(userID)") }
        return ServerRoutes.json(.object(try await signedIn(changed)), status: .ok)
    }

    /// `PUT /_accounts/<id>/password` `{"newPassword": "<new>"}`: an admin sets an account's
    /// password without the current one (a user who lost theirs). Every session of the account
    /// ends, as with a change by its user; 204. 400 for a missing or short password, 401
    /// anonymous, 403 for a non-admin, 404 for no such account.
    func resetPassword(userID: String, _ body: JSONValue, caller: Caller) async throws -> Response {
        guard caller.isSignedIn else { throw APIError.unauthenticated("sign in as an admin to reset a password") }
        guard caller.isAdmin else { throw CollectionAccess.refusal(of: caller, "only an admin resets another account's password") }
        guard let new = body["newPassword"]?.stringValue else { throw APIError.badRequest(#"send {"newPassword": "<new>"}"#) }
        guard new.count >= accounts.minimumPasswordLength else {
            throw APIError.badRequest("the password must have at least \(accounts.minimumPasswordLength) characters")
        }
        guard try await store.account(userID: userID, in: collection) != nil else { throw APIError.notFound("no account with id \(userID)") }
        let hash = try await hashed { try await accounts.passwords.hash(new) }
        guard try await store.endSessions(userID: userID, newPasswordHash: hash) != nil else { throw APIError.notFound("no account with id \(userID)") }
        return Response(status: .noContent)
    }

    /// `POST /_accounts/<id>/logout`: signs the account out everywhere: its access tokens are
    /// refused from the next request and every refresh token family ends. The account's own user
    /// or an admin; 204.
    func logOutEverywhere(userID: String, caller: Caller) async throws -> Response {
        guard let callerID = caller.userID else { throw APIError.unauthenticated("sign in to sign out everywhere") }
        guard callerID.isIdentical(to: userID) || caller.isAdmin else {
            throw APIError(status: .forbidden, message: "only the account's own user or an admin signs it out")
        }
        guard try await store.endSessions(userID: userID, newPasswordHash: nil) != nil else { throw APIError.notFound("no account with id \(userID)") }
        return Response(status: .noContent)
    }

    /// `PUT /_accounts/<id>/role` `{"role": "editor"}` (null removes it): admins only.
    func setRole(userID: String, _ body: JSONValue, caller: Caller) async throws -> Response {
        guard caller.isSignedIn else { throw APIError.unauthenticated("sign in as an admin to set roles") }
        guard caller.isAdmin else { throw CollectionAccess.refusal(of: caller, "only an admin sets roles") }
        guard let object = body.objectValue, let given = object["role"] else { throw APIError.badRequest(#"send {"role": "<role>"} or {"role": null}"#) }
        let role: String?
        switch given {
        case .null: role = nil
        case .string(let text) where Self.isRole(text): role = text
        default: throw APIError.badRequest("a role is text of 1 to 64 characters without control characters, or null")
        }
        guard let account = try await store.setRole(role, userID: userID) else { throw APIError.notFound("no account with id \(userID)") }
        return ServerRoutes.json(["id": .string(account.userID), "role": account.role.map(JSONValue.string) ?? .null], status: .ok)
    }

    private static func isRole(_ text: String) -> Bool {
        (1...64).contains(text.count) && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// The one answer to a refresh token that does not sign anyone in.
    static let invalidGrant = APIError.unauthenticated("the refresh token is unknown, expired or revoked; sign in again")

    private func refreshToken(in body: JSONValue) throws -> String {
        guard let text = body["refreshToken"]?.stringValue, !text.isEmpty else { throw APIError.badRequest(#"send {"refreshToken": "<token>"}"#) }
        return text
    }
}
