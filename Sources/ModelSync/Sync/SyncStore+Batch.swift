import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncRemote
import ModelSyncSQLite

/// Sending independent outbox entries in one request: `POST /_batch` (modelsync-server), each
/// operation answered on its own and handled exactly as if it had been sent alone.
extension SyncStore {
    /// Sends `entries` as one batch; a server without `/_batch` (404, 405) is remembered and
    /// gets them one by one.
    func sendBatch(_ entries: [OutboxRecord]) async -> [(OutboxRecord, Result<SendOutcome, any Error>)] {
        var prepared: [(entry: OutboxRecord, type: any SyncedModel.Type, request: RemoteRequest, options: RequestOptions)] = []
        var alone: [OutboxRecord] = []
        var operations: [SyncBatchOperation] = []
        for entry in entries {
            guard let type = state.withLock({ $0.models[entry.model] }),
                  let (request, options) = try? await requestOfAny(type, entry),
                  let operation = operation(request, options) else {
                alone.append(entry)
                continue
            }
            prepared.append((entry, type, request, options))
            operations.append(operation)
        }
        var outcomes: [(OutboxRecord, Result<SendOutcome, any Error>)] = []
        if prepared.count > 1 {
            let batch = RemoteRequest(
                method: .post, url: remote.baseURL.appendingPathComponent(SyncProtocol.Path.batch), body: SyncBatchRequest(operations: operations).json.jsonBytes())
            do {
                // Resending is safe: every operation carries its idempotency key.
                let response = try await remote.send(batch, options: RequestOptions(headers: Self.protocolHeaders, isIdempotent: true))
                let results: [SyncBatchResult]
                do {
                    results = try SyncBatchResponse(json: try JSONValue(parsing: response.body)).results
                } catch {
                    throw SyncError.unexpectedFeed(model: SyncProtocol.Path.batch, reason: "\(error)")
                }
                guard results.count == prepared.count else {
                    throw SyncError.unexpectedFeed(model: SyncProtocol.Path.batch, reason: "the batch's answer does not hold one result per operation")
                }
                state.withLock { $0.takesBatches = true }
                // Every applied operation is acknowledged in one transaction; the others
                // (conflicts, refusals) are handled one by one, as if sent alone.
                var acknowledged: [(OutboxRecord, Acknowledgement)] = []
                for (item, result) in zip(prepared, results) {
                    let answer = answer(result, to: item.request, item.type)
                    // A replay goes alone: its acknowledgement reads the record as it is now.
                    if case .success(let written) = answer, !written.replayed,
                       let acknowledgement = try? acknowledgementOfAny(item.type, item.entry, written) {
                        acknowledged.append((item.entry, acknowledgement))
                    } else {
                        outcomes.append((item.entry, await handleAny(item.type, item.entry, answer)))
                    }
                }
                do {
                    try await apply(acknowledged.map(\.1))
                    outcomes += acknowledged.map { ($0.0, .success(.acknowledged)) }
                } catch {
                    outcomes += acknowledged.map { ($0.0, .failure(error)) }
                }
            } catch let error as RemoteError where error.status == 404 || error.status == 405 {
                logger.debug("the server takes no batches; sending one request per entry", metadata: ["status": "\(error.status ?? 0)"])
                state.withLock { $0.takesBatches = false }
                alone += prepared.map(\.entry)
            } catch let error as RemoteError where [400, 403, 413, 422].contains(error.status ?? 0) {
                // The batch itself was refused (too large, say; a 403 from a proxy): its entries
                // go one by one, so that a refusal reaches only the entry it is about.
                logger.debug("the server refused a batch; sending its entries one by one", metadata: ["error": "\(error)"])
                alone += prepared.map(\.entry)
            } catch {
                // The whole batch failed (transport, 5xx): each entry keeps the failure.
                outcomes += prepared.map { ($0.entry, .failure(error)) }
            }
        } else {
            alone += prepared.map(\.entry)
        }
        for entry in alone { outcomes.append((entry, await sendAlone(entry))) }
        return outcomes
    }

    private func requestOfAny(_ type: any SyncedModel.Type, _ entry: OutboxRecord) async throws -> (RemoteRequest, RequestOptions) {
        func open<M: SyncedModel>(_ type: M.Type) async throws -> (RemoteRequest, RequestOptions) { try await request(M.self, for: entry) }
        return try await open(type)
    }

    private func acknowledgementOfAny(_ type: any SyncedModel.Type, _ entry: OutboxRecord, _ answer: WriteAnswer) throws -> Acknowledgement {
        func open<M: SyncedModel>(_ type: M.Type) throws -> Acknowledgement { try acknowledgement(M.self, entry, answer) }
        return try open(type)
    }

    private func handleAny(_ type: any SyncedModel.Type, _ entry: OutboxRecord, _ answer: Result<WriteAnswer, any Error>) async -> Result<SendOutcome, any Error> {
        func open<M: SyncedModel>(_ type: M.Type) async -> Result<SendOutcome, any Error> {
            do { return .success(try await handle(M.self, entry, answer)) } catch { return .failure(error) }
        }
        return await open(type)
    }

    /// The batch operation for a request, or nil when it cannot go in a batch: another host or
    /// base path (a resource with its own base URL), or query parameters the batch would drop.
    private func operation(_ request: RemoteRequest, _ options: RequestOptions) -> SyncBatchOperation? {
        let base = remote.baseURL.path.hasSuffix("/") ? String(remote.baseURL.path.dropLast()) : remote.baseURL.path
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false),
              request.url.scheme == remote.baseURL.scheme, request.url.host == remote.baseURL.host, request.url.port == remote.baseURL.port,
              components.query == nil, components.percentEncodedPath.hasPrefix(base + "/") else { return nil }
        var headers: [String: String] = [:]
        for field in options.headers { headers[field.name] = field.value }
        var body: JSONValue?
        if let bytes = request.body {
            guard let value = try? JSONValue(parsing: bytes) else { return nil }
            body = value
        }
        return SyncBatchOperation(
            method: request.method.rawValue, path: String(components.percentEncodedPath.dropFirst(base.count)), headers: headers, body: body)
    }

    /// One result of a batch as what the request alone would have come to: the write's answer,
    /// or the failure (as the HTTP error it would have been, so that its handling is the same).
    private func answer(_ result: SyncBatchResult, to request: RemoteRequest, _ type: any SyncedModel.Type) -> Result<WriteAnswer, any Error> {
        guard (200..<300).contains(result.status) else {
            var headers = HeaderFields()
            if let etag = result.etag { headers["ETag"] = etag }
            headers["Content-Type"] = "application/json"
            let response = RemoteResponse(status: result.status, headers: headers, body: result.body.jsonBytes())
            return .failure(RemoteError.status(HTTPStatusError(response: response, request: RequestSummary(request), model: type)))
        }
        func open<M: SyncedModel>(_ type: M.Type) -> WriteAnswer { WriteAnswer(result, M.self) }
        return .success(open(type))
    }
}
