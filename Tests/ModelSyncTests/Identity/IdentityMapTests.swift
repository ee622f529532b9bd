import Foundation
import ModelSync
import ModelSyncTesting
import Testing

@Suite struct IdentityMapTests {
    @Test func theSameUserInTwentyPostsIsOneEntry() throws {
        let map = IdentityMap()
        let stories = (1...20).map { #"{"id":\#($0),"title":"Story \#($0)","author":{"id":7,"name":"Ann","karma":\#($0)}}"# }
        let decoded = try decoder(map).decode([Story].self, from: "[" + stories.joined(separator: ",") + "]")

        #expect(map.count == 21)
        let canonical = try #require(map.value(Author.self, id: 7))
        #expect(canonical == Author(id: 7, name: "Ann", karma: 20))
        #expect(decoded[19].author == canonical)
        #expect(map.value(Story.self, id: 3) == decoded[2])
        // Without a map, nothing is shared or kept.
        #expect(try JSONModelDecoder().decode([Story].self, from: "[" + stories.joined(separator: ",") + "]") == decoded)
    }

    @Test func aPartialPayloadMergesIntoTheCanonicalValue() throws {
        let map = IdentityMap()
        _ = try decoder(map).decode(Author.self, from: #"{"id":1,"name":"Ann","bio":"Writes","karma":5}"#)

        let merged = try decoder(map).decode(Author.self, from: #"{"id":1,"karma":9}"#)
        #expect(merged == Author(id: 1, name: "Ann", bio: "Writes", karma: 9))
        #expect(map.value(Author.self, id: 1) == merged)

        // `null` clears; strict mode merges too (absent keys are not missing when merging).
        let cleared = try decoder(map, mode: .strict).decode(Author.self, from: #"{"id":1,"bio":null}"#)
        #expect(cleared == Author(id: 1, name: "Ann", bio: nil, karma: 9))

        // An unknown id is not merged: strict mode still requires its keys.
        #expect(throws: JSONError.self) { try decoder(map, mode: .strict).decode(Author.self, from: #"{"id":2,"bio":null}"#) }
        #expect(map.value(Author.self, id: 2) == nil)
        // A string id for an Int key finds the same entry.
        #expect(try decoder(map).decode(Author.self, from: #"{"id":"1","karma":10}"#).name == "Ann")
    }

    @Test func nestedPartialPayloadsMergeAtEveryLevel() throws {
        let map = IdentityMap()
        _ = try decoder(map).decode(Story.self, from: #"{"id":1,"title":"First","slug":"first","author":{"id":7,"name":"Ann","bio":"Hi"}}"#)

        let story = try decoder(map).decode(Story.self, from: #"{"id":1,"author":{"id":7,"name":"Annie"}}"#)
        #expect(story == Story(id: 1, title: "First", slug: "first", author: Author(id: 7, name: "Annie", bio: "Hi")))
        #expect(map.value(Author.self, id: 7)?.name == "Annie")

        // A story without the author key keeps its author; `"author": null` clears it.
        #expect(try decoder(map).decode(Story.self, from: #"{"id":1,"title":"Renamed"}"#).author?.name == "Annie")
        #expect(try decoder(map).decode(Story.self, from: #"{"id":1,"author":null}"#).author == nil)
        #expect(map.value(Story.self, id: 1)?.title == "Renamed")
    }

    @Test func aBareIdResolvesWhenKnownAndStaysAReferenceOtherwise() throws {
        let map = IdentityMap()
        _ = try decoder(map).decode(Author.self, from: #"{"id":1,"name":"Ann"}"#)

        let citations = try decoder(map).decode([Citation].self, from: #"[{"id":1,"author":1},{"id":2,"author":99},{"id":3,"author":{"id":5,"name":"Bo"}}]"#)
        #expect(citations[0].author == .resolved(Author(id: 1, name: "Ann")))
        #expect(citations[1].author == .unresolved(PrimaryKey(99)!))
        #expect(citations[1].author.value == nil)
        #expect(citations[2].author.value?.name == "Bo")
        #expect(map.value(Author.self, id: 5)?.name == "Bo")

        // Unresolved references are written back as the bare id, and resolve later.
        #expect(try JSONModelEncoder().encodeToString(citations[1]) == #"{"id":2,"author":99}"#)
        _ = try decoder(map).decode(Author.self, from: #"{"id":99,"name":"Cy"}"#)
        #expect(citations[1].author.resolved(in: map).value?.name == "Cy")
        #expect(map.value(of: citations[1].author)?.name == "Cy")

        // Without a map a bare id stays a reference; a wrong shape is a located error.
        #expect(try JSONModelDecoder().decode(Citation.self, from: #"{"id":1,"author":1}"#).author.key == PrimaryKey(1))
        let error = #expect(throws: JSONError.self) { try JSONModelDecoder().decode(Citation.self, from: #"{"id":1,"author":true}"#) }
        #expect(error?.path.description == "author")
    }

    @Test func observersReceiveEveryChange() async throws {
        let map = IdentityMap()
        _ = try decoder(map).decode(Author.self, from: #"{"id":1,"name":"Ann"}"#)
        let changes = map.changes(of: Author.self, id: 1)

        _ = try decoder(map).decode(Author.self, from: #"{"id":1,"karma":1}"#)
        map.store(Author(id: 1, name: "Ann", karma: 1))              // equal: not a change
        _ = try decoder(map).decode(Author.self, from: #"{"id":2,"name":"Other"}"#)   // another id
        _ = try decoder(map).decode(Story.self, from: #"{"id":1,"title":"T","author":{"id":1,"name":"Ann B"}}"#)
        map.remove(Author.self, id: 1)

        var received: [Author?] = []
        for await change in changes {
            received.append(change)
            if received.count == 3 { break }
        }
        #expect(received == [Author(id: 1, name: "Ann", karma: 1), Author(id: 1, name: "Ann B", karma: 1), nil])
    }

    /// What a pull uses: a value the map holds, or one someone observes, is replaced; others are
    /// not taken in (a sync of many rows must not push the app's working set out).
    @Test func storeIfHeldReplacesOnlyWhatIsHeldOrObserved() async throws {
        let map = IdentityMap()
        #expect(!map.storeIfHeld(Author(id: 1, name: "Ann")))
        #expect(map.count == 0)
        map.store(Author(id: 1, name: "Ann"))
        #expect(map.storeIfHeld(Author(id: 1, name: "Ann", karma: 2)))
        #expect(map.value(Author.self, id: 1)?.karma == 2)
        #expect(!map.storeIfHeld(Author(id: 2, name: "Bob")))
        #expect(map.value(Author.self, id: 2) == nil && map.count == 1)

        // Observed but not held (never loaded, or evicted): stored, and the observer told.
        let changes = map.changes(of: Author.self, id: 3)
        #expect(map.storeIfHeld(Author(id: 3, name: "Cy")))
        for await change in changes {
            #expect(change == Author(id: 3, name: "Cy"))
            break
        }
    }

    @Test func removingAnEvictedValueStillTellsItsObservers() async throws {
        let map = IdentityMap(capacity: 1)
        map.store(Author(id: 1, name: "A"))
        let changes = map.changes(of: Author.self, id: 1)
        map.store(Author(id: 2, name: "B"))                          // evicts 1, silently
        #expect(map.remove(Author.self, id: 1) == nil)               // the server deleted it
        for await change in changes {
            #expect(change == nil)
            break
        }
    }

    /// Two streams of partial payloads for one user, each changing its own field: every merge
    /// must start from the latest value, so both last values survive.
    @Test func concurrentPartialPayloadsForOneValueLoseNoField() async throws {
        let map = IdentityMap()
        _ = try decoder(map).decode(Author.self, from: #"{"id":1,"name":"Ann"}"#)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 1...2_000 { _ = try decoder(map).decode(Author.self, from: #"{"id":1,"bio":"b\#(i)"}"#) }
            }
            group.addTask {
                for i in 1...2_000 { _ = try decoder(map).decode(Author.self, from: #"{"id":1,"karma":\#(i)}"#) }
            }
            try await group.waitForAll()
        }
        #expect(map.value(Author.self, id: 1) == Author(id: 1, name: "Ann", bio: "b2000", karma: 2_000))
    }

    @Test func countRemoveAndClear() throws {
        let map = IdentityMap()
        _ = try decoder(map).decode([Author].self, from: #"[{"id":1,"name":"A"},{"id":2,"name":"B"},{"id":3,"name":"C"}]"#)
        #expect(map.count == 3)
        #expect(map.remove(Author.self, id: 2)?.name == "B")
        #expect(map.remove(Author.self, id: 2) == nil)
        #expect(map.count == 2)
        #expect(map.value(Story.self, id: 1) == nil)                 // ids are per type
        map.removeAll()
        #expect(map.count == 0)
        #expect(map.value(Author.self, id: 1) == nil)
        // A model without a key value is not stored.
        map.store(Unsaved(id: nil, text: "x"))
        #expect(map.count == 0)
    }

    @Test func theLeastRecentlyUsedValueIsEvicted() {
        let map = IdentityMap(capacity: 2)
        map.store(Author(id: 1, name: "A"))
        map.store(Author(id: 2, name: "B"))
        _ = map.value(Author.self, id: 1)                            // 2 is now the oldest
        map.store(Author(id: 3, name: "C"))
        #expect(map.count == 2)
        #expect(map.value(Author.self, id: 2) == nil)
        #expect(map.value(Author.self, id: 1) != nil)
        #expect((map.values as? [Author])?.map(\.id) == [3, 1])
    }

    @Test func savedDatesKeepTheirFractionOfASecond() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file("identity.json")
        let map = IdentityMap()
        let checkin = Checkin(id: 1, at: Date(timeIntervalSince1970: 1_700_000_000.625))
        map.store(checkin)
        try map.save(to: file)
        let loaded = IdentityMap()
        #expect(try loaded.load(from: file, models: [Checkin.self]) == 1)
        #expect(loaded.value(Checkin.self, id: 1) == checkin)
    }

    @Test func aSavedMapLoadsBack() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file("identity.json")
        let map = IdentityMap()
        _ = try decoder(map).decode([Story].self, from: #"[{"id":1,"title":"T","author":{"id":7,"name":"Ann","bio":null}},{"id":2,"title":"U"}]"#)
        _ = try decoder(map).decode(Citation.self, from: #"{"id":4,"author":99}"#)
        try map.save(to: file)

        let loaded = IdentityMap()
        loaded.store(Author(id: 100, name: "replaced by the load"))
        #expect(try loaded.load(from: file, models: [Story.self, Author.self, Citation.self]) == 4)
        #expect(loaded.count == 4)
        #expect(loaded.value(Story.self, id: 1) == map.value(Story.self, id: 1))
        #expect(loaded.value(Author.self, id: 7) == Author(id: 7, name: "Ann"))
        #expect(loaded.value(Citation.self, id: 4)?.author == .unresolved(PrimaryKey(99)!))
        #expect(loaded.value(Author.self, id: 100) == nil)
        // Recency survives; types not listed are skipped.
        #expect(loaded.values.count == map.values.count)
        let partial = IdentityMap()
        #expect(try partial.load(from: file, models: [Author.self]) == 1)
        // A missing file is a first launch.
        #expect(try partial.load(from: scratch.file("none.json"), models: [Author.self]) == 0)
        #expect(partial.count == 0)
    }

    @Test(arguments: ["truncated", "garbage", "wrongShape", "badValue", "empty"])
    func aCorruptFileGivesAnErrorAndAnEmptyMap(_ damage: String) throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file("identity.json")
        let map = IdentityMap()
        map.store(Author(id: 1, name: "Ann"))
        try map.save(to: file)
        let saved = try Data(contentsOf: file)
        let damaged: Data = switch damage {
        case "truncated": saved.prefix(saved.count - 7)
        case "garbage": Data([0xFF, 0x00, 0x7B, 0x22])
        case "wrongShape": Data(#"{"version":1,"entries":{}}"#.utf8)
        case "badValue": Data(#"{"version":1,"entries":[{"type":"\#(String(reflecting: Author.self))","value":{"id":"x"}}]}"#.utf8)
        default: Data()
        }
        try damaged.write(to: file)

        let loaded = IdentityMap()
        loaded.store(Author(id: 2, name: "Bo"))
        let error = #expect(throws: IdentityMapError.self) { try loaded.load(from: file, models: [Author.self]) }
        #expect(error?.kind == .corruptFile)
        #expect(error?.path == file.path)
        #expect(loaded.count == 0)
    }

    @Test func savingToAnUnwritablePlaceIsAnError() throws {
        let map = IdentityMap()
        map.store(Author(id: 1, name: "Ann"))
        let error = #expect(throws: IdentityMapError.self) {
            try map.save(to: URL(fileURLWithPath: "/nonexistent-directory-\(UUID().uuidString)/map.json"))
        }
        #expect(error?.kind == .unwritableFile)
    }

    @Test func concurrentDecodingStoringAndObservingStayConsistent() async throws {
        let map = IdentityMap(capacity: 10_000)
        _ = try decoder(map).decode(Author.self, from: #"{"id":0,"name":"Shared","karma":0}"#)
        let changes = map.changes(of: Author.self, id: 0)
        let tasks = 8, rounds = 100

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for round in 0..<rounds {
                        let id = 1 + task * rounds + round
                        // Each task merges its own field value into the shared author …
                        _ = try decoder(map).decode(Author.self, from: #"{"id":0,"karma":\#(id)}"#)
                        // … and decodes, reads and removes authors of its own.
                        _ = try decoder(map).decode(Story.self, from: #"{"id":\#(id),"title":"S","author":{"id":\#(id),"name":"N"}}"#)
                        #expect(map.value(Author.self, id: id)?.name == "N")
                        if round.isMultiple(of: 2) { map.remove(Story.self, id: id) }
                        #expect(map.value(Author.self, id: 0)?.name == "Shared")
                    }
                }
            }
            try await group.waitForAll()
        }

        #expect(map.count == 1 + tasks * rounds + tasks * rounds / 2)
        #expect(map.value(Author.self, id: 0)?.name == "Shared")
        var seen = 0
        for await change in changes {
            #expect(change?.name == "Shared")
            seen += 1
            if seen == tasks * rounds { break }
        }
        #expect(seen == tasks * rounds)
    }
}
