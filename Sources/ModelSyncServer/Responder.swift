import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// The request context: Hummingbird's core storage plus the channel, so that an injected fault
/// can drop the connection.
struct ServerContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}

/// State shared by the server object and its responder: injected faults and recent requests.
final class ServerState: Sendable {
    let faults = Locked<[Fault]>([])
    let requests: Locked<RequestLog>
    let delay: Locked<Duration>

    init(delay: Duration, requestLogLimit: Int) {
        self.delay = Locked(delay)
        self.requests = Locked(RequestLog(limit: requestLogLimit))
    }

    /// The action of the first fault that applies to this request, using it up.
    func nextFault() -> Fault.Action? {
        faults.withLock { faults in
            for index in faults.indices where Double.random(in: 0..<1) < faults[index].fraction {
                let action = faults[index].action
                if let remaining = faults[index].remaining {
                    if remaining <= 1 { faults.remove(at: index) } else { faults[index].remaining = remaining - 1 }
                }
                return action
            }
            return nil
        }
    }
}

/// Answers every request: json-server's routes, conditional requests, CORS and faults.
struct ServerResponder: HTTPResponder {
    let backend: any ServerBackend
    let state: ServerState
    let options: ServerOptions

    func respond(to request: Request, context: ServerContext) async throws -> Response {
        record(request)
        if request.method == .options { return cors(Response(status: .noContent), for: request) }
        guard Self.allowedMethods.contains(request.method) else {
            // TRACE, PROPFIND, CONNECT…: a method the server knows it does not serve (RFC 9110 §15.5.6).
            var response = Self.error(APIError(status: 405, message: "\(request.method.rawValue) is not supported"))
            response.headers[.allow] = Self.allowHeader
            return cors(response, for: request)
        }
        if let fault = state.nextFault() {
            switch fault {
            case .status(let status, let retryAfter, let body):
                var response = Self.json(body ?? ["error": "injected fault"], status: HTTPResponse.Status(code: status))
                if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
                return cors(response, for: request)
            case .dropConnection:
                try await context.channel.close().get()
                throw APIError(status: 500, message: "connection dropped")
            case .loseAnswer:
                // Applied, then unanswered: the outcome a client cannot know.
                var request = request
                _ = try? await route(&request, context: context)
                try await context.channel.close().get()
                throw APIError(status: 500, message: "answer lost")
            case .delay(let duration):
                try await Task.sleep(for: duration)
            }
        }
        let delay = state.delay.current
        if delay > .zero { try await Task.sleep(for: delay) }
        do {
            var request = request
            // A client that names its protocol version gets this server's, or a clear refusal.
            let spoken = try Self.protocolVersion(request)
            var response = try await route(&request, context: context)
            if let spoken { response.headers[.syncProtocol] = String(spoken) }
            return cors(response, for: request)
        } catch let error as APIError {
            return cors(Self.error(error), for: request)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // A failed save: the data and the file are unchanged (see JSONFileBackend.write).
            context.logger.error("request failed", metadata: ["uri": "\(request.uri)", "error": "\(error)"])
            return cors(Self.error(APIError(status: 500, message: "could not save the data: \(error)")), for: request)
        }
    }

    private func record(_ request: Request) {
        guard options.requestLogLimit > 0 else { return }
        let entry = RecordedRequest(
            method: request.method.rawValue,
            uri: request.uri.description,
            headers: request.headers.map { ($0.name.rawName, $0.value) }
        )
        state.requests.withLock { $0.append(entry) }
    }

    // MARK: Routing

