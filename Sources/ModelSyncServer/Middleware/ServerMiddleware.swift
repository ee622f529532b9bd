import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// Renders every error a handler throws as an ``APIError`` answer, so that the middleware
/// outside it (metrics, logs, CORS, the app's own) sees an answer with a JSON body, never a
/// bare error. Innermost of the server's middleware.
package struct ErrorAnswers: RouterMiddleware {
    package typealias Context = SyncServerContext

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as HTTPError where error.status == .notFound {
            // The router's answer for a path no route matches.
            return try APIError.notFound("no route for \(request.uri.path)").response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            return try APIError(status: error.status, message: error.status.reasonPhrase).response(from: request, context: context)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // A failed save or read (the data and the file are unchanged: see JSONFileBackend.write).
            // The details go to the log, not to the client: a database's message can name its
            // tables and statements.
            context.logger.error("request failed", metadata: ["uri": "\(request.uri)", "error": "\(error)"])
            return try APIError(status: .internalServerError, message: "the server could not complete the request").response(from: request, context: context)
        }
    }
}

/// The sync protocol's version check: a request that names a version (`ModelSync-Protocol`)
/// gets the version spoken here back, or a 400 listing the versions spoken here.
package struct ProtocolNegotiation: RouterMiddleware {
    package typealias Context = SyncServerContext

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let spoken: Int?
        do {
            spoken = try SyncProtocol.negotiate(request.headers[.syncProtocol])
        } catch {
            let supported = JSONValue.array(SyncProtocol.supportedVersions.sorted().map { .number(JSONNumber($0)) })
            throw APIError(status: .badRequest, message: "\(error)", details: ["supportedVersions": supported])
        }
        var response = try await next(request, context)
        if let spoken { response.headers[.syncProtocol] = String(spoken) }
        return response
    }
}

/// Refuses what the server never answers: a method outside ``ServerRoutes/allowedMethods``
/// (405 with `Allow`, RFC 9110 §15.5.6), and, on a read-only server, every write (405).
package struct MethodGuard: RouterMiddleware {
    package typealias Context = SyncServerContext
    package let readOnly: Bool

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard ServerRoutes.allowedMethods.contains(request.method) else {
            throw APIError.methodNotAllowed("\(request.method.rawValue) is not supported", allow: ServerRoutes.allowedMethods)
        }
        if readOnly && ServerRoutes.writeMethods.contains(request.method) {
            throw APIError.methodNotAllowed("the server is read-only", allow: [.get, .head, .options])
        }
        return try await next(request, context)
    }
}

/// Names the headers a browser's script may read on a cross-origin answer. Hummingbird's
/// `CORSMiddleware` (2.28) sends `Access-Control-Expose-Headers` on the preflight only, where
/// browsers ignore it; the answer itself must carry it, or a web app cannot read an `ETag`,
/// `X-Total-Count` or `Idempotent-Replayed`.
package struct ExposedHeaders: RouterMiddleware {
    package typealias Context = SyncServerContext
    package static let names = [
        "ETag", "Link", "X-Total-Count", "Last-Modified", "Retry-After", SyncProtocol.replayedHeader, SyncProtocol.versionHeader,
    ]
    private static let value = names.joined(separator: ", ")

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.headers[.origin] != nil else { return try await next(request, context) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // A refusal by the middleware inside (405, 413, 400): rendered here to carry the header.
            response = try error.response(from: request, context: context)
        }
        response.headers[.accessControlExposeHeaders] = Self.value
        return response
    }
}

/// Answers a write whose `Content-Length` declares more than the limit at once, without
/// waiting for the body, then ends the connection.
///
/// The rest of the chain gets the request with an empty body: it still records the request,
/// applies faults and CORS, and answers 413 from the declared length. The answer goes out with
/// `Connection: close`, and the server's side of the connection is shut as soon as it is
/// written, so the client sees the whole answer at once. What the client still sends is read
/// and dropped (never kept) until it closes: a client that writes its whole body before reading
/// (urllib, requests) would otherwise be reset and could lose the answer.
package struct DeclaredBodyLimit: RouterMiddleware {
    package typealias Context = SyncServerContext
    package let limit: Int

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard ServerRoutes.bodyMethods.contains(request.method),
              let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit
        else { return try await next(request, context) }
        let unread = request.body
        var refused = request
        refused.body = RequestBody(buffer: ByteBuffer())
        var response = try await next(refused, context)
        response.headers[.connection] = "close"
        let answer = response.body
        let channel = context.channel
        response.body = ResponseBody(contentLength: answer.contentLength) { writer in
            try await answer.write(writer)
            try? await channel.close(mode: .output).get()
            do {
                for try await _ in unread {}
            } catch {
                // The client closed mid-body: nothing is left to read.
            }
        }
        return response
    }
}

extension HTTPField.Name {
    package static let totalCount = named("X-Total-Count")
    package static let syncProtocol = named(SyncProtocol.versionHeader)
    package static let link = named("Link")
    package static let allow = named("Allow")
    package static let lastEventID = named("Last-Event-ID")
    package static let idempotencyKey = named(SyncProtocol.idempotencyKeyHeader)
    package static let idempotentReplayed = named(SyncProtocol.replayedHeader)
    package static let retryAfter = named("Retry-After")

    /// A header name given as a literal token.
    private static func named(_ name: String) -> HTTPField.Name {
        guard let field = HTTPField.Name(name) else { preconditionFailure("invalid header name \(name)") }
        return field
    }
}
