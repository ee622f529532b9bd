import Foundation
import ModelSyncCore
import ModelSyncJSON

// What every backend agrees on about records: ids, foreign keys, ETags and If-Match.

/// An id as it is stored: a whole number as an integer (`1.0` is id 1), a string as it is.
/// Anything else is a 400: ids are integers or strings.
package func normalizedID(_ given: JSONValue) throws -> JSONValue {
    switch given {
    case .string: return given
    case .number:
        if let integer = given.intValue { return .number(JSONNumber(integer)) }
    default: break
    }
    throw APIError.badRequest("an id must be an integer or a string, got \(given)")
}

/// A record's id as text (how routes and filters compare it).
package func recordID(of item: JSONValue) -> String? { item["id"].flatMap(scalarText) }

/// Whether `item`'s id is `id`, byte for byte: ids that Swift calls equal but whose bytes differ
/// (`é` precomposed and decomposed) are two records, as in PostgreSQL's `text`.
package func hasID(_ item: JSONValue, _ id: String) -> Bool {
    recordID(of: item)?.isIdentical(to: id) ?? false
}

/// Adds `_embed` children and `_expand` parents to `items`, the relations' records already read
/// and keyed by the id bytes they point at: children by their owner's id, parents by their id.
package func attachRelations(
    _ items: [JSONValue], children: [(key: String, byOwner: [ExactText: [JSONValue]])], parents: [(key: String, byID: [ExactText: JSONValue])]
) -> [JSONValue] {
    items.map { item in
        guard case .object(var object) = item else { return item }
        let id = recordID(of: item).map(ExactText.init)
        for child in children { object[child.key] = .array(id.flatMap { child.byOwner[$0] } ?? []) }
        for parent in parents {
            object[parent.key] = object[parent.key + "Id"].flatMap(scalarText).flatMap { parent.byID[ExactText($0)] } ?? .null
        }
        return .object(object)
    }
}

/// `posts` → `post`, `categories` → `category`.
package func singularName(_ name: String) -> String {
    if name.hasSuffix("ies") { return String(name.dropLast(3)) + "y" }
    return name.hasSuffix("s") ? String(name.dropLast()) : name
}

/// The field by which a child names its parent in `collection`: `posts` → `postId`.
package func foreignKey(of collection: String) -> String { singularName(collection) + "Id" }

/// A strong ETag of content that has no version: a hash of its bytes.
package func contentETag(_ bytes: [UInt8]) -> String {
    "\"" + stableHash(bytes) + "\""
}

/// FNV-1a (64 bits) of `bytes`, as 16 hexadecimal digits: the same in every process and
/// version, unlike `Hasher`.
package func stableHash(_ bytes: some Sequence<UInt8>) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}

/// The entity tags of an `If-None-Match` / `If-Match` list, as written (`*`, `W/"…"`, `"…"`).
package func etagList(_ header: String) -> [String] {
    header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
}

/// Whether an `If-None-Match` / `If-Match` list names `etag` (weak or strong, or `*`).
package func etagListMatches(_ header: String, _ etag: String) -> Bool {
    etagList(header).contains { tag in tag == "*" || tag == etag || tag == "W/" + etag }
}

/// `If-Match` on a write: 412 when the item changed since the client read it. The answer
/// carries the current record and its ETag, so that the client can resolve the conflict
/// without another request.
package func checkIfMatch(_ current: JSONValue, version: Int?, _ ifMatch: String?) throws {
    guard let match = ifMatch else { return }
    let currentTag = version.map(versionETag) ?? contentETag(current.jsonBytes())
    guard etagListMatches(match, currentTag) else {
        throw APIError(status: 412, message: "the resource changed since it was read (If-Match failed)", current: current, etag: currentTag)
    }
}

extension APIError {
    package static let notAnObject = APIError.badRequest("the body must be a JSON object")

    package static func missing(_ name: String, _ id: String) -> APIError { .notFound("\(name) has no item with id \(id)") }

    package static func cannotExpand(_ parent: String) -> APIError {
        .badRequest("cannot expand \(parent): no collection named \(parent)s")
    }

    package static func duplicateID(_ name: String, _ id: JSONValue) -> APIError {
        APIError(status: 409, message: "\(name) already has an item with id \(id)")
    }

    package static let idempotencyKeyReused = APIError(status: 422, message: "this Idempotency-Key was sent with another request")

    package static func idMismatch(_ given: JSONValue, _ id: String) -> APIError {
        .badRequest("the id in the body (\(given)) differs from the id in the URL (\(id))")
    }
}
