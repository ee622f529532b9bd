import ModelSyncJSON

/// A collection's rule in the sharing form: who stands where on each row, and how far up that
/// standing must reach for each operation.
///
/// A caller's standing on a row is the highest of:
/// - `everyone`, and `signedIn` for a signed-in caller;
/// - `owner` when the row's ``owner`` field names the caller;
/// - the role a row of the ``members`` collection gives the caller on this row (`viewer`,
///   `editor` or `manager`);
/// - the caller's standing on the row's parent (``parent``): a card stands where its board does,
///   a comment where its card does.
///
/// An operation is allowed when the standing reaches its threshold. A list shows only the rows
/// that reach `list`; a row that does not reach `view` is missing to the caller.
///
/// ```json
/// {"boards": {"owner": "ownerId",
///             "members": {"collection": "memberships", "field": "boardId"},
///             "create": "signedIn", "delete": "owner"},
///  "cards": {"parent": {"collection": "boards", "field": "boardId"}},
///  "comments": {"parent": {"collection": "cards", "field": "cardId"}, "owner": "authorId"}}
/// ```
public struct SharingRule: Sendable, Equatable {
    /// The field naming the row's owner, if rows have one.
    public var owner: String?
    /// The collection whose rows give users a role on this collection's rows.
    public var members: Membership?
    /// The row this collection's rows take their standing from.
    public var parent: Parent?
    /// The standing each operation needs.
    public var list: Standing
    public var view: Standing
    public var create: Standing
    public var update: Standing
    public var delete: Standing

    /// Creates a rule; by default members read (`viewer`) and editors write (`editor`).
    public init(
        owner: String? = nil, members: Membership? = nil, parent: Parent? = nil,
        list: Standing = .viewer, view: Standing = .viewer, create: Standing = .editor, update: Standing = .editor, delete: Standing = .editor
    ) {
        (self.owner, self.members, self.parent) = (owner, members, parent)
        (self.list, self.view, self.create, self.update, self.delete) = (list, view, create, update, delete)
    }

    /// How high a caller stands on a row, lowest first: each standing includes those below it.
    public enum Standing: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case everyone
        case signedIn
        case viewer
        case editor
        case manager
        case owner
        /// No one but admins.
        case admin

        public static func < (lhs: Standing, rhs: Standing) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .everyone: "everyone"
            case .signedIn: "signedIn"
            case .viewer: "viewer"
            case .editor: "editor"
            case .manager: "manager"
            case .owner: "owner"
            case .admin: "admin"
            }
        }

        /// The standing a membership row's role names (`viewer`, `editor`, `manager`); nil for
        /// any other text, which gives nothing.
        public init?(memberRole: String) {
            switch memberRole {
            case "viewer": self = .viewer
            case "editor": self = .editor
            case "manager": self = .manager
            default: return nil
            }
        }

        /// The roles a membership row may give.
        public static let memberRoles: [Standing] = [.viewer, .editor, .manager]

        init?(named name: String) {
            guard let standing = Self.allCases.first(where: { $0.description == name }) else { return nil }
            self = standing
        }
    }

    /// A collection whose rows each give one user a role on one row of another collection:
    /// `memberships {boardId, userId, role}` gives `userId` the `role` on `boards/<boardId>`.
    public struct Membership: Sendable, Equatable, Hashable {
        /// The collection of membership rows.
        public var collection: String
        /// The field naming the row the membership is on.
        public var field: String
        /// The field naming the member.
        public var user: String
        /// The field holding the role: `viewer`, `editor` or `manager`.
        public var role: String

        /// Creates a membership link.
        public init(collection: String, field: String, user: String = "userId", role: String = "role") {
            (self.collection, self.field, self.user, self.role) = (collection, field, user, role)
        }
    }

    /// A foreign key to the row this collection's rows inherit from.
    public struct Parent: Sendable, Equatable, Hashable {
        /// The parent's collection.
        public var collection: String
        /// The field of a child naming its parent's id.
        public var field: String

        /// Creates a parent link.
        public init(collection: String, field: String) {
            (self.collection, self.field) = (collection, field)
        }
    }

    /// The standing an operation needs.
    func needed(for operation: Operation) -> Standing {
        switch operation {
        case .list: list
        case .view: view
        case .create: create
        case .update: update
        case .delete: delete
        }
    }

    /// The five operations a rule governs.
    enum Operation: String, CaseIterable {
        case list, view, create, update, delete
    }
}

