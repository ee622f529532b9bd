import ModelSyncServer

// A JSON-data server in-process, started and stopped: no PostgreSQL client (postgres-nio,
// swift-crypto), no SQLite and no HTTP client in this build.
let server = try await SyncServer.start(data: ["posts": [["id": 1, "title": "Hello"]]])
let posts = try await server.data["posts"]?.arrayValue ?? []
await server.shutdown()
precondition(posts.count == 1, "the server lost its data")
print("ServerConsumer: served \(posts.count) post at \(server.baseURL)")
