import Foundation
import ModelSync

/// The model the scenario writes: the server's `notes`.
@Model
struct StressNote: SQLModel {
    var id: Int?
    var title: String
}

extension StressNote: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}

/// Saves notes through a `SyncStore`, deletes every fifth, pushes every few writes and pulls
/// now and then, forever, printing `saved <title>` once a save has returned and `deleted
/// <title>` once a delete has (the parent treats both as acknowledged), and `pushed` after each
/// push. The parent kills it with SIGKILL at random moments.
enum SyncWrites {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 3, let url = URL(string: arguments[1]), let first = Int(arguments[2]) else { return 64 }
        do {
            let database = try Database(path: arguments[0], models: [StressNote.self])
            var options = RemoteStore.Options()
            options.retry = RetryPolicy(maxAttempts: 1)
            let sync = SyncStore(remote: RemoteStore(baseURL: url, options: options), database: database, models: [StressNote.self])
            var index = first
            while true {
                var note = StressNote(id: nil, title: "note-\(index)")
                try await sync.save(&note)
                if index % 3 == 0 {
                    note.title += "-edited"
                    try await sync.save(&note)
                }
                report("saved \(note.title)")
                if index % 5 == 0 {
                    try await sync.delete(note)
                    report("deleted \(note.title)")
                }
                if index % 4 == 0 {
                    _ = try? await sync.push()
                    report("pushed")
                }
                if index % 8 == 0 { _ = try? await sync.pull(StressNote.self) }
                index += 1
            }
        } catch {
            FileHandle.standardError.write(Data("sync-writes: \(error)\n".utf8))
            return 1
        }
    }
}