extension SharingRule {
    /// The rule of a membership collection the file does not name: its rows inherit from the row
    /// they are on, members see who else is a member, and only managers change memberships.
    static func ofMemberships(_ link: Membership, granting collection: String) -> SharingRule {
        SharingRule(parent: Parent(collection: collection, field: link.field), create: .manager, update: .manager, delete: .manager)
    }

    /// A rule object of the file in the sharing form (it has `members`, `parent` or an
    /// operation's member).
    static func isSharingForm(_ object: JSONObject) -> Bool {
        object.keys.contains { ["members", "parent"].contains($0) || Operation(rawValue: $0) != nil }
    }

    /// Parses a rule object of the sharing form.
    init(json object: JSONObject, named name: String) throws {
        let known = Set(["owner", "members", "parent"] + Operation.allCases.map(\.rawValue))
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            let hint = unknown == "mode" || unknown == "roles" ? " (a rule has either a mode or per-operation standings, not both)" : ""
            throw AccessRulesError("\(name): unknown member \(unknown)\(hint); a sharing rule has owner, members, parent, list, view, create, update and delete")
        }
        self.init()
        if let owner = object["owner"] { self.owner = try Self.fieldName(owner, "\(name).owner") }
        if let members = object["members"] {
            guard let link = members.objectValue else { throw AccessRulesError("\(name).members must be an object: {\"collection\": …, \"field\": …}") }
            let knownLink: Set<String> = ["collection", "field", "user", "role"]
            if let unknown = link.keys.sorted().first(where: { !knownLink.contains($0) }) {
                throw AccessRulesError("\(name).members: unknown member \(unknown) (it has collection, field, user and role)")
            }
            guard let collection = link["collection"], let field = link["field"] else {
                throw AccessRulesError("\(name).members needs collection (of the membership rows) and field (naming the \(name) row)")
            }
            self.members = Membership(
                collection: try Self.fieldName(collection, "\(name).members.collection"), field: try Self.fieldName(field, "\(name).members.field"),
                user: try link["user"].map { try Self.fieldName($0, "\(name).members.user") } ?? "userId",
                role: try link["role"].map { try Self.fieldName($0, "\(name).members.role") } ?? "role")
        }
        if let parent = object["parent"] {
            guard let link = parent.objectValue, link.count == 2, let collection = link["collection"], let field = link["field"] else {
                throw AccessRulesError("\(name).parent must be {\"collection\": …, \"field\": …}")
            }
            self.parent = Parent(collection: try Self.fieldName(collection, "\(name).parent.collection"), field: try Self.fieldName(field, "\(name).parent.field"))
        }
        for operation in Operation.allCases {
            guard let value = object[operation.rawValue] else { continue }
            guard let text = value.stringValue, let standing = Standing(named: text) else {
                let names = Standing.allCases.map(\.description).joined(separator: ", ")
                throw AccessRulesError("\(name).\(operation.rawValue): \(String(decoding: value.jsonBytes(), as: UTF8.self)) is not a standing (one of \(names))")
            }
            switch operation {
            case .list: list = standing
            case .view: view = standing
            case .create: create = standing
            case .update: update = standing
            case .delete: delete = standing
            }
        }
    }

    private static func fieldName(_ value: JSONValue, _ place: String) throws -> String {
        guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 256, !text.utf8.contains(0) else {
            throw AccessRulesError("\(place) must name a field or collection (non-empty text without NUL)")
        }
        return text
    }

    /// The rule written out for the canonical text of the rules.
    var canonicalText: String {
        func counted(_ text: String?) -> String { text.map { "\($0.utf8.count):\($0)" } ?? "-" }
        var text = "share(\(counted(owner))"
        if let members { text += ",m:\(counted(members.collection))\(counted(members.field))\(counted(members.user))\(counted(members.role))" }
        if let parent { text += ",p:\(counted(parent.collection))\(counted(parent.field))" }
        for operation in Operation.allCases { text += ",\(needed(for: operation))" }
        return text + ")"
    }
}

