import Foundation
import ModelSyncCore
import ModelSyncJSON

extension RemoteStore {
    /// The URL of `type`'s collection (`/posts`), or of one record (`/posts/1`, at the
    /// resource's ``RemoteResource/remotePath(for:)``) when `id` is given, with the store's
    /// default parameters, built as the store's own requests are.
    ///
    /// For callers that build their own ``RemoteRequest`` (with per-call headers such as
    /// `Idempotency-Key`) and send it with ``send(_:options:)``.
    public func resourceURL<M: RemoteResource>(for type: M.Type, id: String? = nil) async throws -> URL {
        try await resourceURL(for: M.self, id: id.map { RemoteID(parts: [$0]) })
    }

    /// The URL of `type`'s collection, or of the record `id` (a composite key's parts) when given,
    /// as the overload that takes a `String` id builds it.
    public func resourceURL<M: RemoteResource>(for type: M.Type, id: RemoteID?) async throws -> URL {
        let parameters = try await mergedParameters(M.self, call: [:])
        guard let id else { return try await collectionURL(M.self, parameters: parameters) }
        return try await itemURL(M.self, id, parameters: parameters)
    }
}
