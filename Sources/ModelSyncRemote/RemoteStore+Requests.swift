import Foundation
import ModelSyncCore
import ModelSyncJSON

extension RemoteStore {
    /// The URL of `type`'s collection (`/posts`), or of one record (`/posts/1`) when `id` is
    /// given, with the store's default parameters, built as the store's own requests are.
    ///
    /// For callers that build their own ``RemoteRequest`` (with per-call headers such as
    /// `Idempotency-Key`) and send it with ``send(_:options:)``.
    public func resourceURL<M: RemoteResource>(for type: M.Type, id: String? = nil) async throws -> URL {
        try await resourceURL(M.self, id.map { [$0] } ?? [], parameters: mergedParameters(M.self, call: [:]))
    }
}
