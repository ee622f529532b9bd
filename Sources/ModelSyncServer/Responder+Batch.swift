import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import NIOCore

/// `POST /_batch`: several writes in one request, applied in order in one transaction of the
/// backend (one save of a JSON file), each answered on its own.
///
/// ```
/// {"operations": [{"method": "POST", "path": "/posts", "headers": {"Idempotency-Key": "k1"}, "body": {…}},
///                 {"method": "PATCH", "path": "/posts/3", "headers": {"If-Match": "\"17\"", "Idempotency-Key": "k2"}, "body": {…}},
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
        // Malformed operations are answered 400 in their place; the others still run, in one
        // transaction of the backend.
        let parsed: [Swift.Result<ItemOperation, APIError>] = operations.map { operation in
            do { return .success(try Self.parse(operation)) } catch let error as APIError { return .failure(error) } catch {
                return .failure(APIError.badRequest("\(error)"))
            }
        }
        var outcomes = try await backend.write(parsed.compactMap { try? $0.get() }).makeIterator()
        let results: [JSONValue] = parsed.map { operation in
            switch operation.flatMap({ _ in outcomes.next() ?? .failure(APIError(status: 500, message: "the backend skipped an operation")) }) {
            case .success(let result):
                var answer: JSONValue = ["status": .number(JSONNumber(result.status)), "body": result.body]
                if let version = result.version { answer["etag"] = .string(versionETag(version)) }
                if result.replayed { answer["replayed"] = .bool(true) }
                return answer
            case .failure(let error):
                var body: JSONValue = ["error": .string(error.message)]
                for (key, value) in error.details { body[key] = value }
                var answer: JSONValue = ["status": .number(JSONNumber(error.status)), "body": body]
                if let etag = error.etag { answer["etag"] = .string(etag) }
                return answer
            }
        }
        return Self.json(["results": .array(results)], status: .ok)
    }

    private static func parse(_ operation: JSONValue) throws -> ItemOperation {
        guard let method = operation["method"]?.stringValue?.uppercased(), let path = operation["path"]?.stringValue else {
            throw APIError.badRequest("an operation needs a method and a path")
        }
        let segments = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let header = { (name: String) in
            operation["headers"]?.objectValue?.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value.stringValue
        }
        let key = try header("Idempotency-Key").map(IdempotencyKeys.validated)
        switch (method, segments.count) {
        case ("POST", 1):
            guard let body = operation["body"]?.objectValue else { throw APIError.notAnObject }
            return ItemOperation(write: .create(collection: segments[0], body: body), idempotencyKey: key)
        case ("PUT", 2), ("PATCH", 2):
            guard let body = operation["body"]?.objectValue else { throw APIError.notAnObject }
            return ItemOperation(
                write: .update(collection: segments[0], id: segments[1], body: body, merge: method == "PATCH"), ifMatch: header("If-Match"),
                idempotencyKey: key)
        case ("DELETE", 2):
            return ItemOperation(write: .delete(collection: segments[0], id: segments[1]), ifMatch: header("If-Match"), idempotencyKey: key)
        default:
            throw APIError.badRequest("a batch holds POST /<collection>, PUT, PATCH and DELETE /<collection>/<id>; got \(method) \(path)")
        }
    }
}
