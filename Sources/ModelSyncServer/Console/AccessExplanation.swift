import Foundation
import Hummingbird
import ModelSyncJSON

/// Why a user may or may not read and write one row: the answer to "why doesn't Ann see this
/// card?", for admins (`GET /_access/check`), beside the rules as loaded (`GET /_access/rules`).
/// The yes and no come from the rules the server enforces (``AccessRules/access(to:for:)``); the
/// sentences say which rule and which digit of its mode decide.
package struct AccessExplanation: Sendable {
    package var rules: AccessRules

    /// The rules as loaded: each collection's mode, owner field and role modes, `*` among them,
    /// and the accounts collection with the rule it gets when the file names none.
    package var loaded: JSONValue {
        var object = JSONObject()
        for (name, rule) in rules.rules { object[name] = Self.json(rule) }
        var answer: JSONObject = ["accountsCollection": .string(rules.accountsCollection), "rules": .object(object)]
        if rules.rules[rules.accountsCollection] == nil, let accounts = rules.rule(for: rules.accountsCollection) {
            answer["accountsRule"] = Self.json(accounts)
        }
        return .object(answer)
    }

    private static func json(_ rule: AccessRules.Rule) -> JSONValue {
        if let sharing = rule.sharing {
            var object = JSONObject()
            if let owner = sharing.owner { object["owner"] = .string(owner) }
            if let members = sharing.members {
                object["members"] = [
                    "collection": .string(members.collection), "field": .string(members.field), "user": .string(members.user), "role": .string(members.role),
                ]
            }
            if let parent = sharing.parent { object["parent"] = ["collection": .string(parent.collection), "field": .string(parent.field)] }
            for operation in SharingRule.Operation.allCases { object[operation.rawValue] = .string(sharing.needed(for: operation).description) }
            return .object(object)
        }
        var roles = JSONObject()
        for (role, mode) in rule.roles { roles[role] = .string(mode.description) }
        return ["mode": .string(rule.mode.description), "owner": .string(rule.ownerField), "roles": .object(roles)]
    }

    /// Under a sharing rule: how high `user` stands on `record` and through what (ownership, a
    /// membership, a parent), and which operations that allows. `parent` reads a row as stored,
    /// `memberships` a user's memberships of one link.
    package func checkShared(
        collection: String, record: JSONValue, user: String?, role: String?,
        parent: (String, String) async throws -> JSONValue?, memberships: (SharingRule.Membership, String) async throws -> [MembershipList.Entry]
    ) async throws -> JSONValue? {
        guard let rule = rules.rule(for: collection), let sharing = rule.sharing else { return nil }
        var answer: JSONObject = [
            "collection": .string(collection), "id": record["id"] ?? .null, "rule": .string(rules.rules[collection] != nil ? collection : "*"),
            "user": user.map(JSONValue.string) ?? .null, "role": role.map(JSONValue.string) ?? .null,
        ]
        let admin = role == Caller.adminRole
        var standing: SharingRule.Standing = user == nil ? .everyone : .signedIn
        var reason = user == nil ? "anonymous: stands as everyone" : "signed in, with no tie to this row"
        if admin { (standing, reason) = (.admin, "the role admin bypasses every rule") }
        // Up the chain of parents: the highest standing found decides, and the first place it was found.
        // As `AccessRules.rows(of:reaching:for:)` counts: a parent under a mode stands its owner
        // as owner and ends the chain; a create counts only what the row inherits, not its own owner.
        var (name, row, path) = (collection, record, "\(collection)/\(recordID(of: record) ?? "?")")
        var current: SharingRule? = sharing
        var inherited = standing
        var level = 0
        while !admin, let user, let link = current {
            let ownerField = level > 0 ? link.owner : nil
            if let owner = link.owner, row[owner].flatMap(scalarText)?.isIdentical(to: user) == true, standing < .owner {
                (standing, reason) = (.owner, "user \(user) owns \(path) (its \(owner))")
            }
            if let ownerField, row[ownerField].flatMap(scalarText)?.isIdentical(to: user) == true { inherited = .owner }
            if let members = link.members, let id = recordID(of: row) {
                for entry in try await memberships(members, user) where entry.rowID.isIdentical(to: id) {
                    guard let given = SharingRule.Standing(memberRole: entry.role) else { continue }
                    if level > 0 { inherited = max(inherited, given) }
                    if given > standing { (standing, reason) = (given, "a row of \(members.collection) makes user \(user) \(entry.role) of \(path)") }
                }
            }
            guard let up = link.parent, let parentID = row[up.field].flatMap(scalarText), let found = try await parent(up.collection, parentID) else { break }
            (name, row, path) = (up.collection, found, "\(up.collection)/\(parentID) (through \(name).\(up.field))")
            level += 1
            guard let parentRule = rules.rule(for: up.collection) else { break }
            current = parentRule.sharing
            if current == nil, row[parentRule.ownerField].flatMap(scalarText)?.isIdentical(to: user) == true {
                inherited = .owner
                if standing < .owner { (standing, reason) = (.owner, "user \(user) owns \(path) (its \(parentRule.ownerField))") }
            }
        }
        answer["standing"] = .string(standing.description)
        answer["because"] = .string(reason)
        // A member reads, and may delete (leave), a membership row that names them, whatever its role.
        let named = rules.membershipLink(of: collection).map { link in
            user.map { record[link.link.user].flatMap(scalarText)?.isIdentical(to: $0) == true } ?? false
        } ?? false
        var operations = JSONObject()
        for operation in SharingRule.Operation.allCases {
            let needed = sharing.needed(for: operation)
            // A create stands where the row's parents put it (the caller becomes its owner).
            let counted = operation == .create ? max(inherited, user == nil ? .everyone : .signedIn) : standing
            let own = named && [.list, .view, .delete].contains(operation)
            operations[operation.rawValue] = ["allowed": .bool(admin || own || counted >= needed), "needs": .string(needed.description)]
        }
        answer["operations"] = .object(operations)
        answer["read"] = .bool(named || standing >= sharing.view)
        answer["write"] = .bool(standing >= sharing.update)
        return .object(answer)
    }

    /// Whether `user` (nil: anonymous) with `role` may read and write `record` of `collection`,
    /// and why.
    package func check(collection: String, record: JSONValue, user: String?, role: String?) -> JSONValue {
        let caller = Caller(userID: user, role: role)
        let access = rules.access(to: collection, for: caller)
        let (read, write) = (access.read.admitsAlone(record) ?? false, access.update.admitsAlone(record) ?? false)
        var answer: JSONObject = [
            "collection": .string(collection), "id": record["id"] ?? .null,
            "user": user.map(JSONValue.string) ?? .null, "role": role.map(JSONValue.string) ?? .null,
            "read": .bool(read), "write": .bool(write),
        ]
        guard !caller.isAdmin else {
            answer["reasons"] = ["read": "the role admin bypasses every rule", "write": "the role admin bypasses every rule"]
            return .object(answer)
        }
        guard let rule = rules.rule(for: collection) else {
            let closed = "no rule names \(collection) and the rules have no \"*\": only admins reach it"
            answer["reasons"] = ["read": .string(closed), "write": .string(closed)]
            return .object(answer)
        }
        let ruleName = rules.rules[collection] != nil ? collection : collection == rules.accountsCollection ? "the accounts' default" : "*"
        let roleMode = role.flatMap { rule.roles[$0] }
        let mode = roleMode ?? rule.mode
        let modeName = roleMode != nil ? "the mode \(mode) of role \(role ?? "") in rule \(ruleName)" : "the mode \(mode) of rule \(ruleName)"
        answer["rule"] = .string(ruleName)
        answer["mode"] = .string(mode.description)
        answer["ownerField"] = .string(rule.ownerField)
        answer["owner"] = record[rule.ownerField] ?? .null
        func reason(_ needed: AccessRules.Mode.Right, allowed: Bool) -> String {
            let verb = needed == .read ? "read" : "write"
            if mode.everyone >= needed { return "everyone may \(verb): the everyone digit (\(mode.everyone.rawValue)) of \(modeName)" }
            guard let user else { return "anonymous callers may not \(verb): the everyone digit (\(mode.everyone.rawValue)) of \(modeName); signing in may help" }
            if mode.signedIn >= needed { return "every signed-in user may \(verb): the signed-in digit (\(mode.signedIn.rawValue)) of \(modeName)" }
            guard mode.owner >= needed else { return "no one but admins may \(verb): \(modeName)" }
            let owner = record[rule.ownerField].flatMap(scalarText).map { "\($0)" } ?? "missing"
            return allowed
                ? "its owner may \(verb), and user \(user) owns it (\(rule.ownerField) is \(owner)): the owner digit (\(mode.owner.rawValue)) of \(modeName)"
                : "only its owner may \(verb) (the owner digit of \(modeName)), and its \(rule.ownerField) is \(owner), not user \(user)"
        }
        answer["reasons"] = ["read": .string(reason(.read, allowed: read)), "write": .string(reason(.readWrite, allowed: write))]
        return .object(answer)
    }
}

