import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol

/// The rows that move into or out of a reader's view as its memberships change. The feed adds
/// them to the page that carries the membership's change: a user added to a board gets the
/// board, its cards and their comments in the next pull (or on the stream), and a user removed
/// gets their deletions, without reading everything again. The work is in proportion to the
/// rows that move, not to the data.
///
/// A member reads their own membership rows, and a deleted one's tombstone keeps whose it was
/// (``ItemOperation/sharedFields(of:)``), so each reader's feed carries the changes of its own
/// memberships even when it asked for other collections only.
struct MembershipMoves {
    let rules: AccessRules
    let backend: any ServerBackend
    let visibility: Visibility
    let userID: String

    /// Values per read: an `IN` list stays well under the databases' limits on parameters.
    static let chunk = 500

    /// The most changes of memberships and parents one page reads to weigh its moves: a page
    /// whose span holds more ends where they reach it (the next page goes on from there), and a
    /// page of pending moves, which reads them again up to now, is answered 410.
    static let window = 4 * ServerRoutes.maximumFeedLimit

    /// Nil when nothing can move: no rules with members, an anonymous reader, or an admin (who
    /// reads every row).
    init?(backend: any ServerBackend, visibility: Visibility) {
        guard let rules = visibility.rules, let userID = visibility.caller.userID, !visibility.caller.isAdmin,
              !MembershipList.links(of: rules).isEmpty
        else { return nil }
        (self.rules, self.backend, self.visibility, self.userID) = (rules, backend, visibility, userID)
    }

    /// A page of the feed read after `since`, with the rows its reader's membership changes up
    /// to `page.next` moved out (their deletions) and in (their current records), each row once;
    /// and, when the rows moving in do not fit in `limit` beside the page's changes, where the
    /// rest of them starts (``PendingMoves``: the next pages carry them, a page at a time).
    /// Only changes after `mark` move rows: the rows up to the cursor were read after the
    /// earlier ones (a read from the start carries every row the reader may read, and the
    /// pages of a catch-up carry the mark of its start). `names` are the collections asked for
    /// (nil: all).
    ///
    /// A row that moves to another parent (a card to another board) moves the rows inheriting
    /// from it: out of the feed of the readers who no longer read it, into the feed of those
    /// who now do.
    ///
    /// A page of some collections only may span many changes of the others; it ends where its
    /// membership and parent changes reach `window` (the caller chooses the span: its cursor
    /// and its collections).
    func page(
        _ page: FeedPage, after since: Int, movesAfter mark: Int, in names: Set<String>?, limit: Int, window: Int = Self.window
    ) async throws -> (FeedPage, PendingMoves?) {
        guard since > 0, page.next > max(since, mark) else { return (page, nil) }
        var page = page
        let (moving, end) = try await movingChanges(page.changes, after: max(since, mark), through: page.next, in: names, atMost: window)
        if let end {
            page = FeedPage(changes: page.changes.filter { $0.sequence <= end }, more: true, next: end)
        }
        let (into, outOf) = try await grants(moving, after: max(since, mark), through: page.next)
        var moved: [SyncChange] = []
        for (collection, out) in outOf { moved += try await moveOut(collection, out.rows, at: out.sequence, after: since, in: names) }
        var seen = Set(page.changes.map { RowKey($0) })
        var changes = page.changes
        for change in moved where seen.insert(RowKey(change)).inserted { changes.append(change) }
        let (movedIn, rest) = try await moveIn(into, upTo: since, after: 0, in: names, room: limit - changes.count)
        guard !movedIn.isEmpty || rest != nil || changes.count > page.changes.count else { return (page, nil) }
        for change in movedIn where seen.insert(RowKey(change)).inserted { changes.append(change) }
        changes.sort { $0.sequence < $1.sequence }
        return (FeedPage(changes: changes, more: page.more || rest != nil, next: page.next), rest.map { PendingMoves(since: since, after: $0) })
    }

