import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import Testing

/// Models of the sync tests, over the bundled server's `notes` and `replies` collections.
@Model
struct SyncNote: SQLModel, Equatable {
    var id: Int?
    var title: String
    var body: String = ""
    var stars: Int = 0
}

extension SyncNote: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}

@Model
struct SyncReply: SQLModel, Equatable {
    var id: Int?
    var noteId: Int
    var text: String

    static let note = belongsTo(SyncNote.self, foreignKey: \.noteId, onDelete: .cascade)
    static let relations: [any ModelRelation<SyncReply>] = [note]
}

extension SyncReply: RemoteResource {
    static let remote = RemoteConfiguration(path: "replies")
}

/// A sync store over a SQLite file in a fresh directory and a new in-process server with
/// empty `notes` and `replies`.
func withSyncFixture<T>(
    data: JSONValue = ["notes": [], "replies": []],
    maxConcurrentRequests: Int = 8,
    maxBatchSize: Int = 100,
    pullPageSize: Int = 5_000,
    serverOptions: ServerOptions = ServerOptions(),
    _ body: (SyncStore, TestServer, TemporaryDirectory) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory(prefix: "modelsync-sync")
    defer { directory.remove() }
    return try await withTestServer(data: data, options: serverOptions) { server in
        let database = try Database(path: directory.path("app.sqlite"), models: [SyncNote.self, SyncReply.self])
        let store = SyncStore(
            remote: RemoteStore(baseURL: server.baseURL), database: database, models: [SyncNote.self, SyncReply.self],
            maxConcurrentRequests: maxConcurrentRequests, maxBatchSize: maxBatchSize,
            pullPageSize: pullPageSize)
        return try await body(store, server, directory)
    }
}

/// The records of a server collection, by id.
func serverRecords(_ server: TestServer, _ name: String) async throws -> [Int: JSONValue] {
    var records: [Int: JSONValue] = [:]
    for record in try await server.data[name]?.arrayValue ?? [] {
        if let id = record["id"]?.intValue { records[id] = record }
    }
    return records
}

/// The requests the server received that are not reads.
func writeRequests(_ server: TestServer) -> [RecordedRequest] {
    server.recordedRequests.filter { $0.method != "GET" && $0.method != "HEAD" }
}
