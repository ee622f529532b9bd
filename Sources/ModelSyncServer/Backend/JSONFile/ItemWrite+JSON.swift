import Foundation
import ModelSyncJSON

/// How the JSON document backend applies a write to the data and its bookkeeping.
///
/// Every check comes before any change, so a write that throws leaves the data as it was: a
/// batch goes on with its next operation on the same copy.
extension ItemOperation {
    /// Applies the write, or replays the first answer of its `Idempotency-Key`.
    package func apply(to root: inout JSONObject, _ book: inout Bookkeeping, now: Date, limits: FeedLimits) throws -> ItemWrite.Result {
        let collection = write.collection
        guard let idempotencyKey, let scope = idempotencyScope else { return try write.apply(self, to: &root, &book, now: now, limits: limits) }
        let request = write.requestFingerprint
        let storageKey = IdempotencyKeys.storageKey(scope)
        switch IdempotencyKeys.lookup(storageKey, collection: collection, request: request, in: book.idempotency, now: now) {
        case .replay(var first):
            if first.version == nil, first.status == 201 {
                first.version = first.body["id"].flatMap(scalarText).flatMap { book.version(collection: collection, id: $0) }
            }
            return first
        case .reusedForAnotherRequest: throw APIError.idempotencyKeyReused
        case .unknown: break
        }
        let result = try write.apply(self, createdWith: idempotencyKey, to: &root, &book, now: now, limits: limits)
        let record = IdempotencyKeys.record(collection: collection, request: request, result: result, at: now)
        IdempotencyKeys.remember(storageKey, record, in: &book.idempotency, now: now)
        return result
    }
}

extension ItemWrite {
    /// Applies the write of `operation` (its `If-Match` and access checked); a create records
    /// `createdWith`, its `Idempotency-Key`, for the feed.
    package func apply(
        _ operation: ItemOperation, createdWith: String? = nil, to root: inout JSONObject, _ book: inout Bookkeeping, now: Date, limits: FeedLimits
    ) throws -> Result {
        let ifMatch = operation.ifMatch
        switch self {
        case .create(let name, let given):
            var object = given
            var items = try JSONFileBackend.items(name, in: root)
            if let given = object["id"], given != .null {
                let id = try normalizedID(given)
                guard let text = scalarText(id) else { throw APIError.duplicateID(name, given) }
                if let current = items.first(where: { hasID($0, text) }) { throw operation.duplicateID(current, given, RowFacts(InMemoryRowLookups(root))) }
                object["id"] = id
            } else {
                let next = Self.nextFreeID(in: items, above: book.deletedIDs[name] ?? 0)
                object["id"] = nil
                object = JSONObject([("id", JSONValue.number(JSONNumber(next)))] + object.map { ($0.key, $0.value) })
            }
            try operation.checkCreate(object, RowFacts(InMemoryRowLookups(root)))
            items.append(.object(object))
            root[name] = .array(items)
            let version = book.recordWrite(collection: name, record: .object(object), createdWith: createdWith)
            return Result(status: 201, body: .object(object), version: version)
        case .update(let name, let id, let object, let merge):
            try Self.checkBodyID(object, matches: id)
            try operation.checkSignedIn()
            var items = try JSONFileBackend.items(name, in: root)
            guard let index = items.firstIndex(where: { hasID($0, id) }) else { throw APIError.missing(name, id) }
            let updated = Self.updated(items[index], with: object, merge: merge, keeping: operation.access?.ownerField)
            try operation.checkAccess(to: items[index], replacement: updated, RowFacts(InMemoryRowLookups(root)))
            try checkIfMatch(items[index], version: book.version(collection: name, id: id), ifMatch)
            let formerOwner = operation.departure(from: items[index], to: updated)
            let formerFields = operation.sharedDeparture(from: items[index], to: updated, version: book.version(collection: name, id: id))
            items[index] = .object(updated)
            root[name] = .array(items)
            let version = book.recordWrite(collection: name, record: items[index])
            if formerOwner != nil || formerFields != nil {
                book.recordDeparture(collection: name, id: items[index]["id"] ?? .null, formerOwner: formerOwner, fields: formerFields, now: now, limits: limits)
            }
            return Result(status: 200, body: items[index], version: version)
        case .delete(let name, let id):
            try operation.checkSignedIn()
            var items = try JSONFileBackend.items(name, in: root)
            guard let index = items.firstIndex(where: { hasID($0, id) }) else { throw APIError.missing(name, id) }
            try operation.checkAccess(to: items[index], replacement: nil, RowFacts(InMemoryRowLookups(root)))
            try checkIfMatch(items[index], version: book.version(collection: name, id: id), ifMatch)
            let owner = operation.access?.ownerField.flatMap { items[index][$0] }.flatMap(scalarText)
            book.recordDelete(collection: name, id: items[index]["id"] ?? .null, owner: owner, fields: operation.sharedFields(of: items[index]), now: now, limits: limits)
            // An account's record gone: its credentials and refresh tokens go in the same write.
            if operation.access?.holdsAccounts == true, let userID = recordID(of: items[index]) { book.endAccount(userID: userID) }
            items.remove(at: index)
            root[name] = .array(items)
            return Result(status: 200, body: [:], version: nil)
        }
    }

    /// The id for a new item: one more than the highest integer id, held now or deleted
    /// (`deleted`: ids are never given twice, so that a client's pending edit of a deleted record
    /// cannot land on a new one), or, when that is `Int.max` (data already stored can hold it),
    /// the smallest free positive integer. Never traps.
    package static func nextFreeID(in items: [JSONValue], above deleted: Int = 0) -> Int {
        let highest = max(items.lazy.compactMap { $0["id"]?.intValue }.max() ?? 0, deleted)
        if highest < Int.max {
            // Free unless a string id spells it: one pass, no set built.
            let candidate = max(highest, 0) + 1
            let text = String(candidate)
            if !items.contains(where: { $0["id"]?.stringValue == text }) { return candidate }
        }
        let taken = Set(items.compactMap(recordID(of:)))
        var candidate = highest < Int.max ? max(highest, 0) + 1 : 1
        // Ends within `items.count + 1` steps: each step skips an id some item holds.
        while taken.contains(String(candidate)) {
            candidate = candidate == Int.max ? 1 : candidate + 1
        }
        return candidate
    }
}
