import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// Refuses what the server never answers: a method outside ``ServerRoutes/allowedMethods``
/// (405 with `Allow`, RFC 9110 §15.5.6), and, on a read-only server, every write (405).
package struct MethodGuardMiddleware: RouterMiddleware {
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
