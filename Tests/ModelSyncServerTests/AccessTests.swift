import Foundation
import ModelSyncJSON
import ModelSync
@testable import ModelSyncServer
import ModelSyncServerAuth
import NIOHTTP1
import ServerTestSupport
import Testing

/// Access rules on every path of a server, over each backend: each endpoint × rule × caller
/// answers the status the rules give, and no answer carries a row the caller may not read. The tokens here
/// are plain test tokens (`TestTokens`): JWTs are `ModelSyncServerAuth`'s, tested there.
@Suite struct AccessTests {
    static let data: JSONValue = [
        "users": [["id": 1, "email": "ann@example.com"], ["id": 2, "email": "bob@example.com"]],
        "posts": [["id": 1, "userId": 1, "title": "Ann's post"], ["id": 2, "userId": 2, "title": "Bob's post"]],
        "messages": [["id": 1, "userId": 1, "text": "Ann's secret"], ["id": 2, "userId": 2, "text": "Bob's secret"]],
        "comments": [["id": 1, "postId": 1, "userId": 2, "body": "Bob on Ann's post"]],
        "secrets": [["id": 1, "code": "closed to all but admins"]],
        "guestbook": [],
        "profile": ["name": "the site"],
    ]
    static let rules: JSONValue = ["posts": 644, "messages": 600, "comments": 640, "profile": 644, "guestbook": 666]

    enum Who: String, CaseIterable, CustomTestStringConvertible {
        case ann, bob, anonymous, admin
        var token: String? {
            switch self {
            case .ann: "test:1:"
            case .bob: "test:2:"
            case .anonymous: nil
            case .admin: "test:9:admin"
            }
        }
        var headers: [(String, String)] { token.map { [("Authorization", "Bearer \($0)")] } ?? [] }
        var testDescription: String { rawValue }
    }

    static func options() throws -> ServerOptions {
        ServerOptions(access: AccessControl(
            rules: try AccessRules(json: Self.rules), tokens: TestTokens(),
            accounts: BuiltInAccounts(issuer: TestTokens(), passwords: TestPasswords())))
    }

    func withAccessServer(_ backend: Backend, _ body: (String) async throws -> Void) async throws {
        try await withServer(Self.data, options: try Self.options(), backend: backend) { _, base in try await body(base) }
    }

    func get(_ url: String, as who: Who) async throws -> Reply {
        try await send(.GET, url, headers: who.headers)
    }

    /// Collection, caller, status, ids.
    static let listCases: [(String, Who, Int, [Int])] = [
        ("posts", Who.anonymous, 200, [1, 2]), ("posts", .ann, 200, [1, 2]), ("posts", .admin, 200, [1, 2]),
        ("messages", .anonymous, 401, []), ("messages", .ann, 200, [1]), ("messages", .bob, 200, [2]), ("messages", .admin, 200, [1, 2]),
        ("comments", .anonymous, 401, []), ("comments", .bob, 200, [1]),
        ("users", .anonymous, 401, []), ("users", .ann, 200, [1]), ("users", .admin, 200, [1, 2]),
        ("secrets", .ann, 403, []), ("secrets", .anonymous, 401, []), ("secrets", .admin, 200, [1]),
    ]

