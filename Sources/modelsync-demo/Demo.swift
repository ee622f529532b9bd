// modelsync-demo: a walk through what ModelSync does, printed as a transcript.
// Each section is one capability; `swift run modelsync-demo` runs them all.
import Foundation
import ModelSync
import ModelSyncServer
import ModelSyncServerSQLite

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
            try await SharingSection.run()
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

/// Starts a server on a SQLite file holding `data`, in a fresh temporary directory; runs
/// `prepare` on the file before the server opens it and `body` while it serves (with the
/// directory, for the clients' databases); then shuts the server down and removes the directory,
/// whether `body` threw or not.
func withSQLiteServer(
    data: JSONValue, options: ServerOptions = ServerOptions(), directory prefix: String,
    prepare: (String) async throws -> Void = { _ in }, _ body: (SyncServer, URL) async throws -> Void
) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    // What `modelsync-server import data.json --database sqlite:server.sqlite` does.
    let file = directory.appendingPathComponent("server.sqlite").path
    try await SyncServer.importData(data, intoSQLite: file)
    try await prepare(file)
    let server = try await SyncServer.start(sqlite: file, options: options)
    do {
        try await body(server, directory)
    } catch {
        await server.shutdown()
        throw error
    }
    await server.shutdown()
}
