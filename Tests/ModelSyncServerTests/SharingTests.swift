import Foundation
import ModelSyncJSON
import ModelSyncRemote
import NIOHTTP1
@testable import ModelSyncServer
import ServerTestSupport
import Testing

/// A team tracker under sharing rules, over HTTP on every backend: boards with members, cards
/// that follow their board, comments that follow their card. Who may do what on each path,
/// and what each reader's feed holds as memberships come and go.
@Suite struct SharingTests {
    /// Ann owns board 1 (Bob edits it, Cy views it) and board 3; Dan owns board 2.
    static let data: JSONValue = [
        "users": [["id": 1, "email": "ann@example.com"], ["id": 2, "email": "bob@example.com"], ["id": 3, "email": "cy@example.com"], ["id": 4, "email": "dan@example.com"]],
        "boards": [["id": 1, "ownerId": 1, "name": "Launch"], ["id": 2, "ownerId": 4, "name": "Dan's"], ["id": 3, "ownerId": 1, "name": "Ann's own"]],
        "memberships": [["id": 1, "boardId": 1, "userId": 2, "role": "editor"], ["id": 2, "boardId": 1, "userId": 3, "role": "viewer"]],
        "cards": [["id": 1, "boardId": 1, "title": "Ship it"], ["id": 2, "boardId": 2, "title": "Dan's card"]],
        "comments": [["id": 1, "cardId": 1, "authorId": 2, "body": "On it"], ["id": 2, "cardId": 2, "authorId": 4, "body": "Dan's note"]],
    ]

    enum Who: String, CaseIterable, CustomTestStringConvertible {
        case ann, bob, cy, dan, anonymous, admin
        var headers: [(String, String)] {
            switch self {
            case .ann: [("Authorization", "Bearer test:1:")]
            case .bob: [("Authorization", "Bearer test:2:")]
            case .cy: [("Authorization", "Bearer test:3:")]
            case .dan: [("Authorization", "Bearer test:4:")]
            case .anonymous: []
            case .admin: [("Authorization", "Bearer test:9:admin")]
            }
        }
        var testDescription: String { rawValue }
    }

    static func options() throws -> ServerOptions {
        ServerOptions(access: AccessControl(rules: try AccessRules(json: SharingRuleTests.tracker), tokens: TestTokens()))
    }

    func withTracker(_ backend: Backend, _ body: (String) async throws -> Void) async throws {
        try await withServer(Self.data, options: try Self.options(), backend: backend) { _, base in try await body(base) }
    }

    func ids(_ reply: Reply) -> [Int] {
        (reply.json?.arrayValue ?? []).compactMap { $0["id"]?.intValue }.sorted()
    }

    /// Path, caller, status, ids of a list.
    static let readCases: [(String, Who, Int, [Int])] = [
        ("boards", .ann, 200, [1, 3]), ("boards", .bob, 200, [1]), ("boards", .cy, 200, [1]), ("boards", .dan, 200, [2]),
        ("boards", .anonymous, 401, []), ("boards", .admin, 200, [1, 2, 3]),
        ("cards", .bob, 200, [1]), ("cards", .cy, 200, [1]), ("cards", .dan, 200, [2]),
        ("comments", .cy, 200, [1]), ("comments", .dan, 200, [2]), ("comments", .ann, 200, [1]),
        ("memberships", .cy, 200, [1, 2]), ("memberships", .dan, 200, []),
        ("boards/1/cards", .cy, 200, [1]), ("boards/1/cards", .dan, 404, []), ("cards/1/comments", .bob, 200, [1]),
        ("cards?_page=1&_limit=10", .cy, 200, [1]),
    ]

