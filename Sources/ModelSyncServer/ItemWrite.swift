import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import NIOCore

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

    func apply(ifMatch: String?, to root: inout JSONObject, _ book: inout Bookkeeping, now: Date, limits: FeedLimits) throws -> Result {
        switch self {
        case .create(let name, let given, let idempotencyKey):
            if let idempotencyKey {
                switch IdempotencyKeys.lookup(idempotencyKey, collection: name, body: .object(given), in: book.idempotency, now: now) {
                case .replay(let first):
                    let version = first["id"].flatMap(scalarText).flatMap { book.version(collection: name, id: $0) }
                    return Result(status: 201, body: first, version: version, replayed: true)
                case .reusedForAnotherRequest: throw APIError(status: 422, message: "this Idempotency-Key was sent with another request")
                case .unknown: break
                }
            }
            var object = given
            var items = try Self.items(name, in: root)
            if let given = object["id"], given != .null {
                let id = try ServerResponder.normalizedID(given)
                guard let text = scalarText(id), !items.contains(where: { ServerResponder.id(of: $0) == text }) else {
                    throw APIError(status: 409, message: "\(name) already has an item with id \(given)")
                }
                object["id"] = id
            } else {
                let next = ServerResponder.nextFreeID(in: items)
                object["id"] = nil
                object = JSONObject([("id", JSONValue.number(JSONNumber(next)))] + object.map { ($0.key, $0.value) })
            }
            items.append(.object(object))
            root[name] = .array(items)
            let version = book.recordWrite(collection: name, record: .object(object))
            if let idempotencyKey {
                IdempotencyKeys.remember(idempotencyKey, collection: name, body: .object(given), response: .object(object), in: &book.idempotency, now: now)
            }
            return Result(status: 201, body: .object(object), version: version)
        case .update(let name, let id, let object, let merge):
            if let given = object["id"], try scalarText(ServerResponder.normalizedID(given)) != id {
                throw APIError.badRequest("the id in the body (\(given)) differs from the id in the URL (\(id))")
            }
            var items = try Self.items(name, in: root)
            guard let index = items.firstIndex(where: { ServerResponder.id(of: $0) == id }) else { throw ServerResponder.missing(name, id) }
            try ServerResponder.checkIfMatch(items[index], version: book.version(collection: name, id: id), ifMatch)
            var updated = merge ? items[index].objectValue ?? JSONObject() : JSONObject([("id", items[index]["id"] ?? .null)])
            for (key, value) in object where key != "id" { updated[key] = value }
            items[index] = .object(updated)
            root[name] = .array(items)
            return Result(status: 200, body: items[index], version: book.recordWrite(collection: name, record: items[index]))
        case .delete(let name, let id):
            var items = try Self.items(name, in: root)
            guard let index = items.firstIndex(where: { ServerResponder.id(of: $0) == id }) else { throw ServerResponder.missing(name, id) }
            try ServerResponder.checkIfMatch(items[index], version: book.version(collection: name, id: id), ifMatch)
            book.recordDelete(collection: name, id: items[index]["id"] ?? .null, now: now, limits: limits)
            items.remove(at: index)
            root[name] = .array(items)
            return Result(status: 200, body: [:], version: nil)
        }
    }

    static func items(_ name: String, in root: JSONObject) throws -> [JSONValue] {
        guard let items = root[name]?.arrayValue else { throw APIError.notFound("no collection named \(name)") }
        return items
    }
}

/// `POST /_batch`: several writes in one request, applied in order by one store write (one save
/// of the file), each answered on its own.
///
/// ```
/// {"operations": [{"method": "POST", "path": "/posts", "headers": {"Idempotency-Key": "k1"}, "body": {…}},
///                 {"method": "PATCH", "path": "/posts/3", "headers": {"If-Match": "\"17\""}, "body": {…}},
///                 {"method": "DELETE", "path": "/posts/4"}]}
/// → {"results": [{"status": 201, "etag": "\"18\"", "body": {…}}, {"status": 412, "etag": "\"20\"", "body": {"error": …, "current": …}}, …]}
/// ```
///
/// An operation that fails (404, 409, 412, 422…) does not stop the others; it changes nothing.
extension ServerResponder {
    static let maximumBatchOperations = 1_000

    func batch(_ body: JSONValue?) async throws -> Response {
        guard let operations = body?["operations"]?.arrayValue else { throw APIError.badRequest("a batch is {\"operations\": [...]}") }
        guard operations.count <= Self.maximumBatchOperations else {
            throw APIError(status: 413, message: "a batch holds at most \(Self.maximumBatchOperations) operations")
        }
        // Malformed operations are answered 400 in their place; the others still run.
        let parsed: [Swift.Result<(ItemWrite, String?), APIError>] = operations.map { operation in
            do { return .success(try Self.parse(operation)) } catch let error as APIError { return .failure(error) } catch {
                return .failure(APIError.badRequest("\(error)"))
            }
        }
        let (now, limits) = (Date(), options.feedLimits)
        let results: [JSONValue] = try await store.write { root, book in
            parsed.map { operation in
                do {
                    let (write, ifMatch) = try operation.get()
                    let result = try write.apply(ifMatch: ifMatch, to: &root, &book, now: now, limits: limits)
                    var answer: JSONValue = ["status": .number(JSONNumber(result.status)), "body": result.body]
                    if let version = result.version { answer["etag"] = .string(Bookkeeping.etag(version)) }
                    if result.replayed { answer["replayed"] = .bool(true) }
                    return answer
                } catch let error as APIError {
                    var body: JSONValue = ["error": .string(error.message)]
                    for (key, value) in error.details { body[key] = value }
                    var answer: JSONValue = ["status": .number(JSONNumber(error.status)), "body": body]
                    if let etag = error.etag { answer["etag"] = .string(etag) }
                    return answer
                } catch {
                    return ["status": 500, "body": ["error": .string("\(error)")]]
                }
            }
        }
        return Self.json(["results": .array(results)], status: .ok)
    }

    private static func parse(_ operation: JSONValue) throws -> (ItemWrite, String?) {
        guard let method = operation["method"]?.stringValue?.uppercased(), let path = operation["path"]?.stringValue else {
            throw APIError.badRequest("an operation needs a method and a path")
        }
        let segments = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let header = { (name: String) in
            operation["headers"]?.objectValue?.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value.stringValue
        }
        switch (method, segments.count) {
        case ("POST", 1):
            guard let body = operation["body"]?.objectValue else { throw notAnObject }
            var headers = HTTPFields()
            if let key = header("Idempotency-Key"), let name = IdempotencyKeys.header { headers[name] = key }
            return (.create(collection: segments[0], body: body, idempotencyKey: try IdempotencyKeys.key(in: headers)), nil)
        case ("PUT", 2), ("PATCH", 2):
            guard let body = operation["body"]?.objectValue else { throw notAnObject }
            return (.update(collection: segments[0], id: segments[1], body: body, merge: method == "PATCH"), header("If-Match"))
        case ("DELETE", 2):
            return (.delete(collection: segments[0], id: segments[1]), header("If-Match"))
        default:
            throw APIError.badRequest("a batch holds POST /<collection>, PUT, PATCH and DELETE /<collection>/<id>; got \(method) \(path)")
        }
    }
}
