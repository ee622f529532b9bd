import ModelSyncJSON

/// Who may read and write each collection, from a file (`modelsync-server --access rules.json`).
///
/// The minimal form is json-server-auth's, a mode per collection:
///
/// ```json
/// {"posts": 644, "messages": 600}
/// ```
///
/// A mode's three digits are the rights of the row's owner, of any signed-in user, and of
/// everyone: 6 reads and writes, 4 reads, 0 nothing. So 600 is private rows, 640 rows every
/// signed-in user reads, 644 public rows only their owner writes, 660 rows every signed-in user
/// reads and writes, 664 the same read by everyone too. The owner is named by the row's `userId`
/// (in `users`, the account's own `id`). An admin (role `admin`) may do anything.
///
/// The richer form names another owner field or gives a role its own mode:
///
/// ```json
/// {"posts": {"mode": 644, "owner": "authorId", "roles": {"editor": 664}},
///  "*": 600}
/// ```
///
/// `*` is the rule of every collection the file does not name. Without it, such a collection
/// is refused to all but admins (a forgotten collection stays closed). `users` is 600 unless the
/// file names it: `*` never governs it, so that `{"*": 664}` does not open every account.
/// A singular resource's rule uses the signed-in and everyone digits only.
public struct AccessRules: Sendable, Equatable {
    /// One collection's rule.
    public struct Rule: Sendable, Equatable {
        /// The mode for callers without a role of ``roles``.
        public var mode: Mode
        /// The field naming the row's owner.
        public var ownerField: String
        /// Modes for roles other than admin.
        public var roles: [String: Mode]
        /// The rule in the sharing form (members, parents, a standing per operation); when set,
        /// it decides, and the mode, owner field and role modes above are not used.
        public var sharing: SharingRule?

        /// Creates a rule.
        public init(mode: Mode, ownerField: String = "userId", roles: [String: Mode] = [:]) {
            self.mode = mode
            self.ownerField = ownerField
            self.roles = roles
        }

        /// Creates a rule in the sharing form.
        public init(_ sharing: SharingRule) {
            self.init(mode: .ownRowsOnly, ownerField: sharing.owner ?? "")
            self.sharing = sharing
        }
    }

    /// A json-server-auth mode: the owner's, signed-in users' and everyone's rights.
    public struct Mode: Sendable, Equatable, CustomStringConvertible {
        /// What one class of caller may do with a row.
        public enum Right: Int, Sendable, Comparable {
            case none = 0
            case read = 4
            case readWrite = 6

            public static func < (lhs: Right, rhs: Right) -> Bool { lhs.rawValue < rhs.rawValue }
        }

        public var owner: Right
        public var signedIn: Right
        public var everyone: Right

        /// Creates a mode from its three rights.
        public init(owner: Right, signedIn: Right, everyone: Right) {
            (self.owner, self.signedIn, self.everyone) = (owner, signedIn, everyone)
        }

        /// The mode of three digits, each 0, 4 or 6 (nil for anything else).
        public init?(_ digits: Int) {
            guard (0...666).contains(digits),
                  let owner = Right(rawValue: digits / 100), let signedIn = Right(rawValue: digits / 10 % 10),
                  let everyone = Right(rawValue: digits % 10)
            else { return nil }
            (self.owner, self.signedIn, self.everyone) = (owner, signedIn, everyone)
        }

        public var description: String { "\(owner.rawValue)\(signedIn.rawValue)\(everyone.rawValue)" }
    }

    /// The rules by collection name; `*` for the rest.
    public var rules: [String: Rule]
    /// The collection holding the accounts' records (its owner field is `id`).
    public var accountsCollection: String

    /// Creates rules; see the type's description for the defaults. A membership collection
    /// that `rules` does not name gets the default of ``SharingRule``'s memberships: it inherits
    /// from the row it grants, and only managers change it.
    ///
    /// - Throws: ``AccessRulesError`` when the sharing rules do not hold together (a parent
    ///   without a rule, a cycle of parents, a membership collection its members could edit).
    public init(_ rules: [String: Rule], accountsCollection: String = "users") throws {
        self.init(unchecked: rules, accountsCollection: accountsCollection)
        for (name, rule) in rules.sorted(by: { $0.key < $1.key }) {
            guard let members = rule.sharing?.members, self.rules[members.collection] == nil else { continue }
            self.rules[members.collection] = Rule(SharingRule.ofMemberships(members, granting: name))
        }
        try validateSharing()
    }

