import Foundation
import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

@Model
struct Post: Equatable {
    var id: Int?
    var userId: Int
    var title: String
    @JSON("body") var text: String
}

extension Post: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

@Model
struct Comment: Equatable {
    var id: Int?
    @JSON("postId") var post: Int = 0
    var name: String = ""
    var body: String
}

extension Comment: RemoteResource {
    static let remote = RemoteConfiguration(path: "comments", parameterProperties: ["post"])
}

@Model
struct User: Equatable {
    var id: Int
    var name: String
}

extension User: RemoteResource {
    static let remote = RemoteConfiguration(path: "users")
}

/// Errors surfaced as values, so tests can match them.
func remoteError(_ body: () async throws -> Void) async -> RemoteError? {
    do {
        try await body()
        return nil
    } catch let error as RemoteError {
        return error
    } catch {
        Issue.record("expected a RemoteError, got \(error)")
        return nil
    }
}

/// A store against a fresh in-process server on a random port (ModelSyncTesting's server
/// fixture: shut down after). Retries wait 1–2 ms, so retry tests stay fast.
func withStore(
    data: JSONValue = SyncServer.sampleData,
    configure: (inout RemoteStore.Options) -> Void = { _ in },
    _ body: (RemoteStore, TestServer) async throws -> Void
) async throws {
    var options = RemoteStore.Options()
    options.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(2), jitter: 0.5)
    configure(&options)
    try await withTestServer(data: data) { [options] server in
        try await body(RemoteStore(baseURL: server.baseURL, options: options), server)
    }
}

extension TestServer {
    /// The URIs received so far, e.g. `/posts?userId=1`.
    var uris: [String] { recordedRequests.map(\.uri) }
}
