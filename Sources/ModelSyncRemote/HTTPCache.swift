import Foundation
import ModelSyncCore

/// Responses to GET requests that carried `ETag` or `Last-Modified`, by URL and credentials, so
/// that the next request for the URL can be conditional and a 304 can be answered from here.
final class HTTPCache: Sendable {
    /// A URL as one caller asked for it: another user's answer to the same URL holds other rows,
    /// and a server's 304 ("not modified since") never says whose copy is current.
    private struct Key: Hashable {
        var url: URL
        var authorization: String?

        init(_ request: RemoteRequest) {
            (url, authorization) = (request.url, request.headers["Authorization"])
        }
    }

    private let entries = Locked<[Key: RemoteResponse]>([:])
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Adds `If-None-Match` / `If-Modified-Since` for a cached URL, unless the caller set them.
    func addValidators(to request: inout RemoteRequest) {
        guard request.method == .get, let cached = entries.withLock({ $0[Key(request)] }) else { return }
        if request.headers["If-None-Match"] == nil, let etag = cached.headers["ETag"] {
            request.headers["If-None-Match"] = etag
        }
        if request.headers["If-Modified-Since"] == nil, let modified = cached.headers["Last-Modified"] {
            request.headers["If-Modified-Since"] = modified
        }
    }

    /// The response to hand back: the cached one for a 304, else `response` (remembered when it
    /// can be revalidated later).
    func resolve(_ response: RemoteResponse, for request: RemoteRequest) -> RemoteResponse {
        guard request.method == .get else { return response }
        let key = Key(request)
        if response.status == 304, var cached = entries.withLock({ $0[key] }) {
            cached.isFromCache = true
            for field in response.headers where ["etag", "last-modified"].contains(field.name.lowercased()) {
                cached.headers[field.name] = field.value
            }
            return cached
        }
        if response.status == 200, response.headers["ETag"] != nil || response.headers["Last-Modified"] != nil {
            entries.withLock { entries in
                if entries.count >= capacity, entries[key] == nil, let victim = entries.keys.first {
                    entries[victim] = nil
                }
                entries[key] = response
            }
        }
        return response
    }

    func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