    /// The next rows moving in of a page whose moves did not fit in it (``PendingMoves``), at most
    /// `limit`, and where the rest starts, if any. `through` is the page's end; the memberships
    /// and parents changed since the page began are read again, so that rows are weighed by the
    /// reader's rules as they are now.
    func pendingPage(_ pending: PendingMoves, through: Int, movesAfter mark: Int, in names: Set<String>?, limit: Int) async throws -> ([SyncChange], PendingMoves?) {
        let start = max(pending.since, mark)
        // Bounded: a cursor is the caller's to write, and only a server whose memberships and
        // parents changed this much while its reader paged has more; that reader starts over.
        let (moving, end) = try await movingChanges([], after: start, through: nil, in: [], atMost: Self.window)
        if end != nil {
            let now = try await backend.changes(after: .now, in: [], limit: 1, visibility: visibility).next
            throw APIError(status: 410, message: "too much changed in the memberships while this reader paged the rows they move; read everything again",
                           details: ["horizon": .string(ServerRoutes.cursorText(now, visibility))])
        }
        let (into, _) = try await grants(moving, after: start, through: through)
        let (moved, rest) = try await moveIn(into, upTo: pending.since, after: pending.after, in: names, room: limit)
        return (moved, rest.map { PendingMoves(since: pending.since, after: $0) })
    }

    /// `changes` without a second entry for a row: of two, the later one stays.
    static func deduplicated(_ changes: [SyncChange]) -> [SyncChange] {
        var latest: [RowKey: Int] = [:]
        for (index, change) in changes.enumerated() { latest[RowKey(change)] = index }
        return changes.enumerated().filter { latest[RowKey($0.element)] == $0.offset }.map(\.element)
    }

    /// The rows whose changes in `changes` move others, by collection: into the reader's view
    /// (a membership naming the reader, a row that moved to another parent the reader reads) and
    /// out of it (a membership of the reader deleted, a row that left the reader's view), with
    /// the latest such change's sequence. Each is weighed against the reader's rules as they are
    /// now, so the order of the changes does not matter, and one walk per collection serves
    /// every membership (5,000 boards: one read per level per 500 boards, not several per board).
    /// A membership whose role changed from one that reads to another moves nothing (the reader
    /// has the rows); one moved to another row moves the former one's rows out. Changes after
    /// `through` (read again by a later page) are taken as they come.
    private func grants(_ changes: [SyncChange], after start: Int, through: Int) async throws -> (into: [String: [String]], outOf: [String: Leaving]) {
        var into: [String: [String]] = [:]
        var outOf: [String: Leaving] = [:]
        var parents: [String: [SyncChange]] = [:]
        for change in changes {
            guard let (link, granting) = rules.membershipLink(of: change.collection) else {
                parents[change.collection, default: []].append(change)
                continue
            }
            if let record = change.record {
                guard isReader(record[link.user]), let rowID = record[link.field].flatMap(scalarText) else { continue }
                // Changed, not created: its departure kept what it was before.
                if change.sequence <= through, let before = try await backend.tombstoneFields(in: change.collection, id: change.id, sequence: change.sequence),
                   isReader(before[link.user]), let former = before[link.field].flatMap(scalarText) {
                    if !former.isIdentical(to: rowID) {
                        outOf[granting, default: Leaving()].add(former, at: change.sequence)
                    } else if reads(before[link.role], granting) {
                        if !reads(record[link.role], granting) {
                            outOf[granting, default: Leaving()].add(rowID, at: change.sequence)
                            continue
                        }
                        // Only its role changed, between two that read: the reader has the rows
                        // if it held the former role at its cursor already.
                        if before[ItemOperation.keptVersionField]?.intValue ?? Int.max <= start { continue }
                    }
                }
                into[granting, default: []].append(rowID)
            } else {
                guard let fields = try await backend.tombstoneFields(in: change.collection, id: change.id, sequence: change.sequence),
                      isReader(fields[link.user]), let rowID = fields[link.field].flatMap(scalarText)
                else { continue }
                outOf[granting, default: Leaving()].add(rowID, at: change.sequence)
            }
        }
        // Rows of parent collections: a deletion (or departure) takes the rows inheriting from it
        // along where the reader can no longer read them; a record that moved to this parent in
        // the window (its departure kept then) brings them.
        for (collection, changes) in parents {
            let records = changes.filter { $0.record != nil }.compactMap { scalarText($0.id) }
            // One read of the window's tombstones (the backends filter their fields in Swift, no list of values in SQL).
            let departed = records.isEmpty ? [] : try await backend.deletions(of: collection, where: "id", isOneOf: records, after: start)
            let moved = Set(departed.filter { $0.sequence <= through }.map { RowKey($0) })
            for change in changes {
                guard let id = scalarText(change.id) else { continue }
                if change.record == nil {
                    outOf[collection, default: Leaving()].add(id, at: change.sequence)
                } else if moved.contains(RowKey(change)) {
                    into[collection, default: []].append(id)
                }
            }
        }
        return (into, outOf)
    }

