import Foundation
import HTTPTypes
import Hummingbird
import ModelSyncJSON
import NIOCore
import _NIOFileSystem

// The admin routes behind the console beyond the documented API (`/_admin/…`): collections with
// their row counts, the open change streams, the latest writes' answers, and (SQLite) a backup.
// Admins only under access rules; without rules, only this machine, as the console itself.
extension ServerRoutes {
    /// Refuses a request to an admin route (`/_admin/…`, `/_metrics`) that is not an admin's:
    /// under access rules 401 anonymous and 403 for a non-admin; without rules, the console's
    /// own policy (``ConsolePolicy``): a client on this machine naming this machine only, and
    /// not through a proxy that says it forwarded the request.
    func requireAdminAccess(_ request: Request, _ context: SyncServerContext) throws {
        if options.access != nil {
            try Self.requireAdmin(context.caller)
        } else if !ConsolePolicy.admits(
            accessRules: false, clientAddress: context.remoteAddress?.ipAddress, host: request.head.authority, forwarded: ConsolePolicy.isForwarded(request.headers))
        {
            throw ConsolePolicy.refusal
        }
    }

    /// `/_admin/collections`, `/_admin/streams`, `/_admin/writes` and `/_admin/backup`.
    var adminRoutes: [Route] {
        let collections: Handler = { request, context in
            try requireAdminAccess(request, context)
            return Self.headless(Self.json(try await collectionCounts(context), status: .ok), request)
        }
        let streams: Handler = { request, context in
            try requireAdminAccess(request, context)
            return Self.headless(Self.json(["streams": .array(activity.openStreams.map(\.json))], status: .ok), request)
        }
        let writes: Handler = { request, context in
            try requireAdminAccess(request, context)
            let answer: JSONValue = ["capacity": .number(JSONNumber(activity.capacity)), "writes": .array(activity.recentWrites.map(\.json))]
            return Self.headless(Self.json(answer, status: .ok), request)
        }
        return [
            Route(path: "/_admin/collections", handlers: [.get: collections, .head: collections]),
            Route(path: "/_admin/streams", handlers: [.get: streams, .head: streams]),
            Route(path: "/_admin/writes", handlers: [.get: writes, .head: writes]),
            Route(path: "/_admin/backup", handlers: [.get: { request, context in
                try requireAdminAccess(request, context)
                return try await backup(context)
            }]),
        ]
    }

    /// `{"collections": [{"name": "posts", "kind": "collection", "rows": 5}, …]}`: each
    /// collection's rows that the caller sees, counted by the backend (SQL `count(*)` on SQLite
    /// and PostgreSQL) rather than read, and the singular resources (`rows` null), by name.
    private func collectionCounts(_ context: SyncServerContext) async throws -> JSONValue {
        let visibility = visibility(context)
        // A slice of no rows: the list answers its total alone.
        let parameters = QueryParameters("_limit=0")
        let query = try ListQuery(parameters)
        var entries: [JSONValue] = []
        for (name, kind) in try await backend.resourceKinds().sorted(by: { $0.key < $1.key }) {
            guard kind == .collection else {
                entries.append(["name": .string(name), "kind": "singular", "rows": .null])
                continue
            }
            let request = ListRequest(
                query: query, parameters: parameters, defaultPageSize: options.defaultPageSize, embeds: [], expands: [], owner: nil, visibility: visibility)
            do {
                let rows = try await backend.list(name, request).total
                entries.append(["name": .string(name), "kind": "collection", "rows": .number(JSONNumber(rows))])
            } catch let error as APIError where error.status == .notFound {
                continue  // gone since the names were read
            }
        }
        return ["collections": .array(entries)]
    }

