import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol

/// What the server keeps beside the data: the change sequence, each record's version, the
/// tombstones of deleted records, and the idempotency keys of creates.
///
/// It is saved in the data file under one member, ``member``, by the same atomic write as the
/// records it describes, and never served: loading takes it out of the served data.
///
/// - Every write to an item of a collection takes the next value of ``sequence``; that value is
///   the record's version (its ETag is `"<version>"`), or its tombstone's.
/// - Tombstones are kept for a bounded time and number; dropping one raises ``horizon``, and a
///   client whose cursor is below it must read everything again (410).
package struct Bookkeeping: Sendable {
    package static let member = "_modelsync"
    /// Where idempotency keys were kept before there was bookkeeping (still read).
    package static let legacyIdempotencyMember = "_idempotency"

    /// One deleted record, or (``departed``) a record that left its owner's view.
    package struct Tombstone: Sendable {
        package var collection: String
        package var id: JSONValue
        package var sequence: Int
        package var at: Int
        /// The deleted row's owner (under access rules): whose feed shows the deletion. For a
        /// departure, the owner the row was taken from.
        package var owner: String?
        /// Under a sharing rule, the fields its filters read, as they were (``ItemOperation/sharedFields(of:)``):
        /// the readers who saw the row through them see its deletion.
        package var fields: JSONObject?
        /// Whether the row lives on under another owner: only its former owner's feed shows it
        /// deleted, and only while that reader cannot read the row.
        package var departed = false

        package init(
            collection: String, id: JSONValue, sequence: Int, at: Int, owner: String? = nil, fields: JSONObject? = nil, departed: Bool = false
        ) {
            (self.collection, self.id, self.sequence, self.at, self.owner, self.fields, self.departed) = (collection, id, sequence, at, owner, fields, departed)
        }
    }

    /// A record's version and its current value: the feed reads records from here, so that it
    /// never scans the data.
    package struct Stamp: Sendable {
        package var version: Int
        package var record: JSONValue
        /// The `Idempotency-Key` of the create that made the record (see ``SyncChange/createdWith``).
        package var createdWith: String? = nil

        package init(version: Int, record: JSONValue, createdWith: String? = nil) {
            (self.version, self.record, self.createdWith) = (version, record, createdWith)
        }
    }

    /// The last sequence value handed out.
    package var sequence = 0
    /// Each record's version and value, by collection and id (by the id's bytes).
    package var versions: [String: [ExactText: Stamp]] = [:]
    /// Deleted records, oldest first.
    package var tombstones: [Tombstone] = []
    /// The highest sequence of a dropped tombstone: cursors below it are too old.
    package var horizon = 0
    /// The idempotency-key records (see ``IdempotencyKeys``).
    package var idempotency = JSONObject()
    /// The highest integer id deleted from each collection: new ids go above it, so that an id
    /// is never given to two records.
    package var deletedIDs: [String: Int] = [:]
    /// The built-in accounts' credentials by normalized email: the user's id, the password's
    /// hash and the role. Kept here, apart from the `users` records, so that no route serves them.
    /// Changed through ``setAccount(_:email:)``, which keeps ``accountEmails`` with it.
    package private(set) var accounts: [String: StoredAccount] = [:]
    /// The email of each account by its user's id (byte for byte): every request with a built-in
    /// token looks its account up by id.
    package private(set) var accountEmails: [ExactText: String] = [:]
    /// The built-in accounts' refresh tokens by hash (see ``StoredRefreshToken``).
    package var refreshTokens: [String: StoredRefreshToken] = [:]
    /// The records written since ``recentStart``, in sequence order (a record written again is
    /// there again; its earlier entries no longer match its version): the feed after a recent
    /// cursor, as each change stream reads it after a commit under access rules, reads these
    /// rather than every record's version. Not saved: after a load it starts at the sequence.
    package private(set) var recentWrites: [(sequence: Int, collection: String, id: ExactText)] = []
    /// Every record written after this sequence value is in ``recentWrites``.
    private(set) var recentStart = 0
    /// How many writes ``recentWrites`` keeps at least (at most twice as many).
    package static let recentCapacity = 4_096

    package init() {}

    /// Keeps `account` (nil: removes the credentials) under `email`.
    package mutating func setAccount(_ account: StoredAccount?, email: String) {
        if let former = accounts[email] { accountEmails[ExactText(former.userID)] = nil }
        accounts[email] = account
        if let account { accountEmails[ExactText(account.userID)] = email }
    }

    /// Removes the credentials and refresh tokens of the account of `userID`, if any: its record
    /// was deleted.
    package mutating func endAccount(userID: String) {
        guard let (email, _) = account(userID: userID) else { return }
        setAccount(nil, email: email)
        refreshTokens = refreshTokens.filter { !$0.value.userID.isIdentical(to: userID) }
    }

    /// The credentials of the account of `userID`, and their email.
    package func account(userID: String) -> (email: String, account: StoredAccount)? {
        guard let email = accountEmails[ExactText(userID)], let account = accounts[email] else { return nil }
        return (email, account)
    }

    /// Whether a top-level member is bookkeeping rather than data.
    package static func isReserved(_ name: String) -> Bool {
        name == member || name == legacyIdempotencyMember
    }

    // MARK: Recording writes

    /// Gives a written record (as it is now stored) the next version and returns it; a create
    /// names its `Idempotency-Key`, an update keeps the one the record was created with.
    @discardableResult
    package mutating func recordWrite(collection: String, record: JSONValue, createdWith: String? = nil) -> Int {
        sequence += 1
        if let text = record["id"].flatMap(scalarText) {
            let id = ExactText(text)
            let origin = createdWith ?? versions[collection]?[id]?.createdWith
            versions[collection, default: [:]][id] = Stamp(version: sequence, record: record, createdWith: origin)
            recentWrites.append((sequence, collection, id))
            if recentWrites.count >= 2 * Self.recentCapacity {
                recentStart = recentWrites[Self.recentCapacity - 1].sequence
                recentWrites.removeFirst(Self.recentCapacity)
            }
        }
        return sequence
    }

    /// Replaces a deleted record's version with a tombstone, and drops the tombstones beyond
    /// the limits.
    package mutating func recordDelete(collection: String, id: JSONValue, owner: String? = nil, fields: JSONObject? = nil, now: Date, limits: FeedLimits) {
        sequence += 1
        if let text = scalarText(id) { versions[collection]?.removeValue(forKey: ExactText(text)) }
        if let integer = id.intValue { deletedIDs[collection] = max(deletedIDs[collection] ?? 0, integer) }
        keep(Tombstone(collection: collection, id: id, sequence: sequence, at: Int(now.timeIntervalSince1970), owner: owner, fields: fields), now: now, limits: limits)
    }

    /// Records that the write just recorded (``recordWrite(collection:record:createdWith:)``)
    /// gave a row away from `formerOwner`, or changed the `fields` a sharing rule reads (a card
    /// moved to another board): the readers who saw it before, and cannot now, see it deleted.
    /// Under the write's own sequence value, so that one write is one change.
    package mutating func recordDeparture(collection: String, id: JSONValue, formerOwner: String?, fields: JSONObject? = nil, now: Date, limits: FeedLimits) {
        let stone = Tombstone(
            collection: collection, id: id, sequence: sequence, at: Int(now.timeIntervalSince1970), owner: formerOwner, fields: fields, departed: true)
        keep(stone, now: now, limits: limits)
    }

    /// Adds a tombstone and drops those beyond the limits, raising the horizon past them.
    private mutating func keep(_ stone: Tombstone, now: Date, limits: FeedLimits) {
        tombstones.append(stone)
        let oldest = Int(now.timeIntervalSince1970) - Int(min(limits.tombstoneRetention, Double(Int32.max)))
        var dropped = 0
        while dropped < tombstones.count, tombstones.count - dropped > limits.tombstoneCapacity || tombstones[dropped].at < oldest {
            horizon = max(horizon, tombstones[dropped].sequence)
            dropped += 1
        }
        if dropped > 0 { tombstones.removeFirst(dropped) }
    }

    /// The version of a record, if it has one.
    package func version(collection: String, id: String) -> Int? {
        versions[collection]?[ExactText(id)]?.version
    }

    /// Attaches the loaded data's records to their saved versions, and gives every record that
    /// has none (data written by json-server or by hand) the next one, in the data's order
    /// (collections by name): the same data always gets the same versions. Of two records with
    /// one id, the first counts, as for `GET /<collection>/<id>`.
    package mutating func adopt(_ root: JSONObject, savedVersions: [String: [ExactText: Int]]) {
        versions = [:]
        for name in root.keys.sorted() {
            guard let items = root[name]?.arrayValue else { continue }
            for item in items {
                guard let text = item["id"].flatMap(scalarText), versions[name]?[ExactText(text)] == nil else { continue }
                if let saved = savedVersions[name]?[ExactText(text)] {
                    versions[name, default: [:]][ExactText(text)] = Stamp(version: saved, record: item)
                } else {
                    recordWrite(collection: name, record: item)
                }
            }
        }
    }

    // MARK: Saving and loading

    /// Takes the bookkeeping out of loaded data (leaving only the served data in `root`).
    package static func extract(from root: inout JSONObject) -> Bookkeeping {
        var book = Bookkeeping()
        if let legacy = root.removeValue(forKey: legacyIdempotencyMember)?.objectValue { book.idempotency = legacy }
        guard let saved = root.removeValue(forKey: member) else {
            book.adopt(root, savedVersions: [:])
            return book
        }
        book.sequence = saved["sequence"]?.intValue ?? 0
        // The writes before the load are not in `recentWrites`.
        book.recentStart = book.sequence
        book.horizon = saved["horizon"]?.intValue ?? 0
        var savedVersions: [String: [ExactText: Int]] = [:]
        for (collection, ids) in saved["versions"]?.objectValue ?? JSONObject() {
            var versions: [ExactText: Int] = [:]
            for (id, version) in ids.objectValue ?? JSONObject() {
                if let version = version.intValue { versions[ExactText(id)] = version }
            }
            savedVersions[collection] = versions
        }
        book.adopt(root, savedVersions: savedVersions)
        book.tombstones = (saved["tombstones"]?.arrayValue ?? []).compactMap { stone in
            guard let collection = stone["collection"]?.stringValue, let id = stone["id"], let sequence = stone["seq"]?.intValue else { return nil }
            return Tombstone(
                collection: collection, id: id, sequence: sequence, at: stone["at"]?.intValue ?? 0, owner: stone["owner"]?.stringValue,
                fields: stone["fields"]?.objectValue, departed: stone["departed"]?.boolValue ?? false)
        }
        if let keys = saved["idempotency"]?.objectValue {
            for (key, record) in keys { book.idempotency[key] = record }
        }
        for (collection, id) in saved["deletedIds"]?.objectValue ?? JSONObject() {
            if let id = id.intValue { book.deletedIDs[collection] = id }
        }
        for (email, account) in saved["accounts"]?.objectValue ?? JSONObject() {
            if let stored = StoredAccount(saved: account) { book.setAccount(stored, email: email) }
        }
        for (hash, token) in saved["refreshTokens"]?.objectValue ?? JSONObject() {
            if let stored = StoredRefreshToken(hash: hash, saved: token) { book.refreshTokens[hash] = stored }
        }
        for (collection, ids) in saved["createdWith"]?.objectValue ?? JSONObject() {
            for (id, key) in ids.objectValue ?? JSONObject() {
                if let key = key.stringValue { book.versions[collection]?[ExactText(id)]?.createdWith = key }
            }
        }
        return book
    }

    /// The bookkeeping as the member saved with the data.
    package var saved: JSONValue {
        var object = JSONObject()
        object["sequence"] = .number(JSONNumber(sequence))
        object["horizon"] = .number(JSONNumber(horizon))
        var collections = JSONObject()
        for (collection, ids) in versions.sorted(by: { $0.key < $1.key }) {
            collections[collection] = .object(JSONObject(ids.map { ($0.key.text, JSONValue.number(JSONNumber($0.value.version))) }))
        }
        object["versions"] = .object(collections)
        var origins = JSONObject()
        for (collection, ids) in versions.sorted(by: { $0.key < $1.key }) {
            let keyed = ids.compactMap { id, stamp in stamp.createdWith.map { (id.text, JSONValue.string($0)) } }
            if !keyed.isEmpty { origins[collection] = .object(JSONObject(keyed)) }
        }
        object["createdWith"] = .object(origins)
        object["tombstones"] = .array(tombstones.map { stone in
            var saved: JSONObject = ["collection": .string(stone.collection), "id": stone.id, "seq": .number(JSONNumber(stone.sequence)), "at": .number(JSONNumber(stone.at))]
            if let owner = stone.owner { saved["owner"] = .string(owner) }
            if let fields = stone.fields { saved["fields"] = .object(fields) }
            if stone.departed { saved["departed"] = .bool(true) }
            return .object(saved)
        })
        object["idempotency"] = .object(idempotency)
        if !accounts.isEmpty {
            object["accounts"] = .object(JSONObject(accounts.sorted { $0.key < $1.key }.map { ($0.key, $0.value.saved) }))
        }
        if !refreshTokens.isEmpty {
            object["refreshTokens"] = .object(JSONObject(refreshTokens.sorted { $0.key < $1.key }.map { ($0.key, $0.value.saved) }))
        }
        object["deletedIds"] = .object(JSONObject(deletedIDs.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.number(JSONNumber($0.value))) }))
        return .object(object)
    }

    // MARK: Reading the feed

    /// The changes after `since` in `collections` (all when nil), oldest first: each record at
    /// most once, in its current state, and the tombstones. At most `limit`; the flag says
    /// whether more follow.
    package func changes(after since: Int, in collections: Set<String>?, limit: Int, visibility: Visibility = .open) throws -> (changes: [SyncChange], more: Bool) {
        var changes: [SyncChange] = []
        var readerRows = ReaderRows(visibility)
        func rows(of collection: String) -> RowFilter { readerRows.of(collection) }
        let facts = RowFacts(StampLookups(book: self))
        for (collection, stamp) in recordsWritten(after: since, in: collections).records {
            let change = SyncChange(
                sequence: stamp.version, collection: collection, id: stamp.record["id"] ?? .null, record: stamp.record, createdWith: stamp.createdWith)
            if let shown = try visibility.shown(change, rows: rows(of: collection), facts) { changes.append(shown) }
        }
        // A row that left a reader's view shows as its deletion, once (its latest departure), and
        // not while the reader can read it again.
        var departures: [String: [ExactText: Tombstone]] = [:]
        // Tombstones are kept in sequence order: those after `since` are the last ones.
        for stone in tombstones(after: since) where try (collections?.contains(stone.collection) ?? true) && Self.shows(stone, rows(of: stone.collection), facts) {
            guard stone.departed else {
                changes.append(SyncChange(sequence: stone.sequence, collection: stone.collection, id: stone.id, record: nil))
                continue
            }
            guard let text = scalarText(stone.id) else { continue }
            let id = ExactText(text)
            if let current = versions[stone.collection]?[id]?.record, try rows(of: stone.collection).admits(current, facts) { continue }
            departures[stone.collection, default: [:]][id] = stone
        }
        for stone in departures.values.flatMap(\.values) {
            changes.append(SyncChange(sequence: stone.sequence, collection: stone.collection, id: stone.id, record: nil))
        }
        changes.sort { $0.sequence < $1.sequence }
        let more = changes.count > limit
        return (Array(changes.prefix(limit)), more)
    }

    /// The records (in their current version) written after `since` in `collections` (all when
    /// nil), and how many versions were looked at to find them: after a recent cursor, the
    /// writes since it (``recentWrites``), whatever the size of the data; after an older one,
    /// every record's version.
    package func recordsWritten(after since: Int, in collections: Set<String>?) -> (records: [(collection: String, stamp: Stamp)], examined: Int) {
        var records: [(collection: String, stamp: Stamp)] = []
        var examined = 0
        guard since >= recentStart else {
            for (collection, ids) in versions where collections?.contains(collection) ?? true {
                for stamp in ids.values {
                    examined += 1
                    if stamp.version > since { records.append((collection, stamp)) }
                }
            }
            return (records, examined)
        }
        let first = Self.firstIndex(in: recentWrites.lazy.map(\.sequence), after: since)
        for (sequence, collection, id) in recentWrites[first...] where collections?.contains(collection) ?? true {
            examined += 1
            // A later write (or a deletion) of the record made this entry stale.
            guard let stamp = versions[collection]?[id], stamp.version == sequence else { continue }
            records.append((collection, stamp))
        }
        return (records, examined)
    }

    /// The tombstones (and departures) after `since`, oldest first.
    package func tombstones(after since: Int) -> ArraySlice<Tombstone> {
        tombstones[Self.firstIndex(in: tombstones.lazy.map(\.sequence), after: since)...]
    }

    /// The index of the first sequence value above `since` in ascending `sequences`.
    private static func firstIndex(in sequences: some RandomAccessCollection<Int>, after since: Int) -> Int {
        var (low, high) = (0, sequences.count)
        while low < high {
            let middle = (low + high) / 2
            if sequences[sequences.index(sequences.startIndex, offsetBy: middle)] > since { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Whether a reader sees a deletion: one who reads every row of its collection, or its
    /// owner. A departure only its former owner, for whom the row is gone. Under a sharing rule,
    /// a reader whose filter admits the row's shared fields as they were.
    private static func shows(_ stone: Tombstone, _ rows: RowFilter, _ facts: RowFacts) throws -> Bool {
        switch rows {
        case .everything: return !stone.departed
        case .nothing: return false
        case .ownedBy(_, let userID) where stone.fields == nil: return stone.owner?.isIdentical(to: userID) ?? false
        default: return try stone.fields.map { try rows.admits(.object($0), facts) } ?? false
        }
    }
}

/// Lookups over the records' current versions, for the feed: a parent that was deleted is
/// looked up in its tombstone's shared fields, so that the deletion of a card whose board went
/// first still reaches the board's members.
private final class StampLookups: RowLookups {
    let book: Bookkeeping
    /// The deleted rows' kept fields by collection and id, the latest deletion's: indexed on the
    /// first lookup that needs it, once per feed read (a scan per lookup held the actor).
    private var deleted: [String: [ExactText: JSONObject]]?

    init(book: Bookkeeping) {
        self.book = book
    }

    func record(in collection: String, id: String) throws -> JSONValue? {
        if let stamp = book.versions[collection]?[ExactText(id)] { return stamp.record }
        if deleted == nil {
            var index: [String: [ExactText: JSONObject]] = [:]
            for stone in book.tombstones where !stone.departed {
                if let fields = stone.fields, let text = scalarText(stone.id) { index[stone.collection, default: [:]][ExactText(text)] = fields }
            }
            deleted = index
        }
        return deleted?[collection]?[ExactText(id)].map(JSONValue.object)
    }

    func memberships(in link: SharingRule.Membership, userID: String) throws -> [(rowID: String, role: String)] {
        (book.versions[link.collection]?.values ?? [:].values).compactMap { stamp in
            let row = stamp.record
            guard row[link.user].flatMap(scalarText)?.isIdentical(to: userID) == true,
                  let rowID = row[link.field].flatMap(scalarText), let role = row[link.role]?.stringValue
            else { return nil }
            return (rowID, role)
        }
    }
}

/// How long deletions stay visible in the change feed.
public struct FeedLimits: Sendable, Hashable {
    /// Seconds a tombstone is kept (7 days by default).
    public var tombstoneRetention: TimeInterval
    /// The most tombstones kept (the oldest go first).
    public var tombstoneCapacity: Int

    /// Creates limits.
    public init(tombstoneRetention: TimeInterval = 7 * 24 * 60 * 60, tombstoneCapacity: Int = 100_000) {
        self.tombstoneRetention = tombstoneRetention
        self.tombstoneCapacity = tombstoneCapacity
    }
}
