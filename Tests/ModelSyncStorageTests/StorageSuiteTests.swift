import Foundation
import ModelSyncStorage
import Testing

/// Saving, fetching and deleting values, models and arrays under explicit and default keys.
@Suite struct StorageSuiteTests {
    let storage: StorageRoot

    init() throws { storage = try StorageRoot() }
    let alice = Profile(id: 1, name: "Alice", joined: Date(timeIntervalSince1970: 1_763_721_257.123456), tags: ["admin"])
    let bob = Profile(id: 2, name: "Bob", joined: Date(timeIntervalSince1970: 0))

    @Test func plainValuesRoundTripExactly() throws {
        let suite = try storage.suite()
        let date = Date(timeIntervalSince1970: 1_763_721_257.123456)
        try suite.save("dark", forKey: "theme")
        try suite.save(42, forKey: "launches")
        try suite.save(0.1, forKey: "ratio")
        try suite.save(true, forKey: "onboarded")
        try suite.save(Data([0, 1, 2, 255]), forKey: "blob")
        try suite.save(date, forKey: "seen")
        try suite.save(["b": 2, "a": 1], forKey: "counts")

        #expect(try suite.fetch(String.self, forKey: "theme") == "dark")
        #expect(try suite.fetch(Int.self, forKey: "launches") == 42)
        #expect(try suite.fetch(Double.self, forKey: "ratio") == 0.1)
        #expect(try suite.fetch(Bool.self, forKey: "onboarded") == true)
        #expect(try suite.fetch(Data.self, forKey: "blob") == Data([0, 1, 2, 255]))
        #expect(try suite.fetch(Date.self, forKey: "seen") == date)
        #expect(try suite.fetch([String: Int].self, forKey: "counts") == ["a": 1, "b": 2])
        #expect(try suite.keys() == ["blob", "counts", "launches", "onboarded", "ratio", "seen", "theme"])
    }

    @Test func savingAgainReplacesTheValue() throws {
        let suite = try storage.suite()
        try suite.save("light", forKey: "theme")
        try suite.save("dark", forKey: "theme")
        #expect(try suite.fetch(String.self, forKey: "theme") == "dark")
        #expect(try storage.files(of: suite) == ["theme.json"])
    }

    @Test func missingKeysFetchNilAndDeleteNothing() throws {
        let suite = try storage.suite()
        #expect(try suite.fetch(String.self, forKey: "nothing") == nil)
        #expect(try suite.fetch(Profile.self, id: 7) == nil)
        #expect(try suite.delete(forKey: "nothing") == false)
        #expect(try suite.keys() == [])
    }

    @Test func deleteRemovesTheKey() throws {
        let suite = try storage.suite()
        try suite.save("dark", forKey: "theme")
        #expect(try suite.delete(forKey: "theme"))
        #expect(try suite.fetch(String.self, forKey: "theme") == nil)
        #expect(try storage.files(of: suite) == [])
    }

    @Test func modelsUnderAnExplicitKey() throws {
        let suite = try storage.suite()
        try suite.save(alice, forKey: "me")
        #expect(try suite.fetch(Profile.self, forKey: "me") == alice)
        // Stored as the model's JSON.
        let json = try String(contentsOf: storage.file("me", of: suite), encoding: .utf8)
        #expect(json == #"{"id":1,"name":"Alice","joined":1763721257.123456,"tags":["admin"]}"#)
    }

    @Test func modelsUnderTheirDefaultKey() throws {
        let suite = try storage.suite()
        #expect(try suite.save(alice) == "Profile.1")
        #expect(try suite.fetch(Profile.self, id: 1) == alice)
        #expect(try suite.fetch(Profile.self, forKey: "Profile.1") == alice)
        #expect(try suite.fetch(Profile.self, id: 2) == nil)

        #expect(try suite.delete(alice))
        #expect(try suite.fetch(Profile.self, id: 1) == nil)
        try suite.save(bob)
        #expect(try suite.delete(Profile.self, id: 2))
        #expect(try suite.keys() == [])
    }