    /// The reads of every collection, by caller: the status and the rows (ids) answered.
    @Test(arguments: Backend.allCases, listCases)
    func listsShowOnlyReadableRows(backend: Backend, expected: (String, Who, Int, [Int])) async throws {
        let (collection, who, status, ids) = expected
        try await withAccessServer(backend) { base async throws in
            let reply = try await get("\(base)/\(collection)", as: who)
            #expect(reply.status == status)
            if status == 200 {
                #expect(reply.ids == ids)
                #expect(reply.header("X-Total-Count") == String(ids.count))
            } else {
                #expect(reply.ids.isEmpty)
                if status == 401 { #expect(reply.header("WWW-Authenticate")?.hasPrefix("Bearer") == true) }
            }
        }
    }

    /// A row the caller may not read is missing to it (404), never a 403 that says it exists.
    @Test(arguments: Backend.allCases) func itemsOfOthersAreMissing(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            #expect(try await get("\(base)/messages/2", as: .ann).status == 404)
            let own = try await get("\(base)/messages/1", as: .ann)
            #expect(own.json?["text"] == "Ann's secret")
            // Answers depend on the caller: a shared cache keeps them apart.
            #expect(own.headers["Vary"].joined(separator: ", ").contains("Authorization"))
            #expect(try await get("\(base)/posts", as: .anonymous).headers["Vary"].joined(separator: ", ").contains("Authorization"))
            #expect(try await get("\(base)/messages/1", as: .anonymous).status == 401)
            #expect(try await get("\(base)/messages/2", as: .admin).status == 200)
            // Paging and filters count the visible rows only.
            let page = try await get("\(base)/messages?_page=1&_limit=1&text_like=secret", as: .bob)
            #expect(page.ids == [2] && page.header("X-Total-Count") == "1")
            #expect(try await get("\(base)/messages?q=Ann", as: .bob).ids.isEmpty)
        }
    }

    @Test(arguments: Backend.allCases) func createsBelongToTheirCaller(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let mine = try await send(.POST, "\(base)/messages", body: #"{"text":"new"}"#, headers: Who.ann.headers)
            #expect(mine.status == 201 && mine.json?["userId"] == 1)
            let forged = try await send(.POST, "\(base)/messages", body: #"{"text":"as Bob","userId":2}"#, headers: Who.ann.headers)
            #expect(forged.status == 403)
            #expect(try await send(.POST, "\(base)/messages", body: #"{"text":"x"}"#).status == 401)
            let given = try await send(.POST, "\(base)/messages", body: #"{"text":"for Bob","userId":2}"#, headers: Who.admin.headers)
            #expect(given.status == 201 && given.json?["userId"] == 2)
            // Bob sees the row the admin gave him; Ann does not.
            #expect(try await get("\(base)/messages", as: .bob).ids.contains(given.json?["id"]?.intValue ?? -1))
            #expect(!(try await get("\(base)/messages", as: .ann).ids.contains(given.json?["id"]?.intValue ?? -1)))
        }
    }

    @Test(arguments: Backend.allCases) func updatesAndDeletesNeedTheRight(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            // Readable but not writable: 403; unreadable: 404; anonymous: 401.
            #expect(try await send(.PATCH, "\(base)/posts/2", body: #"{"title":"x"}"#, headers: Who.ann.headers).status == 403)
            #expect(try await send(.PATCH, "\(base)/messages/2", body: #"{"text":"x"}"#, headers: Who.ann.headers).status == 404)
            #expect(try await send(.DELETE, "\(base)/posts/2", headers: Who.anonymous.headers).status == 401)
            #expect(try await send(.DELETE, "\(base)/messages/2", headers: Who.ann.headers).status == 404)
            // An owner cannot give a row away; a replacement keeps its owner.
            #expect(try await send(.PATCH, "\(base)/posts/1", body: #"{"userId":2}"#, headers: Who.ann.headers).status == 403)
            let replaced = try await send(.PUT, "\(base)/posts/1", body: #"{"title":"replaced"}"#, headers: Who.ann.headers)
            #expect(replaced.status == 200 && replaced.json?["userId"] == 1)
            #expect(try await send(.PATCH, "\(base)/posts/1", body: #"{"userId":2}"#, headers: Who.admin.headers).status == 200)
            #expect(try await send(.DELETE, "\(base)/messages/1", headers: Who.ann.headers).status == 200)
            #expect(try await get("\(base)/posts/2", as: .bob).json?["title"] == "Bob's post")
        }
    }

    @Test(arguments: Backend.allCases) func relationsObeyTheirOwnRules(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            // Comments are 640: a signed-in reader sees them embedded, an anonymous one does not.
            #expect(try await get("\(base)/posts/1?_embed=comments", as: .ann).json?["comments"]?.arrayValue?.count == 1)
            #expect(try await get("\(base)/posts/1?_embed=comments", as: .anonymous).json?["comments"]?.arrayValue?.count == 0)
            // Users are 600: a post's expanded author is there only for the author.
            #expect(try await get("\(base)/posts/2?_expand=user", as: .bob).json?["user"]?["email"] == "bob@example.com")
            #expect(try await get("\(base)/posts/2?_expand=user", as: .ann).json?["user"] == .null)
            // Nested: the parent must be visible too.
            #expect(try await get("\(base)/users/1/messages", as: .ann).ids == [1])
            #expect(try await get("\(base)/users/1/messages", as: .bob).status == 404)
        }
    }

    @Test(arguments: Backend.allCases) func databaseSingularAndUnnamedCollections(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            #expect(try await get("\(base)/db", as: .anonymous).status == 401)
            #expect(try await get("\(base)/db", as: .ann).status == 403)
            #expect(try await get("\(base)/db", as: .admin).status == 200)
            #expect(try await get("\(base)/profile", as: .anonymous).json?["name"] == "the site")
            #expect(try await send(.PUT, "\(base)/profile", body: #"{"name":"mine"}"#, headers: Who.ann.headers).status == 403)
            #expect(try await send(.PUT, "\(base)/profile", body: #"{"name":"ours"}"#, headers: Who.admin.headers).status == 200)
            #expect(try await send(.POST, "\(base)/secrets", body: #"{"code":"x"}"#, headers: Who.ann.headers).status == 403)
        }
    }

