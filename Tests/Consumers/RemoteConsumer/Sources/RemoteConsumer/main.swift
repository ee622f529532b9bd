import Foundation
import ModelSyncRemote

@Model
struct Post {
    var id: Int?
    var title: String
}

extension Post: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

// Built, not run against a server: this package checks what the REST product alone needs.
func firstPosts(from baseURL: URL) async throws -> [Post] {
    let api = RemoteStore(baseURL: baseURL)
    return try await api.list(Post.self, parameters: ["_limit": 10])
}
print("RemoteConsumer: built")
