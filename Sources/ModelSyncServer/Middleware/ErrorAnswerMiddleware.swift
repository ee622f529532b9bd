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
package struct ErrorAnswerMiddleware: RouterMiddleware {
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
