import Foundation
import ModelSyncJSON

/// One write to a collection: what `POST /posts`, `PUT`/`PATCH`/`DELETE /posts/1` and each
/// operation of `POST /_batch` do to the data and its bookkeeping.
///
/// Every check comes before any change, so a write that throws leaves the data as it was: a
/// batch goes on with its next operation on the same copy.
enum ItemWrite: Sendable {
    case create(collection: String, body: JSONObject, idempotencyKey: String?)
    case update(collection: String, id: String, body: JSONObject, merge: Bool)
    case delete(collection: String, id: String)

    /// What a write answers.
    struct Result: Sendable {
        var status: Int
        var body: JSONValue
        var version: Int?
        var replayed = false
    }
}
