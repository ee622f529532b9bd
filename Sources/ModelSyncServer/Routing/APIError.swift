import HTTPTypes
import Hummingbird
import ModelSyncJSON
import ModelSyncProtocol
import NIOCore

/// The one error type of the server's answers: a status, a message and the members a
/// ``SyncErrorBody`` adds (`current` of a 412, `horizon` of a 410), sent as
/// `{"error": "…", …}`. Handlers and backends throw it; the router renders it.
package struct APIError: HTTPResponseError {
    package var status: HTTPResponse.Status
    package var message: String
    /// More members of the error body (`current` of a 412, `horizon` of a 410).
    package var details: JSONObject = JSONObject()
    /// Header fields of the answer: a 412's `ETag`, a 405's `Allow`.
    package var headers = HTTPFields()

    package init(status: HTTPResponse.Status, message: String, details: JSONObject = JSONObject()) {
        self.status = status
        self.message = message
        self.details = details
    }

    /// A 412 with the current record.
    package init(status: HTTPResponse.Status, message: String, current: JSONValue, etag: String) {
        self.init(status: status, message: message, details: ["current": current])
        headers[.eTag] = etag
    }

    package static func badRequest(_ message: String) -> APIError { APIError(status: .badRequest, message: message) }
    package static func notFound(_ message: String) -> APIError { APIError(status: .notFound, message: message) }

    /// A 401: the request needs a valid bearer token (RFC 6750).
    package static func unauthenticated(_ message: String, invalidToken: Bool = false) -> APIError {
        var error = APIError(status: .unauthorized, message: message)
        error.headers[.wwwAuthenticate] = invalidToken ? #"Bearer error="invalid_token""# : "Bearer"
        return error
    }

    /// A 405 naming the methods the resource answers.
    package static func methodNotAllowed(_ message: String, allow: [HTTPRequest.Method]) -> APIError {
        var error = APIError(status: .methodNotAllowed, message: message)
        error.headers[.allow] = allow.map(\.rawValue).joined(separator: ", ")
        return error
    }

    /// The `ETag` the answer carries (a 412's current version).
    package var etag: String? { headers[.eTag] }

    /// The error's body, as every error answer has it.
    package var body: SyncErrorBody {
        SyncErrorBody(error: message, details: details)
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = ServerRoutes.json(body.json, status: status)
        response.headers.append(contentsOf: headers)
        return response
    }
}
