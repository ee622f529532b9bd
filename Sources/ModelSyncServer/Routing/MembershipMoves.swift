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

    /// Nil when nothing can move: no rules with members, an anonymous reader, or an admin (who
    /// reads every row).
    init?(backend: any ServerBackend, visibility: Visibility) {
        guard let rules = visibility.rules, let userID = visibility.caller.userID, !visibility.caller.isAdmin,
              !MembershipList.links(of: rules).isEmpty
        else { return nil }
        (self.rules, self.backend, self.visibility, self.userID) = (rules, backend, visibility, userID)
    }

    /// A page of the feed read after `since`, with the rows its reader's membership changes up
    /// to `page.next` moved in (their current records) and out (their deletions), each row once.
    /// Only changes after `mark` move rows: the rows up to the cursor were read after the
    /// earlier ones (a read from the start carries every row the reader may read, and the
    /// pages of a catch-up carry the mark of its start). `names` are the collections asked for
    /// (nil: all).
    func page(_ page: FeedPage, after since: Int, movesAfter mark: Int, in names: Set<String>?) async throws -> FeedPage {
        guard since > 0, page.next > max(since, mark) else { return page }
        // The granted rows by collection, in and out: each is weighed against the reader's
        // rules as they are now, so the order of the memberships' changes does not matter, and
        // one walk per collection serves every membership (5,000 boards: one read per level per
        // 500 boards, not several per board).
        var into: [String: [String]] = [:]
        var outOf: [String: (rows: [String], sequence: Int)] = [:]
        for change in try await membershipChanges(page, after: max(since, mark), in: names) {
            guard let (link, granting) = rules.membershipLink(of: change.collection) else { continue }
            if let record = change.record {
                guard isReader(record[link.user]), let rowID = record[link.field].flatMap(scalarText) else { continue }
                into[granting, default: []].append(rowID)
            } else {
                guard let fields = try await backend.tombstoneFields(in: change.collection, id: change.id, sequence: change.sequence),
                      isReader(fields[link.user]), let rowID = fields[link.field].flatMap(scalarText)
                else { continue }
                outOf[granting, default: ([], 0)].rows.append(rowID)
                outOf[granting]?.sequence = change.sequence
            }
        }
        var moved: [SyncChange] = []
        for (collection, rows) in into { moved += try await moveIn(collection, rows, in: names) }
        for (collection, out) in outOf { moved += try await moveOut(collection, out.rows, at: out.sequence, after: since, in: names) }
        guard !moved.isEmpty else { return page }
        var seen = Set(page.changes.map { RowKey($0) })
        var changes = page.changes
        for change in moved where seen.insert(RowKey(change)).inserted { changes.append(change) }
        changes.sort { $0.sequence < $1.sequence }
        return FeedPage(changes: changes, more: page.more, next: page.next)
    }

    /// Whether a membership's user field names the reader.
    private func isReader(_ user: JSONValue?) -> Bool {
        user.flatMap(scalarText)?.isIdentical(to: userID) ?? false
    }

    /// The changes of membership rows in `(since, page.next]`: from the page, and read apart for
    /// the membership collections the page was not asked for.
    private func membershipChanges(_ page: FeedPage, after since: Int, in names: Set<String>?) async throws -> [SyncChange] {
        let memberships = Set(MembershipList.links(of: rules).map(\.collection))
        var found = page.changes.filter { memberships.contains($0.collection) && $0.sequence > since }
        let unread = names.map { memberships.subtracting($0) } ?? []
        var cursor = since
        while !unread.isEmpty && cursor < page.next {
            let extra = try await backend.changes(after: .after(cursor), in: unread, limit: ServerRoutes.maximumFeedLimit, visibility: visibility)
            found += extra.changes.filter { $0.sequence <= page.next }
            guard extra.more, extra.next > cursor else { break }
            cursor = extra.next
        }
        return found.sorted { $0.sequence < $1.sequence }
    }

    /// The rows `rowIDs` of `collection` and the rows that inherit from them, those the reader may
    /// now read, at their current versions.
    private func moveIn(_ collection: String, _ rowIDs: [String], in names: Set<String>?) async throws -> [SyncChange] {
        var moved: [SyncChange] = []
        var level: [(collection: String, field: String, values: [String])] = [(collection, "id", rowIDs)]
        while !level.isEmpty {
            var next: [(collection: String, field: String, values: [String])] = []
            for (name, field, values) in level {
                let shown = try await read(name, where: field, isOneOf: values, visibility)
                if names?.contains(name) ?? true { moved += shown }
                // A child of a row the reader cannot read inherits that: only the rows shown lead on.
                let ids = shown.compactMap { scalarText($0.id) }
                guard !ids.isEmpty else { continue }
                for child in rules.children(of: name) { next.append((child.collection, child.field, ids)) }
            }
            level = next
        }
        return moved
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
                let gone = try await deletions(name, where: field, isOneOf: values, after: since)
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

    private func deletions(_ collection: String, where field: String, isOneOf values: [String], after since: Int) async throws -> [SyncChange] {
        try await inChunks(values) { try await backend.deletions(of: collection, where: field, isOneOf: $0, after: since) }
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
    private struct RowKey: Hashable {
        let collection: String
        let id: ExactText

        init(_ change: SyncChange) {
            (collection, id) = (change.collection, ExactText(scalarText(change.id) ?? ""))
        }
    }
}
