import Foundation
import ModelSyncRemote
import ModelSyncServer
import ModelSyncServerAuth
import ModelSyncTesting
import SessionTestSupport
import Testing

/// `AccountSession` against the bundled server in-process over loopback: sign-in, tokens in
/// the storage, refreshes before expiry and after a 401 (one for concurrent requests), the end of
/// a session whose refresh is refused. (A `SyncStore` that follows a session: SyncStoreSessionTests.)
@Suite struct AccountSessionTests {
    @Test func aSignedInSessionAuthorizesRequestsAndKeepsItsTokens() async throws {
        try await withSessionFixture { f in
            let events = f.session.events()
            #expect(try await f.session.restore() == .signedOut)
            let user = try await f.session.register(email: "ann@example.org", password: "long enough", profile: ["name": "Ann"])
            let id = try #require(user["id"]?.intValue)
            #expect(f.session.state == .signedIn(userID: String(id)))
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == .signedIn(userID: String(id)))
            let stored = try #require(await f.storage.loadTokens())
            #expect(stored.accessToken.hasPrefix("s:\(id)::") && stored.refreshToken != nil && stored.expiresAt != nil)

            var note = SessionNote(id: nil, title: "mine")
            try await f.remote.save(&note)
            #expect(authorization(f.server, "/notes").last == "Bearer \(stored.accessToken)")
            #expect(try await f.remote.list(SessionNote.self).map(\.title) == ["mine"])
            // Another session over the same storage is signed in without signing in.
            let again = AccountSession(baseURL: f.server.baseURL, storage: f.storage)
            #expect(try await again.restore() == .signedIn(userID: String(id)))
            // Without the session, the notes are closed.
            let error = await remoteError { _ = try await RemoteStore(baseURL: f.server.baseURL).list(SessionNote.self) }
            #expect(error?.status == 401)
        }
    }

    @Test func aRefreshComesBeforeARequestWhoseTokenIsAboutToExpire() async throws {
        try await withSessionFixture(lifetime: .seconds(10)) { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let first = try #require(f.session.tokens)
            _ = try await f.remote.list(SessionNote.self)
            #expect(f.transport.refreshes == 1)
            let refreshed = try #require(f.session.tokens)
            #expect(refreshed.accessToken != first.accessToken && refreshed.refreshToken != first.refreshToken)
            #expect(authorization(f.server, "/notes").last == "Bearer \(refreshed.accessToken)")
            #expect(await f.storage.loadTokens() == refreshed)
        }
    }

    @Test func a401RefreshesOnceAndSendsTheRequestAgain() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.tokens.revokeIssued()
            #expect(try await f.remote.list(SessionNote.self).isEmpty)
            #expect(f.transport.refreshes == 1)
            let sent = authorization(f.server, "/notes")
            #expect(sent.count == 2 && sent[0] != sent[1])
            #expect(f.transport.statuses("/notes") == [401, 200])
        }
    }

    @Test func a401OnTheResendRefreshesNoMore() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.tokens.revokeIssued()
            // The refreshed token is refused too (an account gone, a key rotated).
            let tokens = f.tokens
            f.transport.afterRefresh.withLock { $0 = { tokens.revokeIssued() } }
            let error = await remoteError { _ = try await f.remote.list(SessionNote.self) }
            #expect(error?.status == 401)
            #expect(f.transport.statuses("/notes") == [401, 401])
            #expect(f.transport.refreshes == 1)
        }
    }

    @Test func concurrentRequestsShareOneRefresh() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.tokens.revokeIssued()
            f.transport.holdRefreshes()
            var answers = f.transport.answers.stream.makeAsyncIterator()
            async let first = f.remote.list(SessionNote.self)
            async let second = f.remote.list(SessionNote.self)
            // Both requests are refused before the refresh may go on.
            var refused = 0
            while refused < 2, let status = await answers.next() { if status == 401 { refused += 1 } }
            await f.transport.releaseRefreshes()
            _ = try await (first, second)
            #expect(f.transport.refreshes == 1)
            // Each request refused once, then answered (304 when the other's answer is cached by then).
            let statuses = f.transport.statuses("/notes")
            #expect(statuses.count == 4 && statuses.filter { $0 == 401 }.count == 2 && statuses.allSatisfy { [200, 304, 401].contains($0) })
        }
    }

    @Test func aRefusedRefreshEndsTheSession() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let events = f.session.events()
            // Signed out elsewhere (the family is revoked): the next refresh is refused.
            let refreshToken = try #require(f.session.tokens?.refreshToken)
            _ = try await f.transport.send(RemoteRequest(
                method: .post, url: f.server.baseURL.appendingPathComponent("logout"), headers: ["Content-Type": "application/json"],
                body: JSONValue.object(["refreshToken": .string(refreshToken)]).jsonBytes()))
            await #expect(throws: AccountSessionError.refreshRefused(status: 401, message: "the refresh token is unknown, expired or revoked; sign in again")) {
                try await f.session.refresh()
            }
            #expect(f.session.state == .signedOut)
            #expect(await f.storage.loadTokens() == nil)
            var iterator = events.makeAsyncIterator()
            if case .signedOut(let error)? = await iterator.next() { #expect(error != nil) } else { Issue.record("no sign-out event") }
            await #expect(throws: AccountSessionError.notSignedIn) { try await f.session.refresh() }
            // Requests go without a token now.
            let error = await remoteError { _ = try await f.remote.list(SessionNote.self) }
            #expect(error?.status == 401 && authorization(f.server, "/notes").last == .some(nil))
        }
    }

    /// The refresh's answer is lost: the tokens are kept, and the next refresh sends the same
    /// refresh token, which the server answers with the same successor: still signed in.
    @Test func aLostRefreshAnswerKeepsTheSession() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            f.server.inject(Fault(.loseAnswer))
            await #expect(throws: (any Error).self) { try await f.session.refresh() }
            try await f.session.refresh()
            #expect(f.session.state != .signedOut)
            try await f.session.refresh()
            f.tokens.revokeIssued()
            #expect(try await f.remote.list(SessionNote.self).isEmpty)
        }
    }

    /// JWTs end to end: jwt-kit signs, the session reads `expiresIn`, and a token that expires
    /// within the margin is refreshed before use.
    @Test func jwtTokensEndToEnd() async throws {
        let jwt = try await JWTAccessTokens(secret: Data("a test secret of at least thirty-two bytes".utf8), lifetime: .seconds(20), leeway: .zero)
        try await withSessionFixture(issuer: jwt, passwords: try BcryptPasswordHasher(cost: BcryptPasswordHasher.minimumCost)) { f in
            let user = try await f.session.register(email: "jo@example.org", password: "correct horse")
            let tokens = try #require(f.session.tokens)
            #expect(tokens.userID == user["id"].flatMap { $0.intValue.map(String.init) })
            let expiresAt = try #require(tokens.expiresAt)
            #expect(expiresAt > Date() && expiresAt <= Date().addingTimeInterval(21))
            var note = SessionNote(id: nil, title: "signed")
            try await f.remote.save(&note)
            // Twenty seconds to live, thirty of margin: refreshed before the request.
            #expect(f.transport.refreshes == 1)
            #expect(try await f.remote.list(SessionNote.self).map(\.title) == ["signed"])
            await f.session.signOut()
            let error = await remoteError { _ = try await f.remote.list(SessionNote.self) }
            #expect(error?.status == 401)
        }
    }
}
