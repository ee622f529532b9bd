import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerPostgres
import ModelSyncTesting
import TestProcesses
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `modelsync-stress-child`, built beside the test bundle by `swift build --build-tests`.
private let stressChild = StressMode.builtExecutable(named: "modelsync-stress-child")

@Suite struct SyncCrashTests {
    // The child is an executable of this package; a test build without it cannot run this
    // (skipped, except under CI=true, where it fails).
    @Test(
        .enabled(if: stressChild != nil || StressMode.componentsRequired, "modelsync-stress-child is not built"),
        .timeLimit(.minutes(5)))
    func everyAcknowledgedWriteReachesTheServerExactlyOnceDespiteKills() async throws {
        let stressChild = try #require(stressChild, "modelsync-stress-child is missing beside the test bundle")
        let runs = StressMode.count(3, stress: 200)
        let directory = try TemporaryDirectory(prefix: "modelsync-sync-crash")
        defer { directory.remove() }
        let databasePath = directory.path("app.sqlite")
        try await withTestServer(data: ["notes": []]) { server in
            var acknowledged = Set<String>()
            var deleted = Set<String>()
            // A note the child deletes right after saving it, when the kill came after its save
            // was read: the delete may have run before the kill, unreported. Either is right.
            var deletedOrNot = Set<String>()
            for run in 0..<runs {
                let process = try ChildProcess(
                    stressChild, arguments: ["sync-writes", databasePath, server.baseURL.absoluteString, String(run * 1_000_000)])
                // Kill after a random number of acknowledged saves: mid-save, mid-push, anywhere.
                let killAfter = Int.random(in: 1...40)
                var seen = 0
                var last: String?
                for await line in process.lines() {
                    if line.hasPrefix("deleted ") { deleted.insert(String(line.dropFirst("deleted ".count))) }
                    guard line.hasPrefix("saved ") else { continue }
                    last = String(line.dropFirst("saved ".count))
                    acknowledged.insert(last ?? "")
                    seen += 1
                    if seen == killAfter { break }
                }
                await process.kill()
                if let last, Self.childDeletes(last) { deletedOrNot.insert(last) }
            }

            // The app restarts, pushes what is left and pulls.
            let database = try Database(path: databasePath, models: [StressNote.self])
            let sync = SyncStore(remote: RemoteStore(baseURL: server.baseURL), database: database, models: [StressNote.self])
            try await sync.push()
            try await sync.pull(StressNote.self)
            let titles = (try await server.data["notes"]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue }
            var counts: [String: Int] = [:]
            for title in titles { counts[title, default: 0] += 1 }
            #expect(counts.values.allSatisfy { $0 == 1 }, "duplicated on the server: \(counts.filter { $0.value > 1 })")
            let missing = acknowledged.subtracting(deleted).subtracting(deletedOrNot).filter { counts[$0] == nil }
            #expect(missing.isEmpty, "acknowledged but not on the server: \(missing.sorted())")
            let resurrected = deleted.filter { counts[$0] != nil }
            #expect(resurrected.isEmpty, "deleted but on the server: \(resurrected.sorted())")
            #expect(try await sync.pendingCount() == 0)
            let local = try await database.read { db in try StressNote.all(db) }.map(\.title).sorted()
            #expect(local == titles.sorted())
        }
    }

    /// Whether the child deletes the note it saved under `title` (`note-<index>[-edited]`, every
    /// fifth index).
    static func childDeletes(_ title: String) -> Bool {
        Int(title.dropFirst("note-".count).prefix { $0.isNumber }).map { $0 % 5 == 0 } ?? false
    }
}

/// The child's model (`Sources/modelsync-stress-child/SyncWrites.swift`): the same name, so the same table and outbox entries.
@Model
struct StressNote: SQLModel {
    var id: Int?
    var title: String
}

extension StressNote: RemoteResource {
    static let remote = RemoteConfiguration(path: "notes")
}