    @Test func arraysOfModels() throws {
        let suite = try storage.suite()
        try suite.save([alice, bob], forKey: "team")
        #expect(try suite.fetch([Profile].self, forKey: "team") == [alice, bob])

        // Without a key, each model goes under its own default key.
        #expect(try suite.save([alice, bob]) == ["Profile.1", "Profile.2"])
        #expect(try suite.fetch(Profile.self, id: 2) == bob)
        #expect(try suite.keys() == ["Profile.1", "Profile.2", "team"])
    }

    /// A batch of keyed values: one directory flush, each key its own file. Keys that Swift
    /// calls equal but whose bytes differ stay two keys; a repeated key keeps its last value.
    @Test func batchOfKeyedValues() throws {
        let suite = try storage.suite()
        try suite.save("old", forKey: "a")
        try suite.save([(key: "a", value: "new"), (key: "caf\u{E9}", value: "composed"), (key: "cafe\u{301}", value: "decomposed"), (key: "a", value: "last")])
        #expect(try suite.fetch(String.self, forKey: "a") == "last")
        #expect(try suite.fetch(String.self, forKey: "caf\u{E9}") == "composed")
        #expect(try suite.fetch(String.self, forKey: "cafe\u{301}") == "decomposed")
        #expect(try suite.keys().count == 3)
        #expect(try storage.files(of: suite).allSatisfy { !$0.hasPrefix(".") })
        try suite.save([(key: String, value: Int)]())
    }

    /// An invalid key refuses the whole batch before anything is written.
    @Test func batchWithAnInvalidKeyWritesNothing() throws {
        let suite = try storage.suite()
        try suite.save(1, forKey: "kept")
        let error = #expect(throws: StorageError.self) { try suite.save([(key: "kept", value: 2), (key: "../escape", value: 3)]) }
        #expect(error?.kind == .invalidKey(.containsSlash))
        #expect(try suite.fetch(Int.self, forKey: "kept") == 1)
        #expect(try storage.files(of: suite) == ["kept.json"])
    }