    /// Rules of the numeric form only, which need no checks across collections.
    init(unchecked rules: [String: Rule], accountsCollection: String = "users") {
        self.rules = rules
        self.accountsCollection = accountsCollection
    }

    /// Rules from a file's JSON: an object of modes or rule objects.
    ///
    /// - Throws: ``AccessRulesError`` naming what is wrong and where.
    public init(json: JSONValue) throws {
        guard let object = json.objectValue else { throw AccessRulesError("the rules must be a JSON object of collection names") }
        var rules: [String: Rule] = [:]
        for (name, value) in object {
            rules[name] = try Self.rule(value, named: name)
        }
        try self.init(rules)
    }

    private static func rule(_ value: JSONValue, named name: String) throws -> Rule {
        if let digits = value.intValue {
            guard let mode = Mode(digits) else { throw AccessRulesError("\(name): \(digits) is not a mode (three digits of 0, 4 or 6)") }
            return Rule(mode: mode)
        }
        guard let object = value.objectValue else { throw AccessRulesError("\(name): a rule is a mode (644) or an object") }
        if SharingRule.isSharingForm(object) { return Rule(try SharingRule(json: object, named: name)) }
        let known: Set<String> = ["mode", "owner", "roles"]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw AccessRulesError("\(name): unknown member \(unknown) (a rule has mode, owner and roles, or the sharing form's members, parent and list, view, create, update, delete)")
        }
        guard let digits = object["mode"]?.intValue, let mode = Mode(digits) else {
            throw AccessRulesError("\(name): mode must be three digits of 0, 4 or 6")
        }
        var rule = Rule(mode: mode)
        if let owner = object["owner"] {
            guard let field = owner.stringValue, !field.isEmpty, !field.contains("\u{0}") else {
                throw AccessRulesError("\(name): owner must name a field")
            }
            rule.ownerField = field
        }
        if let roles = object["roles"] {
            guard let roles = roles.objectValue else { throw AccessRulesError("\(name): roles must map role names to modes") }
            for (role, digits) in roles {
                guard let digits = digits.intValue, let mode = Mode(digits) else {
                    throw AccessRulesError("\(name): the mode of role \(role) must be three digits of 0, 4 or 6")
                }
                rule.roles[role] = mode
            }
        }
        return rule
    }

    /// The rules written out in one canonical order: equal rules give equal text, whatever the
    /// file's order. Feed cursors carry a digest of it, so that a cursor read under other rules
    /// starts the reader over (a rule that no longer admits a row must remove it from devices).
    package var canonicalText: String {
        var text = "accounts=\(accountsCollection.utf8.count):\(accountsCollection)"
        for (name, rule) in rules.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes($1.key.utf8) }) {
            if let sharing = rule.sharing {
                text += ";\(name.utf8.count):\(name)=\(sharing.canonicalText)"
                continue
            }
            text += ";\(name.utf8.count):\(name)=\(rule.mode),\(rule.ownerField.utf8.count):\(rule.ownerField)"
            for (role, mode) in rule.roles.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes($1.key.utf8) }) {
                text += ",\(role.utf8.count):\(role)=\(mode)"
            }
        }
        return text
    }

    /// The rule for `collection`: its own, else `*`'s, else none. The accounts keep 600 unless
    /// named: `*` opens the other collections, never every account's email.
    package func rule(for collection: String) -> Rule? {
        guard collection == accountsCollection else { return rules[collection] ?? rules["*"] }
        guard let rule = rules[collection] else { return Rule(mode: Mode.ownRowsOnly, ownerField: "id") }
        if var sharing = rule.sharing {
            sharing.owner = "id"
            return Rule(sharing)
        }
        return Rule(mode: rule.mode, ownerField: "id", roles: rule.roles)
    }

    /// What `caller` may do in `collection`.
    package func access(to collection: String, for caller: Caller) -> CollectionAccess {
        let holdsAccounts = collection == accountsCollection
        let rule = rule(for: collection)
        let ownerField = rule.map { $0.sharing == nil ? $0.ownerField : $0.sharing?.owner } ?? nil
        let membership = membershipLink(of: collection)
        var sharedFields = rule?.sharing.map { [$0.owner, $0.parent?.field, $0.members == nil ? nil : "id"].compactMap { $0 } } ?? []
        // A membership's tombstone, or its departure when an update changes one of them, keeps
        // whose it was, on what and with which role: a role changed alone moves no rows.
        if let membership {
            for field in [membership.link.user, membership.link.field, membership.link.role] where !sharedFields.contains(field) { sharedFields.append(field) }
        }
        var access = accessOfRule(rule, collection, caller, ownerField: ownerField)
        access.holdsAccounts = holdsAccounts
        access.sharedFields = sharedFields
        // A member reads their own memberships (and sees one of them go): the feed moves the
        // rows it grants in and out of their view by them. And a member may leave, deleting a
        // membership that names them whatever its role; never update it: owning a membership
        // would let its member change their own role.
        if let membership, let userID = caller.userID, !caller.isAdmin {
            let own = RowFilter.ownedBy(field: membership.link.user, userID: userID)
            access.read = .anyOf([access.read, own])
            access.view = .anyOf([access.view, own])
            access.delete = .anyOf([access.delete, own])
        }
        return access
    }

    /// The link whose membership rows `collection` holds, and the collection they grant, if any.
    /// Every request's access asks this: no sort, since a collection holds one collection's
    /// memberships at most (``validateSharing()``).
    package func membershipLink(of collection: String) -> (link: SharingRule.Membership, granting: String)? {
        for (name, rule) in rules {
            if let link = rule.sharing?.members, link.collection == collection { return (link, name) }
        }
        return nil
    }

    /// The collections whose rows inherit from `collection`'s, with the field naming the parent.
    package func children(of collection: String) -> [(collection: String, field: String)] {
        rules.sorted(by: { $0.key < $1.key }).compactMap { name, rule in
            guard let parent = rule.sharing?.parent, parent.collection == collection else { return nil }
            return (name, parent.field)
        }
    }

    private func accessOfRule(_ rule: Rule?, _ collection: String, _ caller: Caller, ownerField: String?) -> CollectionAccess {
        if caller.isAdmin { return CollectionAccess(everything: .everything, ownerField: ownerField, caller: caller) }
        guard let rule else { return CollectionAccess(everything: .nothing, ownerField: nil, caller: caller) }
        if let sharing = rule.sharing {
            // A create's own owner field names the caller (the route sees to it): on a new row only
            // the standing it inherits counts.
            func rows(_ operation: SharingRule.Operation) -> RowFilter {
                self.rows(of: collection, reaching: sharing.needed(for: operation), for: caller, countingOwner: operation != .create)
            }
            return CollectionAccess(
                read: rows(.list), view: rows(.view), create: rows(.create), update: rows(.update), delete: rows(.delete), ownerField: ownerField, caller: caller)
        }
        let mode = caller.role.flatMap { rule.roles[$0] } ?? rule.mode
        func rows(_ needed: Mode.Right) -> RowFilter {
            if mode.everyone >= needed { return .everything }
            guard let userID = caller.userID else { return .nothing }
            if mode.signedIn >= needed { return .everything }
            return mode.owner >= needed ? .ownedBy(field: rule.ownerField, userID: userID) : .nothing
        }
        let (read, write) = (rows(.read), rows(.readWrite))
        return CollectionAccess(read: read, view: read, create: write, update: write, delete: write, ownerField: ownerField, caller: caller)
    }

    /// The rows of `collection` on which `caller` (not an admin) stands at least at `needed`:
    /// the rows it owns, those a membership gives it a role high enough on, and those whose
    /// parent it stands on high enough. The chain of parents ends (``validateSharing()``).
    package func rows(of collection: String, reaching needed: SharingRule.Standing, for caller: Caller, countingOwner: Bool = true) -> RowFilter {
        if needed <= .everyone { return .everything }
        guard let userID = caller.userID, needed < .admin else { return .nothing }
        if needed <= .signedIn { return .everything }
        guard let rule = rule(for: collection) else { return .nothing }
        guard let sharing = rule.sharing else {
            // A parent under a mode: its owner stands as owner, everyone else by the mode's digits.
            return .ownedBy(field: rule.ownerField, userID: userID)
        }
        var filters: [RowFilter] = []
        if let owner = sharing.owner, countingOwner { filters.append(.ownedBy(field: owner, userID: userID)) }
        if let members = sharing.members {
            let roles = SharingRule.Standing.memberRoles.filter { $0 >= needed }.map(\.description)
            if !roles.isEmpty { filters.append(.member(link: members, userID: userID, roles: roles)) }
        }
        if let parent = sharing.parent {
            let parentRows = rows(of: parent.collection, reaching: needed, for: caller)
            if parentRows == .everything {
                filters.append(.everything)
            } else if parentRows != .nothing {
                filters.append(.parent(field: parent.field, collection: parent.collection, rows: parentRows))
            }
        }
        return .anyOf(filters)
    }
}

