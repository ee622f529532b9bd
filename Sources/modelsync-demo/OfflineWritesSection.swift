import Foundation
import ModelSync
import ModelSyncServer

/// Offline writes: SyncStore saves locally with an outbox entry, coalesces, then pushes to the
/// bundled server.
enum OfflineWritesSection {
    static func run() async throws {
        section("Offline writes with SyncStore")
        let server = try await ModelSyncServer.start(data: ModelSyncServer.sampleData)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-demo-sync-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try await tour(server, databasePath: directory.appendingPathComponent("app.sqlite").path)
            await server.shutdown()
            try? FileManager.default.removeItem(at: directory)
        } catch {
            await server.shutdown()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private static func tour(_ server: ModelSyncServer, databasePath: String) async throws {
        let database = try Database(path: databasePath, models: [DemoPost.self])
        let sync = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: database, models: [DemoPost.self])

        var post = DemoPost(id: nil, userId: 1, title: "Written offline", text: "…")
        try await sync.save(&post)
        step("save: a local row and an outbox entry, no request", "id \(post.id ?? 0) (temporary), pending \(try await sync.pendingCount())")
        post.title = "Edited offline"
        try await sync.save(&post)
        step("save again: coalesced into the pending create", "pending \(try await sync.pendingCount())")

        server.clearRecordedRequests()
        let summary = try await sync.push()
        let requests = server.recordedRequests.map { "\($0.method) \($0.uri) Idempotency-Key: \($0.header("Idempotency-Key") ?? "-")" }
        let stored = try await database.read { db in try DemoPost.all(db, where: "title = ?", [.text("Edited offline")]) }
        step("push: one POST; the server's id replaces the temporary one",
             "sent \(summary.sent)\n" + requests.joined(separator: "\n") + "\nlocal id now \(stored.first?.id ?? 0)")
    }
}
