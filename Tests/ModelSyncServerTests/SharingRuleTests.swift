import ModelSyncJSON
@testable import ModelSyncServer
import Testing

/// The sharing form of the rules file: what it means, and the errors that name the collection
/// and the rule when it does not hold together.
@Suite struct SharingRuleTests {
    static let tracker: JSONValue = [
        "boards": ["owner": "ownerId", "members": ["collection": "memberships", "field": "boardId"], "create": "signedIn", "delete": "owner"],
        "cards": ["parent": ["collection": "boards", "field": "boardId"]],
        "comments": ["parent": ["collection": "cards", "field": "cardId"], "owner": "authorId"],
    ]

    @Test func aTeamTrackerLoadsWithItsMembershipsRuleDerived() throws {
        let rules = try AccessRules(json: Self.tracker)
        let memberships = try #require(rules.rules["memberships"]?.sharing)
        #expect(memberships.parent == SharingRule.Parent(collection: "boards", field: "boardId"))
        #expect(memberships.create == .manager && memberships.update == .manager && memberships.delete == .manager && memberships.list == .viewer)
        let boards = try #require(rules.rules["boards"]?.sharing)
        #expect(boards.create == .signedIn && boards.delete == .owner && boards.update == .editor && boards.view == .viewer)
    }

    /// A viewer's filter on comments reaches through cards to boards: owned, or a membership
    /// with any role; an editor's only through editor or manager memberships.
    @Test func filtersFollowTheChainOfParents() throws {
        let rules = try AccessRules(json: Self.tracker)
        let bob = Caller(userID: "2")
        let link = SharingRule.Membership(collection: "memberships", field: "boardId")
        let boardsViewer = RowFilter.any([.ownedBy(field: "ownerId", userID: "2"), .member(link: link, userID: "2", roles: ["viewer", "editor", "manager"])])
        let access = rules.access(to: "comments", for: bob)
        #expect(access.read == .any([
            .ownedBy(field: "authorId", userID: "2"),
            .parent(field: "cardId", collection: "cards", rows: .parent(field: "boardId", collection: "boards", rows: boardsViewer)),
        ]))
        let editorBoards = rules.rows(of: "boards", reaching: .editor, for: bob)
        #expect(editorBoards == .any([.ownedBy(field: "ownerId", userID: "2"), .member(link: link, userID: "2", roles: ["editor", "manager"])]))
        #expect(rules.access(to: "comments", for: .anonymous).read == .nothing)
        #expect(rules.access(to: "boards", for: bob).create == .everything)
        #expect(rules.access(to: "boards", for: Caller(userID: "9", role: "admin")).delete == .everything)
    }

    /// Evaluated over rows in memory: a membership's role, a parent two levels up.
    @Test func aFilterAdmitsWhatTheMembershipsGive() throws {
        let rules = try AccessRules(json: Self.tracker)
        let data: JSONObject = [
            "boards": [["id": 1, "ownerId": 1], ["id": 2, "ownerId": 1]],
            "memberships": [["id": 1, "boardId": 1, "userId": 2, "role": "viewer"], ["id": 2, "boardId": 2, "userId": 2, "role": "owner"]],
            "cards": [["id": 10, "boardId": 1], ["id": 20, "boardId": 2]],
            "comments": [["id": 100, "cardId": 10], ["id": 200, "cardId": 20]],
        ]
        let facts = RowFacts(InMemoryRowLookups(data))
        let bob = rules.access(to: "comments", for: Caller(userID: "2"))
        #expect(try bob.read.admits(["id": 100, "cardId": 10], facts))
        // "owner" is no role a membership gives: it gives nothing.
        #expect(try !bob.read.admits(["id": 200, "cardId": 20], facts))
        #expect(try !bob.update.admits(["id": 100, "cardId": 10], facts))
        #expect(try bob.update.admits(["id": 100, "cardId": 10, "authorId": 2], facts))
        let ann = rules.access(to: "comments", for: Caller(userID: "1"))
        #expect(try ann.delete.admits(["id": 200, "cardId": 20], facts))
        #expect(try !ann.read.admits(["id": 300, "cardId": 99], facts))
    }

    @Test(arguments: [
        (["cards": ["parent": ["collection": "boards", "field": "boardId"]]], "cards.parent: boards has no rule"),
        (["a": ["parent": ["collection": "b", "field": "bId"]], "b": ["parent": ["collection": "a", "field": "aId"]]], "cycle"),
        (["boards": ["members": ["collection": "m", "field": "boardId"]], "m": ["parent": ["collection": "boards", "field": "boardId"], "create": "editor"]],
         "m.create is editor"),
        (["boards": ["members": ["collection": "m", "field": "boardId"]], "m": ["parent": ["collection": "boards", "field": "boardId"], "owner": "userId", "create": "manager", "update": "manager", "delete": "manager"]],
         "m.owner"),
        (["boards": ["members": ["collection": "m", "field": "boardId"]], "m": 644], "m: it holds the memberships of boards"),
        (["boards": ["members": ["collection": "m", "field": "boardId"]], "m": ["parent": ["collection": "cards", "field": "cardId"], "create": "manager"], "cards": ["list": "viewer"]],
         "m.parent must be"),
        (["boards": ["list": "readers"]], "boards.list: \"readers\" is not a standing"),
        (["boards": ["list": "viewer", "mode": 644]], "boards: unknown member mode"),
        (["boards": ["list": "viewer", "share": true]], "boards: unknown member share"),
        (["boards": ["members": ["collection": "boards", "field": "id"]]], "boards.members: a collection cannot hold its own memberships"),
        (["boards": ["members": ["collection": "m"]]], "boards.members needs collection"),
        (["users": ["parent": ["collection": "boards", "field": "boardId"]], "boards": ["list": "viewer"]], "users: the accounts collection"),
        (["*": ["parent": ["collection": "boards", "field": "boardId"]], "boards": ["list": "viewer"]], "*: the rule of every other collection"),
        (["boards": ["owner": "", "list": "viewer"]], "boards.owner must name a field"),
        (["boards": ["members": ["collection": "m", "field": "boardId"]], "lists": ["members": ["collection": "m", "field": "listId"]]],
         "holds the memberships of"),
    ] as [(JSONValue, String)])
    func aRuleThatDoesNotHoldTogetherIsNamed(rules: JSONValue, message: String) {
        #expect {
            _ = try AccessRules(json: rules)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func aChainOfParentsLongerThanEightIsRefused() {
        var rules: JSONObject = ["c0": ["list": "viewer"]]
        for level in 1...9 { rules["c\(level)"] = ["parent": ["collection": .string("c\(level - 1)"), "field": "parentId"]] }
        #expect(throws: AccessRulesError.self) { try AccessRules(json: .object(rules)) }
        rules["c9"] = nil
        #expect(throws: Never.self) { try AccessRules(json: .object(rules)) }
    }

    /// Feed cursors change when the sharing rules do, and a mode-only file keeps its text.
    @Test func theCanonicalTextCoversTheSharingForm() throws {
        let one = try AccessRules(json: Self.tracker)
        var changed = try #require(Self.tracker.objectValue)
        changed["cards"] = ["parent": ["collection": "boards", "field": "boardId"], "update": "manager"]
        #expect(one.canonicalText != (try AccessRules(json: .object(changed))).canonicalText)
        #expect(try AccessRules(json: ["posts": 644]).canonicalText == "accounts=5:users;5:posts=644,6:userId")
    }
}