    /// Whether a membership's role lets its member list the rows of `granting` it is on.
    private func reads(_ role: JSONValue?, _ granting: String) -> Bool {
        guard let standing = role?.stringValue.flatMap({ SharingRule.Standing(memberRole: $0) }),
              let list = rules.rule(for: granting)?.sharing?.list
        else { return false }
        return standing >= list
    }

    /// Whether a membership's user field names the reader.
    private func isReader(_ user: JSONValue?) -> Bool {
        user.flatMap(scalarText)?.isIdentical(to: userID) ?? false
    }

    /// The changes after `start` (through `through`; nil: up to now) of the membership
    /// collections and of the collections other rows inherit from: from `changes` (a page), and
    /// read apart for those collections the page was not asked for (`names`; nil: all); and,
    /// when those read apart pass `bound` before `through`, the sequence they were read up to
    /// (the changes returned are those up to it).
    private func movingChanges(
        _ changes: [SyncChange], after start: Int, through: Int?, in names: Set<String>?, atMost bound: Int
    ) async throws -> (changes: [SyncChange], end: Int?) {
        let moving = Set(MembershipList.links(of: rules).map(\.collection)).union(rules.rules.keys.filter { !rules.children(of: $0).isEmpty })
        var found = changes.filter { moving.contains($0.collection) && $0.sequence > start }
        let unread = names.map { moving.subtracting($0) } ?? []
        let through = through ?? Int.max
        var cursor = start
        while !unread.isEmpty && cursor < through {
            let extra = try await backend.changes(after: .after(cursor), in: unread, limit: min(ServerRoutes.maximumFeedLimit, bound), visibility: visibility)
            found += extra.changes.filter { $0.sequence <= through }
            guard extra.more, extra.next > cursor else { break }
            cursor = extra.next
            if found.count > bound && cursor < through {
                return (found.filter { $0.sequence <= cursor }.sorted { $0.sequence < $1.sequence }, cursor)
            }
        }
        return (found.sorted { $0.sequence < $1.sequence }, nil)
    }

    /// The rows `rowIDs` of each collection of `into` and the rows that inherit from them, those
    /// the reader may now read, at versions in `(after, upTo]` (a later version is in the
    /// reader's feed anyway), oldest first: at most `room` of them, and the version after which
    /// the rest start, if some are left. Each row has a version of its own, so none is cut in two.
    private func moveIn(_ into: [String: [String]], upTo: Int, after: Int, in names: Set<String>?, room: Int) async throws -> ([SyncChange], Int?) {
        guard upTo > after else { return ([], nil) }
        var rows: [SyncChange] = []
        for (collection, rowIDs) in into.sorted(by: { $0.key < $1.key }) {
            rows += try await moveIn(collection, rowIDs, in: names, versions: (after + 1)...upTo, limit: max(room, 0) + 1)
        }
        rows = Self.deduplicated(rows).sorted { $0.sequence < $1.sequence }
        guard rows.count > room else { return (rows, nil) }
        guard room > 0 else { return ([], after) }
        return (Array(rows[..<room]), rows[room - 1].sequence)
    }

    /// The rows `rowIDs` of `collection` and the rows that inherit from them, those the reader may
    /// now read, at their current versions in `versions`, of the collections asked for (`names`):
    /// of a collection no other asked for inherits from, only the first `limit` by version (the
    /// backend reads no more); of the others all, whose ids lead to the next level.
    private func moveIn(_ collection: String, _ rowIDs: [String], in names: Set<String>?, versions: ClosedRange<Int>, limit: Int) async throws -> [SyncChange] {
        var moved: [SyncChange] = []
        var level: [(collection: String, field: String, values: [String])] = [(collection, "id", rowIDs)]
        while !level.isEmpty {
            var next: [(collection: String, field: String, values: [String])] = []
            for (name, field, values) in level {
                let asked = names?.contains(name) ?? true
                let children = rules.children(of: name).filter { reaches($0.collection, names) }
                if children.isEmpty {
                    guard asked else { continue }
                    moved += try await inChunks(values) {
                        try await backend.currentChanges(of: name, where: field, isOneOf: $0, visibility: visibility, versions: versions, limit: limit)
                    }
                    continue
                }
                let shown = try await read(name, where: field, isOneOf: values, visibility)
                if asked { moved += shown.filter { versions.contains($0.sequence) } }
                // A child of a row the reader cannot read inherits that: only the rows shown lead on.
                let ids = shown.compactMap { scalarText($0.id) }
                guard !ids.isEmpty else { continue }
                for child in children { next.append((child.collection, child.field, ids)) }
            }
            level = next
        }
        return moved
    }

