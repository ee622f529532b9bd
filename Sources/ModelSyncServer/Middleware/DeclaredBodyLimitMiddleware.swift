import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// Answers a write whose `Content-Length` declares more than the limit at once, without
/// waiting for the body, then ends the connection.
///
/// The rest of the chain gets the request with an empty body: it still records the request,
/// applies faults and CORS, and answers 413 from the declared length. The answer goes out with
/// `Connection: close`, and the server's side of the connection is shut as soon as it is
/// written, so the client sees the whole answer at once. What the client still sends is read
/// and dropped (never kept) until it closes: a client that writes its whole body before reading
/// (urllib, requests) would otherwise be reset and could lose the answer.
package struct DeclaredBodyLimitMiddleware: RouterMiddleware {
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