    @Test(arguments: Backend.allCases) func everyBatchOperationIsChecked(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let batch = #"""
                {"operations": [
                  {"method": "PATCH", "path": "/posts/2", "body": {"title": "x"}},
                  {"method": "POST", "path": "/messages", "body": {"text": "batched"}},
                  {"method": "DELETE", "path": "/messages/2"},
                  {"method": "POST", "path": "/messages", "body": {"text": "forged", "userId": 2}}
                ]}
                """#
            let reply = try await send(.POST, "\(base)/_batch", body: batch, headers: Who.ann.headers)
            let statuses = reply.json?["results"]?.arrayValue?.compactMap { $0["status"]?.intValue }
            #expect(statuses == [403, 201, 404, 403])
            #expect(try await get("\(base)/messages", as: .bob).ids == [2])
        }
    }

    /// The feed holds what the caller may read: others' rows and their deletions stay out.
    @Test(arguments: Backend.allCases) func theFeedIsPerUser(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            #expect(try await send(.DELETE, "\(base)/messages/2", headers: Who.bob.headers).status == 200)
            func feed(_ who: Who) async throws -> [(String, Int, Bool)] {
                let changes = try await get("\(base)/_changes?collections=messages,users,posts", as: who).json?["changes"]?.arrayValue ?? []
                return changes.compactMap { change in
                    guard let collection = change["collection"]?.stringValue, let id = change["id"]?.intValue else { return nil }
                    return (collection, id, change["deleted"] == true)
                }
            }
            let ann = try await feed(.ann)
            #expect(ann.filter { $0.0 == "messages" }.map(\.1) == [1])
            #expect(ann.filter { $0.0 == "users" }.map(\.1) == [1])
            #expect(ann.filter { $0.0 == "posts" }.map(\.1) == [1, 2])
            let bob = try await feed(.bob)
            #expect(bob.filter { $0.0 == "messages" }.map(\.1) == [2] && bob.contains { $0.0 == "messages" && $0.2 })
            #expect(try await get("\(base)/messages?_since=0", as: .ann).json?["changes"]?.arrayValue?.count == 1)
            #expect(try await get("\(base)/_changes?collections=messages", as: .anonymous).json?["changes"]?.arrayValue?.isEmpty == true)
        }
    }

    /// One user's Idempotency-Key never replays another's answer.
    @Test(arguments: Backend.allCases) func idempotencyKeysArePerUser(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let key = ("Idempotency-Key", "shared-key")
            let ann = try await send(.POST, "\(base)/messages", body: #"{"text":"same"}"#, headers: Who.ann.headers + [key])
            let bob = try await send(.POST, "\(base)/messages", body: #"{"text":"same"}"#, headers: Who.bob.headers + [key])
            #expect(ann.status == 201 && bob.status == 201)
            #expect(bob.header("Idempotent-Replayed") == nil)
            #expect(bob.json?["userId"] == 2 && bob.json?["id"] != ann.json?["id"])
            let again = try await send(.POST, "\(base)/messages", body: #"{"text":"same"}"#, headers: Who.ann.headers + [key])
            #expect(again.header("Idempotent-Replayed") == "true" && again.json?["id"] == ann.json?["id"])
        }
    }

    /// No key an anonymous caller sends spells a user's scope: `1:1:k` is not user 1's `k`.
    @Test(arguments: Backend.allCases) func anonymousKeysCannotReplayAUsersAnswer(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let ann = try await send(.POST, "\(base)/guestbook", body: #"{"text":"hi"}"#, headers: Who.ann.headers + [("Idempotency-Key", "k")])
            #expect(ann.status == 201 && ann.json?["userId"] == 1)
            let forged = try await send(
                .POST, "\(base)/guestbook", body: #"{"text":"hi","userId":1}"#, headers: [("Idempotency-Key", "1:1:k")])
            #expect(forged.status == 201)
            #expect(forged.header("Idempotent-Replayed") == nil && forged.json?["id"] != ann.json?["id"])
        }
    }

    /// A create's Idempotency-Key reaches only its owner's feed: another client would take
    /// the row for its own lost create if it held the same key.
    @Test(arguments: Backend.allCases) func createKeysReachOnlyTheirOwner(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let created = try await send(.POST, "\(base)/posts", body: #"{"title":"keyed"}"#, headers: Who.ann.headers + [("Idempotency-Key", "ann-key")])
            let id = try #require(created.json?["id"])
            func createdWith(_ who: Who) async throws -> JSONValue? {
                let feed = try await get("\(base)/_changes?collections=posts", as: who).json?["changes"]?.arrayValue ?? []
                return feed.first { $0["id"] == id }?["createdWith"]
            }
            #expect(try await createdWith(.ann) == "ann-key")
            #expect(try await createdWith(.bob) == nil)
            #expect(try await createdWith(.anonymous) == nil)
            // The change itself still reaches every reader of the row.
            #expect(try await get("\(base)/_changes?collections=posts", as: .bob).json?["changes"]?.arrayValue?.contains { $0["id"] == id } == true)
        }
    }

    @Test(arguments: Backend.allCases) func registerAndLogin(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let registered = try await send(
                .POST, "\(base)/register", body: #"{"email":"Cy@Example.com","password":"long enough","role":"admin","name":"Cy"}"#)
            #expect(registered.status == 201)
            let user = try #require(registered.json?["user"])
            #expect(user["email"] == "cy@example.com" && user["name"] == "Cy")
            #expect(user["password"] == nil && user["role"] == nil)
            let token = try #require(registered.json?["accessToken"]?.stringValue)
            // Registration gives no role, whatever the body says.
            #expect(try await TestTokens().caller(for: token).role == nil)
            #expect(try await send(.POST, "\(base)/signup", body: #"{"email":"cy@example.com","password":"long enough"}"#).status == 409)
            let login = try await send(.POST, "\(base)/login", body: #"{"email":"CY@example.com","password":"long enough"}"#)
            #expect(login.status == 200 && login.json?["user"]?["id"] == user["id"])
            let wrong = try await send(.POST, "\(base)/signin", body: #"{"email":"cy@example.com","password":"wrong one"}"#)
            let unknown = try await send(.POST, "\(base)/login", body: #"{"email":"nobody@example.com","password":"long enough"}"#)
            #expect(wrong.status == 400 && unknown.status == 400 && wrong.json == unknown.json)
            #expect(try await send(.POST, "\(base)/register", body: #"{"email":"short@example.com","password":"short"}"#).status == 400)
            // One email, one account, however many register it at once.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await send(.POST, "\(base)/register", body: #"{"email":"race@example.com","password":"long enough"}"#).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.sorted() == [201, 409, 409, 409])
            // The password is nowhere a route serves.
            for path in ["/users", "/db", "/_changes", "/users?_embed=messages", "/posts?_expand=user", "/users?_since=0"] {
                let reply = try await send(.GET, base + path, headers: Who.admin.headers)
                #expect(!String(decoding: reply.body, as: UTF8.self).contains("long enough"))
                #expect(!String(decoding: reply.body, as: UTF8.self).contains("hashed:"))
            }
        }
    }

    /// A row an admin gives to another owner leaves its former owner's feed as a deletion; the
    /// new owner's feed has the record; a reader of every row sees only the record.
    /// (PostgreSQL for now: the JSON backend's departures come with the lead's feed change, and
    /// then this runs on `Backend.allCases`.)
    @Test(arguments: [Backend.postgres]) func aRowGivenAwayLeavesItsFormerOwnersFeed(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            func feed(_ who: Who, after cursor: String) async throws -> (changes: [JSONValue], next: String) {
                let page = try await get("\(base)/_changes?collections=posts,messages&since=\(cursor)", as: who).json
                return (page?["changes"]?.arrayValue ?? [], page?["next"]?.stringValue ?? "")
            }
            let (annCursor, bobCursor, adminCursor) = (try await feed(.ann, after: "0").next, try await feed(.bob, after: "0").next, try await feed(.admin, after: "0").next)
            #expect(try await send(.PATCH, "\(base)/messages/1", body: #"{"userId":2}"#, headers: Who.admin.headers).status == 200)
            let ann = try await feed(.ann, after: annCursor).changes
            #expect(ann.count == 1)
            #expect(ann.first?["collection"] == "messages" && ann.first?["id"] == 1 && ann.first?["deleted"] == true)
            let bob = try await feed(.bob, after: bobCursor).changes
            #expect(bob.count == 1 && bob.first?["deleted"] == false && bob.first?["record"]?["userId"] == 2)
            let admin = try await feed(.admin, after: adminCursor).changes
            #expect(admin.count == 1 && admin.first?["deleted"] == false)
            // Posts are public (644): a post given away stays readable, so its record comes, not a deletion.
            #expect(try await send(.PATCH, "\(base)/posts/1", body: #"{"userId":2}"#, headers: Who.admin.headers).status == 200)
            let posts = try await feed(.ann, after: annCursor).changes.filter { $0["collection"] == "posts" }
            #expect(posts.count == 1 && posts.first?["deleted"] == false && posts.first?["record"]?["userId"] == 2)
            // Given back: the record again, once, and no deletion.
            #expect(try await send(.PATCH, "\(base)/messages/1", body: #"{"userId":1}"#, headers: Who.admin.headers).status == 200)
            let back = try await feed(.ann, after: annCursor).changes.filter { $0["collection"] == "messages" }
            #expect(back.count == 1 && back.first?["deleted"] == false && back.first?["record"]?["userId"] == 1)
            // Bob, who had it meanwhile, sees it leave.
            let bobAfter = try await feed(.bob, after: bobCursor).changes.filter { $0["collection"] == "messages" }
            #expect(bobAfter.count == 1 && bobAfter.first?["deleted"] == true)
        }
    }

    /// Departures are kept as long as tombstones: once dropped, an older cursor is gone (410).
    @Test(arguments: [Backend.postgres]) func departuresArePrunedWithTheTombstones(backend: Backend) async throws {
        var options = try Self.options()
        options.feedLimits = FeedLimits(tombstoneCapacity: 1)
        try await withServer(Self.data, options: options, backend: backend) { _, base async throws in
            let cursor = try #require(try await get("\(base)/_changes?since=now", as: .ann).json?["next"]?.stringValue)
            #expect(try await send(.PATCH, "\(base)/messages/1", body: #"{"userId":2}"#, headers: Who.admin.headers).status == 200)
            #expect(try await get("\(base)/_changes?since=\(cursor)", as: .ann).status == 200)
            #expect(try await send(.PATCH, "\(base)/messages/2", body: #"{"userId":1}"#, headers: Who.admin.headers).status == 200)
            #expect(try await get("\(base)/_changes?since=\(cursor)", as: .ann).status == 410)
        }
    }

    /// The live stream under rules carries a reader's rows, not others'.
    @Test(.timeLimit(.minutes(5)), arguments: Backend.allCases) func theStreamCarriesOnlyReadableRows(backend: Backend) async throws {
        try await withServer(Self.data, options: try Self.options(), backend: backend) { server, base async throws in
            let cursor = try #require(try await get("\(base)/_changes?since=now", as: .ann).json?["next"]?.stringValue)
            let url = try #require(URL(string: "\(base)/_changes/stream?since=\(cursor)&collections=messages"))
            var events = RemoteStore(baseURL: server.baseURL).events(at: url, headers: ["Authorization": "Bearer test:1:"]).makeAsyncIterator()
            #expect(try await send(.POST, "\(base)/messages", body: #"{"text":"Bob's live"}"#, headers: Who.bob.headers).status == 201)
            #expect(try await send(.POST, "\(base)/messages", body: #"{"text":"Ann's live"}"#, headers: Who.ann.headers).status == 201)
            let first = try #require(try await events.next())
            #expect(try JSONValue(parsing: Array(first.data.utf8))["record"]?["text"] == "Ann's live")
        }
    }

    /// Hostile Authorization headers get 401, never a 5xx.
    @Test(arguments: [
        [("Authorization", "Bearer")], [("Authorization", "Bearer ")], [("Authorization", "Basic YTpi")],
        [("Authorization", "Bearer " + String(repeating: "x", count: 10_240))], [("Authorization", "Bearer test:1:"), ("Authorization", "Bearer test:2:")],
        [("Authorization", "Bearer not-a-test-token")], [("Authorization", "Bearer a.b.c")],
    ])
    func hostileHeadersAre401(headers: [(String, String)]) async throws {
        // Refused before any backend is asked: one backend is enough.
        try await withAccessServer(.jsonDocument) { base async throws in
            let reply = try await send(.GET, "\(base)/posts", headers: headers)
            #expect(reply.status == 401)
            #expect(reply.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        }
    }

    @Test func rulesFilesAreChecked() throws {
        #expect(throws: AccessRulesError.self) { try AccessRules(json: ["posts": 645]) }
        #expect(throws: AccessRulesError.self) { try AccessRules(json: ["posts": ["mode": 644, "ownr": "x"]]) }
        #expect(throws: AccessRulesError.self) { try AccessRules(json: [1, 2]) }
        let rich = try AccessRules(json: ["posts": ["mode": 644, "owner": "authorId", "roles": ["editor": 666]]])
        let editor = rich.access(to: "posts", for: Caller(userID: "5", role: "editor"))
        #expect(editor.update == .everything && editor.ownerField == "authorId")
        #expect(rich.access(to: "posts", for: Caller(userID: "5")).update == .ownedBy(field: "authorId", userID: "5"))
    }

    /// A token's `sub` that only looks like a number stays text in the rows it owns.
    @Test(arguments: Backend.allCases) func ownersKeepTheSubjectsSpelling(backend: Backend) async throws {
        try await withAccessServer(backend) { base async throws in
            let created = try await send(.POST, "\(base)/messages", body: #"{"text":"x"}"#, headers: [("Authorization", "Bearer test:007:")])
            #expect(created.status == 201 && created.json?["userId"] == "007")
            let numeric = try await send(.POST, "\(base)/messages", body: #"{"text":"y"}"#, headers: [("Authorization", "Bearer test:7:")])
            #expect(numeric.json?["userId"] == 7)
            #expect(try await send(.GET, "\(base)/messages", headers: [("Authorization", "Bearer test:007:")]).ids == [created.json?["id"]?.intValue ?? -1])
        }
    }
}

/// Test tokens: `test:<user>:<role>`. Not cryptography: the rules are tested here, JWTs in
/// ModelSyncServerAuthTests.
struct TestTokens: AccessTokenVerifier, AccessTokenIssuer {
    func caller(for token: String) async throws -> Caller {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "test", !parts[1].isEmpty, !parts[1].contains("\u{0}") else { throw AccessTokenError.malformed }
        return Caller(userID: String(parts[1]), role: parts[2].isEmpty ? nil : String(parts[2]))
    }

    func accessToken(for userID: String, role: String?) async throws -> String {
        "test:\(userID):\(role ?? "")"
    }
}

/// A stand-in hasher (bcrypt is ModelSyncServerAuth's): visibly not the password.
struct TestPasswords: PasswordHasher {
    func hash(_ password: String) async throws -> String { "hashed:" + String(password.reversed()) }
    func verify(_ password: String, against hash: String) async throws -> Bool { hash == "hashed:" + String(password.reversed()) }
}

/// The rules with real tokens and passwords: JWTs signed and verified by jwt-kit, bcrypt
/// hashes, over HTTP.
@Suite struct AccessWithJWTTests {
    static let secret = Data("a test secret of at least thirty-two bytes".utf8)

    @Test func registerThenUseTheTokenAndRefuseForgeries() async throws {
        let tokens = try await JWTAccessTokens(secret: Self.secret)
        let access = AccessControl(
            rules: try AccessRules(json: AccessTests.rules), tokens: tokens,
            accounts: BuiltInAccounts(issuer: tokens, passwords: try BcryptPasswordHasher(cost: 10)))
        let server = try await SyncServer.start(data: AccessTests.data, options: ServerOptions(access: access))
        let base = server.baseURL.absoluteString
        do {
            let registered = try await send(.POST, base + "/register", body: #"{"email":"cy@example.com","password":"correct horse"}"#)
            #expect(registered.status == 201)
            let token = try #require(registered.json?["accessToken"]?.stringValue)
            let id = try #require(registered.json?["user"]?["id"]?.intValue)
            let created = try await send(.POST, base + "/messages", body: #"{"text":"mine"}"#, headers: [("Authorization", "Bearer \(token)")])
            #expect(created.json?["userId"] == .number(JSONNumber(id)))
            #expect(try await send(.GET, base + "/messages", headers: [("Authorization", "Bearer \(token)")]).ids == [created.json?["id"]?.intValue ?? -1])
            // Signed with another secret, or not signed at all: 401.
            let other = try await JWTAccessTokens(secret: Data("another secret of at least thirty-two bytes".utf8))
            let forged = try await other.accessToken(for: String(id), role: "admin")
            #expect(try await send(.GET, base + "/messages", headers: [("Authorization", "Bearer \(forged)")]).status == 401)
            let parts = token.split(separator: ".")
            let unsigned = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            let none = "\(unsigned).\(parts[1])."
            #expect(try await send(.GET, base + "/messages", headers: [("Authorization", "Bearer \(none)")]).status == 401)
            let login = try await send(.POST, base + "/login", body: #"{"email":"cy@example.com","password":"correct horse"}"#)
            #expect(login.status == 200)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }
}
