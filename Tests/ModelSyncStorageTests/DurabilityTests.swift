import Foundation
import ModelSyncStorage
import Testing

/// Concurrent writers, interrupted writes and damaged files.
@Suite struct DurabilityTests {
    let storage: StorageRoot

    init() throws { storage = try StorageRoot() }

    /// Many tasks incrementing one counter through two `StorageSuite` values of the same suite
    /// (one reached through a symbolic link): every increment counts.
    @Test func concurrentUpdatesLoseNothing() async throws {
        let first = try storage.suite("counters")
        let link = storage.root.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: storage.root)
        let second = try StorageSuite(name: "counters", in: link)
        let tasks = 16, increments = 10

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                let suite = task.isMultiple(of: 2) ? first : second
                group.addTask {
                    for _ in 0..<increments {
                        try suite.update(Int.self, forKey: "count", default: 0) { $0 += 1 }
                        try suite.update([Int].self, forKey: "log", default: []) { $0.append(task) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try first.fetch(Int.self, forKey: "count") == tasks * increments)
        let log = try #require(try second.fetch([Int].self, forKey: "log"))
        #expect(log.count == tasks * increments)
        #expect(Set(log) == Set(0..<tasks))
        #expect(try storage.files(of: first) == ["count.json", "log.json"])
    }

    /// Plain saves racing with updates: each save lands whole, and the updates in between count.
    @Test func concurrentSavesAndUpdates() async throws {
        let suite = try storage.suite()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<10 {
                        try suite.save(Profile(id: task, name: "v\(round)", joined: Date(timeIntervalSince1970: 0)))
                        try suite.update(Int.self, forKey: "saves", default: 0) { $0 += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try suite.fetch(Int.self, forKey: "saves") == 80)
        for task in 0..<8 { #expect(try suite.fetch(Profile.self, id: task)?.name == "v9") }
    }

    /// A crash mid-write leaves a temporary file beside the old value: it is ignored, the old
    /// value is still there, and later writes and removeAll work.
    @Test func leftoverTemporaryFileIsIgnored() throws {
        let suite = try storage.suite()
        let old = Profile(id: 1, name: "Old", joined: Date(timeIntervalSince1970: 0))
        try suite.save(old)
        let temporary = suite.directory.appendingPathComponent(".tmp-3F2504E0-4F89-11D3-9A0C-0305E82C3301")
        try Data(#"{"id":1,"name":"Ne"#.utf8).write(to: temporary)

        #expect(try suite.fetch(Profile.self, id: 1) == old)
        #expect(try suite.keys() == ["Profile.1"])

        var new = old
        new.name = "New"
        try suite.save(new)
        #expect(try suite.fetch(Profile.self, id: 1) == new)
        try suite.removeAll()
        #expect(try storage.files(of: suite) == [])
    }

    /// A write that fails before the rename (here: the value cannot be encoded) keeps the old
    /// value and leaves no temporary file.
    @Test func failedWriteKeepsTheOldValue() throws {
        let suite = try storage.suite()
        try suite.save(1.5, forKey: "ratio")
        let error = #expect(throws: StorageError.self) { try suite.save(Double.nan, forKey: "ratio") }
        #expect(error?.kind == .encodingFailed)
        #expect(error?.key == "ratio")
        #expect(try suite.fetch(Double.self, forKey: "ratio") == 1.5)
        #expect(try storage.files(of: suite) == ["ratio.json"])
    }

    @Test(arguments: [
        ("garbage", #"not json at all"#),
        ("truncated", #"{"id":1,"name":"Ali"#),
        ("empty", ""),
        ("trailing", #"{"id":1,"name":"Alice","joined":0} {"#),
    ])
    func corruptFilesThrowAndStay(_ label: String, _ content: String) throws {
        let suite = try storage.suite()
        try suite.save(Profile(id: 1, name: "Alice", joined: Date(timeIntervalSince1970: 0)), forKey: "me")
        let file = storage.file("me", of: suite)
        try Data(content.utf8).write(to: file)

        let fetched = #expect(throws: StorageError.self) { try suite.fetch(Profile.self, forKey: "me") }
        #expect(fetched?.kind == .corrupt)
        #expect(fetched?.suite == "tests")
        #expect(fetched?.key == "me")
        #expect(fetched?.description.hasPrefix("storage suite 'tests', key 'me': ") == true)

        // An update cannot replace what it could not read: the file stays for inspection.
        let updated = #expect(throws: StorageError.self) {
            try suite.update(Profile.self, forKey: "me") { $0?.name = "Bob" }
        }
        #expect(updated?.kind == .corrupt)
        #expect(try String(contentsOf: file, encoding: .utf8) == content)
        // An explicit save or delete still works.
        #expect(try suite.delete(forKey: "me"))
    }

    @Test func truncatedModelFile() throws {
        let suite = try storage.suite()
        try suite.save(Profile(id: 1, name: "Alice", joined: Date(timeIntervalSince1970: 0), tags: ["a", "b"]))
        let file = storage.file("%50rofile.1", of: suite)
        let bytes = try Data(contentsOf: file)
        for length in [1, bytes.count / 2, bytes.count - 1] {
            try bytes.prefix(length).write(to: file)
            let error = #expect(throws: StorageError.self) { try suite.fetch(Profile.self, id: 1) }
            #expect(error?.kind == .corrupt, "\(length) bytes")
            #expect(error?.key == "Profile.1")
        }
    }

    @Test func valueOfAnotherType() throws {
        let suite = try storage.suite()
        try suite.save("dark", forKey: "theme")
        let error = #expect(throws: StorageError.self) { try suite.fetch(Profile.self, forKey: "theme") }
        #expect(error?.kind == .typeMismatch)
        #expect(error?.key == "theme")
        #expect(try suite.fetch(String.self, forKey: "theme") == "dark")
    }

    @Test func unreadableSuiteDirectory() throws {
        // A file where the suite's directory should be.
        try FileManager.default.createDirectory(at: storage.root, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: storage.root.appendingPathComponent("blocked").path, contents: Data()))
        let error = #expect(throws: StorageError.self) { try storage.suite("blocked").save(1, forKey: "a") }
        #expect(error?.kind == .fileSystem(errno: ENOTDIR))
        #expect(error?.suite == "blocked")
    }
}