    private func route(_ request: inout Request, context: ServerContext) async throws -> Response {
        let segments = request.uri.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let parameters = QueryParameters(request.uri.query)
        let method = request.method
        let isRead = method == .get || method == .head
        if !isRead && options.readOnly {
            throw APIError(status: 405, message: "the server is read-only")
        }
        var body: JSONValue?
        if !isRead && method != .delete { body = try await readBody(&request, context: context) }
        // Reserved before any collection of that name, as `_changes` and `_batch` are.
        if segments == [Self.openAPIPath] {
            guard isRead else { throw APIError(status: 405, message: "/\(Self.openAPIPath) is read-only") }
            return conditional(OpenAPIDocument.value, modified: OpenAPIDocument.published, request)
        }
        if segments == ["_batch"] && options.servesSyncExtensions {
            guard method == .post else { throw APIError(status: 405, message: "a batch is POSTed") }
            return try await batch(body)
        }
        if segments.first == "_changes" && options.servesSyncExtensions {
            guard isRead else { throw APIError(status: 405, message: "the change feed is read-only") }
            switch segments.count {
            case 1: return try await feed(parameters, collections: nil)
            case 2 where segments[1] == "stream": return try await stream(parameters, request: request)
            default: throw APIError.notFound("no route for \(request.uri.path)")
            }
        }

        switch segments.count {
        case 1:
            let name = segments[0]
            switch try await backend.resource(named: name) {
            case .collection?:
                switch method {
                case .get, .head:
                    if options.servesSyncExtensions && parameters.values("_since").first != nil { return try await feed(parameters, collections: [name]) }
                    return try await list(name, parameters, owner: nil, request)
                case .post: return try await create(in: name, body: body, request: request)
                default: throw APIError(status: 405, message: "\(method.rawValue) is not allowed on a collection")
                }
            case .singular?:
                switch method {
                case .get, .head:
                    guard let (value, modified) = try await backend.singular(name) else { throw APIError.notFound("no resource named \(name)") }
                    return conditional(value, modified: modified, request)
                case .put, .patch: return try await updateSingular(name, body: body, merge: method == .patch, request)
                default: throw APIError(status: 405, message: "\(method.rawValue) is not allowed on a singular resource")
                }
            case nil where name == "db":
                guard isRead else { throw APIError(status: 405, message: "/db is read-only") }
                let (value, modified) = try await backend.everything()
                return conditional(value, modified: modified, request)
            case nil:
                throw APIError.notFound("no collection or resource named \(name)")
            }
        case 2:
            let (name, id) = (segments[0], segments[1])
            switch method {
            case .get, .head:
                let (embeds, expands) = (parameters.values("_embed"), parameters.values("_expand"))
                let read = try await backend.item(name, id: id, embeds: embeds, expands: expands)
                // The version is the item's ETag; an embedded read is another representation.
                let version = embeds.isEmpty && expands.isEmpty ? read.version.map(versionETag) : nil
                return conditional(read.value, modified: read.modified, request, etag: version)
            case .put, .patch: return try await update(name, id: id, body: body, merge: method == .patch, request)
            case .delete: return try await delete(name, id: id, request)
            default: throw APIError(status: 405, message: "\(method.rawValue) is not allowed on an item")
            }
        case 3:
            let (parentName, id, childName) = (segments[0], segments[1], segments[2])
            switch method {
            case .get, .head:
                return try await list(childName, parameters, owner: (parentName, id), request)
            case .post:
                guard var object = body?.objectValue else { throw APIError.notAnObject }
                // The parent must exist; the child names it by its stored id.
                let parent = try await backend.item(parentName, id: id, embeds: [], expands: [])
                object[foreignKey(of: parentName)] = parent.value["id"] ?? .null
                return try await create(in: childName, body: .object(object), request: request)
            default: throw APIError(status: 405, message: "\(method.rawValue) is not allowed on a nested collection")
            }
        default:
            throw APIError.notFound("no route for \(request.uri.path)")
        }
    }

    // MARK: Reads

