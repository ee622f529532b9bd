import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol

/// The JSON document as a backend: every read works on the current data in memory, every
/// write on a copy that replaces it once saved.
extension JSONFileBackend: ServerBackend {
    package func resource(named name: String) -> ResourceKind? {
        switch root[name] {
        case .array?: .collection
        case .object?: .singular
        default: nil
        }
    }

    package func resourceKinds() -> [String: ResourceKind] {
        var kinds: [String: ResourceKind] = [:]
        for (name, _) in root { kinds[name] = resource(named: name) }
        return kinds
    }

    /// Filters, sorts and embeds outside the actor, on the data as it was when the request
    /// came: the work a query costs is the caller's to choose (a pattern, a search over every
    /// row), and inside the actor it held up every other request and write. Off the cooperative
    /// pool too, and a bounded number at once (``CostlyReads``).
    package nonisolated func list(_ collection: String, _ request: ListRequest) async throws -> ListPage {
        let (root, modified) = await snapshot()
        let probe = listProbe
        return try await costlyReads.runOffPool { try Self.list(collection, request, in: root, modified: modified, probe: probe) }
    }

    /// The data and when it last changed, together (a copy of a value: writes replace it).
    private func snapshot() -> (root: JSONObject, modified: Date) {
        (root, lastModified)
    }

    private static func list(
        _ collection: String, _ request: ListRequest, in root: JSONObject, modified: Date, probe: (@Sendable () -> Void)?
    ) throws -> ListPage {
        var query = request.query
        let visibility = request.visibility
        let facts = RowFacts(InMemoryRowLookups(root))
        if let owner = request.owner {
            let parents = visibility.viewableRows(of: owner.collection)
            guard let parent = try items(owner.collection, in: root).first(where: { hasID($0, owner.id) }), try parents.admits(parent, facts) else {
                throw APIError.missing(owner.collection, owner.id)
            }
            query.require(foreignKey(of: owner.collection), equals: owner.id)
        }
        let candidates = try visible(try items(collection, in: root), visibility.rows(of: collection), facts)
        probe?()
        let matching = query.apply(to: candidates)
        let slice = try request.slice(count: matching.count)
        let page = try embed(
            Array(matching[slice.range]), of: collection, in: root, embeds: request.embeds, expands: request.expands, visibility: visibility, facts)
        return ListPage(items: page, total: matching.count, slice: slice, modified: modified)
    }

    package func item(_ collection: String, id: String, embeds: [String], expands: [String], visibility: Visibility) throws -> ItemRead {
        // A row the reader may not see is missing to it: its existence is not revealed.
        let facts = RowFacts(InMemoryRowLookups(root))
        guard let item = try Self.items(collection, in: root).first(where: { hasID($0, id) }), try visibility.viewableRows(of: collection).admits(item, facts) else {
            throw APIError.missing(collection, id)
        }
        let value = try Self.embed([item], of: collection, in: root, embeds: embeds, expands: expands, visibility: visibility, facts)[0]
        return ItemRead(value: value, version: book.version(collection: collection, id: id), modified: lastModified)
    }

    package func singular(_ name: String) -> (value: JSONValue, modified: Date)? {
        guard let value = root[name], value.objectValue != nil else { return nil }
        return (value, lastModified)
    }

    package func everything() -> (value: JSONValue, modified: Date) {
        (.object(root), lastModified)
    }

    package func write(_ operations: [ItemOperation]) async throws -> [Result<ItemWrite.Result, APIError>] {
        let (now, limits) = (Date(), feedLimits)
        return try await write({ root, book in
            operations.map { operation in
                do {
                    return .success(try operation.apply(to: &root, &book, now: now, limits: limits))
                } catch let error as APIError {
                    return .failure(error)
                } catch {
                    return .failure(APIError(status: 500, message: "\(error)"))
                }
            }
        }, changed: { results in
            // A replayed write changes nothing either.
            results.contains { if case .success(let result) = $0 { !result.replayed } else { false } }
        })
    }

    package func writeSingular(_ name: String, body: JSONObject, merge: Bool, ifMatch: String?) async throws -> JSONValue {
        try await write { root, _ in
            let current = root[name] ?? .null
            try checkIfMatch(current, version: nil, ifMatch)
            var updated = merge ? current.objectValue ?? JSONObject() : JSONObject()
            for (key, value) in body { updated[key] = value }
            root[name] = .object(updated)
            return .object(updated)
        }
    }

