import Foundation
import ModelSync

@Model
struct Bookmark: Equatable {
    var id: Int
    var title: String
    var url: String
    var savedAt: Date
}

/// Key-value storage: suites in a directory, models and plain values, a counter updated by
/// many tasks at once, and what a bad key or a damaged file gives.
enum StorageSection {
    static func run() async throws {
        section("Key-value storage")

        let root = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        step("Suites live in a per-user directory unless told otherwise", try StorageSuite.defaultDirectory(application: "modelsync-demo").path)

        let settings = try StorageSuite(name: "settings", in: root)
        let cache = try StorageSuite(name: "cache", in: root)
        try settings.save("dark", forKey: "theme")
        try cache.save("light", forKey: "theme")
        step(
            "Two suites, one key each: isolated",
            "settings: \(try settings.fetch(String.self, forKey: "theme") ?? "nil"), cache: \(try cache.fetch(String.self, forKey: "theme") ?? "nil")")

        let bookmark = Bookmark(
            id: 7, title: "Swift", url: "https://swift.org", savedAt: Date(timeIntervalSince1970: 1_763_721_257.5))
        let key = try settings.save(bookmark)
        let loaded = try settings.fetch(Bookmark.self, id: 7)
        step("A model under its default key '\(key)'", "read back equal: \(loaded == bookmark)")
        try settings.save([bookmark, bookmark], forKey: "Recent bookmarks")
        step(
            "An array under a key of our own; one JSON file per key, names encoded",
            try FileManager.default.contentsOfDirectory(atPath: settings.directory.path).sorted().joined(separator: "\n"))
        step("A missing key", "fetch(forKey: \"nothing\") = \(String(describing: try settings.fetch(Int.self, forKey: "nothing")))")

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask { try settings.update(Int.self, forKey: "launches", default: 0) { $0 += 1 } }
            }
            try await group.waitForAll()
        }
        step("20 tasks each add 1 through update(_:forKey:default:)", "launches = \(try settings.fetch(Int.self, forKey: "launches") ?? 0)")

        do {
            try settings.save(1, forKey: "../escape")
        } catch let error as StorageError {
            step("A key that would leave the directory", error)
        }
        try Data(#"{"id":7,"title":"Sw"#.utf8).write(to: settings.directory.appendingPathComponent("%42ookmark.7.json"))
        do {
            _ = try settings.fetch(Bookmark.self, id: 7)
        } catch let error as StorageError {
            step("A truncated file: a typed error, the file left for inspection", "\(error.kind): \(error.suite) / \(error.key ?? "")")
        }
    }
}