    /// A rename that fails mid-batch (the key's file name is taken by a directory): the files
    /// renamed before it are kept, the rest are not written, and no temporary file is left.
    @Test func batchFailingMidwayLeavesNoTemporaryFiles() throws {
        let suite = try storage.suite()
        try FileManager.default.createDirectory(at: storage.file("blocked", of: suite), withIntermediateDirectories: false)
        let error = #expect(throws: StorageError.self) {
            try suite.save([(key: "first", value: 1), (key: "blocked", value: 2), (key: "third", value: 3)])
        }
        guard case .fileSystem? = error?.kind else {
            Issue.record("expected a file-system error, got \(String(describing: error))")
            return
        }
        #expect(try suite.fetch(Int.self, forKey: "first") == 1)
        #expect(try suite.fetch(Int.self, forKey: "third") == nil)
        #expect(try storage.files(of: suite) == ["blocked.json", "first.json"])
    }

    @Test func defaultKeys() throws {
        let suite = try storage.suite()
        #expect(try suite.key(for: Membership(groupId: 3, userId: 7, role: "owner")) == "Membership.3,7")
        #expect(try suite.key(for: Membership.self, id: PrimaryKey(3, 7)) == "Membership.3,7")
        #expect(try suite.key(for: Ticket(id: 5, title: "Bug")) == "Ticket.5")

        let membership = Membership(groupId: 3, userId: 7, role: "owner")
        try suite.save(membership)
        #expect(try suite.fetch(Membership.self, id: PrimaryKey(3, 7)) == membership)
    }

    @Test func compositeKeysContainingTheSeparatorDoNotCollide() throws {
        let suite = try storage.suite()
        let first = Pair(left: "a,b", right: "c", note: "first")
        let second = Pair(left: "a", right: "b,c", note: "second")
        try suite.save(first)
        try suite.save(second)
        #expect(try suite.key(for: first) == "Pair.a%2Cb,c")
        #expect(try suite.key(for: second) == "Pair.a,b%2Cc")
        #expect(try suite.fetch(Pair.self, id: PrimaryKey("a,b", "c")) == first)
        #expect(try suite.fetch(Pair.self, id: PrimaryKey("a", "b,c")) == second)
    }

    @Test func noDefaultKeyWithoutAPrimaryKeyValue() throws {
        let suite = try storage.suite()
        let unsaved = #expect(throws: StorageError.self) { try suite.save(Ticket(id: nil, title: "New")) }
        #expect(unsaved?.kind == .missingPrimaryKey)
        #expect(unsaved?.suite == "tests")
        let keyless = #expect(throws: StorageError.self) { try suite.save(Memo(text: "hi")) }
        #expect(keyless?.kind == .missingPrimaryKey)
        let wrongCount = #expect(throws: StorageError.self) { try suite.fetch(Membership.self, id: PrimaryKey(.integer(3))) }
        #expect(wrongCount?.kind == .missingPrimaryKey)
        #expect(try suite.keys() == [])
    }

    @Test func updateReadsModifiesAndWrites() throws {
        let suite = try storage.suite()
        #expect(try suite.update(Int.self, forKey: "launches", default: 0) { $0 += 1 } == 1)
        #expect(try suite.update(Int.self, forKey: "launches", default: 0) { $0 += 1 } == 2)
        #expect(try suite.fetch(Int.self, forKey: "launches") == 2)

        // The optional form sees nil for a missing key, and nil removes the key.
        try suite.update([String].self, forKey: "recent") { value in
            #expect(value == nil)
            value = ["a"]
        }
        #expect(try suite.fetch([String].self, forKey: "recent") == ["a"])
        try suite.update([String].self, forKey: "recent") { $0 = nil }
        #expect(try suite.fetch([String].self, forKey: "recent") == nil)
    }

    @Test func updateThatThrowsStoresNothing() throws {
        struct Refused: Error {}
        let suite = try storage.suite()
        try suite.save(alice, forKey: "me")
        #expect(throws: Refused.self) {
            try suite.update(Profile.self, forKey: "me") { value in
                value?.name = "Mallory"
                throw Refused()
            }
        }
        #expect(try suite.fetch(Profile.self, forKey: "me") == alice)
    }

    @Test func valuesSurviveReopening() throws {
        try storage.suite("prefs").save(alice)
        #expect(try storage.suite("prefs").fetch(Profile.self, id: 1) == alice)
    }

    @Test func removeAllEmptiesTheSuite() throws {
        let suite = try storage.suite()
        try suite.save(alice)
        try suite.save("dark", forKey: "theme")
        try suite.removeAll()
        #expect(try suite.keys() == [])
        #expect(try storage.files(of: suite) == [])
    }

    @Test func suitesAreIsolated() throws {
        let work = try storage.suite("work")
        let home = try storage.suite("home")
        try work.save("dark", forKey: "theme")
        try home.save("light", forKey: "theme")
        try home.save(alice)

        #expect(try work.fetch(String.self, forKey: "theme") == "dark")
        #expect(try home.fetch(String.self, forKey: "theme") == "light")
        #expect(try work.fetch(Profile.self, id: 1) == nil)
        #expect(try work.keys() == ["theme"])

        try home.removeAll()
        #expect(try work.fetch(String.self, forKey: "theme") == "dark")
        try work.delete(forKey: "theme")
        #expect(try home.keys() == [])
        #expect(work.directory != home.directory)
    }

    #if !canImport(Darwin)
    @Test func defaultDirectoryFollowsXDG() throws {
        let data = try StorageSuite.defaultDirectory(application: "demo", environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/me"])
        #expect(data.path == "/data/demo/storage")
        // A relative XDG_DATA_HOME is ignored, as the specification says.
        let home = try StorageSuite.defaultDirectory(application: "demo", environment: ["XDG_DATA_HOME": "data", "HOME": "/home/me"])
        #expect(home.path == "/home/me/.local/share/demo/storage")
        let unset = try StorageSuite.defaultDirectory(application: "demo", environment: ["HOME": "/home/me"])
        #expect(unset.path == "/home/me/.local/share/demo/storage")
    }
    #endif

    @Test func defaultDirectoryRejectsBadApplicationNames() throws {
        let error = #expect(throws: StorageError.self) { try StorageSuite.defaultDirectory(application: "../elsewhere") }
        #expect(error?.kind == .invalidSuiteName(.containsSlash))
    }
}