    @Test(arguments: Backend.allCases) func listsShowEachReaderItsBoardsAndWhatFollowsThem(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            for (path, who, status, expected) in Self.readCases {
                let reply = try await send(.GET, "\(base)/\(path)", headers: who.headers)
                #expect(reply.status == status, "\(who) GET \(path)")
                if status == 200 {
                    #expect(ids(reply) == expected, "\(who) GET \(path)")
                    #expect(reply.header("X-Total-Count") == String(expected.count), "\(who) GET \(path) count")
                }
            }
        }
    }

    /// Path, caller, status.
    static let itemCases: [(String, Who, Int)] = [
        ("boards/1", .cy, 200), ("boards/1", .dan, 404), ("cards/1", .cy, 200), ("cards/1", .dan, 404),
        ("comments/1", .cy, 200), ("comments/1", .dan, 404), ("comments/2", .ann, 404), ("memberships/1", .cy, 200), ("memberships/1", .dan, 404),
    ]

    @Test(arguments: Backend.allCases) func anItemOutOfReachIsMissing(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            for (path, who, status) in Self.itemCases {
                #expect(try await send(.GET, "\(base)/\(path)", headers: who.headers).status == status, "\(who) GET \(path)")
            }
            // Relations show only what their own rules admit.
            let embedded = try await send(.GET, "\(base)/boards/1?_embed=cards", headers: Who.cy.headers)
            #expect(embedded.json?["cards"]?.arrayValue?.count == 1)
            let expanded = try await send(.GET, "\(base)/comments/1?_expand=card", headers: Who.cy.headers)
            #expect(expanded.json?["card"]?["title"] == "Ship it")
            let foreign = try await send(.GET, "\(base)/boards/2?_embed=cards", headers: Who.ann.headers)
            #expect(foreign.status == 404)
        }
    }

    /// Method, path, body, caller, status: the matrix of writes by standing.
    static let writeCases: [(String, String, String, Who, Int)] = [
        // Viewers read only; editors write cards; outsiders see nothing to write.
        ("PATCH", "cards/1", #"{"title":"viewer"}"#, .cy, 403),
        ("PATCH", "cards/1", #"{"title":"outsider"}"#, .dan, 404),
        ("PATCH", "cards/1", #"{"title":"anonymous"}"#, .anonymous, 401),
        ("PATCH", "cards/1", #"{"title":"editor"}"#, .bob, 200),
        ("POST", "cards", #"{"boardId":1,"title":"viewer's"}"#, .cy, 403),
        ("POST", "cards", #"{"boardId":1,"title":"outsider's"}"#, .dan, 403),
        ("POST", "cards", #"{"boardId":1,"title":"editor's"}"#, .bob, 201),
        ("POST", "comments", #"{"cardId":1,"body":"viewer's"}"#, .cy, 403),
        ("POST", "comments", #"{"cardId":1,"body":"editor's"}"#, .bob, 201),
        // A card cannot be moved to a board its writer may not edit.
        ("PATCH", "cards/1", #"{"boardId":2}"#, .bob, 403),
        ("PATCH", "cards/1", #"{"boardId":3}"#, .bob, 403),
        // Memberships: only a manager (or the owner) changes them; an editor cannot promote themselves.
        ("PATCH", "memberships/1", #"{"role":"manager"}"#, .bob, 403),
        ("POST", "memberships", #"{"boardId":1,"userId":4,"role":"viewer"}"#, .bob, 403),
        ("POST", "memberships", #"{"boardId":2,"userId":1,"role":"manager"}"#, .ann, 403),
        // Boards: any signed-in user creates one (their own); only its owner deletes it.
        ("POST", "boards", #"{"name":"Cy's"}"#, .cy, 201),
        ("POST", "boards", #"{"name":"Anonymous"}"#, .anonymous, 401),
        ("DELETE", "boards/1", "", .bob, 403),
        ("DELETE", "cards/1", "", .cy, 403),
        ("DELETE", "comments/1", "", .bob, 200),
        ("DELETE", "boards/2", "", .admin, 200),
        // A member leaves: they delete their own membership, whatever its role, and no other;
        // they never change it.
        ("PATCH", "memberships/2", #"{"role":"editor"}"#, .cy, 403),
        ("PUT", "memberships/2", #"{"id":2,"boardId":1,"userId":3,"role":"manager"}"#, .cy, 403),
        ("DELETE", "memberships/1", "", .cy, 403),
        ("DELETE", "memberships/2", "", .cy, 200),
    ]

    @Test(arguments: Backend.allCases) func writesNeedTheStandingTheirOperationNames(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            for (method, path, body, who, status) in Self.writeCases {
                let reply = try await send(HTTPMethod(rawValue: method), "\(base)/\(path)", body: body.isEmpty ? nil : body, headers: who.headers)
                #expect(reply.status == status, "\(who) \(method) \(path) \(body): \(String(decoding: reply.body, as: UTF8.self))")
            }
            // The refused writes changed nothing.
            let card = try await send(.GET, "\(base)/cards/1", headers: Who.ann.headers)
            #expect(card.json?["title"] == "editor" && card.json?["boardId"] == 1)
            #expect(try await send(.GET, "\(base)/memberships/1", headers: Who.ann.headers).json?["role"] == "editor")
            #expect(try await send(.GET, "\(base)/memberships/2", headers: Who.ann.headers).status == 404)
            #expect(try await send(.GET, "\(base)/cards/1", headers: Who.cy.headers).status == 404)
        }
    }

    /// The check says what the server does: a member may delete (leave), not update, their membership.
    @Test(arguments: Backend.allCases) func theCheckLetsAMemberLeave(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let cy = try await send(.GET, "\(base)/_access/check?collection=memberships&id=2&user=3", headers: Who.admin.headers)
            #expect(cy.json?["operations"]?["delete"]?["allowed"] == true && cy.json?["operations"]?["update"]?["allowed"] == false)
            let other = try await send(.GET, "\(base)/_access/check?collection=memberships&id=1&user=3", headers: Who.admin.headers)
            #expect(other.json?["operations"]?["delete"]?["allowed"] == false)
        }
    }

    /// A manager manages the board's memberships; a role lowered takes effect on the next request.
    @Test(arguments: Backend.allCases) func aManagerManagesMembershipsAndALoweredRoleStopsWrites(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            #expect(try await send(.PATCH, "\(base)/memberships/1", body: #"{"role":"manager"}"#, headers: Who.ann.headers).status == 200)
            let added = try await send(.POST, "\(base)/memberships", body: #"{"boardId":1,"userId":4,"role":"viewer"}"#, headers: Who.bob.headers)
            #expect(added.status == 201)
            #expect(ids(try await send(.GET, "\(base)/cards", headers: Who.dan.headers)) == [1, 2])
            #expect(try await send(.PATCH, "\(base)/memberships/1", body: #"{"role":"viewer"}"#, headers: Who.ann.headers).status == 200)
            #expect(try await send(.PATCH, "\(base)/cards/1", body: #"{"title":"too late"}"#, headers: Who.bob.headers).status == 403)
            #expect(try await send(.DELETE, "\(base)/memberships/\(added.json?["id"]?.intValue ?? 0)", headers: Who.bob.headers).status == 403)
        }
    }

    /// "Why doesn't Cy edit this card?": the admin's check names the standing and where it comes from.
    @Test(arguments: Backend.allCases) func theCheckExplainsAStanding(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let bob = try await send(.GET, "\(base)/_access/check?collection=cards&id=1&user=2", headers: Who.admin.headers)
            #expect(bob.json?["standing"] == "editor" && bob.json?["write"] == true)
            #expect(bob.json?["because"]?.stringValue?.contains("memberships makes user 2 editor of boards/1") == true, "\(String(decoding: bob.body, as: UTF8.self))")
            let cy = try await send(.GET, "\(base)/_access/check?collection=cards&id=1&user=3", headers: Who.admin.headers)
            #expect(cy.json?["standing"] == "viewer" && cy.json?["read"] == true && cy.json?["write"] == false)
            #expect(cy.json?["operations"]?["update"]?["needs"] == "editor")
            let ann = try await send(.GET, "\(base)/_access/check?collection=comments&id=1&user=1", headers: Who.admin.headers)
            #expect(ann.json?["standing"] == "owner" && ann.json?["because"]?.stringValue?.contains("owns boards/1") == true)
            let dan = try await send(.GET, "\(base)/_access/check?collection=cards&id=1&user=4", headers: Who.admin.headers)
            #expect(dan.json?["standing"] == "signedIn" && dan.json?["read"] == false)
            let rules = try await send(.GET, "\(base)/_access/rules", headers: Who.admin.headers)
            #expect(rules.json?["rules"]?["cards"]?["parent"]?["collection"] == "boards" && rules.json?["rules"]?["memberships"]?["create"] == "manager")
        }
    }

    /// 5,000 boards for one member, on every backend: lists count them and the feed pages them.
    @Test(arguments: Backend.allCases) func aMemberOfFiveThousandBoardsReadsThemAll(backend: Backend) async throws {
        let count = 5_000
        let data: JSONValue = [
            "users": [["id": 1, "email": "ann@example.com"], ["id": 2, "email": "bob@example.com"]],
            "boards": .array((1...count).map { ["id": .number(JSONNumber($0)), "ownerId": 1, "name": .string("board \($0)")] }),
            "memberships": .array((1...count).map { ["id": .number(JSONNumber($0)), "boardId": .number(JSONNumber($0)), "userId": 2, "role": "viewer"] }),
            "cards": .array((1...count).map { ["id": .number(JSONNumber($0)), "boardId": .number(JSONNumber($0)), "title": .string("card \($0)")] }),
            "comments": [],
        ]
        try await withServer(data, options: try Self.options(), backend: backend) { _, base in
            let cards = try await send(.GET, "\(base)/cards?_page=3&_limit=10", headers: Who.bob.headers)
            #expect(cards.status == 200 && cards.header("X-Total-Count") == String(count) && ids(cards).count == 10)
            var (cursor, seen) = ("0", 0)
            for _ in 0..<40 {
                let page = try await send(.GET, "\(base)/_changes?since=\(cursor)&collections=boards,cards&limit=1000", headers: Who.bob.headers)
                #expect(page.status == 200)
                seen += page.json?["changes"]?.arrayValue?.count ?? 0
                cursor = try #require(page.json?["next"]?.stringValue)
                if page.json?["more"] != true { break }
            }
            #expect(seen == 2 * count)
        }
    }

    /// `_batch` applies the same rules to each operation.
    @Test(arguments: Backend.allCases) func aBatchChecksEachOperation(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let body = #"{"operations":[{"method":"PATCH","path":"/cards/1","body":{"title":"fine"}},{"method":"PATCH","path":"/cards/2","body":{"title":"not mine"}},{"method":"POST","path":"/cards","body":{"boardId":2,"title":"no"}}]}"#
            let reply = try await send(.POST, "\(base)/_batch", body: body, headers: Who.bob.headers)
            let statuses = reply.json?["results"]?.arrayValue?.compactMap { $0["status"]?.intValue }
            #expect(statuses == [200, 404, 403], "\(String(decoding: reply.body, as: UTF8.self))")
        }
    }

    func feed(_ base: String, since cursor: String, as who: Who) async throws -> Reply {
        try await send(.GET, "\(base)/_changes?since=\(cursor)", headers: who.headers)
    }

    /// (collection, id, deleted) of a feed answer.
    func entries(_ reply: Reply) -> [String] {
        (reply.json?["changes"]?.arrayValue ?? []).compactMap { change in
            guard let collection = change["collection"]?.stringValue, let id = change["id"]?.intValue else { return nil }
            return "\(collection)/\(id)\(change["deleted"] == true ? "-" : "")"
        }.sorted()
    }

    /// The feed: each reader gets the rows it may read. A user added to a board gets the board,
    /// its cards, their comments and its memberships in the next page, without reading
    /// everything again; removed, their deletions. A feed of one collection moves its rows too.
    @Test(arguments: Backend.allCases) func rowsMoveInAndOutWithMembership(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let cy = try await feed(base, since: "0", as: .cy)
            #expect(entries(cy) == ["boards/1", "cards/1", "comments/1", "memberships/1", "memberships/2", "users/3"])
            let dan = try await feed(base, since: "0", as: .dan)
            #expect(entries(dan) == ["boards/2", "cards/2", "comments/2", "users/4"])
            let danCursor = try #require(dan.json?["next"]?.stringValue)
            let cardsCursor = try #require(try await send(.GET, "\(base)/cards?_since=0", headers: Who.dan.headers).json?["next"]?.stringValue)
            // Ann adds Dan to board 1: board 1 comes with its cards, comments and memberships.
            let added = try await send(.POST, "\(base)/memberships", body: #"{"boardId":1,"userId":4,"role":"viewer"}"#, headers: Who.ann.headers)
            #expect(added.status == 201)
            let movedIn = try await feed(base, since: danCursor, as: .dan)
            #expect(movedIn.status == 200)
            #expect(entries(movedIn) == ["boards/1", "cards/1", "comments/1", "memberships/1", "memberships/2", "memberships/3"])
            let cards = try await send(.GET, "\(base)/cards?_since=\(cardsCursor)", headers: Who.dan.headers)
            #expect(entries(cards) == ["cards/1"])
            // Removed again: their deletions, and nothing of board 2.
            let cursor = try #require(movedIn.json?["next"]?.stringValue)
            #expect(try await send(.DELETE, "\(base)/memberships/3", headers: Who.ann.headers).status == 200)
            let movedOut = try await feed(base, since: cursor, as: .dan)
            #expect(entries(movedOut) == ["boards/1-", "cards/1-", "comments/1-", "memberships/1-", "memberships/2-", "memberships/3-"])
            #expect(entries(try await feed(base, since: "0", as: .dan)) == ["boards/2", "cards/2", "comments/2", "memberships/3-", "users/4"])
            // Cy's feed meanwhile: Dan's membership came and went, nothing else moved.
            let cyCursor = try #require(cy.json?["next"]?.stringValue)
            #expect(entries(try await feed(base, since: cyCursor, as: .cy)) == ["memberships/3-"])
        }
    }

    /// The live stream carries the rows a new membership moves in.
    @Test(.timeLimit(.minutes(5)), arguments: Backend.allCases) func theStreamCarriesRowsMovingIn(backend: Backend) async throws {
        try await withServer(Self.data, options: try Self.options(), backend: backend) { server, base async throws in
            let cursor = try #require(try await feed(base, since: "now", as: .dan).json?["next"]?.stringValue)
            let url = try #require(URL(string: "\(base)/_changes/stream?since=\(cursor)"))
            var events = RemoteStore(baseURL: server.baseURL).events(at: url, headers: ["Authorization": "Bearer test:4:"]).makeAsyncIterator()
            #expect(try await send(.POST, "\(base)/memberships", body: #"{"boardId":1,"userId":4,"role":"viewer"}"#, headers: Who.ann.headers).status == 201)
            var seen: [String] = []
            while seen.count < 6, let event = try await events.next() {
                let change = try JSONValue(parsing: Array(event.data.utf8))
                seen.append("\(change["collection"]?.stringValue ?? "")/\(change["id"]?.intValue ?? 0)")
            }
            #expect(seen.sorted() == ["boards/1", "cards/1", "comments/1", "memberships/1", "memberships/2", "memberships/3"])
        }
    }

    /// A comment deleted while Cy was a member, then Cy removed: her next page carries that
    /// deletion with the board's, though her rules no longer show her the comment's tombstone.
    @Test(arguments: Backend.allCases) func aDeletionBeforeTheReaderLeftStillReachesIt(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let cursor = try #require(try await feed(base, since: "0", as: .cy).json?["next"]?.stringValue)
            #expect(try await send(.DELETE, "\(base)/comments/1", headers: Who.bob.headers).status == 200)
            #expect(try await send(.DELETE, "\(base)/memberships/2", headers: Who.ann.headers).status == 200)
            let cy = try await feed(base, since: cursor, as: .cy)
            #expect(entries(cy) == ["boards/1-", "cards/1-", "comments/1-", "memberships/1-", "memberships/2-"], "\(String(decoding: cy.body, as: UTF8.self))")
        }
    }

    /// Deletions reach the readers who could see the row, even after its parent went; a card
    /// moved to a board a reader cannot see leaves that reader's feed as a deletion.
    @Test(arguments: Backend.allCases) func deletionsAndMovesReachTheReadersWhoSawTheRow(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let cyCursor = try #require(try await feed(base, since: "0", as: .cy).json?["next"]?.stringValue)
            let danCursor = try #require(try await feed(base, since: "0", as: .dan).json?["next"]?.stringValue)
            #expect(try await send(.DELETE, "\(base)/comments/1", headers: Who.bob.headers).status == 200)
            // Bob adds a card to board 1; Ann moves it to her own board 3, which Cy cannot see.
            #expect(try await send(.POST, "\(base)/cards", body: #"{"boardId":1,"title":"moving"}"#, headers: Who.bob.headers).status == 201)
            #expect(try await send(.PATCH, "\(base)/cards/3", body: #"{"boardId":3}"#, headers: Who.ann.headers).status == 200)
            let cy = try await feed(base, since: cyCursor, as: .cy)
            #expect(entries(cy) == ["cards/3-", "comments/1-"], "\(String(decoding: cy.body, as: UTF8.self))")
            #expect(entries(try await feed(base, since: danCursor, as: .dan)) == [])
            #expect(ids(try await send(.GET, "\(base)/cards", headers: Who.ann.headers)) == [1, 3])
            #expect(ids(try await send(.GET, "\(base)/cards", headers: Who.cy.headers)) == [1])
        }
    }

    /// The changes of a feed read page by page from `cursor` with `limit`, until no more follow;
    /// `between` runs after the first page.
    func readPages(
        _ base: String, from cursor: String, limit: Int, as who: Who, of collection: String? = nil, between: () async throws -> Void = {}
    ) async throws -> (pages: [[JSONValue]], next: String) {
        var (cursor, pages) = (cursor, [[JSONValue]]())
        for _ in 0..<200 {
            let path = collection.map { "\($0)?_since=\(cursor)&_limit=\(limit)" } ?? "_changes?since=\(cursor)&limit=\(limit)"
            let page = try await send(.GET, "\(base)/\(path)", headers: who.headers)
            #expect(page.status == 200, "\(String(decoding: page.body, as: UTF8.self))")
            pages.append(page.json?["changes"]?.arrayValue ?? [])
            cursor = try #require(page.json?["next"]?.stringValue)
            if pages.count == 1 { try await between() }
            if page.json?["more"] != true { break }
        }
        return (pages, cursor)
    }

    /// A board of 45 cards: Dan, added to it, gets them in pages of at most the limit, as a
    /// first sync would, each row once; rows changed between the pages come at their new
    /// versions and a row deleted meanwhile comes as its deletion; nothing is lost.
    @Test(arguments: Backend.allCases) func aMoveInLargerThanAPageComesInPages(backend: Backend) async throws {
        var data = Self.data
        let cards = (1...45).map { JSONValue.object(["id": .number(JSONNumber(100 + $0)), "boardId": 1, "title": .string("card \($0)")]) }
        data["cards"] = .array((data["cards"]?.arrayValue ?? []) + cards)
        try await withServer(data, options: try Self.options(), backend: backend) { _, base in
            let cursor = try #require(try await feed(base, since: "0", as: .dan).json?["next"]?.stringValue)
            let cardsCursor = try #require(try await send(.GET, "\(base)/cards?_since=0", headers: Who.dan.headers).json?["next"]?.stringValue)
            #expect(try await send(.POST, "\(base)/memberships", body: #"{"boardId":1,"userId":4,"role":"viewer"}"#, headers: Who.ann.headers).status == 201)
            // A feed of the cards alone: the 46 cards in pages of ten.
            let cardPages = try await readPages(base, from: cardsCursor, limit: 10, as: .dan, of: "cards").pages
            #expect(cardPages.map(\.count) == [10, 10, 10, 10, 6], "\(cardPages.map(\.count))")
            #expect(Set(cardPages.joined().compactMap { $0["id"]?.intValue }) == Set([1] + Array(101...145)))
            let (pages, next) = try await readPages(base, from: cursor, limit: 10, as: .dan) { () async throws in
                // Between the pages: a card that has not come yet changes, another goes.
                #expect(try await send(.PATCH, "\(base)/cards/145", body: #"{"title":"changed"}"#, headers: Who.ann.headers).status == 200)
                #expect(try await send(.DELETE, "\(base)/cards/144", headers: Who.ann.headers).status == 200)
            }
            // 50 rows move in (the board, 46 cards, a comment, two memberships), with Dan's
            // membership and the two changes: six pages of ten, none larger.
            #expect(pages.allSatisfy { $0.count <= 10 }, "\(pages.map(\.count))")
            #expect(pages.count >= 5 && pages.count <= 7, "\(pages.map(\.count))")
            var held: [String: JSONValue] = [:]
            var seen: [String: Int] = [:]
            for change in pages.joined() {
                let key = "\(change["collection"]?.stringValue ?? "")/\(change["id"]?.intValue ?? 0)"
                seen[key, default: 0] += 1
                held[key] = change["deleted"] == true ? nil : change["record"]
            }
            let expected = ["boards/1", "comments/1", "memberships/1", "memberships/2", "memberships/3", "cards/1"] + (101...143).map { "cards/\($0)" } + ["cards/145"]
            #expect(held.keys.filter { $0 != "users/4" }.sorted() == expected.sorted())
            #expect(held["cards/145"]?["title"] == "changed")
            // Each row once, but for the two that changed after their move began.
            #expect(seen.filter { $0.value > 1 && !["cards/144", "cards/145"].contains($0.key) }.isEmpty, "\(seen.filter { $0.value > 1 })")
            // The feed goes on from the end of the moves.
            #expect(try await send(.PATCH, "\(base)/cards/101", body: #"{"title":"later"}"#, headers: Who.ann.headers).status == 200)
            #expect(entries(try await feed(base, since: next, as: .dan)) == ["cards/101"])
        }
    }

    /// A cursor in the middle of rows moving in whose moves began before the horizon is gone
    /// like any other: 410 with a horizon that is the reader's own cursor, which it reads on from.
    @Test func aPendingCursorBeforeTheHorizonIsGoneWithTheReadersHorizon() async throws {
        var data = Self.data
        let cards = (1...15).map { JSONValue.object(["id": .number(JSONNumber(100 + $0)), "boardId": 1, "title": .string("card \($0)")]) }
        data["cards"] = .array((data["cards"]?.arrayValue ?? []) + cards)
        var options = try Self.options()
        options.feedLimits = FeedLimits(tombstoneCapacity: 2)
        try await withServer(data, options: options) { _, base in
            let cursor = try #require(try await feed(base, since: "0", as: .dan).json?["next"]?.stringValue)
            #expect(try await send(.POST, "\(base)/memberships", body: #"{"boardId":1,"userId":4,"role":"viewer"}"#, headers: Who.ann.headers).status == 201)
            let first = try await send(.GET, "\(base)/_changes?since=\(cursor)&limit=5", headers: Who.dan.headers)
            let pending = try #require(first.json?["next"]?.stringValue)
            #expect(pending.split(separator: ".", omittingEmptySubsequences: false).count == 5, "\(pending)")
            // Deletions beyond the tombstones kept move the horizon past where the moves began.
            for id in 101...104 { #expect(try await send(.DELETE, "\(base)/cards/\(id)", headers: Who.ann.headers).status == 200) }
            let gone = try await send(.GET, "\(base)/_changes?since=\(pending)&limit=5", headers: Who.dan.headers)
            #expect(gone.status == 410)
            let horizon = try #require(gone.json?["horizon"]?.stringValue)
            #expect(horizon.contains("."), "a horizon of Dan's, tagged: \(horizon)")
            #expect(try await feed(base, since: horizon, as: .dan).status == 200)
        }
    }

    /// A cursor in the middle of rows moving in is checked like any other.
    @Test func aCursorOfPendingMovesIsChecked() async throws {
        let tag = "0123456789abcdef"
        #expect(try ServerRoutes.parseCursor("50.\(tag).40.30.20").pending == PendingMoves(since: 30, after: 20))
        #expect(try ServerRoutes.parseCursor("50.\(tag).40").pending == nil)
        for bad in ["50.\(tag).40.30", "now.\(tag).40.30.20", "50.\(tag).40.x.20", "50.\(tag).40.30.20.1", "50..40.30.20"] {
            #expect(throws: APIError.self, "\(bad)") { try ServerRoutes.parseCursor(bad) }
        }
        // Well formed as the document says, but never issued: the feed answers 410, not 400.
        for disordered in ["50.\(tag).40.30.31", "50.\(tag).40.50.20"] {
            #expect(throws: ServerRoutes.DisorderedCursor.self, "\(disordered)") { try ServerRoutes.parseCursor(disordered) }
        }
    }

    /// A page of some collections only may span any number of changes of the others; the
    /// memberships and parents among them it reads to weigh its moves are bounded: the page
    /// ends where they reach the window, and the next pages go on from there, losing nothing.
    @Test func aPageOfFewCollectionsEndsWhereItsMovesFillTheWindow() async throws {
        let root = try #require(Self.data.objectValue)
        let backend = JSONFileBackend(root: root, file: nil, feedLimits: FeedLimits())
        let bob = Visibility(rules: try AccessRules(json: SharingRuleTests.tracker), caller: Caller(userID: "2"))
        let moves = try #require(MembershipMoves(backend: backend, visibility: bob))
        func write(_ operation: ItemWrite) async throws { _ = try await backend.write([ItemOperation(write: operation)])[0].get() }
        try await write(.update(collection: "boards", id: "3", body: ["name": "Ann's"], merge: true))
        let since = try await backend.changes(after: .now, in: [], limit: 1, visibility: bob).next
        // Six cards on Bob's board (a parent collection), then a comment: a feed of comments spans them all.
        for card in 0..<6 { try await write(.create(collection: "cards", body: ["boardId": 1, "title": .string("Card \(card)")])) }
        try await write(.create(collection: "comments", body: ["cardId": 1, "authorId": 2, "body": "Done"]))
        let first = try await backend.changes(after: .after(since), in: ["comments"], limit: 100, visibility: bob)
        #expect(first.changes.map(\.collection) == ["comments"] && !first.more)
        var (page, _) = try await moves.page(first, after: since, movesAfter: since, in: ["comments"], limit: 100, window: 2)
        #expect(page.more && page.next < first.next && page.changes.isEmpty, "the page ends inside the window")
        var comments = page.changes.map(\.collection)
        var pages = 1
        while page.more && pages < 10 {
            let next = try await backend.changes(after: .after(page.next), in: ["comments"], limit: 100, visibility: bob)
            (page, _) = try await moves.page(next, after: page.next, movesAfter: since, in: ["comments"], limit: 100, window: 2)
            comments += page.changes.map(\.collection)
            pages += 1
        }
        #expect(comments == ["comments"] && !page.more && pages > 1)
    }

    /// A card moved to another board takes its comments along: into the feed (and stream) of
    /// the new board's readers, out of the old board's.
    @Test(.timeLimit(.minutes(5)), arguments: Backend.allCases) func rowsInheritingFromAMovedRowMoveWithIt(backend: Backend) async throws {
        try await withServer(Self.data, options: try Self.options(), backend: backend) { server, base async throws in
            let cyCursor = try #require(try await feed(base, since: "0", as: .cy).json?["next"]?.stringValue)
            let danCursor = try #require(try await feed(base, since: "0", as: .dan).json?["next"]?.stringValue)
            let url = try #require(URL(string: "\(base)/_changes/stream?since=\(danCursor)"))
            var events = RemoteStore(baseURL: server.baseURL).events(at: url, headers: ["Authorization": "Bearer test:4:"]).makeAsyncIterator()
            #expect(try await send(.PATCH, "\(base)/cards/1", body: #"{"boardId":2}"#, headers: Who.admin.headers).status == 200)
            #expect(entries(try await feed(base, since: danCursor, as: .dan)) == ["cards/1", "comments/1"])
            let cy = try await feed(base, since: cyCursor, as: .cy)
            #expect(entries(cy) == ["cards/1-", "comments/1-"], "\(String(decoding: cy.body, as: UTF8.self))")
            var seen: [String] = []
            while seen.count < 2, let event = try await events.next() {
                let change = try JSONValue(parsing: Array(event.data.utf8))
                seen.append("\(change["collection"]?.stringValue ?? "")/\(change["id"]?.intValue ?? 0)")
            }
            #expect(seen.sorted() == ["cards/1", "comments/1"])
            // Its readers' lists agree.
            #expect(ids(try await send(.GET, "\(base)/comments", headers: Who.dan.headers)) == [1, 2])
            #expect(ids(try await send(.GET, "\(base)/comments", headers: Who.cy.headers)) == [])
        }
    }

    /// A role changed between two that read moves nothing: Cy has the board's rows already.
    @Test(arguments: Backend.allCases) func aRoleChangedAloneMovesNothing(backend: Backend) async throws {
        try await withTracker(backend) { base async throws in
            let cursor = try #require(try await feed(base, since: "0", as: .cy).json?["next"]?.stringValue)
            #expect(try await send(.PATCH, "\(base)/memberships/2", body: #"{"role":"editor"}"#, headers: Who.ann.headers).status == 200)
            let cy = try await feed(base, since: cursor, as: .cy)
            #expect(entries(cy) == ["memberships/2"], "\(String(decoding: cy.body, as: UTF8.self))")
            // Moved to another board, it still moves that board in.
            let next = try #require(cy.json?["next"]?.stringValue)
            #expect(try await send(.PATCH, "\(base)/memberships/2", body: #"{"boardId":3}"#, headers: Who.ann.headers).status == 200)
            let moved = try await feed(base, since: next, as: .cy)
            #expect(entries(moved).contains("boards/3") && entries(moved).contains("boards/1-"), "\(String(decoding: moved.body, as: UTF8.self))")
        }
    }
}
