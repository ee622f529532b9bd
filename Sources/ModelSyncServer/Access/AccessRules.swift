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

        /// Creates a rule.
        public init(mode: Mode, ownerField: String = "userId", roles: [String: Mode] = [:]) {
            self.mode = mode
            self.ownerField = ownerField
            self.roles = roles
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

    /// Creates rules; see the type's description for the defaults.
    public init(_ rules: [String: Rule], accountsCollection: String = "users") {
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
        self.init(rules)
    }

    private static func rule(_ value: JSONValue, named name: String) throws -> Rule {
        if let digits = value.intValue {
            guard let mode = Mode(digits) else { throw AccessRulesError("\(name): \(digits) is not a mode (three digits of 0, 4 or 6)") }
            return Rule(mode: mode)
        }
        guard let object = value.objectValue else { throw AccessRulesError("\(name): a rule is a mode (644) or an object") }
        let known: Set<String> = ["mode", "owner", "roles"]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw AccessRulesError("\(name): unknown member \(unknown) (a rule has mode, owner and roles)")
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
        return Rule(mode: rule.mode, ownerField: "id", roles: rule.roles)
    }

    /// What `caller` may do in `collection`.
    package func access(to collection: String, for caller: Caller) -> CollectionAccess {
        let holdsAccounts = collection == accountsCollection
        if caller.isAdmin {
            return CollectionAccess(read: .everything, write: .everything, ownerField: rule(for: collection)?.ownerField, caller: caller, holdsAccounts: holdsAccounts)
        }
        guard let rule = rule(for: collection) else {
            return CollectionAccess(read: .nothing, write: .nothing, ownerField: nil, caller: caller)
        }
        let mode = caller.role.flatMap { rule.roles[$0] } ?? rule.mode
        func rows(_ needed: Mode.Right) -> RowFilter {
            if mode.everyone >= needed { return .everything }
            guard let userID = caller.userID else { return .nothing }
            if mode.signedIn >= needed { return .everything }
            return mode.owner >= needed ? .ownedBy(field: rule.ownerField, userID: userID) : .nothing
        }
        return CollectionAccess(read: rows(.read), write: rows(.readWrite), ownerField: rule.ownerField, caller: caller, holdsAccounts: holdsAccounts)
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

/// Which rows of a collection a caller reaches.
package enum RowFilter: Sendable, Equatable {
    case everything
    case nothing
    /// The rows whose `field` names the user (compared as text, byte for byte).
    case ownedBy(field: String, userID: String)

    /// Whether `record` is among the rows.
    package func admits(_ record: JSONValue) -> Bool {
        switch self {
        case .everything: true
        case .nothing: false
        case .ownedBy(let field, let userID): record[field].flatMap(scalarText)?.isIdentical(to: userID) ?? false
        }
    }
}

/// What a caller may do in one collection: the rows it reads and those it writes.
package struct CollectionAccess: Sendable, Equatable {
    package var read: RowFilter
    package var write: RowFilter
    /// The field naming a row's owner, when the collection has a rule.
    package var ownerField: String?
    package var caller: Caller
    /// Whether the collection holds the built-in accounts' records: deleting one ends its
    /// account (credentials and refresh tokens, in the same write).
    package var holdsAccounts = false
    /// The client's address, which scopes an anonymous caller's idempotency keys.
    package var clientAddress: String?

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
