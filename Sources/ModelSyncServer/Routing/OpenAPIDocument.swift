import Foundation
import ModelSyncJSON
import ModelSyncProtocol

extension SyncServer {
    /// The OpenAPI 3.1 description of the server's HTTP API, as `GET /openapi.json` serves it:
    /// json-server's routes, conditional requests, and the sync protocol's extensions (the change
    /// feed, batches, idempotency keys, the version header; `docs/PROTOCOL.md`).
    ///
    /// The document describes any data: `{resource}` is any collection or singular resource.
    /// It describes the server with its sync extensions on (``ServerOptions/servesSyncExtensions``).
    public static var openAPIDocument: JSONValue { OpenAPIDocument.value }
}

/// The OpenAPI document, built once. Schemas of the sync messages follow the types of
/// `ModelSyncProtocol`; `OpenAPITests` checks the paths against the routes the server answers.
package enum OpenAPIDocument {
    package static let value: JSONValue = [
        "openapi": "3.1.0",
        "info": [
            "title": "modelsync-server",
            "version": .string(String(SyncProtocol.version)),
            "description": """
                A json-server-compatible REST API over a JSON document (every top-level array a \
                collection, every top-level object a singular resource) with the ModelSync sync \
                protocol (docs/PROTOCOL.md). Every answer allows any origin (CORS); every request \
                may name its protocol version in ModelSync-Protocol. A server started with access \
                rules names each caller by a bearer token (none: anonymous) and answers only what \
                its rules allow: 401 for a token needed or not valid, 403 for a right the caller \
                lacks, 404 for a row it may not read.
                """,
        ],
        // A token is optional: without one a request is anonymous.
        "security": [[:], ["bearer": []]],
        "paths": paths,
        "components": components,
    ]

    /// When the document was first served: its `Last-Modified`.
    package static let published = Date()

    // MARK: Paths

    private static var paths: JSONValue {
        var all: JSONObject = [
            "/{resource}": [
                "parameters": [parameter("resource")],
                "get": read(
                    "readResource", "A collection (filtered, sorted, sliced), its change feed (_since), or a singular resource",
                    parameters: listParameters + [parameter("_since")],
                    ok: ["anyOf": [schema("RecordList"), schema("SyncFeedPage"), schema("Resource")]], list: true, feed: true),
                "head": head("headResource", list: true),
                "post": write("createRecord", "Create a record in a collection (405 on a singular resource)", created: true, value: "NewRecord", codes: [400, 404, 405, 409, 413, 422]),
                "put": write("replaceResource", "Replace a singular resource (405 on a collection)", value: "Resource", codes: [400, 404, 405, 412, 413, 422]),
                "patch": write("mergeResource", "Merge into a singular resource (405 on a collection)", value: "Resource", codes: [400, 404, 405, 412, 413, 422]),
                "options": preflight("preflightResource"),
            ],
            "/{resource}/{id}": [
                "parameters": [parameter("resource"), parameter("id")],
                "get": read("readRecord", "A record, with its version as ETag", parameters: relationParameters, ok: schema("Record"), codes: [400, 404]),
                "head": head("headRecord"),
                "put": write("replaceRecord", "Replace a record", codes: [400, 404, 405, 412, 413, 422]),
                "patch": write("mergeRecord", "Merge into a record", codes: [400, 404, 405, 412, 413, 422]),
                "delete": write("deleteRecord", "Delete a record (it leaves a tombstone in the feed); answers {}", body: false, codes: [400, 404, 405, 412, 422]),
                "options": preflight("preflightRecord"),
            ],
            "/{resource}/{id}/{children}": [
                "parameters": [parameter("resource"), parameter("id"), parameter("children")],
                "get": read(
                    "listChildren", "The records of `children` whose `<resource singular>Id` is the parent's id",
                    parameters: listParameters, ok: schema("RecordList"), list: true, codes: [400, 404]),
                "head": head("headChildren", list: true),
                "post": write("createChild", "Create a record of `children` under the parent (its foreign key set)", created: true, value: "NewRecord", codes: [400, 404, 405, 409, 413, 422]),
                "options": preflight("preflightChildren"),
            ],
            "/db": [
                "get": read("readDatabase", "Every collection and singular resource", ok: schema("Database")),
                "head": head("headDatabase", codes: [400]),
                "options": preflight("preflightDatabase"),
            ],
            "/\(SyncProtocol.Path.changes)": [
                "get": feedRead(),
                "head": [
                    "operationId": "headChanges", "summary": "The change feed's headers",
                    "parameters": [parameter("since"), parameter("limit"), parameter("collections"), parameter("ModelSync-Protocol")],
                    "responses": responses(["200": ["description": "the feed page's headers", "headers": protocolHeader]], codes: [400, 410]),
                ],
                "options": preflight("preflightChanges"),
            ],
            "/\(SyncProtocol.Path.changeStream)": [
                "get": stream(),
                "head": [
                    "operationId": "headStream", "summary": "The stream's headers, or the refusal GET would meet; subscribes to nothing",
                    "parameters": [parameter("since"), parameter("collections"), parameter("Last-Event-ID"), parameter("ModelSync-Protocol")],
                    "responses": responses(["200": ["description": "the event stream's headers"], "410": response("Gone")], codes: [400]),
                ],
                "options": preflight("preflightStream"),
            ],
            "/\(SyncProtocol.Path.batch)": [
                "post": batch(),
                "options": preflight("preflightBatch"),
            ],
            "/_metrics": [
                "get": [
                    "operationId": "readMetrics",
                    "summary": "Request metrics in Prometheus's text format, on a server started with metrics (modelsync-server --metrics); 404 otherwise. Admins only under access rules (a scraper sends an admin's token); without rules, only a client on this machine (loopback)",
                    "responses": responses(["200": ["description": "the metrics", "content": ["text/plain": ["schema": ["type": "string"]]]]], codes: [404]),
                ],
                "head": [
                    "operationId": "headMetrics", "summary": "The headers GET /_metrics answers",
                    "responses": responses(["200": ["description": "the headers"]], codes: [404]),
                ],
                "options": preflight("preflightMetrics"),
            ],
            "/openapi.json": [
                "get": read("readOpenAPI", "This document", ok: ["type": "object", "required": ["openapi", "paths"]]),
                "head": head("headOpenAPI", codes: [400]),
                "options": preflight("preflightOpenAPI"),
            ],
        ]
        for (path, item) in accountPaths { all[path] = item }
        addConsolePaths(to: &all)
        return .object(all)
    }

    // MARK: Built-in accounts

    /// The built-in accounts' routes (`ServerOptions.access` with accounts; 404 without them):
    /// `x-modelsync-requires` says which configuration serves them.
    private static var accountPaths: JSONObject {
        let register = account("register", "Create an account (json-server-auth): its record in the accounts collection, an access token and, with refresh tokens, a refresh token", created: true, codes: [400, 404, 409, 413, 429])
        let login = account("login", "Sign in (json-server-auth): an access token and, with refresh tokens, a refresh token", created: false, codes: [400, 404, 413, 429])
        return [
            "/\(SyncProtocol.Path.register)": ["post": register, "options": preflight("preflightRegister")],
            "/\(SyncProtocol.Path.signup)": ["post": renamed(register, "signup"), "options": preflight("preflightSignup")],
            "/\(SyncProtocol.Path.login)": ["post": login, "options": preflight("preflightLogin")],
            "/\(SyncProtocol.Path.signin)": ["post": renamed(login, "signin"), "options": preflight("preflightSignin")],
            "/\(SyncProtocol.Path.token)": [
                "post": [
                    "operationId": "refreshToken", "x-modelsync-requires": "refreshTokens",
                    "summary": "Exchange a refresh token for a new access token and a new refresh token; the one sent is used up",
                    "description": "Sending a used refresh token again revokes every token of its sign-in (401), except within the server's retry window while its successor is unused: then the same successor is answered again (a lost answer).",
                    "requestBody": ["required": true, "content": json(schema("RefreshTokenRequest"))],
                    "responses": responses(["200": ["description": "the new tokens", "content": json(schema("TokenPair"))]], codes: [400, 401, 404, 413, 429]),
                ],
                "options": preflight("preflightToken"),
            ],
            "/\(SyncProtocol.Path.logout)": [
                "post": [
                    "operationId": "logOut", "x-modelsync-requires": "refreshTokens",
                    "summary": "Revoke a refresh token and every token of its sign-in (also answered 204 for a token already unknown)",
                    "requestBody": ["required": true, "content": json(schema("RefreshTokenRequest"))],
                    "responses": responses(["204": ["description": "signed out"]], codes: [400, 401, 404, 413]),
                ],
                "options": preflight("preflightLogout"),
            ],
            "/\(SyncProtocol.Path.accounts)/{id}/role": [
                "parameters": [parameter("id")],
                "put": [
                    "operationId": "setRole", "x-modelsync-requires": "accounts",
                    "summary": "Set (null: remove) an account's role: admins only; it reaches the account's next access token",
                    "requestBody": ["required": true, "content": json(schema("RoleRequest"))],
                    "responses": responses(["200": ["description": "the account's role now", "content": json(schema("RoleAnswer"))]], codes: [400, 401, 403, 404, 405, 413]),
                ],
                "options": preflight("preflightRole"),
            ],
            "/\(SyncProtocol.Path.accounts)/{id}/password": [
                "parameters": [parameter("id")],
                "post": [
                    "operationId": "changePassword", "x-modelsync-requires": "accounts",
                    "summary": "Change one's own password, giving the current one: every other session ends (access tokens from their next request, refresh tokens at once); the answer signs this one in again",
                    "requestBody": ["required": true, "content": json(schema("PasswordChange"))],
                    "responses": responses(["200": ["description": "new tokens", "content": json(schema("TokenPair"))]], codes: [400, 404, 405, 413, 429]),
                ],
                "options": preflight("preflightPassword"),
            ],
            "/\(SyncProtocol.Path.accounts)/{id}/logout": [
                "parameters": [parameter("id")],
                "post": [
                    "operationId": "logOutEverywhere", "x-modelsync-requires": "accounts",
                    "summary": "Sign an account out everywhere (its own user or an admin): its access tokens are refused from their next request, every refresh token ends",
                    // 400: a server without accounts reads the path as a nested create, which needs a body.
                    "responses": responses(["204": ["description": "signed out everywhere"]], codes: [400, 404, 405]),
                ],
                "options": preflight("preflightLogoutEverywhere"),
            ],
        ]
    }

    private static func account(_ id: String, _ summary: String, created: Bool, codes: [Int]) -> JSONValue {
        [
            "operationId": .string(id), "x-modelsync-requires": "accounts", "summary": .string(summary),
            "requestBody": ["required": true, "content": json(schema("Credentials"))],
            "responses": responses(
                [created ? "201" : "200": ["description": "the account's tokens and record", "content": json(schema("SignedIn"))]], codes: codes),
        ]
    }

    private static func renamed(_ operation: JSONValue, _ id: String) -> JSONValue {
        var renamed = operation.objectValue ?? JSONObject()
        renamed["operationId"] = .string(id)
        return .object(renamed)
    }

    /// The query parameters of a list: filters, search, sorting, slicing, relations.
    private static let listParameters: [JSONValue] = [
        "filters", "q", "_sort", "_order", "_start", "_end", "_limit", "_page", "_per_page", "_embed", "_expand",
    ].map(parameter)

    private static let relationParameters: [JSONValue] = ["_embed", "_expand"].map(parameter)

    /// A conditional read (`GET`): 200 with the value, or 304.
    private static func read(
        _ id: String, _ summary: String, parameters: [JSONValue] = [], ok: JSONValue, list: Bool = false, feed: Bool = false,
        codes: [Int] = [400]
    ) -> JSONValue {
        var answers: JSONObject = [
            "200": [
                "description": feed ? "the list (with X-Total-Count), the feed page (with _since), or the resource" : "the value",
                "headers": .object(readHeaders(list: list)), "content": json(ok),
            ],
            "304": response("NotModified"),
        ]
        if feed { answers["410"] = response("Gone") }
        return [
            "operationId": .string(id), "summary": .string(summary),
            "parameters": .array(parameters + conditionalReadParameters),
            "responses": responses(answers, codes: codes + (feed ? [404] : [])),
        ]
    }

    /// `HEAD`: the headers `GET` would answer.
    private static func head(_ id: String, list: Bool = false, codes: [Int] = [400, 404]) -> JSONValue {
        [
            "operationId": .string(id), "summary": "The headers GET answers",
            "parameters": .array(conditionalReadParameters),
            "responses": responses(["200": ["description": "the headers", "headers": .object(readHeaders(list: list))], "304": response("NotModified")], codes: codes),
        ]
    }

    private static let conditionalReadParameters: [JSONValue] = ["If-None-Match", "If-Modified-Since", "ModelSync-Protocol"].map(parameter)

    private static func readHeaders(list: Bool) -> JSONObject {
        var headers: JSONObject = ["ETag": header("ETag"), "Last-Modified": header("Last-Modified"), "ModelSync-Protocol": header("ModelSync-Protocol")]
        if list {
            headers["X-Total-Count"] = header("X-Total-Count")
            headers["Link"] = header("Link")
        }
        return headers
    }

    /// A write: `If-Match` (not on a create), `Idempotency-Key`, a JSON object body (not on a
    /// delete) of schema `value`: a record, or a singular resource (whose `id` is any value).
    private static func write(
        _ id: String, _ summary: String, created: Bool = false, body: Bool = true, value: String = "Record", codes: [Int]
    ) -> JSONValue {
        let names = (created ? [] : ["If-Match"]) + ["Idempotency-Key", "ModelSync-Protocol"]
        var operation: JSONObject = [
            "operationId": .string(id), "summary": .string(summary),
            "parameters": .array(names.map(parameter)),
            "responses": responses([
                created ? "201" : "200": [
                    "description": created ? "the stored record" : "the stored value",
                    "headers": ["ETag": header("ETag"), "Idempotent-Replayed": header("Idempotent-Replayed"), "ModelSync-Protocol": header("ModelSync-Protocol")],
                    "content": json(body ? schema(created ? "Record" : value) : ["type": "object", "maxProperties": 0]),
                ],
            ], codes: codes),
        ]
        if body { operation["requestBody"] = ["required": true, "content": json(schema(value))] }
        return .object(operation)
    }

    /// `OPTIONS`: a CORS preflight, answered on every path.
    private static func preflight(_ id: String) -> JSONValue {
        // A preflight carries no token; a request that sends a forged one still meets 401.
        ["operationId": .string(id), "summary": "CORS preflight", "responses": ["204": ["description": "the CORS headers"], "401": response("Unauthorized")]]
    }

    private static func feedRead() -> JSONValue {
        [
            "operationId": "readChanges", "summary": "The change feed of every collection (or those named), oldest first",
            "parameters": [parameter("since"), parameter("limit"), parameter("collections"), parameter("ModelSync-Protocol")],
            "responses": responses(
                ["200": ["description": "a page of the feed", "headers": protocolHeader, "content": json(schema("SyncFeedPage"))], "410": response("Gone")],
                codes: [400]),
        ]
    }

    private static func stream() -> JSONValue {
        [
            "operationId": "streamChanges",
            "summary": "The change feed as Server-Sent Events: the backlog after the cursor, then each change as it commits",
            "description": "Each change is an event `change` with `id: <seq>` and a SyncChange as `data`; `: keep-alive` comments keep the connection open. The stream ends when the client goes or the server stops.",
            "parameters": [parameter("since"), parameter("collections"), parameter("Last-Event-ID"), parameter("ModelSync-Protocol")],
            "responses": responses(
                ["200": ["description": "the event stream", "content": ["text/event-stream": ["schema": schema("SyncChangeEvent")]]], "410": response("Gone")],
                codes: [400, 429]),
        ]
    }

    private static func batch() -> JSONValue {
        [
            "operationId": "postBatch",
            "summary": "Several writes applied in order in one transaction, each answered as it would have been alone",
            "parameters": [parameter("ModelSync-Protocol")],
            "requestBody": ["required": true, "content": json(schema("SyncBatchRequest"))],
            "responses": responses(
                ["200": ["description": "one result per operation, in order", "headers": protocolHeader, "content": json(schema("SyncBatchResponse"))]],
                codes: [400, 405, 413]),
        ]
    }

    private static var protocolHeader: JSONValue { ["ModelSync-Protocol": header("ModelSync-Protocol")] }

    /// `answers` plus the error answers of `codes`, and of access rules (401, 403).
    private static func responses(_ answers: JSONObject, codes: [Int]) -> JSONValue {
        var all = answers
        for code in codes + [401, 403] { all[String(code)] = response(errorNames[code] ?? "BadRequest") }
        return .object(all)
    }

    // MARK: Components

    private static let errorNames: [Int: String] = [
        400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict", 410: "Gone", 412: "PreconditionFailed",
        413: "ContentTooLarge", 422: "UnprocessableContent", 429: "TooManyRequests",
    ]

    private static var components: JSONValue {
        [
            "schemas": schemas, "parameters": parameters, "headers": headers, "responses": errorResponses,
            "securitySchemes": [
                "bearer": [
                    "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                    "description": "An access token: the server's own (/login) or an identity provider's, when the server has access rules",
                ],
            ],
        ]
    }

    private static var errorResponses: JSONValue {
        let meanings: [(String, String)] = [
            ("BadRequest", "A malformed request: body, parameter, feed cursor, Idempotency-Key, batch; or a ModelSync-Protocol version not spoken here (with supportedVersions)"),
            ("Unauthorized", "No valid credentials: a bearer token needed here that is missing, malformed, expired, wrongly signed or sent twice (WWW-Authenticate: Bearer), or a refresh token that is unknown, expired, revoked or used already"),
            ("Forbidden", "The caller is signed in but may not do this under the access rules (write another's row, name another owner, read /db or set roles without being an admin)"),
            ("NotFound", "No such collection, resource, record or account (under access rules, none the caller may read); or a route this server does not serve (built-in accounts, refresh tokens)"),
            ("MethodNotAllowed", "The method is not allowed here, or the server is read-only"),
            ("Conflict", "The collection already has a record with the body's id"),
            ("Gone", "The cursor is older than the deletions the server keeps, or past its last change (its data was replaced or restored): read everything again, then follow the feed from `horizon`"),
            ("PreconditionFailed", "If-Match failed: the record changed; `current` is the record now, ETag its version"),
            ("ContentTooLarge", "The body is larger (or deeper) than the server takes, or a batch holds more than \(SyncBatchRequest.maximumOperations) operations"),
            ("UnprocessableContent", "The Idempotency-Key was sent with another request, or PostgreSQL cannot store the value (NUL)"),
            ("TooManyRequests", "Too many logins, registrations, refreshes or password changes from this address or for this account, or as many change streams open as the caller may have (ServerOptions.changeStreamLimits): try again after Retry-After seconds"),
        ]
        var object = JSONObject()
        for (name, meaning) in meanings {
            object[name] = ["description": .string(meaning), "headers": ["ETag": header("ETag")], "content": json(schema("Error"))]
        }
        object["NotModified"] = ["description": "The client's copy is current (If-None-Match, or If-Modified-Since)", "headers": ["ETag": header("ETag"), "Last-Modified": header("Last-Modified")]]
        return .object(object)
    }

    private static var schemas: JSONValue {
        // Integers are 64-bit: a larger one is no id (400).
        let id: JSONValue = [
            "type": ["integer", "string"], "minimum": .number(JSONNumber(Int.min)), "maximum": .number(JSONNumber(Int.max)),
            "description": "An integer (64-bit) or a string",
        ]
        let cursor: JSONValue = ["type": "string", "description": "A feed cursor: opaque to clients"]
        return [
            "Record": ["type": "object", "description": "A record: a JSON object, with an id once stored", "properties": ["id": id]],
            "RecordList": ["type": "array", "items": schema("Record")],
            "NewRecord": [
                "type": "object", "description": "A record to create: an id absent or null is assigned by the server",
                "properties": ["id": ["type": ["integer", "string", "null"], "minimum": .number(JSONNumber(Int.min)), "maximum": .number(JSONNumber(Int.max))]],
            ],
            "Credentials": [
                "type": "object", "required": ["email", "password"],
                "description": "Other members become the account's record; role and id are ignored",
                "properties": ["email": ["type": "string"], "password": ["type": "string"]],
            ],
            "SignedIn": [
                "type": "object", "required": ["accessToken", "user"],
                "properties": [
                    "accessToken": ["type": "string"], "user": schema("Record"),
                    "refreshToken": ["type": "string", "description": "With refresh tokens: exchange it at POST /token"],
                    "expiresIn": ["type": "integer", "description": "The access token's lifetime in seconds"],
                ],
            ],
            "RefreshTokenRequest": ["type": "object", "required": ["refreshToken"], "properties": ["refreshToken": ["type": "string"]]],
            "TokenPair": [
                "type": "object", "required": ["accessToken", "refreshToken"],
                "properties": ["accessToken": ["type": "string"], "refreshToken": ["type": "string"], "expiresIn": ["type": "integer"]],
            ],
            "RoleRequest": ["type": "object", "required": ["role"], "properties": ["role": ["type": ["string", "null"]]]],
            "PasswordChange": [
                "type": "object", "required": ["password", "newPassword"],
                "properties": ["password": ["type": "string", "description": "the current password"], "newPassword": ["type": "string"]],
            ],
            "RoleAnswer": ["type": "object", "required": ["id", "role"], "properties": ["id": ["type": "string"], "role": ["type": ["string", "null"]]]],
            "Resource": ["type": "object", "description": "A singular resource"],
            "Database": ["type": "object", "description": "Every collection (an array) and singular resource (an object), by name", "additionalProperties": ["type": ["array", "object"]]],
            "Error": [
                "type": "object", "required": ["error"], "description": "SyncErrorBody",
                "properties": [
                    "error": ["type": "string"],
                    "current": ["description": "A 412's record as it is now (its ETag is the answer's)"],
                    "horizon": ["type": "string", "description": "A 410's cursor to follow the feed from after reading everything"],
                    "supportedVersions": ["type": "array", "items": ["type": "integer"], "description": "A refused ModelSync-Protocol's versions spoken here"],
                ],
            ],
            "SyncChange": [
                "type": "object", "required": ["seq", "collection", "id", "deleted"],
                "properties": [
                    "seq": ["type": "integer", "minimum": 1, "description": "The record's version after the change (its ETag is \"<seq>\")"],
                    "collection": ["type": "string"], "id": id, "deleted": ["type": "boolean"],
                    "record": ["type": "object", "description": "The record now; absent for a deletion"],
                    "createdWith": ["type": "string", "description": "The Idempotency-Key of the create that made the record"],
                    "left": ["type": "boolean", "description": "In a filtered feed, with deleted: the record changed and no longer matches the filter"],
                ],
            ],
            // One event of the stream, as a reader of Server-Sent Events parses it (a comment, the
            // keep-alive, is no event).
            "SyncChangeEvent": [
                "type": "object", "required": ["data", "event", "id"],
                "description": "An event of /_changes/stream: `data` is a SyncChange as JSON text",
                "properties": [
                    "event": ["const": "change"], "id": ["type": "string", "pattern": "^[0-9]+(\\.[0-9a-f]{16})?$"],
                    "data": ["type": "string", "contentMediaType": "application/json", "contentSchema": schema("SyncChange")],
                    "retry": ["type": "integer", "minimum": 0],
                ],
            ],
            "SyncFeedPage": [
                "type": "object", "required": ["changes", "next", "more"],
                "properties": ["changes": ["type": "array", "items": schema("SyncChange")], "next": cursor, "more": ["type": "boolean"]],
            ],
            "SyncBatchOperation": [
                "type": "object", "required": ["method", "path"],
                "properties": [
                    "method": ["enum": ["POST", "PUT", "PATCH", "DELETE"]],
                    "path": ["type": "string", "description": "/<collection> for POST, /<collection>/<id> otherwise"],
                    "headers": ["type": "object", "description": "If-Match, Idempotency-Key: strings; another value is answered 400 in the operation's result"],
                    "body": ["description": "A JSON object, for POST, PUT and PATCH"],
                ],
            ],
            "SyncBatchRequest": [
                "type": "object", "required": ["operations"],
                "properties": [
                    "operations": [
                        "type": "array", "maxItems": .number(JSONNumber(SyncBatchRequest.maximumOperations)),
                        // Each item is answered in its own result: one that is no SyncBatchOperation
                        // gets a 400 there, and the others are still applied.
                        "items": ["description": "A SyncBatchOperation; any other value is answered 400 in its result", "examples": [["method": "POST", "path": "/posts", "body": ["title": "a"]]]],
                    ],
                ],
            ],
            "SyncBatchResult": [
                "type": "object", "required": ["status", "body"],
                "properties": [
                    "status": ["type": "integer"], "etag": ["type": "string"], "replayed": ["type": "boolean"],
                    "body": ["description": "The record, or an Error"],
                ],
            ],
            "SyncBatchResponse": [
                "type": "object", "required": ["results"], "properties": ["results": ["type": "array", "items": schema("SyncBatchResult")]],
            ],
        ]
    }

    /// Every parameter, by name, from a table of name, location, description and schema.
    private static var parameters: JSONValue {
        let text: JSONValue = ["type": "string"]
        // Counts and indexes are 64-bit: a larger number is refused (400), not read as a smaller one.
        let count: JSONValue = ["type": "integer", "minimum": 0, "maximum": .number(JSONNumber(Int.max))]
        let positive: JSONValue = ["type": "integer", "minimum": 1, "maximum": .number(JSONNumber(Int.max))]
        let cursor: JSONValue = ["type": "string", "pattern": #"^([0-9]+(\.[0-9a-f]{16}(\.[0-9]+(\.[0-9]+\.[0-9]+)?)?|\.\.[0-9]+)?|now)?$"#]
        let table: [(String, String, String, JSONValue)] = [
            ("resource", "path", "A collection (a top-level array) or singular resource (a top-level object); see the examples", ["type": "string", "examples": ["posts"]]),
            ("id", "path", "A record's id", ["type": "string", "examples": ["1"]]),
            ("children", "path", "A collection whose records name their parent by `<singular of resource>Id`", ["type": "string", "examples": ["comments"]]),
            ("q", "query", "Full-text search: records with a string or number containing it, case-insensitively", text),
            ("_sort", "query", "Fields to sort by, comma-separated; `-field` sorts descending", text),
            ("_order", "query", "asc or desc, one per _sort field", text),
            ("_start", "query", "The first index of the slice", count),
            ("_end", "query", "The index after the slice", count),
            ("_limit", "query", "The slice's or page's length; with _since, the feed page's (at least 1)", count),
            ("_page", "query", "A page (from 1) of _per_page or _limit records; answers Link", positive),
            ("_per_page", "query", "The page length with _page", positive),
            ("_embed", "query", "Child collections to embed, comma-separated", text),
            ("_expand", "query", "Parents to expand (`post` from `postId`), comma-separated", text),
            ("_since", "query", "A feed cursor: answers the collection's SyncFeedPage instead of the list; the list's filters and q then filter the feed", cursor),
            ("since", "query", "A feed cursor: empty or 0 the beginning, now the current end", cursor),
            ("limit", "query", "The most changes in a page (default \(ServerRoutes.defaultFeedLimit), at most \(ServerRoutes.maximumFeedLimit))", positive),
            ("collections", "query", "Only the changes of these collections, comma-separated", text),
            ("If-None-Match", "header", "ETags the client holds: 304 when one is current", text),
            ("If-Modified-Since", "header", "An HTTP date: 304 when nothing changed since", text),
            ("If-Match", "header", "The ETag the write is based on: 412 with the current record when it changed", text),
            ("Idempotency-Key", "header", "A repeat of the same write under the same key gets the first answer (Idempotent-Replayed: true); another request under it is 422", ["type": "string", "minLength": 1, "maxLength": .number(JSONNumber(SyncProtocol.maximumIdempotencyKeyLength))]),
            ("ModelSync-Protocol", "header", "The protocol version the client speaks (its decimal digits); another is 400 with supportedVersions", ["type": "string", "enum": .array(SyncProtocol.supportedVersions.sorted().map { .string(String($0)) })]),
            ("Last-Event-ID", "header", "The stream's cursor when reconnecting (instead of since)", cursor),
        ]
        var object = JSONObject()
        for (name, location, description, schema) in table {
            var parameter: JSONObject = ["name": .string(name), "in": .string(location), "description": .string(description), "schema": schema]
            if location == "path" { parameter["required"] = true }
            object[name] = .object(parameter)
        }
        // Any other query parameter filters the records: `field=value` (repeatable), `field_gte`,
        // `_lte`, `_gt`, `_lt`, `_ne`, `_like` (a regular expression, `LikePattern`'s subset);
        // dotted paths reach into objects.
        object["filters"] = [
            "name": "filters", "in": "query", "style": "form", "explode": true,
            "description": .string("""
                Field filters: field=value, field_gte, field_lte, field_gt, field_lt, field_ne, field_like; dotted fields reach into \
                objects. field_like is a regular expression matched anywhere in the field's text unless anchored, ignoring case, over \
                Unicode scalars, in time linear in the text: literals, `.` (not a newline), classes `[a-z]` `[^…]`, `\\d` `\\w` `\\s` \
                (ASCII) and their negations, `\\n` `\\t` `\\r` `\\f` `\\uXXXX`, a backslash before other punctuation, `^` `$`, groups \
                `( )` `(?: )`, `|`, `*` `+` `?` and `{m}` `{m,}` `{m,n}` (counts up to \(LikePattern.maximumRepetition)). At most \
                \(LikePattern.maximumLength) characters, \(LikePattern.maximumNesting) nested groups and \(LikePattern.maximumProgramSize) \
                steps once repetitions are expanded. Anything else (backreferences, lookaround, atomic groups, possessive quantifiers, \
                inline options, word boundaries, Unicode properties) is 400 naming the problem.
                """),
            // Any name and any value: the server reads every other parameter as a filter (a value
            // form-serialized from an array or an object, arrives as text all the same).
            "schema": ["type": "object"],
        ]
        return .object(object)
    }

    private static var headers: JSONValue {
        let table: [(String, String)] = [
            ("ETag", "The record's version (\"<seq>\"), or a hash of the body"),
            ("Last-Modified", "When the data last changed"),
            ("X-Total-Count", "How many records match, before slicing"),
            ("Link", "first, prev, next and last pages (with _page)"),
            ("Idempotent-Replayed", "true: the first answer to this Idempotency-Key, replayed"),
            ("ModelSync-Protocol", "The protocol version of the answer, when the request named one"),
        ]
        var object = JSONObject()
        for (name, description) in table { object[name] = ["description": .string(description), "schema": ["type": "string"]] }
        return .object(object)
    }

    // MARK: References

    private static func schema(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/" + name)] }
    private static func parameter(_ name: String) -> JSONValue { ["$ref": .string("#/components/parameters/" + name)] }
    private static func header(_ name: String) -> JSONValue { ["$ref": .string("#/components/headers/" + name)] }
    private static func response(_ name: String) -> JSONValue { ["$ref": .string("#/components/responses/" + name)] }
    private static func json(_ schema: JSONValue) -> JSONValue { ["application/json": ["schema": schema]] }
}
