import Foundation
import HTTPTypes
import ModelSyncJSON

/// The `Idempotency-Key` of creates: a repeated key gets the first response and creates
/// nothing.
///
/// Keys live in the bookkeeping (``Bookkeeping/idempotency``), saved with the data, so that a
/// record and the key that created it are saved by the same atomic file write: a crash cannot
/// keep one without the other. They are
/// kept for ``retention`` and at most ``capacity`` of them (the oldest go first). Keys are stored
/// by their UTF-8 bytes (hex), so that two keys Swift calls equal but whose bytes differ stay
/// apart.
enum IdempotencyKeys {
    static let retention: TimeInterval = 24 * 60 * 60
    static let capacity = 10_000
    static let maximumLength = 255
    static let header = HTTPField.Name("Idempotency-Key")
    /// Marks a replayed first response.
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")

    enum Lookup {
        case unknown
        case replay(JSONValue)
        case reusedForAnotherRequest
    }

    /// The request's key, if it sent one; throws on an unusable one.
    static func key(in headers: HTTPFields) throws -> String? {
        guard let header, let key = headers[header] else { return nil }
        guard !key.isEmpty, key.utf8.count <= maximumLength else {
            throw APIError.badRequest("Idempotency-Key must have 1 to \(maximumLength) bytes")
        }
        return key.utf8.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }

    static func lookup(_ key: String, collection: String, body: JSONValue, in records: JSONObject, now: Date) -> Lookup {
        guard let record = records[key], !isExpired(record, now: now) else { return .unknown }
        guard record["collection"] == .string(collection), record["request"] == body, let response = record["response"] else {
            return .reusedForAnotherRequest
        }
        return .replay(response)
    }

    static func remember(_ key: String, collection: String, body: JSONValue, response: JSONValue, in records: inout JSONObject, now: Date) {
        // Insertion order is age order. Pruning rebuilds the object, so it runs only when the
        // oldest key expired or the capacity is reached, and then makes room for a tenth more:
        // a create costs O(1) on average, not O(keys).
        if records.count >= capacity || oldestIsExpired(records, now: now) {
            let kept = records.filter { !isExpired($0.value, now: now) }.suffix(capacity - capacity / 10 - 1)
            records = JSONObject(kept.map { ($0.key, $0.value) })
        }
        var record = JSONValue.object(JSONObject())
        record["collection"] = .string(collection)
        record["request"] = body
        record["response"] = response
        record["at"] = .number(JSONNumber(Int64(now.timeIntervalSince1970)))
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
