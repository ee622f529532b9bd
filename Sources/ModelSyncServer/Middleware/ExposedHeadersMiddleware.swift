import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// Names the headers a browser's script may read on a cross-origin answer. Hummingbird's
/// `CORSMiddleware` (2.28) sends `Access-Control-Expose-Headers` on the preflight only, where
/// browsers ignore it; the answer itself must carry it, or a web app cannot read an `ETag`,
/// `X-Total-Count` or `Idempotent-Replayed`.
package struct ExposedHeadersMiddleware: RouterMiddleware {
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
