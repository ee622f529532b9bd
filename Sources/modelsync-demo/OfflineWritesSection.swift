import Foundation
import ModelSync
import ModelSyncServer

/// Offline writes and sync: SyncStore saves locally with an outbox entry, coalesces, pushes to
/// the bundled server, then meets a concurrent edit (a merged conflict) and pulls a deletion.
enum OfflineWritesSection {
    static func run() async throws {
        section("Offline writes with SyncStore")
        // A request log, to show what the client sent.
        let recorder = RequestRecorderMiddleware()
        try await withSQLiteServer(data: SyncServer.sampleData, options: ServerOptions(middleware: [recorder]), directory: "modelsync-demo-sync") {
            server, directory in
            try await tour(server, recorder, databasePath: directory.appendingPathComponent("app.sqlite").path)
        }
    }

    private static func tour(_ server: SyncServer, _ recorder: RequestRecorderMiddleware, databasePath: String) async throws {
        let database = try Database(path: databasePath, models: [DemoPost.self])
        let sync = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: database, models: [DemoPost.self])

        var post = DemoPost(id: nil, userId: 1, title: "Written offline", text: "…")
        try await sync.save(&post)
        step("save: a local row and an outbox entry, no request", "id \(post.id ?? 0) (temporary), pending \(try await sync.pendingCount())")
        post.title = "Edited offline"
        try await sync.save(&post)
        step("save again: coalesced into the pending create", "pending \(try await sync.pendingCount())")

        recorder.clear()
        let summary = try await sync.push()
        let requests = recorder.requests.map { "\($0.method) \($0.uri) Idempotency-Key: \($0.header("Idempotency-Key") ?? "-")" }
        let stored = try await database.read { db in try DemoPost.all(db, where: "title = ?", [.text("Edited offline")]) }
        step("push: one POST; the server's id replaces the temporary one",
             "sent \(summary.sent)\n" + requests.joined(separator: "\n") + "\nlocal id now \(stored.first?.id ?? 0)")

        // Another client renames the post on the server while this one edits its text.
        guard var mine = stored.first, let id = mine.id else { return }
        let elsewhere = RemoteStore(baseURL: server.baseURL)
        var theirs = try await elsewhere.fetch(DemoPost.self, id: id)
        theirs.title = "Renamed elsewhere"
        try await elsewhere.save(&theirs)
        mine.text = "Text edited here"
        try await sync.save(&mine)
        recorder.clear()
        let merged = try await sync.push()
        let record = try await server.data["posts"]?.arrayValue?.first { $0["id"]?.intValue == id }
        step("push again: If-Match meets a newer version (412); the default policy merges field by field",
             recorder.requests.map { "\($0.method) \($0.uri) If-Match: \($0.header("If-Match") ?? "-")" }.joined(separator: "\n")
                + "\nconflicts \(merged.conflicts); on the server: title \(record?["title"]?.stringValue ?? "?"), body \(record?["body"]?.stringValue ?? "?")")

        // The other client deletes a post this one has; a pull brings the deletion.
        try await sync.pull(DemoPost.self)
        try await elsewhere.delete(DemoPost(id: 1, userId: 1, title: "", text: ""))
        let pulled = try await sync.pull(DemoPost.self)
        let first = try await database.read { db in try DemoPost.find(1, db) }
        step("pull: the changes since the stored cursor, in one transaction",
             "\(pulled.upserted) stored, \(pulled.deleted) deleted; post 1 is \(first == nil ? "gone" : "still here") locally")
    }
}
