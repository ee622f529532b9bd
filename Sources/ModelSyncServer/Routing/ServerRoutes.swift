import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore
import Prometheus

/// The server's routes: json-server's (collections, items, nested children, singular
/// resources, `/db`) and the sync extensions (`/_changes`, `/_changes/stream`, `/_batch`), each
/// a handler on Hummingbird's router (``route(into:)``).
package struct ServerRoutes: Sendable {
    package let backend: any ServerBackend
    /// The built-in accounts' credentials and refresh tokens (the same backend).
    package let accounts: any ServerAccountStore
    package let options: ServerOptions
    /// The change streams open per caller (``ChangeStreamLimits/streamsPerCaller``).
    package let openStreams = OpenStreams()
    /// The open streams and the latest writes' answers, for the console (``SyncActivity``).
    package let activity = SyncActivity()
    /// The backup being made or sent (`GET /_admin/backup`, one at a time).
    package let backupDownloads = OpenStreams()
    /// Filtered feeds whose patterns or searches cost what the caller asks take turns here.
    let feedFilters = CostlyReads()

    package typealias Handler = @Sendable (Request, SyncServerContext) async throws -> Response

    /// A path and the handler of each method it answers; every other method of
    /// ``allowedMethods`` is answered 405 with `Allow`, and OPTIONS with 204 and `Allow`.
    package struct Route: Sendable {
        package var path: String
        package var handlers: [HTTPRequest.Method: Handler]
    }

    /// Every route, reserved paths (the sync extensions, the OpenAPI document) before the
    /// templated ones.
    package var routes: [Route] {
        var routes = [Route(path: "/\(Self.openAPIPath)", handlers: reads { request, _ in
            conditional(OpenAPIDocument.value, modified: OpenAPIDocument.published, request)
        })]
        if let registry = options.prometheus {
            routes.append(Route(path: "/_metrics", handlers: reads { request, context in
                try requireAdminAccess(request, context)
                return Self.metrics(registry)
            }))
        }
        if options.servesSyncExtensions {
            routes += [
                Route(path: "/" + SyncProtocol.Path.batch, handlers: [.post: { request, context in try await batch(try await readBody(request), context: context) }]),
                Route(path: "/" + SyncProtocol.Path.changes, handlers: reads { request, context in
                    try await feed(QueryParameters(request.uri.query), collections: nil, visibility: visibility(context))
                }),
                Route(path: "/" + SyncProtocol.Path.changeStream, handlers: [
                    .get: { request, context in
                        try await stream(QueryParameters(request.uri.query), request: request, context: context, visibility: visibility(context))
                    },
                    .head: { request, context in
                        try await streamHead(QueryParameters(request.uri.query), request: request, visibility: visibility(context))
                    },
                ]),
            ]
        }
        if let access = options.access, let accounts = access.accounts {
            routes += accountRoutes(accounts, rules: access.rules)
        }
        routes += consoleRoutes
        let resourceWrite: Handler = { request, context in try await writeResource(request, context: context) }
        routes += [
            Route(path: "/:resource", handlers: reads { request, context in try await readResource(request, context: context) }
                .merging([.post: resourceWrite, .put: resourceWrite, .patch: resourceWrite]) { $1 }),
            Route(path: "/:resource/:id", handlers: reads { request, context in try await readItem(request, context: context) }
                .merging([
                    .put: { request, context in try await update(request, context: context, merge: false) },
                    .patch: { request, context in try await update(request, context: context, merge: true) },
                    .delete: { request, context in try await delete(request, context: context) },
                ]) { $1 }),
            Route(path: "/:resource/:id/:children", handlers: reads { request, context in
                let (parent, id, children) = try (context.segment("resource"), context.segment("id"), context.segment("children"))
                return try await list(children, QueryParameters(request.uri.query), owner: (parent, id), request, context: context)
            }.merging([.post: { request, context in try await createChild(request, context: context) }]) { $1 }),
        ]
        return routes
    }

    /// Adds every route to `router`.
    package func route(into router: Router<SyncServerContext>) {
        for route in routes {
            let allow = Self.allowedMethods.filter { route.handlers[$0] != nil || $0 == .options }
            for method in Self.allowedMethods {
                if let handler = route.handlers[method] {
                    router.on(RouterPath(route.path), method: method) { request, context in try await handler(request, context) }
                } else if method == .options {
                    router.on(RouterPath(route.path), method: .options) { request, _ in
                        var headers = HTTPFields()
                        let methods = Self.documentedMethods(forPath: request.uri.path) ?? allow
                        headers[.allow] = methods.map(\.rawValue).joined(separator: ", ")
                        return Response(status: .noContent, headers: headers)
                    }
                } else {
                    router.on(RouterPath(route.path), method: method) { request, _ -> Response in
                        let methods = Self.documentedMethods(forPath: request.uri.path) ?? allow
                        // A reserved path whose feature is off here (`PUT /_accounts/1/role` without
                        // accounts) falls to a template: the method exists, this server lacks it.
                        if methods.contains(request.method) {
                            throw APIError.notFound("\(request.method.rawValue) \(request.uri.path) is not served by this server")
                        }
                        throw APIError.methodNotAllowed("\(request.method.rawValue) is not allowed on \(route.path)", allow: methods)
                    }
                }
            }
        }
    }

    /// The methods the OpenAPI document lists for `path`, matched against its paths with the
    /// most specific first (`/db` before `/{resource}`, `/_accounts/{id}/role` before
    /// `/{resource}/{id}/{children}`): what OPTIONS and a 405 name, whichever route the router
    /// matched. Nil when no documented path matches.
    static func documentedMethods(forPath path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let matches = documentedPaths.filter { template in
            template.segments.count == segments.count
                && zip(template.segments, segments).allSatisfy { pattern, segment in pattern == nil || pattern.map { $0 == segment } == true }
        }
        return matches.min { $0.parameterCount < $1.parameterCount }?.methods
    }

    /// The document's paths: each segment literal, or nil for a `{parameter}`; and its methods.
    private static let documentedPaths: [(segments: [Substring?], parameterCount: Int, methods: [HTTPRequest.Method])] = {
        guard case .object(let paths)? = OpenAPIDocument.value["paths"] else { return [] }
        return paths.map { path, item in
            let segments: [Substring?] = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0.first == "{" ? nil : $0 }
            let names = Set(item.objectValue?.keys.map { $0.uppercased() } ?? [])
            return (segments, segments.filter { $0 == nil }.count, allowedMethods.filter { names.contains($0.rawValue) })
        }
    }()

    /// A GET handler, answering HEAD too (its answers carry no body then).
    private func reads(_ handler: @escaping Handler) -> [HTTPRequest.Method: Handler] {
        [.get: handler, .head: handler]
    }

    // MARK: Resources

    /// `GET /<name>`: a collection's list (or, with `_since`, its feed), a singular resource,
    /// or `/db` when no resource has that name.
    private func readResource(_ request: Request, context: SyncServerContext) async throws -> Response {
        let name = try context.segment("resource")
        let parameters = QueryParameters(request.uri.query)
        switch try await backend.resource(named: name) {
        case .collection?:
            if options.servesSyncExtensions && parameters.values("_since").first != nil {
                try requireReadable(name, context)
                // The feed ignores a list's slicing, but its bounds hold on every `/<name>`.
                _ = try Slice(parameters, count: 0, defaultPageSize: 1)
                return try await feed(parameters, collections: [name], visibility: visibility(context))
            }
            return try await list(name, parameters, owner: nil, request, context: context)
        case .singular?:
            if let access = access(to: name, context), access.read != .everything { throw access.refusal }
            // A list's slicing and a feed cursor mean nothing here, but their bounds hold on every `/<name>`.
            _ = try Slice(parameters, count: 0, defaultPageSize: 1)
            if options.servesSyncExtensions, let cursor = parameters.values("_since").first, cursor != "now" {
                do { _ = try Self.parseCursor(cursor) } catch is DisorderedCursor {}
            }
            guard let (value, modified) = try await backend.singular(name) else { throw APIError.notFound("no resource named \(name)") }
            return conditional(value, modified: modified, request)
        case nil where name == "db":
            // The whole data, every user's rows: for admins only under access rules.
            if options.access != nil && !context.caller.isAdmin { throw CollectionAccess.refusal(of: context.caller, "only an admin reads /db") }
            let (value, modified) = try await backend.everything()
            return conditional(value, modified: modified, request)
        case nil:
            throw APIError.notFound("no collection or resource named \(name)")
        }
    }

    /// `POST /<collection>`, `PUT` and `PATCH /<singular>`: which applies depends on what the
    /// name is.
    private func writeResource(_ request: Request, context: SyncServerContext) async throws -> Response {
        let name = try context.segment("resource")
        let body = try await readBody(request)
        switch (try await backend.resource(named: name), request.method) {
        case (.collection?, .post):
            guard let given = body.objectValue else { throw APIError.notAnObject }
            return try await apply(try creation(in: name, body: given, context: context, idempotencyKey: try IdempotencyKeys.key(in: request.headers)))
        case (.singular?, .put), (.singular?, .patch):
            if let access = access(to: name, context), access.update != .everything { throw access.refusal }
            // Checked, not stored: writing a singular resource again with the same body leaves it
            // as it was, so a replay needs no remembered answer.
            _ = try IdempotencyKeys.key(in: request.headers)
            guard let object = body.objectValue else { throw APIError.notAnObject }
            let stored = try await backend.writeSingular(name, body: object, merge: request.method == .patch, ifMatch: request.headers[.ifMatch])
            return Self.written(stored, status: .ok)
        case (.collection?, _):
            throw APIError.methodNotAllowed("\(request.method.rawValue) is not allowed on a collection", allow: [.get, .head, .post, .options])
        case (.singular?, _):
            throw APIError.methodNotAllowed(
                "\(request.method.rawValue) is not allowed on a singular resource", allow: [.get, .head, .put, .patch, .options])
        case (nil, _) where name == "db":
            throw APIError.methodNotAllowed("/db is read-only", allow: [.get, .head, .options])
        case (nil, _):
            throw APIError.notFound("no collection or resource named \(name)")
        }
    }

    /// `GET /<collection>/<id>`, with `_embed` and `_expand`.
    private func readItem(_ request: Request, context: SyncServerContext) async throws -> Response {
        let (name, id) = try (context.segment("resource"), context.segment("id"))
        let parameters = QueryParameters(request.uri.query)
        let (embeds, expands) = (parameters.values("_embed"), parameters.values("_expand"))
        try requireReadable(name, context)
        let read = try await backend.item(name, id: id, embeds: embeds, expands: expands, visibility: visibility(context))
        // The version is the item's ETag; an embedded read is another representation.
        let version = embeds.isEmpty && expands.isEmpty ? read.version.map(versionETag) : nil
        return conditional(read.value, modified: read.modified, request, etag: version)
    }

    /// `POST /<parent>/<id>/<children>`: a child of an existing parent, naming it by its stored id.
    private func createChild(_ request: Request, context: SyncServerContext) async throws -> Response {
        let (parentName, id, childName) = try (context.segment("resource"), context.segment("id"), context.segment("children"))
        // The parent first: under a path that names none (`/_accounts/1/logout` on a server
        // without accounts) the answer is 404, whatever the body.
        let parent = try await backend.item(parentName, id: id, embeds: [], expands: [], visibility: visibility(context))
        guard var object = try await readBody(request).objectValue else { throw APIError.notAnObject }
        object[foreignKey(of: parentName)] = parent.value["id"] ?? .null
        return try await apply(try creation(in: childName, body: object, context: context, idempotencyKey: try IdempotencyKeys.key(in: request.headers)))
    }

    // MARK: Reads

    private func list(
        _ name: String, _ parameters: QueryParameters, owner: (String, String)?, _ request: Request, context: SyncServerContext
    ) async throws -> Response {
        try requireReadable(name, context)
        let listRequest = ListRequest(
            query: try ListQuery(parameters), parameters: parameters, defaultPageSize: options.defaultPageSize,
            embeds: parameters.values("_embed"), expands: parameters.values("_expand"), owner: owner, visibility: visibility(context))
        let page = try await backend.list(name, listRequest)
        var response = conditional(.array(page.items), modified: page.modified, request)
        response.headers[.totalCount] = String(page.total)
        if !page.slice.pages.isEmpty {
            response.headers[.link] = links(page.slice.pages, request)
        }
        return response
    }

    private func links(_ pages: [(rel: String, page: Int)], _ request: Request) -> String {
        let host = request.head.authority ?? "localhost"
        let others = QueryParameters(request.uri.query).pairs.filter { $0.name != "_page" }
        return pages.map { rel, page in
            var components = URLComponents()
            components.queryItems = [URLQueryItem(name: "_page", value: String(page))]
                + others.map { URLQueryItem(name: $0.name, value: $0.value) }
            return "<http://\(host)\(request.uri.path)?\(components.percentEncodedQuery ?? "")>; rel=\"\(rel)\""
        }.joined(separator: ", ")
    }

    /// Answers a read with the value, its `ETag` and `Last-Modified`, and 304 when the client's
    /// copy is current (`If-None-Match`, or else `If-Modified-Since`). `modified` comes from the
    /// same store snapshot as `value`.
    private func conditional(_ value: JSONValue, modified: Date, _ request: Request, etag version: String? = nil) -> Response {
        let bytes = value.jsonBytes()
        let etag = version ?? contentETag(bytes)
        var headers = HTTPFields()
        headers[.eTag] = etag
        headers[.lastModified] = HTTPDate.format(modified)
        headers[.contentType] = "application/json; charset=utf-8"
        if let match = request.headers[.ifNoneMatch] {
            if etagListMatches(match, etag) { return Response(status: .notModified, headers: headers) }
        } else if let since = request.headers[.ifModifiedSince].flatMap(HTTPDate.parse), modified <= since {
            return Response(status: .notModified, headers: headers)
        }
        if request.method == .head { return Response(status: .ok, headers: headers) }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    // MARK: Access

    /// What the caller may do in `collection`; nil when the server has no access rules.
    func access(to collection: String, _ context: SyncServerContext) -> CollectionAccess? {
        guard var access = options.access?.rules.access(to: collection, for: context.caller) else { return nil }
        if !context.caller.isSignedIn { access.clientAddress = context.clientAddress }
        return access
    }

    /// Refuses a read of a collection none of whose rows the caller may read: 401 anonymous,
    /// 403 signed in. (Where some rows are readable, an unreadable one is simply missing.)
    func requireReadable(_ collection: String, _ context: SyncServerContext) throws {
        if let access = access(to: collection, context), access.read == .nothing { throw access.refusal }
    }

    /// The rows the caller sees.
    func visibility(_ context: SyncServerContext) -> Visibility {
        options.access.map { Visibility(rules: $0.rules, caller: context.caller) } ?? .open
    }


    /// A create in `collection` as the caller may make it: under access rules the row's owner
    /// is the caller (a body naming another owner is refused, unless the caller is an admin, whose
    /// row is the admin's when the body names no owner).
    func creation(in collection: String, body: JSONObject, context: SyncServerContext, idempotencyKey: String?) throws -> ItemOperation {
        var body = body
        let access = access(to: collection, context)
        if let access {
            let caller = access.caller
            if access.create == .nothing { throw access.refusal }
            if let field = access.ownerField, let userID = caller.userID, field != "id", !caller.isAdmin {
                if let named = body[field], named != .null, !(scalarText(named)?.isIdentical(to: userID) ?? false) {
                    throw APIError(status: .forbidden, message: "only an admin may create a row for another owner")
                }
                // The owner as the rows of the collection name it: an integer id stays an integer.
                body[field] = Self.ownerValue(userID)
            } else if let field = access.ownerField, let userID = caller.userID, field != "id", body[field] ?? .null == .null {
                // An admin's row is the admin's unless the body names another owner.
                body[field] = Self.ownerValue(userID)
            }
        }
        return ItemOperation(write: .create(collection: collection, body: body), idempotencyKey: idempotencyKey, access: access)
    }

    /// A user id as a row's owner field holds it: an integer id stays an integer.
    static func ownerValue(_ userID: String) -> JSONValue {
        Int(userID).flatMap { String($0) == userID ? .number(JSONNumber($0)) : nil } ?? .string(userID)
    }

    // MARK: Writes

    private func update(_ request: Request, context: SyncServerContext, merge: Bool) async throws -> Response {
        let (name, id) = try (context.segment("resource"), context.segment("id"))
        guard let object = try await readBody(request).objectValue else { throw APIError.notAnObject }
        return try await apply(ItemOperation(
            write: .update(collection: name, id: id, body: object, merge: merge), ifMatch: request.headers[.ifMatch],
            idempotencyKey: try IdempotencyKeys.key(in: request.headers), access: access(to: name, context)))
    }

    private func delete(_ request: Request, context: SyncServerContext) async throws -> Response {
        let (name, id) = try (context.segment("resource"), context.segment("id"))
        return try await apply(ItemOperation(
            write: .delete(collection: name, id: id), ifMatch: request.headers[.ifMatch], idempotencyKey: try IdempotencyKeys.key(in: request.headers),
            access: access(to: name, context)))
    }

    private func apply(_ operation: ItemOperation) async throws -> Response {
        guard let outcome = try await recordedWrite([operation], inBatch: false).first else {
            throw APIError(status: .internalServerError, message: "the backend skipped the write")
        }
        let result = try outcome.get()
        var response = Self.written(result.body, status: HTTPResponse.Status(code: result.status), version: result.version)
        if result.replayed { response.headers[.idempotentReplayed] = "true" }
        return response
    }

    /// A JSON response; with an `ETag` for stored items: their version, or (singular
    /// resources, which have none) a hash of the body.
    package static func written(_ value: JSONValue, status: HTTPResponse.Status, version: Int? = nil) -> Response {
        let bytes = value.jsonBytes()
        var response = json(bytes: bytes, status: status)
        response.headers[.eTag] = version.map(versionETag) ?? contentETag(bytes)
        return response
    }

    package static func json(_ value: JSONValue, status: HTTPResponse.Status) -> Response {
        json(bytes: value.jsonBytes(), status: status)
    }

    /// A JSON response from already-serialised bytes.
    package static func json(bytes: [UInt8], status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The request's JSON body, read whole (up to ``ServerOptions/maxBodySize``).
    func readBody(_ request: Request) async throws -> JSONValue {
        let limit = options.maxBodySize
        // A declared length over the limit is refused without keeping any of the body.
        var tooLarge = request.headers[.contentLength].flatMap(Int.init).map { $0 > limit } ?? false
        var buffer = ByteBuffer()
        var received = 0
        // The whole body is read even when it is refused: a client that sends `Connection: close`
        // (urllib, requests) writes all of it before reading the answer, so leaving it unread
        // would stall both sides until the client times out. Hummingbird drains keep-alive
        // requests the same way.
        for try await chunk in request.body {
            received = received > limit ? received : received + chunk.readableBytes
            if received > limit { tooLarge = true }
            if !tooLarge { buffer.writeImmutableBuffer(chunk) }
        }
        if tooLarge { throw APIError(status: .contentTooLarge, message: "the body is larger than \(limit) bytes") }
        guard buffer.readableBytes > 0 else { throw APIError.badRequest("the request needs a JSON object body") }
        do {
            // Stored inside the document and a collection, a body sits two levels deeper than it
            // was sent; refusing it here keeps every accepted write loadable (JSONFileBackend.maxDepth).
            return try JSONValue(parsing: Array(buffer.readableBytesView), maxDepth: JSONFileBackend.maxBodyDepth)
        } catch let error as JSONError where error.reason == .tooDeep(limit: JSONFileBackend.maxBodyDepth) {
            throw APIError(status: .contentTooLarge, message: "the body is nested deeper than \(JSONFileBackend.maxBodyDepth) levels")
        } catch {
            throw APIError.badRequest("malformed JSON body: \(error)")
        }
    }

    /// Where the server serves its OpenAPI document (``OpenAPIDocument``).
    package static let openAPIPath = "openapi.json"

    /// The methods the server answers; any other gets 405 with this list in `Allow`.
    package static let allowedMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
    /// The methods that write (refused by a read-only server).
    package static let writeMethods: Set<HTTPRequest.Method> = [.post, .put, .patch, .delete]
    /// The methods whose body the server reads.
    package static let bodyMethods: Set<HTTPRequest.Method> = [.post, .put, .patch]

    /// The Prometheus text exposition of `registry`.
    private static func metrics(_ registry: PrometheusCollectorRegistry) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }
}

extension SyncServerContext {
    /// A path segment the route names, percent-decoded (`/posts/a%2Fb` names the id `a/b`).
    package func segment(_ name: String) throws -> String {
        guard let raw = parameters.get(name) else { throw APIError.notFound("no route for this path") }
        // Most segments have no escape: decoding them anyway took 2% of a read's time.
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return raw }
        return raw.removingPercentEncoding ?? raw
    }
}
