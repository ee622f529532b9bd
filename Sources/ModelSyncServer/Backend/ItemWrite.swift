import Foundation
import ModelSyncCore
import ModelSyncJSON

/// One write to a collection: what `POST /posts`, `PUT`/`PATCH`/`DELETE /posts/1` and each
/// operation of `POST /_batch` do to the data and its bookkeeping.
///
/// Every check comes before any change, so a write that throws leaves the data as it was: a
/// batch goes on with its next operation on the same copy.
package enum ItemWrite: Sendable {
    case create(collection: String, body: JSONObject)
    case update(collection: String, id: String, body: JSONObject, merge: Bool)
    case delete(collection: String, id: String)

    /// What a write answers.
    package struct Result: Sendable {
        package var status: Int
        package var body: JSONValue
        package var version: Int?
        package var replayed = false

        package init(status: Int, body: JSONValue, version: Int? = nil, replayed: Bool = false) {
            self.status = status
            self.body = body
            self.version = version
            self.replayed = replayed
        }
    }
}

extension ItemWrite {
    /// The collection written to.
    package var collection: String {
        switch self {
        case .create(let collection, _), .update(let collection, _, _, _), .delete(let collection, _): collection
        }
    }

    /// The id written to (nil for a create).
    package var id: String? {
        switch self {
        case .create: nil
        case .update(_, let id, _, _), .delete(_, let id): id
        }
    }

    /// What an `Idempotency-Key` is bound to besides the collection: a create's body (as keys
    /// were stored when only creates took them), or the method, the id and the body.
    package var requestFingerprint: JSONValue {
        switch self {
        case .create(_, let body): .object(body)
        case .update(_, let id, let body, let merge): ["method": .string(merge ? "PATCH" : "PUT"), "id": .string(id), "body": .object(body)]
        case .delete(_, let id): ["method": "DELETE", "id": .string(id)]
        }
    }

    /// Throws unless the body names no id or the item's own (byte for byte).
    package static func checkBodyID(_ body: JSONObject, matches id: String) throws {
        if let given = body["id"], try !(scalarText(normalizedID(given))?.isIdentical(to: id) ?? false) { throw APIError.idMismatch(given, id) }
    }

    /// What an update makes of `current`: a merge (PATCH) sets the body's members, a replacement
    /// (PUT) keeps only the id (and the owner field `keeping`, under access rules, unless the
    /// body names one); the id never changes.
    package static func updated(_ current: JSONValue, with body: JSONObject, merge: Bool, keeping ownerField: String? = nil) -> JSONObject {
        var updated = merge ? current.objectValue ?? JSONObject() : JSONObject([("id", current["id"] ?? .null)])
        if !merge, let ownerField, let owner = current[ownerField] { updated[ownerField] = owner }
        for (key, value) in body where key != "id" { updated[key] = value }
        return updated
    }
}

