// modelsync-demo: a walk through what ModelSync does, printed as a transcript.
// Each section is one capability; `swift run modelsync-demo` runs them all.
import Foundation
import ModelSync
import ModelSyncServer

@main
struct Demo {
    static func main() async {
        do {
            try JSONMappingSection.run()
            try EditingSection.run()
            try SQLiteSection.run()
            try QueriesSection.run()
            try RelationsSection.run()
            try await LiveQueriesSection.run()
            try await RemoteSection.run()
            try await StorageSection.run()
            try await IdentityCacheSection.run()
            try await OfflineWritesSection.run()
            try await UsersAndAccessSection.run()
            print("\nDone.")
        } catch {
            print("\nThe demo failed: \(error)")
            exit(1)
        }
    }
}

/// Prints a section heading.
func section(_ title: String) {
    print("\n== \(title) " + String(repeating: "=", count: max(0, 68 - title.count)))
}

/// Prints one step: what is done, then the result indented.
func step(_ title: String, _ result: Any) {
    print("\n-- \(title)")
    for line in "\(result)".split(separator: "\n", omittingEmptySubsequences: false) {
        print("   \(line)")
    }
}

/// Runs `body` with a fresh temporary directory, then shuts `server` down and removes the
/// directory, whether `body` threw or not.
func withServer(_ server: SyncServer, directory prefix: String, _ body: (URL) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await body(directory)
    } catch {
        await server.shutdown()
        try? FileManager.default.removeItem(at: directory)
        throw error
    }
    await server.shutdown()
    try? FileManager.default.removeItem(at: directory)
}
