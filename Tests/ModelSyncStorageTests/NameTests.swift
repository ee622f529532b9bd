import Foundation
import ModelSyncStorage
import Testing

/// Keys and suite names: what is rejected, and how the rest map to file names.
@Suite struct NameTests {
    let storage: StorageRoot

    init() throws { storage = try StorageRoot() }

    static let rejected: [(name: String, problem: StorageError.NameProblem)] = [
        ("", .empty),
        (".", .dotName),
        ("..", .dotName),
        ("../escape", .containsSlash),
        ("a/b", .containsSlash),
        ("/etc/passwd", .containsSlash),
        ("nul\0byte", .containsNUL),
        (String(repeating: "a", count: 251), .tooLong(length: 251, limit: 250)),
        // Every "é" is two UTF-8 bytes, each written %XX: 42 of them are 252 bytes.
        (String(repeating: "é", count: 42), .tooLong(length: 252, limit: 250)),
    ]

    @Test(arguments: rejected)
    func rejectedKeys(_ key: String, _ problem: StorageError.NameProblem) throws {
        let suite = try storage.suite()
        let saved = #expect(throws: StorageError.self) { try suite.save("value", forKey: key) }
        #expect(saved?.kind == .invalidKey(problem))
        #expect(saved?.key == key)
        #expect(saved?.suite == "tests")
        let fetched = #expect(throws: StorageError.self) { try suite.fetch(String.self, forKey: key) }
        #expect(fetched?.kind == .invalidKey(problem))
        let deleted = #expect(throws: StorageError.self) { try suite.delete(forKey: key) }
        #expect(deleted?.kind == .invalidKey(problem))
        let updated = #expect(throws: StorageError.self) { try suite.update(Int.self, forKey: key, default: 0) { $0 += 1 } }
        #expect(updated?.kind == .invalidKey(problem))
        // Nothing was written, inside the suite or next to it.
        #expect(try storage.files(of: suite) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: storage.root.path) == ["tests"])
    }

    @Test(arguments: rejected)
    func rejectedSuiteNames(_ name: String, _ problem: StorageError.NameProblem) throws {
        let error = #expect(throws: StorageError.self) { try StorageSuite(name: name, in: storage.root) }
        #expect(error?.kind == .invalidSuiteName(problem))
        #expect(error?.suite == name)
        // Nothing was created under the root.
        #expect(try FileManager.default.contentsOfDirectory(atPath: storage.root.path).isEmpty)
    }

    @Test func longestNamesAreAccepted() throws {
        let suite = try storage.suite(String(repeating: "s", count: 250))
        let ascii = String(repeating: "a", count: 250)
        let accented = String(repeating: "é", count: 41)
        try suite.save(1, forKey: ascii)
        try suite.save(2, forKey: accented)
        #expect(try suite.fetch(Int.self, forKey: ascii) == 1)
        #expect(try suite.fetch(Int.self, forKey: accented) == 2)
    }

    /// Keys that are awkward as file names round-trip and stay distinct, including keys that
    /// differ only by case or by Unicode normalization.
    @Test func awkwardKeysRoundTrip() throws {
        let suite = try storage.suite()
        let keys = [
            "Key", "key", "KEY", ".hidden", "%41", "A", "with space", "tab\there", "a:b*c?\"<>|\\",
            "caf\u{E9}", "cafe\u{301}", "日本語", "emoji 🎉", "trailing.", "..leading", "a..b", "CON", "Profile.1",
        ]
        for (index, key) in keys.enumerated() { try suite.save(index, forKey: key) }
        for (index, key) in keys.enumerated() { #expect(try suite.fetch(Int.self, forKey: key) == index, "\(key)") }
        #expect(try suite.keys() == keys.sorted())

        // On disk: plain ASCII, never a leading dot, one file per key.
        let files = try storage.files(of: suite)
        #expect(files.count == keys.count)
        #expect(files.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } && !$0.hasPrefix(".") })
        #expect(Set(files.map { $0.lowercased() }).count == keys.count)
    }

    @Test func fileNamesAreReadable() throws {
        let suite = try storage.suite()
        try suite.save(1, forKey: "Hello World")
        try suite.save(2, forKey: "user-settings_v2.backup")
        #expect(try storage.files(of: suite) == ["%48ello%20%57orld.json", "user-settings_v2.backup.json"])
    }

    @Test func foreignFilesAreNotKeys() throws {
        let suite = try storage.suite()
        try suite.save(1, forKey: "real")
        for name in ["notes.txt", "%zz.json", "%2f.json", "Upper.json", ".json"] {
            #expect(FileManager.default.createFile(atPath: suite.directory.appendingPathComponent(name).path, contents: Data("1".utf8)))
        }
        #expect(try suite.keys() == ["real"])
        // removeAll leaves what it did not write.
        try suite.removeAll()
        #expect(try storage.files(of: suite) == ["%2f.json", "%zz.json", ".json", "Upper.json", "notes.txt"])
    }

    @Test func suiteNamesDifferingByCaseAreDifferentSuites() throws {
        let lower = try storage.suite("settings")
        let upper = try storage.suite("Settings")
        try lower.save("lower", forKey: "theme")
        try upper.save("upper", forKey: "theme")
        #expect(try lower.fetch(String.self, forKey: "theme") == "lower")
        #expect(try upper.fetch(String.self, forKey: "theme") == "upper")
    }
}
