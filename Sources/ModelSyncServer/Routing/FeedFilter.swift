import ModelSyncJSON
import ModelSyncProtocol

/// A collection feed's filter, for a client that holds part of a collection
/// (`GET /cards?_since=<cursor>&boardId=5`): the list's filters (a field's values, `_gte` and
/// its kin, `_like`, `q`), applied to each change's record after the reader's access rules.
///
/// A record that matches is sent as it is. One that does not may have matched when the reader
/// last saw it, so it is sent as a departure (a deletion with `"left": true`): unless its change
/// is no later than the catch-up's mark, when every page before it was read after the change and
/// so never carried the record. A first sync therefore carries only what matches. Deletions are
/// sent as they are: a tombstone no longer holds the fields the filter reads.
struct FeedFilter: Sendable {
    let query: ListQuery

    /// The filter in `parameters`; nil when none filters.
    init?(_ parameters: QueryParameters) throws {
        let query = try ListQuery(parameters)
        guard query.filters else { return nil }
        self.query = query
    }

    /// `changes` as the filtered feed sends them; `mark` is the catch-up's
    /// (``ServerRoutes/catchUpMark(_:since:_:)``).
    func apply(to changes: [SyncChange], departuresAfter mark: Int) -> [SyncChange] {
        let matches = query.matcher()
        return changes.compactMap { change in
            guard let record = change.record, !matches(record) else { return change }
            guard change.sequence > mark else { return nil }
            return SyncChange(sequence: change.sequence, collection: change.collection, id: change.id, record: nil, leftFilter: true)
        }
    }
}
