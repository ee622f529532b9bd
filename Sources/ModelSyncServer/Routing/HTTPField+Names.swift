import HTTPTypes
import ModelSyncProtocol

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
