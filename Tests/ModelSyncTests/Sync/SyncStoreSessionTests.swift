import Foundation
@testable import ModelSync
import ModelSyncServer
import ModelSyncTesting
import SessionTestSupport
import Testing

/// A `SyncStore` that follows an `AccountSession`: a push paused by a 401 resumes after the
/// refresh, only the same user's sign-in resumes it, and signing out clears the local data.
@Suite struct SyncStoreSessionTests {
    @Test func aSyncStorePausedBy401ResumesOnceTheSessionRefreshes() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let database = try Database(path: f.directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
            let sync = SyncStore(remote: f.remote, database: database, models: [SyncNote.self, SyncReply.self])
            sync.use(f.session)
            // The token is refused and the refresh after the 401 cannot reach the server.
            f.tokens.revokeIssued()
            f.transport.failNextRefresh()
            var note = SyncNote(id: nil, title: "offline")
            try await sync.save(&note)
            await #expect(throws: SyncError.paused(status: 401)) { try await sync.push() }
            #expect(try await sync.status().isPaused)
            sync.startAutomaticPush()
            var updates = sync.statusUpdates().makeAsyncIterator()
            try await f.session.refresh()
            while let status = await updates.next(), status.isPaused || status.pendingCount > 0 {}
            #expect(try await f.server.data["notes"]?.arrayValue?.compactMap { $0["title"]?.stringValue } == ["offline"])
            sync.stopAutomaticPush()
        }
    }

    /// Another user's sign-in leaves a paused outbox paused: its changes are the last user's.
    @Test func onlyTheSameUsersSignInResumesTheOutbox() {
        var lastUser: String? = nil
        #expect(SyncStore.resumes(after: .signedIn(userID: "1"), lastUser: &lastUser))
        #expect(SyncStore.resumes(after: .refreshed(userID: "1"), lastUser: &lastUser))
        #expect(!SyncStore.resumes(after: .signedOut(nil), lastUser: &lastUser))
        #expect(SyncStore.resumes(after: .signedIn(userID: "1"), lastUser: &lastUser))
        #expect(!SyncStore.resumes(after: .signedIn(userID: "2"), lastUser: &lastUser))
        #expect(lastUser == "2")
    }

    @Test func signingOutClearsTheLocalDataAndRevokesTheTokens() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.org", password: "long enough")
            let database = try Database(path: f.directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
            let sync = SyncStore(remote: f.remote, database: database, models: [SyncNote.self, SyncReply.self])
            var pushed = SyncNote(id: nil, title: "pushed")
            try await sync.save(&pushed)
            try await sync.push()
            _ = try await sync.pull(SyncNote.self)
            var pending = SyncNote(id: nil, title: "pending")
            try await sync.save(&pending)
            let refreshToken = try #require(f.session.tokens?.refreshToken)
            try await sync.signOut(f.session)

            #expect(f.session.state == .signedOut)
            let kept = await f.storage.loadTokens()
            #expect(kept == nil)
            #expect(try await database.read { db in try SyncNote.all(db) }.isEmpty)
            #expect(try await sync.status().pendingCount == 0)
            let leftovers = try await database.read { db in
                try ["modelsync_outbox", "modelsync_row_versions", "modelsync_cursors", "modelsync_key_rewrites"].map { table in
                    try db.scalar("SELECT count(*) FROM \(table)")
                }
            }
            #expect(leftovers.allSatisfy { $0 == .integer(0) })
            // The server revoked the refresh token.
            let answer = try await f.transport.send(RemoteRequest(
                method: .post, url: f.server.baseURL.appendingPathComponent("token"), headers: ["Content-Type": "application/json"],
                body: JSONValue.object(["refreshToken": .string(refreshToken)]).jsonBytes()))
            #expect(answer.status == 401)
        }
    }

    // MARK: README, "Users and access"

    @Model
    struct Note: SQLModel {
        var id: Int?
        var title: String
    }

    @Test func readmeUsersAndAccessExample() async throws {
        try await withSessionFixture { f in
            try await f.session.register(email: "ann@example.com", password: "correct horse")
            let (url, directory) = (f.server.baseURL, f.directory.url)
            let db = try Database(path: directory.appendingPathComponent("app.sqlite").path, models: [Note.self])

            let session = AccountSession(baseURL: url, storage: InMemorySessionTokenStorage())  // a Keychain-backed storage in an app
            var options = RemoteStore.Options()
            options.interceptors.append(session)                  // Authorization: Bearer …, refreshed in time
            let sync = SyncStore(remote: RemoteStore(baseURL: url, options: options), database: db, models: [Note.self])
            sync.use(session)                                     // a push paused by a 401 resumes after the next refresh

            try await session.logIn(email: "ann@example.com", password: "correct horse")
            var note = Note(id: nil, title: "Mine")
            try await sync.save(&note)
            try await sync.push()
            let events = session.events()                         // .signedIn, .refreshed, .signedOut(error)

            try await sync.signOut(session)                       // revokes the refresh token; clears the synced
                                                                  // tables, outbox, cursors and row versions
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == .signedOut(nil))
            #expect(try await f.server.data["notes"]?.arrayValue?.count == 1)
            #expect(try await db.read { db in try Note.all(db) }.isEmpty)

            let userID = session.tokens?.userID ?? "signed-out"
            let perUser = try Database(path: directory.appendingPathComponent("\(userID).sqlite").path, models: [Note.self])
            #expect(try await perUser.read { db in try Note.all(db) }.isEmpty)
        }
    }
}

extension SyncStoreSessionTests.Note: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}