    package func changes(after cursor: FeedCursor, in collections: Set<String>?, limit: Int, visibility: Visibility) throws -> FeedPage {
        let since = try cursor.start(sequence: book.sequence, horizon: book.horizon)
        let (changes, more) = try book.changes(after: since, in: collections, limit: limit, visibility: visibility)
        return FeedPage(changes: changes, more: more, next: more ? changes.last?.sequence ?? since : max(book.sequence, since))
    }

    package func memberships(of userID: String, in links: [SharingRule.Membership]) -> [MembershipList.Entry] {
        let lookups = InMemoryRowLookups(root)
        return links.flatMap { link in
            ((try? lookups.memberships(in: link, userID: userID)) ?? []).map { MembershipList.Entry(link: link, rowID: $0.rowID, role: $0.role) }
        }
    }

    package func currentChanges(of collection: String, where field: String, isOneOf values: [String], visibility: Visibility) throws -> [SyncChange] {
        guard let stamps = book.versions[collection] else { return [] }
        let wanted = Set(values.map(ExactText.init))
        let matching = field == "id"
            ? wanted.compactMap { stamps[$0] }
            : stamps.values.filter { stamp in stamp.record[field].flatMap(scalarText).map { wanted.contains(ExactText($0)) } ?? false }
        let (rows, facts) = (visibility.rows(of: collection), RowFacts(InMemoryRowLookups(root)))
        return try matching.sorted { $0.version < $1.version }.compactMap { stamp in
            let change = SyncChange(sequence: stamp.version, collection: collection, id: stamp.record["id"] ?? .null, record: stamp.record, createdWith: stamp.createdWith)
            return try visibility.shown(change, rows: rows, facts)
        }
    }

    package func deletions(of collection: String, where field: String, isOneOf values: [String], after since: Int) -> [SyncChange] {
        let wanted = Set(values.map(ExactText.init))
        return book.tombstones(after: since).filter { stone in
            stone.collection == collection && (stone.fields?[field].flatMap(scalarText).map { wanted.contains(ExactText($0)) } ?? false)
        }.map { SyncChange(sequence: $0.sequence, collection: collection, id: $0.id, record: nil) }
    }

    package func tombstoneFields(in collection: String, id: JSONValue, sequence: Int) -> JSONObject? {
        // Ids compared by their bytes: `é` precomposed and decomposed are two rows.
        guard let text = scalarText(id) else { return nil }
        return book.tombstones(after: sequence - 1).prefix { $0.sequence == sequence }
            .last { $0.collection == collection && scalarText($0.id)?.isIdentical(to: text) == true }?.fields
    }

    package func close() async {
        closeSubscriptions()
        await finishSaving()
    }

    // MARK: Helpers

    /// Adds `_embed` children (by `<singular>Id`) and `_expand` parents (from `<name>s`).
    private static func embed(
        _ items: [JSONValue], of name: String, in root: JSONObject, embeds: [String], expands: [String], visibility: Visibility, _ facts: RowFacts
    ) throws -> [JSONValue] {
        guard !embeds.isEmpty || !expands.isEmpty else { return items }
        let key = foreignKey(of: name)
        // One pass over each relation's records, keyed by id bytes (not one per item).
        let children = try embeds.map { child in
            var byOwner: [ExactText: [JSONValue]] = [:]
            for record in try Self.visible(Self.items(child, in: root), visibility.rows(of: child), facts) {
                if let owner = record[key].flatMap(scalarText) { byOwner[ExactText(owner), default: []].append(record) }
            }
            return (key: child, byOwner: byOwner)
        }
        let parents = try expands.map { parent in
            let name = root[parent + "s"] != nil ? parent + "s" : parent
            guard let all = root[name]?.arrayValue else { throw APIError.cannotExpand(parent) }
            let records = try Self.visible(all, visibility.rows(of: name), facts)
            var byID: [ExactText: JSONValue] = [:]
            // The first record with an id wins, as a search from the start would find.
            for record in records { if let id = recordID(of: record), byID[ExactText(id)] == nil { byID[ExactText(id)] = record } }
            return (key: parent, byID: byID)
        }
        return attachRelations(items, children: children, parents: parents)
    }

    /// The rows of `items` that `rows` admits.
    private static func visible(_ items: [JSONValue], _ rows: RowFilter, _ facts: RowFacts) throws -> [JSONValue] {
        rows == .everything ? items : try items.filter { try rows.admits($0, facts) }
    }

    package static func items(_ name: String, in root: JSONObject) throws -> [JSONValue] {
        guard let items = root[name]?.arrayValue else { throw APIError.notFound("no collection named \(name)") }
        return items
    }
}