extension ServerRoutes {
    /// `GET /_access/rules` and `GET /_access/check?collection=&id=&user=&role=` (admins only,
    /// on a server with access rules).
    func accessExplanationRoutes(_ access: AccessControl) -> [Route] {
        let explanation = AccessExplanation(rules: access.rules)
        let rules: Handler = { request, context in
            try Self.requireAdmin(context.caller)
            return Self.headless(Self.json(explanation.loaded, status: .ok), request)
        }
        let check: Handler = { request, context in
            try Self.requireAdmin(context.caller)
            let parameters = QueryParameters(request.uri.query)
            guard let collection = parameters.first("collection"), !collection.isEmpty, let id = parameters.first("id"), !id.isEmpty else {
                throw APIError.badRequest("name the row: ?collection=<name>&id=<id>, and the user: &user=<id> (none: anonymous), &role=<role>")
            }
            let user = parameters.first("user").flatMap { $0.isEmpty ? nil : $0 }
            var role = parameters.first("role").flatMap { $0.isEmpty ? nil : $0 }
            // The role the user's account has now, unless the question names one.
            if role == nil, let user, access.accounts != nil {
                role = try await accounts.account(userID: user, in: access.rules.accountsCollection)?.role
            }
            guard try await backend.resource(named: collection) == .collection else { throw APIError.notFound("no collection named \(collection)") }
            let row = try await backend.item(collection, id: id, embeds: [], expands: [], visibility: visibility(context))
            let backend = backend
            let shared = try await explanation.checkShared(
                collection: collection, record: row.value, user: user, role: role,
                parent: { try? await backend.item($0, id: $1, embeds: [], expands: [], visibility: .open).value },
                memberships: { try await backend.memberships(of: $1, in: [$0]) })
            if let shared { return Self.headless(Self.json(shared, status: .ok), request) }
            return Self.headless(Self.json(explanation.check(collection: collection, record: row.value, user: user, role: role), status: .ok), request)
        }
        return [
            Route(path: "/_access/rules", handlers: [.get: rules, .head: rules]),
            Route(path: "/_access/check", handlers: [.get: check, .head: check]),
        ]
    }

