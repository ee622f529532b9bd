import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// The sync protocol's version check: a request that names a version (`ModelSync-Protocol`)
/// gets the version spoken here back, or a 400 listing the versions spoken here.
package struct ProtocolNegotiationMiddleware: RouterMiddleware {
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