extension AccessRules.Mode {
    /// 600: only the owner reads and writes.
    static let ownRowsOnly = AccessRules.Mode(owner: .readWrite, signedIn: .none, everyone: .none)
}

/// A rules file that cannot be used as it is.
public struct AccessRulesError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// What a caller may do in one collection: the rows each operation reaches.
package struct CollectionAccess: Sendable, Equatable {
    /// The rows its lists, the feed and relations show.
    package var read: RowFilter
    /// The rows it reads by id.
    package var view: RowFilter
    /// The rows it may create (checked on the new row).
    package var create: RowFilter
    /// The rows it may update (checked on the row before and after).
    package var update: RowFilter
    /// The rows it may delete.
    package var delete: RowFilter
    /// The field naming a row's owner, when the collection has a rule.
    package var ownerField: String?
    package var caller: Caller
    /// Whether the collection holds the built-in accounts' records: deleting one ends its
    /// account (credentials and refresh tokens, in the same write).
    package var holdsAccounts = false
    /// The client's address, which scopes an anonymous caller's idempotency keys.
    package var clientAddress: String?
    /// Under a sharing rule, the fields its filters read (owner, parent, and `id` for
    /// members): a tombstone keeps them, so that the feed knows whose view a deleted row left.
    package var sharedFields: [String] = []

    package init(
        read: RowFilter, view: RowFilter, create: RowFilter, update: RowFilter, delete: RowFilter,
        ownerField: String?, caller: Caller, holdsAccounts: Bool = false
    ) {
        (self.read, self.view, self.create, self.update, self.delete) = (read, view, create, update, delete)
        (self.ownerField, self.caller, self.holdsAccounts) = (ownerField, caller, holdsAccounts)
    }

    /// Access where every operation reaches the same rows.
    package init(everything rows: RowFilter, ownerField: String?, caller: Caller, holdsAccounts: Bool = false) {
        self.init(read: rows, view: rows, create: rows, update: rows, delete: rows, ownerField: ownerField, caller: caller, holdsAccounts: holdsAccounts)
    }

    /// Whether no row at all may be written (created, updated or deleted).
    package var writesNothing: Bool { create == .nothing && update == .nothing && delete == .nothing }

    /// The refusal of a write the caller may not make: 401 for an anonymous caller (signing in
    /// may help), 403 for a signed-in one.
    package var refusal: APIError {
        Self.refusal(of: caller, "\(caller) may not do this here")
    }

    /// 403 for a signed-in caller, else 401 (`WWW-Authenticate: Bearer`): signing in may help.
    package static func refusal(of caller: Caller, _ message: String) -> APIError {
        caller.isSignedIn ? APIError(status: .forbidden, message: message) : APIError.unauthenticated("sign in first: \(message)")
    }
}
