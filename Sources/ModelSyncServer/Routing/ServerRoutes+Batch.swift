import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import ModelSyncProtocol
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
extension ServerRoutes {
    func batch(_ body: JSONValue?, context: SyncServerContext) async throws -> Response {
        let operations: [Swift.Result<SyncBatchOperation, SyncProtocolError>]
        do {
            operations = try SyncBatchRequest.operations(in: body ?? .null)
        } catch {
            throw APIError.badRequest("a batch is {\"operations\": [...]}: \(error)")
        }
        guard operations.count <= SyncBatchRequest.maximumOperations else {
            throw APIError(status: 413, message: "a batch holds at most \(SyncBatchRequest.maximumOperations) operations")
        }
        // Malformed operations are answered 400 in their place; the others still run, in one
        // transaction of the backend.
        let parsed: [Swift.Result<ItemOperation, APIError>] = operations.map { operation in
            do { return .success(try parse(try operation.get(), context: context)) } catch let error as APIError { return .failure(error) } catch {
                return .failure(APIError.badRequest("\(error)"))
            }
        }
        var outcomes = try await recordedWrite(parsed.compactMap { try? $0.get() }, inBatch: true).makeIterator()
        let results: [SyncBatchResult] = parsed.map { operation in
            switch operation.flatMap({ _ in outcomes.next() ?? .failure(APIError(status: 500, message: "the backend skipped an operation")) }) {
            case .success(let result):
                return SyncBatchResult(status: result.status, etag: result.version.map(versionETag), replayed: result.replayed, body: result.body)
            case .failure(let error):
                return SyncBatchResult(status: error.status.code, etag: error.etag, body: error.body.json)
            }
        }
        return Self.json(SyncBatchResponse(results: results).json, status: .ok)
    }

    /// An operation as the single request would make it, checked against the caller's access.
    private func parse(_ operation: SyncBatchOperation, context: SyncServerContext) throws -> ItemOperation {
        let segments = operation.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let key = try operation.header(SyncProtocol.idempotencyKeyHeader).map(IdempotencyKeys.validated)
        let ifMatch = operation.header("If-Match")
        switch (operation.method, segments.count) {
        case ("POST", 1):
            guard let body = operation.body?.objectValue else { throw APIError.notAnObject }
            return try creation(in: segments[0], body: body, context: context, idempotencyKey: key)
        case ("PUT", 2), ("PATCH", 2):
            guard let body = operation.body?.objectValue else { throw APIError.notAnObject }
            return ItemOperation(
                write: .update(collection: segments[0], id: segments[1], body: body, merge: operation.method == "PATCH"), ifMatch: ifMatch,
                idempotencyKey: key, access: access(to: segments[0], context))
        case ("DELETE", 2):
            return ItemOperation(
                write: .delete(collection: segments[0], id: segments[1]), ifMatch: ifMatch, idempotencyKey: key, access: access(to: segments[0], context))
        default:
            throw APIError.badRequest(
                "a batch holds POST /<collection>, PUT, PATCH and DELETE /<collection>/<id>; got \(operation.method) \(operation.path)")
        }
    }
}
