import Foundation
import ModelSync
import ModelSyncServer
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

/// A store against a fresh in-process server on a random port; the server is shut down after.
/// Retries wait 1–2 ms, so retry tests stay fast.
func withStore(
    data: JSONValue = ModelSyncServer.sampleData,
    configure: (inout RemoteStore.Options) -> Void = { _ in },
    _ body: (RemoteStore, ModelSyncServer) async throws -> Void
) async throws {
    let server = try await ModelSyncServer.start(data: data)
    var options = RemoteStore.Options()
    options.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(2), jitter: 0.5)
    configure(&options)
    let store = RemoteStore(baseURL: server.baseURL, options: options)
    do {
        try await body(store, server)
        await server.shutdown()
    } catch {
        await server.shutdown()
        throw error
    }
}

extension ModelSyncServer {
    /// The URIs received so far, e.g. `/posts?userId=1`.
    var uris: [String] { recordedRequests.map(\.uri) }
}