    /// Whether `collection`, or a collection inheriting from it, is one of `names` (nil: all).
    private func reaches(_ collection: String, _ names: Set<String>?) -> Bool {
        guard let names, !names.contains(collection) else { return true }
        return rules.children(of: collection).contains { reaches($0.collection, names) }
    }

    /// Deletions, at the membership changes' latest `sequence`, for the rows `rowIDs` of `collection`
    /// and the rows that inherit from them that the reader may no longer read; and the deletions after
    /// `since` (the reader's cursor) of rows that were under it, which the reader's rules no
    /// longer show it (a card deleted, or moved away, before the reader left the board).
    private func moveOut(_ collection: String, _ rowIDs: [String], at sequence: Int, after since: Int, in names: Set<String>?) async throws -> [SyncChange] {
        var moved: [SyncChange] = []
        var level: [(collection: String, field: String, values: [String])] = [(collection, "id", rowIDs)]
        while !level.isEmpty {
            var next: [(collection: String, field: String, values: [String])] = []
            for (name, field, values) in level {
                let all = try await read(name, where: field, isOneOf: values, .open)
                // All at once: each read scans the window's tombstones, whatever the values.
                let gone = values.isEmpty ? [] : try await backend.deletions(of: name, where: field, isOneOf: values, after: since)
                if names?.contains(name) ?? true {
                    let still = Set(try await read(name, where: field, isOneOf: values, visibility).map { RowKey($0) })
                    for change in all where !still.contains(RowKey(change)) {
                        moved.append(SyncChange(sequence: sequence, collection: name, id: change.id, record: nil))
                    }
                    // A departed row lives on elsewhere: only if the reader cannot read it there.
                    let goneIDs = gone.compactMap { scalarText($0.id) }
                    let readable = Set(try await read(name, where: "id", isOneOf: goneIDs, visibility).map { RowKey($0) })
                    moved += gone.filter { !readable.contains(RowKey($0)) }
                }
                let ids = (all + gone).compactMap { scalarText($0.id) }
                guard !ids.isEmpty else { continue }
                for child in rules.children(of: name) { next.append((child.collection, child.field, ids)) }
            }
            level = next
        }
        return moved
    }

    private func read(_ collection: String, where field: String, isOneOf values: [String], _ visibility: Visibility) async throws -> [SyncChange] {
        try await inChunks(values) { try await backend.currentChanges(of: collection, where: field, isOneOf: $0, visibility: visibility) }
    }

    /// `read` of each ``chunk`` of `values`, together.
    private func inChunks(_ values: [String], _ read: ([String]) async throws -> [SyncChange]) async throws -> [SyncChange] {
        var found: [SyncChange] = []
        var start = 0
        while start < values.count {
            let end = min(start + Self.chunk, values.count)
            found += try await read(Array(values[start..<end]))
            start = end
        }
        return found
    }

    /// A row by collection and id bytes.
    struct RowKey: Hashable {
        let collection: String
        let id: ExactText

        init(_ change: SyncChange) {
            (collection, id) = (change.collection, ExactText(scalarText(change.id) ?? ""))
        }
    }
}

/// Rows of one collection leaving a reader's view, and the latest change that takes them away.
struct Leaving {
    var rows: [String] = []
    var sequence = 0

    mutating func add(_ row: String, at sequence: Int) {
        rows.append(row)
        self.sequence = max(self.sequence, sequence)
    }
}

/// Where a reader's feed stands in the rows moving in that did not fit in a page: the page
/// read after `since`, and the rows moving in sent up to version `after`. The cursor carries it
/// (`<seq>.<tag>.<mark>.<since>.<after>`); the feed goes on after `<seq>` once they are all sent.
struct PendingMoves: Sendable, Equatable {
    var since: Int
    var after: Int
}
