import Foundation
import ModelSyncJSON
import ModelSyncProtocol

/// Where a server keeps its data: a JSON document (``JSONFileBackend``, the default) or PostgreSQL
/// (``PostgresBackend``). The responder speaks HTTP; a backend answers in data, and both
/// backends give the same answers to the same requests (the conformance suite runs every
/// server test against each).
///
/// - Every write takes the next value of one sequence; that value is the record's version (its
///   ETag is `"<version>"`) or its tombstone's, and the change feed is ordered by it.
/// - A failed write changes nothing; in a batch, a failed operation changes nothing and the
///   others go on.
///
/// The built-in accounts' credentials, roles and refresh tokens are a ``ServerAccountStore``,
/// which every backend also is.
package protocol ServerBackend: Sendable {
    /// What a top-level name is, if anything.
    func resource(named name: String) async throws -> ResourceKind?

    /// Every collection and singular resource by name (the console's collections).
    func resourceKinds() async throws -> [String: ResourceKind]

    /// A consistent copy of the data in a new file, one the backend serves again, for an admin
    /// to download (the caller deletes it); nil from a backend that makes none. The SQLite
    /// backend's (`VACUUM INTO`).
    func backupFile() async throws -> URL?

    /// A page of a collection (or of a parent's children), filtered, searched, sorted and
    /// sliced as asked. Throws a 404 ``APIError`` when the collection (or the parent) is missing.
    func list(_ collection: String, _ request: ListRequest) async throws -> ListPage

    /// One record, with the embedded children and expanded parents asked for, each relation
    /// only with the rows `visibility` admits. Throws a 404 ``APIError`` when it is missing or
    /// not visible.
    func item(_ collection: String, id: String, embeds: [String], expands: [String], visibility: Visibility) async throws -> ItemRead

    /// A singular resource's value (nil when there is none) and when the data last changed.
    func singular(_ name: String) async throws -> (value: JSONValue, modified: Date)?

    /// Every collection and singular resource, as one JSON object (`/db`, export).
    func everything() async throws -> (value: JSONValue, modified: Date)

    /// Applies the operations in order in one transaction; each gets its result or its error.
    func write(_ operations: [ItemOperation]) async throws -> [Result<ItemWrite.Result, APIError>]

    /// Replaces (or, merging, updates) a singular resource and returns its new value.
    func writeSingular(_ name: String, body: JSONObject, merge: Bool, ifMatch: String?) async throws -> JSONValue

    /// The changes after `cursor` in `collections` (all when nil), oldest first: each record at
    /// most once, in its current state, and the tombstones; at most `limit`, of those
    /// `visibility` admits. Throws a 410 ``APIError`` (with the `horizon`) when the cursor is
    /// older than the tombstones kept.
    func changes(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> FeedPage

    /// ``changes(after:in:limit:visibility:)`` with each change as the feed's answer writes it,
    /// for the feed's pages: a backend that keeps records as JSON text (PostgreSQL) writes them
    /// out without reading them into values first. The default encodes what `changes` gives.
    func encodedChanges(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> EncodedFeedPage

    /// A stream of every change of `collections` (nil: all) committed from now on (by any server
    /// sharing the data); it ends when the server shuts down. A backend may hand out other
    /// collections' changes too: the stream filters.
    func subscribe(to collections: Set<String>?) async -> (id: Int, changes: AsyncStream<SyncChange>)
    func unsubscribe(_ id: Int) async
    /// Ends every change stream and releases what the backend holds: the server is stopping.
    func close() async

    /// Puts back the data the server started with.
    func reset() async throws

    /// The memberships that give `userID` a role through any of `links`, whatever the
    /// membership collections' own rules say (`/_access/check` explains a standing by them).
    /// One indexed read per link.
    func memberships(of userID: String, in links: [SharingRule.Membership]) async throws -> [MembershipList.Entry]

    /// The records of `collection` whose `field` (`id`: the rows themselves) is one of `values`,
    /// as changes at their current versions, of those `visibility` lets its reader list: the
    /// rows a membership moves into or out of a reader's view (``MembershipMoves``). An indexed
    /// read (the fields the sharing rules name are indexed); nothing for a missing collection.
    func currentChanges(of collection: String, where field: String, isOneOf values: [String], visibility: Visibility) async throws -> [SyncChange]

    /// ``currentChanges(of:where:isOneOf:visibility:)`` at versions in `versions` only, oldest
    /// first, at most `limit`: a page of the rows a membership moves in. The default reads them
    /// all and keeps those; a backend that can, reads only those.
    func currentChanges(
        of collection: String, where field: String, isOneOf values: [String], visibility: Visibility, versions: ClosedRange<Int>, limit: Int
    ) async throws -> [SyncChange]

    /// The deletions and departures after `since` of rows of `collection` whose kept shared
    /// `field` (``tombstoneFields(in:id:sequence:)``; `id` for the rows themselves) was one of
    /// `values`: rows that left a board before its reader lost it, which the reader's feed can no
    /// longer show by its rules. Their own sequences; no record. One read of the window's
    /// tombstones whatever the number of `values` (they are matched in Swift, not bound in SQL):
    /// callers pass them all at once.
    func deletions(of collection: String, where field: String, isOneOf values: [String], after since: Int) async throws -> [SyncChange]

    /// The shared fields (``ItemOperation/sharedFields(of:)``) the tombstone of this deletion
    /// (or departure) kept, if any: whose membership a deleted membership row was.
    func tombstoneFields(in collection: String, id: JSONValue, sequence: Int) async throws -> JSONObject?
}

extension ServerBackend {
    /// None: only the SQLite backend makes backups.
    package func backupFile() async throws -> URL? { nil }

    package func currentChanges(
        of collection: String, where field: String, isOneOf values: [String], visibility: Visibility, versions: ClosedRange<Int>, limit: Int
    ) async throws -> [SyncChange] {
        let all = try await currentChanges(of: collection, where: field, isOneOf: values, visibility: visibility)
        return Array(all.filter { versions.contains($0.sequence) }.sorted { $0.sequence < $1.sequence }.prefix(limit))
    }
}

/// The strong ETag of a record's version.
package func versionETag(_ version: Int) -> String { SyncProtocol.etag(ofVersion: version) }

/// What a top-level name of the data is.
package enum ResourceKind: Sendable {
    case collection
    case singular
}

/// One write of a batch (or a request) with its `If-Match`, its `Idempotency-Key`, and what its
/// caller may do in the collection (nil: no access rules).
package struct ItemOperation: Sendable {
    package var write: ItemWrite
    package var ifMatch: String? = nil
    package var idempotencyKey: String? = nil
    package var access: CollectionAccess? = nil

    package init(write: ItemWrite, ifMatch: String? = nil, idempotencyKey: String? = nil, access: CollectionAccess? = nil) {
        (self.write, self.ifMatch, self.idempotencyKey, self.access) = (write, ifMatch, idempotencyKey, access)
    }

    /// Where the key is remembered: per user under access rules, so that one user's key never
    /// replays another's answer.
    package var idempotencyScope: String? {
        guard let idempotencyKey else { return nil }
        guard let access else { return idempotencyKey }
        // Length-prefixed, so that no key one caller sends spells another's scope ("0:" is
        // anonymous: a user's id is never empty).
        guard let userID = access.caller.userID else {
            // Anonymous callers by their address: one client's key never replays another's answer
            // (clients behind one proxy share a scope; they should sign in, or send random keys).
            let address = access.clientAddress ?? ""
            return "0:\(address.utf8.count):\(address):\(idempotencyKey)"
        }
        return "\(userID.utf8.count):\(userID):\(idempotencyKey)"
    }

    /// Refuses the update or delete of `current` that the caller may not make: 404 for a row
    /// it cannot view (its existence is not revealed), 401 or 403 for one it views but may not
    /// change, 403 for an update that would give the row to another owner (admins may) or move
    /// it where the caller may not update it (a card to a board its writer may not edit).
    package func checkAccess(to current: JSONValue, replacement: JSONObject?, _ facts: @autoclosure () -> RowFacts) throws {
        guard let access else { return }
        try checkSignedIn()
        let facts = facts()
        guard try access.view.admits(current, facts) else { throw APIError.missing(write.collection, write.id ?? "") }
        guard try (replacement == nil ? access.delete : access.update).admits(current, facts) else { throw access.refusal }
        guard let replacement else { return }
        if let field = access.ownerField, !access.caller.isAdmin, replacement[field] != current[field] {
            throw APIError(status: .forbidden, message: "only an admin may give a row to another owner")
        }
        guard try access.update.admits(.object(replacement), facts) else {
            throw APIError(status: .forbidden, message: "\(access.caller) may not move this row where it would be out of their reach")
        }
    }

    /// Refuses the create of `record` (its id given) that the caller may not make: 401 or 403.
    package func checkCreate(_ record: JSONObject, _ facts: @autoclosure () -> RowFacts) throws {
        guard let access, access.create != .everything else { return }
        guard try access.create.admits(.object(record), facts()) else { throw access.refusal }
    }
}

extension ItemOperation {
    /// Refuses (401) an anonymous update or delete where only signed-in callers may write, before
    /// the row is looked up: whether or not it exists, signing in is what it takes. A client that
    /// lost its token must not read a 404 as the row's deletion.
    package func checkSignedIn() throws {
        guard let access, !access.caller.isSignedIn else { return }
        let rows = switch write {
        case .create: access.create
        case .update: access.update
        case .delete: access.delete
        }
        if rows == .nothing { throw access.refusal }
    }

    /// The refusal of a create whose explicit id a row already holds: 409 when the caller may
    /// view that row, else 403 without a word on the row (nothing of it is revealed, and a sync
    /// client does not take another user's row for its own earlier create). `current` is nil
    /// for a row the backend would not show the caller.
    package func duplicateID(_ current: JSONValue?, _ given: JSONValue, _ facts: @autoclosure () -> RowFacts) -> APIError {
        guard let access else { return APIError.duplicateID(write.collection, given) }
        guard let current, (try? access.view.admits(current, facts())) == true else { return APIError(status: .forbidden, message: "this id is not available") }
        return APIError.duplicateID(write.collection, given)
    }

    /// Under a sharing rule, the fields of `record` its filters read, with the id: what a
    /// tombstone keeps of a deleted row. Nil for a collection under a mode, or without rules.
    package func sharedFields(of record: JSONValue) -> JSONObject? {
        guard let fields = access?.sharedFields, !fields.isEmpty else { return nil }
        var kept = JSONObject()
        kept["id"] = record["id"] ?? .null
        for field in fields { kept[field] = record[field] ?? .null }
        return kept
    }

    /// Under a sharing rule, the shared fields of `current` when an update changes one of them
    /// (a card moved to another board): the readers who saw the row through them, and cannot
    /// see it now, get its deletion. Nil when none changes. With `version`, the version
    /// `current` has held its fields since (``keptVersionField``): whether a reader's cursor
    /// saw them (a membership's role changed alone moves no rows).
    package func sharedDeparture(from current: JSONValue, to replacement: JSONObject, version: Int? = nil) -> JSONObject? {
        guard var before = sharedFields(of: current), sharedFields(of: .object(replacement)) != before else { return nil }
        if let version { before[Self.keptVersionField] = .number(JSONNumber(version)) }
        return before
    }

    /// The member of a departure's kept fields holding the version the row had them since.
    package static let keptVersionField = "_modelsyncSince"

    /// The owner an update takes `current` from, if it gives the row to another owner (only an
    /// admin may): that owner's feed must show the row deleted. Nil without access rules.
    package func departure(from current: JSONValue, to replacement: JSONObject) -> String? {
        guard let field = access?.ownerField, let former = current[field].flatMap(scalarText) else { return nil }
        let next = replacement[field].flatMap(scalarText)
        return next?.isIdentical(to: former) == true ? nil : former
    }
}

/// Which rows each collection shows its reader: all of them without access rules.
package struct Visibility: Sendable {
    package var rules: AccessRules?
    package var caller: Caller

    package init(rules: AccessRules?, caller: Caller) {
        (self.rules, self.caller) = (rules, caller)
    }

    /// No rules: every row of every collection.
    package static let open = Visibility(rules: nil, caller: .anonymous)

    package var isOpen: Bool { rules == nil }

    /// What a feed cursor carries under access rules beside its sequence value: a digest of the
    /// reader (user and role) and of the rules; nil without rules. It is no secret (the feed is
    /// filtered by the token either way): a cursor read by another user, or under other rules,
    /// must start its reader over, or that reader would keep rows it may no longer read and
    /// miss rows it now may.
    package var cursorTag: String? {
        guard let rules else { return nil }
        func counted(_ text: String?) -> String { text.map { "\($0.utf8.count):\($0)" } ?? "-" }
        // FNV-1a, 64 bits: stable across processes and builds, unlike `Hasher`.
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(counted(caller.userID));\(counted(caller.role));\(rules.canonicalText)".utf8 {
            digest = (digest ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let hex = String(digest, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The rows of `collection` the reader sees in lists, relations and the feed.
    package func rows(of collection: String) -> RowFilter {
        rules?.access(to: collection, for: caller).read ?? .everything
    }

    /// The rows of `collection` the reader reads by id.
    package func viewableRows(of collection: String) -> RowFilter {
        rules?.access(to: collection, for: caller).view ?? .everything
    }

    /// A record's change as this reader may see it: nil for a row it may not read; without the
    /// create's `Idempotency-Key` unless the reader owns the row, since a client acknowledges its
    /// own lost create by that key and must never take another user's row for it.
    package func shown(_ change: SyncChange, rows: RowFilter, _ facts: @autoclosure () -> RowFacts) throws -> SyncChange? {
        guard let rules, let record = change.record else { return change }
        guard try rows.admits(record, facts()) else { return nil }
        guard change.createdWith != nil else { return change }
        let owner = rules.access(to: change.collection, for: caller).ownerField
        let owns = caller.userID.map { userID in owner.flatMap { record[$0] }.flatMap(scalarText)?.isIdentical(to: userID) ?? false } ?? false
        guard !owns else { return change }
        var shown = change
        shown.createdWith = nil
        return shown
    }
}

/// What a list read asks for beyond the collection.
package struct ListRequest: Sendable {
    package var query: ListQuery
    package var parameters: QueryParameters
    package var defaultPageSize: Int
    package var embeds: [String]
    package var expands: [String]
    /// For `/<parent>/<id>/<children>`: the parent's collection and id; the children are those
    /// whose `<singular parent>Id` is that id.
    package var owner: (collection: String, id: String)?
    /// The rows the reader may see, of the collection and of its relations.
    package var visibility: Visibility = .open

    /// The slice of `count` matching records that the request asks for.
    package func slice(count: Int) throws -> Slice {
        try Slice(parameters, count: count, defaultPageSize: defaultPageSize)
    }
}

/// A page of a list and what the response says about it.
package struct ListPage: Sendable {
    package var items: [JSONValue]
    package var total: Int
    package var slice: Slice
    package var modified: Date

    package init(items: [JSONValue], total: Int, slice: Slice, modified: Date) {
        (self.items, self.total, self.slice, self.modified) = (items, total, slice, modified)
    }
}

/// One record read by id.
package struct ItemRead: Sendable {
    /// The record, with embeds and expands when asked for.
    package var value: JSONValue
    /// The record's version (nil for a record that has none).
    package var version: Int?
    package var modified: Date

    package init(value: JSONValue, version: Int?, modified: Date) {
        (self.value, self.version, self.modified) = (value, version, modified)
    }
}

/// Where a feed read starts.
package enum FeedCursor: Sendable, Equatable {
    /// After the given sequence value (0: from the start).
    case after(Int)
    /// After the current sequence value: only what comes next.
    case now

    /// A cursor as sent: absent or empty is 0, `now` the current sequence.
    package init(_ text: String?) throws {
        switch text {
        case nil, ""?: self = .after(0)
        case "now"?: self = .now
        case let text?:
            // Digits past 64 bits are past any sequence this server will reach: the feed answers
            // such a cursor as it answers one past its data (410 with a horizon).
            guard text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
                throw APIError.badRequest("a feed cursor is a non-negative integer or now, got \(text)")
            }
            self = .after(Int(text) ?? Int.max)
        }
    }
}

extension FeedCursor {
    /// The sequence value a feed read starts after, the data being at `sequence` with
    /// tombstones kept above `horizon`: a 410 for a cursor older than the tombstones kept, or
    /// past the last change (the data was replaced).
    package func start(sequence: Int, horizon: Int) throws -> Int {
        let since: Int
        switch self {
        case .now: since = sequence
        case .after(let value): since = value
        }
        guard since >= horizon else { throw APIError.cursorTooOld(horizon: horizon) }
        guard since <= sequence else { throw APIError.cursorAhead(of: sequence) }
        return since
    }
}

/// Each collection's rows for one reader, worked out once per feed read (not per change).
package struct ReaderRows {
    package let visibility: Visibility
    private var known: [String: RowFilter] = [:]

    package init(_ visibility: Visibility) { self.visibility = visibility }

    package mutating func of(_ collection: String) -> RowFilter {
        if let rows = known[collection] { return rows }
        let rows = visibility.rows(of: collection)
        known[collection] = rows
        return rows
    }
}

extension ServerBackend {
    package func encodedChanges(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) async throws -> EncodedFeedPage {
        EncodedFeedPage(try await changes(after: cursor, in: collections, limit: limit, visibility: visibility))
    }
}

/// A page of the change feed with its changes already written as JSON: the elements of the
/// answer's `changes` array (``SyncChange/json``), comma-separated.
package struct EncodedFeedPage: Sendable {
    package var changes: [UInt8]
    /// Whether more changes follow `next`.
    package var more: Bool
    /// The cursor to ask with next.
    package var next: Int

    package init(changes: [UInt8], more: Bool, next: Int) {
        (self.changes, self.more, self.next) = (changes, more, next)
    }

    package init(_ page: FeedPage) {
        var writer = JSONWriter()
        for (index, change) in page.changes.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            change.json.write(to: &writer)
        }
        self.init(changes: writer.bytes, more: page.more, next: page.next)
    }

    /// The page's answer, `{"changes": [...], "next": "<cursor>", "more": …}`, with `next`
    /// written as the reader's cursor.
    package func body(next cursor: String) -> [UInt8] {
        var writer = JSONWriter(capacity: changes.count + 64 + cursor.utf8.count)
        writer.writeRaw(Array(#"{"changes":["#.utf8))
        writer.writeRaw(changes)
        writer.writeRaw(Array(#"],"next":"#.utf8))
        writer.writeString(cursor)
        writer.writeRaw(Array(#","more":"#.utf8))
        writer.writeBool(more)
        writer.writeByte(UInt8(ascii: "}"))
        return writer.bytes
    }
}

/// A page of the change feed.
package struct FeedPage: Sendable {
    package var changes: [SyncChange]
    /// Whether more changes follow `next`.
    package var more: Bool
    /// The cursor to ask with next.
    package var next: Int

    package init(changes: [SyncChange], more: Bool, next: Int) {
        (self.changes, self.more, self.next) = (changes, more, next)
    }
}

extension APIError {
    /// A cursor older than the tombstones kept.
    package static func cursorTooOld(horizon: Int) -> APIError {
        APIError(status: 410, message: "the cursor is older than the deletions the server keeps; read everything again",
                 details: ["horizon": .string(String(horizon))])
    }

    /// A cursor past the server's last change: its data went back (a reset, an import over it, a
    /// restored backup). The changes the cursor stands for may be gone, and those written since
    /// reuse its sequence values, so the client reads everything again and follows from `now`.
    package static func cursorAhead(of sequence: Int) -> APIError {
        APIError(status: 410, message: "the cursor is past the server's data (replaced or restored since); read everything again",
                 details: ["horizon": .string(String(sequence))])
    }
}

/// A user's memberships.
package enum MembershipList {
    /// One membership: the link, the row it is on and its role.
    package struct Entry: Sendable, Equatable {
        package var link: SharingRule.Membership
        package var rowID: String
        package var role: String

        package init(link: SharingRule.Membership, rowID: String, role: String) {
            (self.link, self.rowID, self.role) = (link, rowID, role)
        }
    }

    /// The membership links of `rules`: every collection whose rows give roles.
    package static func links(of rules: AccessRules?) -> [SharingRule.Membership] {
        guard let rules else { return [] }
        var links: [SharingRule.Membership] = []
        for (_, rule) in rules.rules.sorted(by: { $0.key < $1.key }) {
            if let link = rule.sharing?.members, !links.contains(link) { links.append(link) }
        }
        return links
    }
}
