import Foundation
import ModelSyncStorage
import ModelSyncTesting
import Testing

/// Two models of the same name in different namespaces: both default to keys `Clash.<id>`.
enum StorageNamespaceA {
    @Model struct Clash: Equatable {
        var id: Int
        var title: String
    }
}

enum StorageNamespaceB {
    @Model struct Clash: Equatable {
        var id: Int
        var score: Int
    }
}

/// Issue 13, items 15 and 18: keys are identities by their bytes, and same-named types do not
/// share default keys.
@Suite struct StorageNameIdentityTests {
    let storage: StorageRoot

    init() throws { storage = try StorageRoot() }

    @Test func canonicallyEquivalentKeysAreTwoKeys() throws {
        let suite = try storage.suite()
        try suite.save("precomposed", forKey: "caf\u{E9}")
        try suite.save("decomposed", forKey: "cafe\u{301}")
        #expect(try suite.fetch(String.self, forKey: "caf\u{E9}") == "precomposed")
        #expect(try suite.fetch(String.self, forKey: "cafe\u{301}") == "decomposed")
        #expect(try suite.keys().count == 2)
        try suite.save(Pair(left: "caf\u{E9}", right: "x", note: "one"))
        try suite.save(Pair(left: "cafe\u{301}", right: "x", note: "two"))
        #expect(try suite.fetch(Pair.self, id: PrimaryKey("caf\u{E9}", "x"))?.note == "one")
        #expect(try suite.fetch(Pair.self, id: PrimaryKey("cafe\u{301}", "x"))?.note == "two")
    }

    @Test func canonicallyEquivalentSuiteNamesAreTwoSuites() throws {
        let composed = try storage.suite("caf\u{E9}"), decomposed = try storage.suite("cafe\u{301}")
        try composed.save(1, forKey: "n")
        try decomposed.save(2, forKey: "n")
        #expect(try composed.fetch(Int.self, forKey: "n") == 1)
        #expect(try decomposed.fetch(Int.self, forKey: "n") == 2)
    }

    @Test func sameNamedTypesDoNotShareDefaultKeys() throws {
        let suite = try storage.suite()
        // A type whose name clashes with no other keeps its key, so stored values are found.
        #expect(try suite.save(StorageNamespaceA.Clash(id: 1, title: "first")) == "Clash.1")
        let error = #expect(throws: StorageError.self) { try suite.save(StorageNamespaceB.Clash(id: 1, score: 9)) }
        #expect(
            error?.kind
                == .defaultKeyClash(
                    name: "Clash", types: [String(reflecting: StorageNamespaceA.Clash.self), String(reflecting: StorageNamespaceB.Clash.self)]))
        #expect(throws: StorageError.self) { _ = try suite.fetch(StorageNamespaceB.Clash.self, id: 1) }
        // Nothing was overwritten.
        #expect(try suite.fetch(StorageNamespaceA.Clash.self, id: 1) == StorageNamespaceA.Clash(id: 1, title: "first"))
        // Explicit keys still work for the other type, and another suite is another scope.
        try suite.save(StorageNamespaceB.Clash(id: 1, score: 9), forKey: "b-clash-1")
        let other = try storage.suite("other")
        #expect(try other.save(StorageNamespaceB.Clash(id: 1, score: 9)) == "Clash.1")
    }
}