extension AccessRules {
    /// Checks what one collection's rule cannot show alone: parents exist, chains end, and a
    /// membership collection cannot be used to raise one's own role.
    ///
    /// - Throws: ``AccessRulesError`` naming the collection and the rule.
    func validateSharing() throws {
        for (name, rule) in rules.sorted(by: { $0.key < $1.key }) {
            guard let sharing = rule.sharing else { continue }
            if name == accountsCollection && (sharing.members != nil || sharing.parent != nil) {
                throw AccessRulesError("\(name): the accounts collection's rows take no members or parent (each account is its own)")
            }
            if name == "*" && (sharing.members != nil || sharing.parent != nil) {
                throw AccessRulesError("*: the rule of every other collection cannot name members or a parent (they are one collection's fields)")
            }
            // The chain of parents: named collections, no cycle, at most `maximumDepth` long.
            var seen: [String] = [name]
            var link = sharing.parent
            while let parent = link {
                guard let parentRule = rules[parent.collection] else {
                    throw AccessRulesError("\(seen.last ?? name).parent: \(parent.collection) has no rule in the file (a parent must be named)")
                }
                if seen.contains(parent.collection) {
                    throw AccessRulesError("\(name).parent: the parents go round in a cycle (\((seen + [parent.collection]).joined(separator: " → ")))")
                }
                seen.append(parent.collection)
                if seen.count - 1 > Self.maximumParentDepth {
                    throw AccessRulesError("\(name).parent: the chain of parents is longer than \(Self.maximumParentDepth) (\(seen.joined(separator: " → ")))")
                }
                link = parentRule.sharing?.parent
            }
            if let members = sharing.members {
                if let other = rules.first(where: { $0.key != name && $0.value.sharing?.members?.collection == members.collection })?.key {
                    throw AccessRulesError("\(name).members: \(members.collection) holds the memberships of \(other) already (a collection holds one collection's memberships)")
                }
                guard members.collection != name else {
                    throw AccessRulesError("\(name).members: a collection cannot hold its own memberships")
                }
                try validateMembershipRule(members, granting: name)
            }
        }
    }

    /// A membership collection's own rule must keep members from raising their role: it
    /// inherits from the row it grants (so that standing there decides), writes need `manager`
    /// at least, and it has no owner (a member would own, and so manage, their own membership).
    private func validateMembershipRule(_ link: SharingRule.Membership, granting collection: String) throws {
        let name = link.collection
        guard let rule = rules[name] else { return }  // `AccessRules.init` gives it the default
        guard let sharing = rule.sharing else {
            throw AccessRulesError("\(name): it holds the memberships of \(collection), so its rule must be in the sharing form (or left out for the default)")
        }
        guard sharing.parent == SharingRule.Parent(collection: collection, field: link.field) else {
            throw AccessRulesError("\(name).parent must be {\"collection\": \"\(collection)\", \"field\": \"\(link.field)\"}: a membership takes its access from the row it grants")
        }
        if sharing.owner != nil {
            throw AccessRulesError("\(name).owner: a membership collection has no owner (its member would own, and so manage, their own role)")
        }
        for operation in [SharingRule.Operation.create, .update, .delete] where sharing.needed(for: operation) < .manager {
            throw AccessRulesError("\(name).\(operation.rawValue) is \(sharing.needed(for: operation)): changing memberships needs manager at least, or an editor could make themselves a manager")
        }
    }

    /// How many parents a chain may have (comments → cards → boards is 2).
    static let maximumParentDepth = 8
}
