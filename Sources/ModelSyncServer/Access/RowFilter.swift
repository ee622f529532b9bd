import ModelSyncCore
import ModelSyncJSON

/// Which rows of a collection a caller reaches: a tree that each backend evaluates where its
/// data is (the JSON file in memory, SQLite and PostgreSQL in SQL or by indexed lookups).
package indirect enum RowFilter: Sendable, Equatable, Hashable {
    case everything
    case nothing
    /// The rows whose `field` names the user (compared as text, byte for byte).
    case ownedBy(field: String, userID: String)
    /// The rows on which a row of `link.collection` gives the user one of `roles`: a membership
    /// whose `link.field` is the row's id, whose `link.user` is `userID` and whose `link.role`
    /// is one of `roles`.
    case member(link: SharingRule.Membership, userID: String, roles: [String])
    /// The rows whose `field` names a row of `collection` that `rows` admits: a card on a board
    /// the caller may see.
    case parent(field: String, collection: String, rows: RowFilter)
    /// The rows any of the filters admits.
    case any([RowFilter])

    /// The filter admitting the rows any of `filters` admits, with the trivial cases folded.
    package static func anyOf(_ filters: [RowFilter]) -> RowFilter {
        var kept: [RowFilter] = []
        for filter in filters {
            switch filter {
            case .everything: return .everything
            case .nothing: continue
            case .any(let inner): kept += inner
            default: kept.append(filter)
            }
        }
        switch kept.count {
        case 0: return .nothing
        case 1: return kept[0]
        default: return .any(kept)
        }
    }

    /// Whether deciding needs more than the row itself (another collection's rows).
    package var needsLookups: Bool {
        switch self {
        case .everything, .nothing, .ownedBy: false
        case .member, .parent: true
        case .any(let filters): filters.contains { $0.needsLookups }
        }
    }

    /// Whether `record` is among the rows, looking up parents and memberships through `facts`.
    package func admits(_ record: JSONValue, _ facts: RowFacts) throws -> Bool {
        switch self {
        case .everything: return true
        case .nothing: return false
        case .ownedBy(let field, let userID): return record[field].flatMap(scalarText)?.isIdentical(to: userID) ?? false
        case .member(let link, let userID, let roles):
            guard let id = recordID(of: record) else { return false }
            return try facts.roles(in: link, userID: userID, on: id).contains { roles.contains($0) }
        case .parent(let field, let collection, let rows):
            guard let parentID = record[field].flatMap(scalarText), let parent = try facts.record(in: collection, id: parentID) else { return false }
            return try rows.admits(parent, facts)
        case .any(let filters):
            for filter in filters where try filter.admits(record, facts) { return true }
            return false
        }
    }

    /// Whether `record` is among the rows, for a filter that needs no lookups; nil when it does.
    package func admitsAlone(_ record: JSONValue) -> Bool? {
        guard !needsLookups else { return nil }
        return try? admits(record, RowFacts(NoRowLookups()))
    }
}

/// What a backend looks up to evaluate a ``RowFilter``: each call one indexed read (or an
/// in-memory one), made inside the read or the write transaction the check belongs to.
package protocol RowLookups {
    /// The record of `collection` with this id, as stored now; nil when there is none.
    func record(in collection: String, id: String) throws -> JSONValue?
    /// The membership rows of `link` naming `userID`: for each, the row it is on and its role.
    func memberships(in link: SharingRule.Membership, userID: String) throws -> [(rowID: String, role: String)]
}

/// A backend's ``RowLookups`` with what they found kept for one request: a list of comments
/// looks up each card once, and a user's memberships once.
package final class RowFacts {
    private let lookups: any RowLookups
    private var records: [String: [ExactText: JSONValue?]] = [:]
    private var roles: [SharingRule.Membership: [String: [ExactText: [String]]]] = [:]

    package init(_ lookups: any RowLookups) {
        self.lookups = lookups
    }

    package func record(in collection: String, id: String) throws -> JSONValue? {
        if let known = records[collection]?[ExactText(id)] { return known }
        let found = try lookups.record(in: collection, id: id)
        records[collection, default: [:]][ExactText(id)] = .some(found)
        return found
    }

    /// The roles the memberships of `link` give `userID` on the row `rowID`.
    package func roles(in link: SharingRule.Membership, userID: String, on rowID: String) throws -> [String] {
        try rowsOfMember(link, userID)[ExactText(rowID)] ?? []
    }

    /// Every row on which `link` gives `userID` a role, with the roles.
    package func rowsOfMember(_ link: SharingRule.Membership, _ userID: String) throws -> [ExactText: [String]] {
        if let known = roles[link]?[userID] { return known }
        var byRow: [ExactText: [String]] = [:]
        for membership in try lookups.memberships(in: link, userID: userID) { byRow[ExactText(membership.rowID), default: []].append(membership.role) }
        roles[link, default: [:]][userID] = byRow
        return byRow
    }
}

/// Lookups for filters that need none.
package struct NoRowLookups: RowLookups {
    package init() {}
    package func record(in collection: String, id: String) throws -> JSONValue? { nil }
    package func memberships(in link: SharingRule.Membership, userID: String) throws -> [(rowID: String, role: String)] { [] }
}

/// Lookups over records in memory, by collection: the JSON file's data. Each collection is
/// indexed by id, and each membership collection by user, on its first lookup.
package final class InMemoryRowLookups: RowLookups {
    private let collections: JSONObject
    private var byID: [String: [ExactText: JSONValue]] = [:]
    private var byMember: [SharingRule.Membership: [ExactText: [(rowID: String, role: String)]]] = [:]

    package init(_ collections: JSONObject) {
        self.collections = collections
    }

    package func record(in collection: String, id: String) throws -> JSONValue? {
        if let index = byID[collection] { return index[ExactText(id)] }
        var index: [ExactText: JSONValue] = [:]
        // The first row with an id wins, as a search from the start finds it.
        for row in collections[collection]?.arrayValue ?? [] { if let rowID = recordID(of: row), index[ExactText(rowID)] == nil { index[ExactText(rowID)] = row } }
        byID[collection] = index
        return index[ExactText(id)]
    }

    package func memberships(in link: SharingRule.Membership, userID: String) throws -> [(rowID: String, role: String)] {
        if let index = byMember[link] { return index[ExactText(userID)] ?? [] }
        var index: [ExactText: [(rowID: String, role: String)]] = [:]
        for row in collections[link.collection]?.arrayValue ?? [] {
            guard let user = row[link.user].flatMap(scalarText), let rowID = row[link.field].flatMap(scalarText), let role = row[link.role]?.stringValue else { continue }
            index[ExactText(user), default: []].append((rowID, role))
        }
        byMember[link] = index
        return index[ExactText(userID)] ?? []
    }
}