    /// `GET /_admin/backup`: a consistent copy of the data as a file the server serves again
    /// (SQLite: `VACUUM INTO` a temporary file beside the data), streamed to the client, then
    /// deleted. 404 on a backend that makes none.
    ///
    /// One at a time: each copy is as large as the data, on the data's own disk; another request
    /// meanwhile is answered 503 with `Retry-After`. The copy is opened and its name removed
    /// before its first byte is sent, so that it goes when the download ends however it ends (a
    /// client that stops reading holds only an open file, until its connection closes).
    private func backup(_ context: SyncServerContext) async throws -> Response {
        guard let place = backupDownloads.open(for: "backup", limit: 1) else {
            var error = APIError(status: .serviceUnavailable, message: "a backup is being made or sent; try again once it is done")
            error.headers[.retryAfter] = "10"
            throw error
        }
        guard let file = try await backend.backupFile() else {
            throw APIError.notFound("this server's backend makes no backups to download: only the SQLite backend does")
        }
        let path = FilePath(file.path)
        let size: Int
        do {
            guard let info = try await FileSystem.shared.info(forFileAt: path) else { throw APIError(status: .internalServerError, message: "the backup's copy is missing") }
            size = Int(info.size)
        } catch {
            _ = try? await FileSystem.shared.removeItem(at: path)
            throw error
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/vnd.sqlite3"
        headers[.cacheControl] = "no-store"
        headers[.contentLength] = String(size)
        if let disposition = HTTPField.Name("Content-Disposition") {
            let stamp = Date().formatted(Date.ISO8601FormatStyle().year().month().day().time(includingFractionalSeconds: false).timeSeparator(.omitted))
            headers[disposition] = #"attachment; filename="modelsync-backup-\#(stamp).sqlite""#
        }
        // A body never written leaves the copy named: the next start removes it
        // (``SQLiteBackend``'s sweep of copies left beside the file).
        return Response(status: .ok, headers: headers, body: ResponseBody(contentLength: size) { writer in
            // Held until the body ends (or is dropped unwritten): the one backup at a time.
            defer { withExtendedLifetime(place) {} }
            try await FileSystem.shared.withFileHandle(forReadingAt: path) { handle in
                try await FileSystem.shared.removeItem(at: path)
                for try await chunk in handle.readChunks(in: 0..<Int64(size), chunkLength: .kibibytes(128)) {
                    try await writer.write(chunk)
                }
            }
            try await writer.finish(nil)
        })
    }

    /// The backend's write of `operations`, each answer kept for the console's Sync view
    /// (``SyncActivity``); a write that fails whole is kept as its error for each operation.
    func recordedWrite(_ operations: [ItemOperation], inBatch: Bool) async throws -> [Result<ItemWrite.Result, APIError>] {
        do {
            let outcomes = try await backend.write(operations)
            activity.record(operations, outcomes, inBatch: inBatch)
            return outcomes
        } catch {
            let failure = error as? APIError ?? APIError(status: .internalServerError, message: "the write failed")
            activity.record(operations, operations.map { _ in .failure(failure) }, inBatch: inBatch)
            throw error
        }
    }
}

extension OpenAPIDocument {
    /// The admin routes (``ServerRoutes/adminRoutes``) and `PUT /_accounts/{id}/password`.
    static func addAdminPaths(to paths: inout JSONObject) {
        func refusals(_ codes: [String]) -> JSONObject {
            let names = ["400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "405": "MethodNotAllowed", "413": "ContentTooLarge"]
            var responses = JSONObject()
            for code in codes { responses[code] = ["$ref": .string("#/components/responses/" + (names[code] ?? "BadRequest"))] }
            return responses
        }
        func read(_ id: String, _ summary: String, schema: JSONValue) -> JSONValue {
            var responses = refusals(["401", "403"])
            responses["200"] = ["description": "the answer", "content": ["application/json": ["schema": schema]]]
            return ["operationId": .string(id), "summary": .string(summary), "responses": .object(responses)]
        }
        func head(_ id: String) -> JSONValue {
            var responses = refusals(["401", "403"])
            responses["200"] = ["description": "the headers"]
            return ["operationId": .string(id), "summary": "The headers GET answers", "responses": .object(responses)]
        }
        func preflight(_ id: String) -> JSONValue {
            ["operationId": .string(id), "summary": "CORS preflight", "responses": ["204": ["description": "the CORS headers"], "401": ["$ref": "#/components/responses/Unauthorized"]]]
        }
        let text: JSONValue = ["type": "string"]
        let optionalText: JSONValue = ["type": ["string", "null"]]
        let time: JSONValue = ["type": "string", "format": "date-time"]
        let admin = " Admins only under access rules; without rules, only a client on this machine (loopback, not through a proxy that sends Forwarded or X-Forwarded-For), as the console."
        let collection: JSONValue = [
            "type": "object", "required": ["name", "kind", "rows"],
            "properties": ["name": text, "kind": ["enum": ["collection", "singular"]], "rows": ["type": ["integer", "null"], "minimum": 0]],
        ]
        let stream: JSONValue = [
            "type": "object", "required": ["user", "role", "address", "opened", "collections"],
            "properties": ["user": optionalText, "role": optionalText, "address": text, "opened": time, "collections": ["type": ["array", "null"], "items": text]],
        ]
        let write: JSONValue = [
            "type": "object", "required": ["at", "user", "method", "collection", "id", "status", "replayed", "conflict", "batch"],
            "properties": [
                "at": time, "user": optionalText, "method": ["enum": ["POST", "PUT", "PATCH", "DELETE"]], "collection": text, "id": optionalText,
                "status": ["type": "integer"], "replayed": ["type": "boolean"], "conflict": ["type": "boolean"], "batch": ["type": "boolean"],
            ],
        ]
        paths["/_admin/collections"] = [
            "get": read(
                "readCollectionCounts", "Each collection with its row count (counted, not read), and the singular resources." + admin,
                schema: ["type": "object", "required": ["collections"], "properties": ["collections": ["type": "array", "items": collection]]]),
            "head": head("headCollectionCounts"), "options": preflight("preflightCollectionCounts"),
        ]
        paths["/_admin/streams"] = [
            "get": read(
                "readOpenStreams", "The change streams open on this server process: whose, since when, which collections." + admin,
                schema: ["type": "object", "required": ["streams"], "properties": ["streams": ["type": "array", "items": stream]]]),
            "head": head("headOpenStreams"), "options": preflight("preflightOpenStreams"),
        ]
        paths["/_admin/writes"] = [
            "get": read(
                "readRecentWrites",
                "The answers of the latest writes on this server process, newest first (at most capacity): requests and batch operations, replays of an Idempotency-Key, conflicts (409, 412)." + admin,
                schema: ["type": "object", "required": ["capacity", "writes"], "properties": ["capacity": ["type": "integer", "minimum": 1], "writes": ["type": "array", "items": write]]]),
            "head": head("headRecentWrites"), "options": preflight("preflightRecentWrites"),
        ]
        var backupResponses = refusals(["401", "403", "404"])
        backupResponses["200"] = ["description": "a SQLite database file, one consistent snapshot", "content": ["application/vnd.sqlite3": ["schema": ["type": "string", "format": "binary"]]]]
        backupResponses["503"] = [
            "description": "a backup is being made or sent (one at a time): try again after Retry-After seconds",
            "headers": ["Retry-After": ["description": "Seconds to wait", "schema": ["type": "string"]]],
            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
        ]
        paths["/_admin/backup"] = [
            "get": [
                "operationId": "downloadBackup", "x-modelsync-requires": "sqlite",
                "summary": .string("A backup of the data to download (VACUUM INTO, then streamed and deleted), one at a time: the SQLite backend only, 404 on the others." + admin),
                "responses": .object(backupResponses),
            ],
            "options": preflight("preflightBackup"),
        ]
        guard var password = paths["/_accounts/{id}/password"]?.objectValue else { return }
        var resetResponses = refusals(["400", "401", "403", "404", "405", "413"])
        resetResponses["204"] = ["description": "the password is set and the account's sessions ended"]
        password["put"] = [
            "operationId": "resetPassword", "x-modelsync-requires": "accounts",
            "summary": "Set an account's password without the current one (admins only): every session of the account ends (access tokens from their next request, refresh tokens at once)",
            "requestBody": [
                "required": true,
                "content": ["application/json": ["schema": [
                    "type": "object", "required": ["newPassword"], "properties": ["newPassword": ["type": "string", "minLength": 1]],
                ]]],
            ],
            "responses": .object(resetResponses),
        ]
        paths["/_accounts/{id}/password"] = .object(password)
    }
}
