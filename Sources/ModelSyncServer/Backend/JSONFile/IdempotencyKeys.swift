import Foundation
import HTTPTypes
import ModelSyncJSON

/// The `Idempotency-Key` of writes: a repeated key gets the first answer and changes nothing.
///
/// Every write takes one (creates, updates and deletes alike), so that a client that never
/// heard the answer to a write can send it again and learn what happened: the unknown outcome
/// that offline sync must survive. A key is bound to its request (the collection, and the body,
/// the method and the id: ``ItemWrite/requestFingerprint``); the same key with another request
/// is a 422, as with Stripe. Only writes that succeeded are remembered: a refused one changed
/// nothing, and its retry is refused again or applied once.
///
/// Keys live in the bookkeeping (``Bookkeeping/idempotency``), saved with the data, so that a
/// record and the key that wrote it are saved by the same atomic file write: a crash cannot
/// keep one without the other. They are kept for ``retention`` and at most ``capacity`` of them
/// (the oldest go first). Keys are stored by their UTF-8 bytes (hex), so that two keys Swift
/// calls equal but whose bytes differ stay apart.
package enum IdempotencyKeys {
    package static let retention: TimeInterval = 24 * 60 * 60
    package static let capacity = 10_000
    package static let maximumLength = 255

    package enum Lookup {
        case unknown
        /// The first answer; its version is nil for a key remembered before versions were kept
        /// (the caller then reads the record's current one).
        case replay(ItemWrite.Result)
        case reusedForAnotherRequest
    }

    /// The request's key, if it sent one; throws on an unusable one.
    package static func key(in headers: HTTPFields) throws -> String? {
        guard let key = headers[.idempotencyKey] else { return nil }
        return try validated(key)
    }

    /// `key`, or a 400 for an unusable one: empty, longer than ``maximumLength`` bytes, or
    /// holding NUL (a batch's JSON can carry one; PostgreSQL's text cannot store it, and both
    /// backends must refuse the same keys).
    package static func validated(_ key: String) throws -> String {
        guard !key.isEmpty, key.utf8.count <= maximumLength, !key.utf8.contains(0) else {
            throw APIError.badRequest("Idempotency-Key must have 1 to \(maximumLength) bytes and no NUL")
        }
        return key
    }

    /// A key as it is stored: its bytes in hex.
    package static func storageKey(_ key: String) -> String {
        key.utf8.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }

    /// What a remembered key says about `request` (``ItemWrite/requestFingerprint``).
    package static func lookup(_ record: JSONValue, collection: String, request: JSONValue) -> Lookup {
        guard record["collection"] == .string(collection), record["request"] == request, let body = record["response"] else {
            return .reusedForAnotherRequest
        }
        // Keys remembered before updates and deletes took them are creates: 201.
        return .replay(ItemWrite.Result(status: record["status"]?.intValue ?? 201, body: body, version: record["version"]?.intValue, replayed: true))
    }

    package static func lookup(_ key: String, collection: String, request: JSONValue, in records: JSONObject, now: Date) -> Lookup {
        guard let record = records[key], !isExpired(record, now: now) else { return .unknown }
        return lookup(record, collection: collection, request: request)
    }

    /// The record kept for a key.
    package static func record(collection: String, request: JSONValue, result: ItemWrite.Result, at now: Date) -> JSONValue {
        var record = JSONValue.object(JSONObject())
        record["collection"] = .string(collection)
        record["request"] = request
        record["response"] = result.body
        record["status"] = .number(JSONNumber(result.status))
        if let version = result.version { record["version"] = .number(JSONNumber(version)) }
        record["at"] = .number(JSONNumber(Int64(now.timeIntervalSince1970)))
        return record
    }

    package static func remember(_ key: String, _ record: JSONValue, in records: inout JSONObject, now: Date) {
        // Insertion order is age order. Pruning rebuilds the object, so it runs only when the
        // oldest key expired or the capacity is reached, and then makes room for a tenth more:
        // a write costs O(1) on average, not O(keys).
        if records.count >= capacity || oldestIsExpired(records, now: now) {
            let kept = records.filter { !isExpired($0.value, now: now) }.suffix(capacity - capacity / 10 - 1)
            records = JSONObject(kept.map { ($0.key, $0.value) })
        }
        records[key] = record
    }

    /// In a function of its own, so that the iterator (which shares the object's storage) is
    /// gone before the object is appended to, which would otherwise copy it.
    private static func oldestIsExpired(_ records: JSONObject, now: Date) -> Bool {
        var members = records.makeIterator()
        return members.next().map { isExpired($0.value, now: now) } ?? false
    }

    private static func isExpired(_ record: JSONValue, now: Date) -> Bool {
        guard let at = record["at"]?.doubleValue else { return true }
        return now.timeIntervalSince1970 - at > retention
    }
}