    private func list(_ name: String, _ parameters: QueryParameters, owner: (String, String)?, _ request: Request) async throws -> Response {
        let listRequest = ListRequest(
            query: try ListQuery(parameters), parameters: parameters, defaultPageSize: options.defaultPageSize,
            embeds: parameters.values("_embed"), expands: parameters.values("_expand"), owner: owner)
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

    // MARK: Writes

    private func create(in name: String, body: JSONValue?, request: Request) async throws -> Response {
        guard let given = body?.objectValue else { throw APIError.notAnObject }
        return try await apply(ItemOperation(write: .create(collection: name, body: given), idempotencyKey: try IdempotencyKeys.key(in: request.headers)))
    }

    private func update(_ name: String, id: String, body: JSONValue?, merge: Bool, _ request: Request) async throws -> Response {
        guard let object = body?.objectValue else { throw APIError.notAnObject }
        return try await apply(ItemOperation(
            write: .update(collection: name, id: id, body: object, merge: merge), ifMatch: request.headers[.ifMatch],
            idempotencyKey: try IdempotencyKeys.key(in: request.headers)))
    }

    private func delete(_ name: String, id: String, _ request: Request) async throws -> Response {
        try await apply(ItemOperation(
            write: .delete(collection: name, id: id), ifMatch: request.headers[.ifMatch], idempotencyKey: try IdempotencyKeys.key(in: request.headers)))
    }

    private func apply(_ operation: ItemOperation) async throws -> Response {
        guard let outcome = try await backend.write([operation]).first else { throw APIError(status: 500, message: "the backend skipped the write") }
        let result = try outcome.get()
        var response = Self.written(result.body, status: HTTPResponse.Status(code: result.status), version: result.version)
        if result.replayed, let header = IdempotencyKeys.replayedHeader { response.headers[header] = "true" }
        return response
    }

    private func updateSingular(_ name: String, body: JSONValue?, merge: Bool, _ request: Request) async throws -> Response {
        guard let object = body?.objectValue else { throw APIError.notAnObject }
        let stored = try await backend.writeSingular(name, body: object, merge: merge, ifMatch: request.headers[.ifMatch])
        return Self.written(stored, status: .ok)
    }

    /// A JSON response; with an `ETag` for stored items: their version, or (singular
    /// resources, which have none) a hash of the body.
    static func written(_ value: JSONValue, status: HTTPResponse.Status, version: Int? = nil) -> Response {
        let bytes = value.jsonBytes()
        var response = json(bytes: bytes, status: status)
        response.headers[.eTag] = version.map(versionETag) ?? contentETag(bytes)
        return response
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status) -> Response {
        json(bytes: value.jsonBytes(), status: status)
    }

    /// A JSON response from already-serialised bytes.
    private static func json(bytes: [UInt8], status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    private func readBody(_ request: inout Request, context: ServerContext) async throws -> JSONValue {
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
        if tooLarge { throw APIError(status: 413, message: "the body is larger than \(limit) bytes") }
        request.body = RequestBody(buffer: buffer)
        guard buffer.readableBytes > 0 else { throw APIError.badRequest("the request needs a JSON object body") }
        do {
            // Stored inside the document and a collection, a body sits two levels deeper than it
            // was sent; refusing it here keeps every accepted write loadable (JSONFileBackend.maxDepth).
            return try JSONValue(parsing: Array(buffer.readableBytesView), maxDepth: JSONFileBackend.maxBodyDepth)
        } catch let error as JSONError where error.reason == .tooDeep(limit: JSONFileBackend.maxBodyDepth) {
            throw APIError(status: 413, message: "the body is nested deeper than \(JSONFileBackend.maxBodyDepth) levels")
        } catch {
            throw APIError.badRequest("malformed JSON body: \(error)")
        }
    }

    /// Where the server serves its OpenAPI document (``OpenAPIDocument``).
    static let openAPIPath = "openapi.json"

    /// The methods the server answers; any other gets 405 with this list in `Allow`.
    static let allowedMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]
    static let allowHeader = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

    // MARK: Helpers

    private func cors(_ response: Response, for request: Request) -> Response {
        var response = response
        response.headers[.accessControlAllowOrigin] = request.headers[.origin] ?? "*"
        response.headers[.accessControlAllowMethods] = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
        response.headers[.accessControlAllowHeaders] = request.headers[.accessControlRequestHeaders]
            ?? "Content-Type, Authorization, If-Match, If-None-Match"
        response.headers[.accessControlExposeHeaders] = "ETag, Link, X-Total-Count, Last-Modified"
        if request.headers[.origin] != nil { response.headers[.vary] = "Origin" }
        return response
    }

    /// The sync protocol version the request names (nil: none), or a 400 naming the versions
    /// spoken here.
    static func protocolVersion(_ request: Request) throws -> Int? {
        do {
            return try SyncProtocol.negotiate(request.headers[.syncProtocol])
        } catch {
            let supported = JSONValue.array(SyncProtocol.supportedVersions.sorted().map { .number(JSONNumber($0)) })
            throw APIError(status: 400, message: "\(error)", details: ["supportedVersions": supported])
        }
    }

    static func error(_ error: APIError) -> Response {
        var response = json(error.body.json, status: HTTPResponse.Status(code: error.status))
        if let etag = error.etag { response.headers[.eTag] = etag }
        return response
    }
}

extension HTTPField.Name {
    static let totalCount = named("X-Total-Count")
    static let syncProtocol = named(SyncProtocol.versionHeader)
    static let link = named("Link")
    static let allow = named("Allow")
    static let lastEventID = named("Last-Event-ID")

    /// A header name given as a literal token.
    private static func named(_ name: String) -> HTTPField.Name {
        guard let field = HTTPField.Name(name) else { preconditionFailure("invalid header name \(name)") }
        return field
    }
}