    /// The answer to a HEAD request: the headers alone.
    static func headless(_ response: Response, _ request: Request) -> Response {
        request.method == .head ? Response(status: response.status, headers: response.headers) : response
    }

    /// 401 for an anonymous caller, 403 for a signed-in one who is not an admin.
    static func requireAdmin(_ caller: Caller) throws {
        guard caller.isAdmin else { throw CollectionAccess.refusal(of: caller, "only an admin reads this") }
    }
}

extension AccountService {
    /// `GET /_accounts/<id>/role`: the account's role (null: none), for admins.
    func role(userID: String, caller: Caller) async throws -> Response {
        try ServerRoutes.requireAdmin(caller)
        guard let account = try await store.account(userID: userID, in: collection) else { throw APIError.notFound("no account with id \(userID)") }
        return ServerRoutes.json(["id": .string(account.userID), "role": account.role.map(JSONValue.string) ?? .null], status: .ok)
    }
}

extension OpenAPIDocument {
    /// `GET /_access/rules` and `GET /_access/check` (``AccessExplanation``).
    static var accessExplanationPaths: JSONObject {
        func query(_ name: String, _ description: String, required: Bool) -> JSONValue {
            ["name": .string(name), "in": "query", "required": .bool(required), "description": .string(description), "schema": ["type": "string"]]
        }
        func operation(_ id: String, _ summary: String, schema: JSONValue, parameters: [JSONValue], codes: [String]) -> JSONValue {
            var responses: JSONObject = ["200": ["description": "the answer", "content": ["application/json": ["schema": schema]]]]
            let names = ["400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound"]
            for code in codes { responses[code] = ["$ref": .string("#/components/responses/" + (names[code] ?? "BadRequest"))] }
            return ["operationId": .string(id), "x-modelsync-requires": "access", "summary": .string(summary), "parameters": .array(parameters), "responses": .object(responses)]
        }
        func head(_ id: String, parameters: [JSONValue], codes: [String]) -> JSONValue {
            var responses: JSONObject = ["200": ["description": "the headers"]]
            let names = ["400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound"]
            for code in codes { responses[code] = ["$ref": .string("#/components/responses/" + (names[code] ?? "BadRequest"))] }
            return ["operationId": .string(id), "x-modelsync-requires": "access", "summary": "The headers GET answers", "parameters": .array(parameters), "responses": .object(responses)]
        }
        let preflight: JSONValue = ["summary": "CORS preflight", "responses": ["204": ["description": "the CORS headers"], "401": ["$ref": "#/components/responses/Unauthorized"]]]
        func withID(_ id: String) -> JSONValue {
            var object = preflight.objectValue ?? JSONObject()
            object["operationId"] = .string(id)
            return .object(object)
        }
        let mode: JSONValue = ["type": "string", "pattern": "^[046]{3}$"]
        let modeRule: JSONValue = [
            "type": "object", "required": ["mode", "owner", "roles"],
            "properties": ["mode": mode, "owner": ["type": "string"], "roles": ["type": "object", "additionalProperties": mode]],
        ]
        let standing: JSONValue = ["type": "string", "enum": .array(SharingRule.Standing.allCases.map { .string($0.description) })]
        let sharingRule: JSONValue = [
            "type": "object", "required": ["list", "view", "create", "update", "delete"],
            "properties": [
                "owner": ["type": "string"], "list": standing, "view": standing, "create": standing, "update": standing, "delete": standing,
                "members": [
                    "type": "object", "required": ["collection", "field", "user", "role"],
                    "properties": ["collection": ["type": "string"], "field": ["type": "string"], "user": ["type": "string"], "role": ["type": "string"]],
                ],
                "parent": ["type": "object", "required": ["collection", "field"], "properties": ["collection": ["type": "string"], "field": ["type": "string"]]],
            ],
        ]
        let rule: JSONValue = ["oneOf": [modeRule, sharingRule]]
        let rules: JSONValue = [
            "type": "object", "required": ["accountsCollection", "rules"],
            "properties": ["accountsCollection": ["type": "string"], "rules": ["type": "object", "additionalProperties": rule], "accountsRule": rule],
        ]
        let check: JSONValue = [
            "type": "object", "required": ["collection", "id", "user", "role", "read", "write"],
            "description": "Under a mode: `reasons` says which digit decides. Under a sharing rule: `standing`, `because` and `operations`.",
            "properties": [
                "collection": ["type": "string"], "id": ["description": "The row's id"], "user": ["type": ["string", "null"]], "role": ["type": ["string", "null"]],
                "read": ["type": "boolean"], "write": ["type": "boolean"],
                "rule": ["type": "string", "description": "The rule that decides: the collection's, `*`, or the accounts' default"],
                "mode": mode, "ownerField": ["type": "string"], "owner": ["description": "The row's owner field's value"],
                "reasons": ["type": "object", "required": ["read", "write"], "properties": ["read": ["type": "string"], "write": ["type": "string"]]],
                "standing": standing, "because": ["type": "string", "description": "Where the standing comes from: ownership, a membership, a parent"],
                "operations": [
                    "type": "object",
                    "additionalProperties": [
                        "type": "object", "required": ["allowed", "needs"], "properties": ["allowed": ["type": "boolean"], "needs": standing],
                    ],
                ],
            ],
        ]
        let checkParameters = [
            query("collection", "The row's collection", required: true), query("id", "The row's id", required: true),
            query("user", "The user's id; none: an anonymous caller", required: false),
            query("role", "The role to answer for; none: the role the user's built-in account has", required: false),
        ]
        return [
            "/_access/rules": [
                "get": operation("readAccessRules", "The access rules as loaded (admins only; 404 without access rules)", schema: rules, parameters: [], codes: ["401", "403", "404"]),
                "head": head("headAccessRules", parameters: [], codes: ["401", "403", "404"]),
                "options": withID("preflightAccessRules"),
            ],
            "/_access/check": [
                "get": operation(
                    "checkAccess", "Whether a user may read and write a row, and which rule and digit decide (admins only; 404 without access rules)",
                    schema: check, parameters: checkParameters, codes: ["400", "401", "403", "404"]),
                "head": head("headCheckAccess", parameters: checkParameters, codes: ["400", "401", "403", "404"]),
                "options": withID("preflightCheckAccess"),
            ],
        ]
    }
}
