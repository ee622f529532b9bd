import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
@testable import ModelSyncServer
@testable import ModelSyncServerPostgres
import ServerTestSupport
import Testing

/// Single writes that arrive together commit together (``GroupCommit``); a group must answer
/// and change exactly what the same writes one at a time would.
@Suite struct GroupCommitTests {
    /// Independent creates and updates, with refusals of every kind among them: the path that
    /// writes the whole group in two statements.
    static let independent: [ItemOperation] = [
        ItemOperation(write: .create(collection: "posts", body: ["title": "new"])),
        ItemOperation(write: .update(collection: "posts", id: "2", body: ["title": "B"], merge: true), ifMatch: "\"999999\""),
        ItemOperation(write: .update(collection: "posts", id: "3", body: ["title": "C"], merge: false)),
        ItemOperation(write: .create(collection: "comments", body: ["postId": 1, "body": "x"])),
        ItemOperation(write: .update(collection: "users", id: "1", body: ["id": 2], merge: true)),
        ItemOperation(write: .create(collection: "nope", body: [:])),
        ItemOperation(write: .create(collection: "posts", body: ["title": "nul \u{0}"])),
        ItemOperation(write: .create(collection: "posts", body: ["id": "\u{E9}", "title": "composed"])),
        ItemOperation(write: .update(collection: "posts", id: "e\u{301}", body: ["title": "decomposed"], merge: true)),
        ItemOperation(write: .create(collection: "posts", body: ["title": "newer", "id": .null])),
        ItemOperation(write: .create(collection: "posts", body: ["id": 1])),
        ItemOperation(write: .update(collection: "nope", id: "1", body: [:], merge: true)),
    ]

    /// Writes that depend on each other (two to one record, an id above the highest before a
    /// create without one) and deletes, refused ones among them: one by one under the lock.
    static let dependent: [ItemOperation] = [
        ItemOperation(write: .update(collection: "posts", id: "1", body: ["views": 1], merge: true)),
        ItemOperation(write: .update(collection: "posts", id: "1", body: ["views": 2], merge: true)),
        ItemOperation(write: .create(collection: "posts", body: ["id": 50])),
        ItemOperation(write: .create(collection: "posts", body: [:])),
        ItemOperation(write: .delete(collection: "posts", id: "50")),
        ItemOperation(write: .delete(collection: "posts", id: "99")),
        ItemOperation(write: .delete(collection: "users", id: "2"), ifMatch: "\"1\", \"2\""),
    ]

    @Test func aGroupAnswersAndChangesWhatTheWritesOneByOneDo() async throws {
        try await withBackends { grouped, serial in
            // The If-Match of a current version, the same in both (same data, same sequence).
            let current = try await serial.item("posts", id: "5", embeds: [], expands: [], visibility: .open)
            let operations = Self.independent + [
                ItemOperation(write: .update(collection: "posts", id: "5", body: ["views": 6], merge: true), ifMatch: current.version.map(versionETag))
            ]
            let outcomes = try #require(try await grouped.writeTogether(operations), "independent writes are written together")
            // The reference: the same writes as a batch, one by one in a transaction.
            let oneByOne = try await serial.write(operations).map { $0.mapError { $0 as any Error } }
            try expectSame(outcomes, oneByOne)
            #expect(outcomes.map(status) == [201, 412, 200, 201, 400, 404, 422, 201, 404, 201, 409, 404, 200])
            try await expectSameData(grouped, serial)
        }
    }

    @Test func dependentWritesInOneGroupGoOneByOne() async throws {
        try await withBackends { grouped, serial in
            #expect(try await grouped.writeTogether(Self.dependent) == nil)
            let outcomes = await grouped.commitGroup(Self.dependent)
            let oneByOne = try await serial.write(Self.dependent).map { $0.mapError { $0 as any Error } }
            try expectSame(outcomes, oneByOne)
            #expect(outcomes.map(status) == [200, 200, 201, 201, 200, 404, 412])
            try await expectSameData(grouped, serial)
        }
    }

    @Test func concurrentWritesLoseNothing() async throws {
        try await withBackends { backend, _ in
            // 16 writers, each creating a post and then editing it with If-Match: most of these
            // arrive while another group commits.
            let finals = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                for writer in 0..<16 {
                    group.addTask {
                        let created = try await backend.write([ItemOperation(write: .create(collection: "posts", body: ["writer": .number(JSONNumber(writer))]))])
                        var result = try created[0].get()
                        let id = try #require(recordID(of: result.body))
                        for edit in 1...5 {
                            let update = ItemWrite.update(collection: "posts", id: id, body: ["edit": .number(JSONNumber(edit))], merge: true)
                            result = try await backend.write([ItemOperation(write: update, ifMatch: result.version.map(versionETag))])[0].get()
                        }
                        return (id, try #require(result.version))
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(finals.count == 16)
            let feed = try await backend.changes(after: .after(0), in: ["posts"], limit: 1_000, visibility: .open)
            for (id, version) in finals {
                let read = try await backend.item("posts", id: id, embeds: [], expands: [], visibility: .open)
                #expect(read.version == version)
                #expect(read.value["edit"] == 5)
                #expect(feed.changes.filter { scalarText($0.id) == id }.map(\.sequence) == [version])
            }
            let sequences = feed.changes.map(\.sequence)
            #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
        }
    }

    @Test func twoServersWritingTheSameRowsLoseNothing() async throws {
        try await withBackends(sharingData: true) { first, second in
            // 8 writers, half through each server: If-Match increments of one post (re-reading
            // after a 412) and creates, whose ids both servers pick from the same highest id.
            let created = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<8 {
                    let backend = writer % 2 == 0 ? first : second
                    group.addTask {
                        var done = 0
                        var created = 0
                        while done < 15 {
                            let read = try await backend.item("posts", id: "1", embeds: [], expands: [], visibility: .open)
                            let views = read.value["views"]?.intValue ?? 0
                            let update = ItemWrite.update(collection: "posts", id: "1", body: ["views": .number(JSONNumber(views + 1))], merge: true)
                            switch try await backend.write([ItemOperation(write: update, ifMatch: read.version.map(versionETag))])[0] {
                            case .success: done += 1
                            case .failure(let error): #expect(error.status == 412)
                            }
                            let create = ItemWrite.create(collection: "comments", body: ["writer": .number(JSONNumber(writer))])
                            _ = try await backend.write([ItemOperation(write: create)])[0].get()
                            created += 1
                        }
                        return created
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(try await second.item("posts", id: "1", embeds: [], expands: [], visibility: .open).value["views"] == 130)
            let comments = try #require(try await first.everything().value["comments"]?.arrayValue)
            #expect(comments.count == 3 + created)
            let ids = comments.compactMap { $0["id"]?.intValue }
            #expect(ids.count == comments.count && Set(ids).count == ids.count)
        }
    }

    /// New ids are taken once the state row is locked: two servers creating in one collection
    /// never pick the same id, so no group has to start again.
    @Test func createsThroughTwoServersNeverMeet() async throws {
        try await withBackends(sharingData: true) { first, second in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    let backend = writer % 2 == 0 ? first : second
                    group.addTask {
                        for _ in 0..<25 {
                            let create = ItemWrite.create(collection: "posts", body: ["writer": .number(JSONNumber(writer))])
                            let outcome = try await backend.write([ItemOperation(write: create)])[0].get()
                            #expect(outcome.status == 201)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(first.groupsMoved.current == 0 && second.groupsMoved.current == 0)
            let posts = try #require(try await second.everything().value["posts"]?.arrayValue)
            #expect(posts.compactMap { $0["id"]?.intValue }.sorted() == Array(1...205))
        }
    }

    /// One collection's creates without an id and updates by id (If-Match of one version, of
    /// any, or none): one statement through the collection's write function, no read first.
    @Test func aGroupOfOneCollectionIsWrittenWithoutReadingFirst() async throws {
        try await withBackends { grouped, serial in
            let current = try #require(try await serial.item("posts", id: "2", embeds: [], expands: [], visibility: .open).version.map(versionETag))
            let operations = [
                ItemOperation(write: .create(collection: "posts", body: ["title": "new"])),
                ItemOperation(write: .update(collection: "posts", id: "1", body: ["title": "A", "extra": ["deep": true]], merge: true)),
                ItemOperation(write: .update(collection: "posts", id: "2", body: ["id": 2, "title": "B"], merge: true), ifMatch: " W/" + current),
                ItemOperation(write: .create(collection: "posts", body: ["id": .null, "title": "newer"])),
                ItemOperation(write: .update(collection: "posts", id: "3", body: ["title": "C"], merge: false), ifMatch: "*"),
            ]
            let outcomes = try #require(try await grouped.writeTogether(operations))
            #expect(grouped.groupsWrittenUnread.current == 1)
            let oneByOne = try await serial.write(operations).map { $0.mapError { $0 as any Error } }
            try expectSame(outcomes, oneByOne)
            #expect(outcomes.map(status) == [201, 200, 200, 201, 200])
            #expect(try outcomes.map { try $0.get().body["id"] } == [6, 1, 2, 7, 3])
            try await expectSameData(grouped, serial)
        }
    }

    /// A write that does not take (a stale If-Match, a missing record, an id a string id holds)
    /// leaves the statement without effect; the group goes the usual way (read first, or one by
    /// one), which answers each.
    @Test func aGroupWhoseWriteDoesNotTakeIsWrittenTheUsualWay() async throws {
        try await withBackends { grouped, serial in
            // The next integer id of posts (6) is a string id already.
            let taken = [ItemOperation(write: .create(collection: "posts", body: ["id": "6", "title": "string id"]))]
            _ = try await grouped.write(taken)
            _ = try await serial.write(taken)
            let groups: [[ItemOperation]] = [
                [ItemOperation(write: .create(collection: "posts", body: ["title": "after the string id"]))],
                [
                    ItemOperation(write: .update(collection: "posts", id: "1", body: ["title": "A"], merge: true), ifMatch: "\"999999\""),
                    ItemOperation(write: .update(collection: "posts", id: "2", body: ["title": "B"], merge: true), ifMatch: "W/\"0\""),
                ],
                [
                    ItemOperation(write: .update(collection: "posts", id: "404", body: ["title": "missing"], merge: true)),
                    ItemOperation(write: .create(collection: "posts", body: ["title": "next"])),
                ],
            ]
            for operations in groups {
                let outcomes = await grouped.commitGroup(operations)
                let oneByOne = try await serial.write(operations).map { $0.mapError { $0 as any Error } }
                try expectSame(outcomes, oneByOne)
            }
            #expect(grouped.groupsWrittenUnread.current == 0)
            try await expectSameData(grouped, serial)
            let posts = try #require(try await grouped.everything().value["posts"]?.arrayValue)
            #expect(posts.compactMap { $0["id"] }.suffix(3) == ["6", 7, 8])
        }
    }

    /// The `If-Match` values the write functions compare: one version's ETag (weak or strong), or
    /// any (none, `*`); anything else is checked against the row read.
    @Test func anIfMatchNamesOneVersionOrAny() {
        #expect(PostgresBackend.expectedVersion(nil) == -1)
        #expect(PostgresBackend.expectedVersion("*") == -1)
        #expect(PostgresBackend.expectedVersion("\"12\", *") == -1)
        #expect(PostgresBackend.expectedVersion("\"12\"") == 12)
        #expect(PostgresBackend.expectedVersion(" W/\"12\" ") == 12)
        #expect(PostgresBackend.expectedVersion("\"0\"") == 0)
        #expect(PostgresBackend.expectedVersion("\"9223372036854775807\"") == Int64.max)
        for other in ["\"012\"", "\"-1\"", "\"12\", \"13\"", "\"abc\"", "12", "\"\"", "\"99999999999999999999\"", "W/12", "\"12\u{0}\"", "\"\u{FF11}\u{FF12}\""] {
            #expect(PostgresBackend.expectedVersion(other) == nil, "\(other)")
        }
    }

    /// Data imported before the write functions existed gets them when a server starts on it.
    @Test func aServerAddsTheWriteFunctionsOlderDataLacks() async throws {
        let database = try TestPostgres.database()
        let logger = Logger(label: "test")
        let importer = try await PostgresBackend.open(database, initialData: sampleData, feedLimits: FeedLimits(), logger: logger)
        let tables = importer.resources.values.compactMap(\.tableName)
        await importer.close()
        do {
            #expect(tables.count == 3)
            for table in tables {
                try await TestPostgres.execute("DROP FUNCTION \(importer.schema.writeFunctionSignature(table))", in: database)
            }
            let backend = try await PostgresBackend.open(database, initialData: nil, feedLimits: FeedLimits(), logger: logger)
            let created = try await backend.write([ItemOperation(write: .create(collection: "comments", body: ["body": "x"]))])
            #expect(try created[0].get().body["id"] == 4)
            #expect(backend.groupsWrittenUnread.current == 1)
            await backend.close()
        } catch {
            Issue.record(error)
        }
        await TestPostgres.drop(database)
    }

    /// The write functions' names and bodies, and the removal of the data, hold the schema's name:
    /// one that needs quoting (a space, a capital, a single quote, a dollar quote) works as any
    /// other.
    @Test func aSchemaWhoseNameNeedsQuotingWritesWithoutReadingFirst() async throws {
        let plain = try TestPostgres.database()
        let database = plain.withSchema(plain.schema + " A'b$$c")
        let logger = Logger(label: "test")
        // Twice: the second import replaces the first, dropping its tables and functions.
        await (try await PostgresBackend.open(database, initialData: sampleData, feedLimits: FeedLimits(), logger: logger)).close()
        let backend = try await PostgresBackend.open(database, initialData: sampleData, feedLimits: FeedLimits(), logger: logger)
        do {
            let updated = try await backend.write([ItemOperation(write: .update(collection: "posts", id: "1", body: ["title": "quoted"], merge: true))])
            #expect(try updated[0].get().body["title"] == "quoted")
            let created = try await backend.write([ItemOperation(write: .create(collection: "posts", body: ["title": "new"]))])
            #expect(try created[0].get().body["id"] == 6)
            #expect(backend.groupsWrittenUnread.current == 2)
            #expect(try await backend.item("posts", id: "6", embeds: [], expands: [], visibility: .open).value["title"] == "new")
        } catch {
            Issue.record(error)
        }
        await backend.close()
        _ = try? await TestPostgres.execute("DROP SCHEMA IF EXISTS \(quotePostgres(database.schema)) CASCADE", in: plain)
    }

    @Test(.timeLimit(.minutes(5))) func writesThatArriveDuringACommitFormTheNextGroup() async throws {
        let groupCommit = GroupCommit()
        let groups = Locked<[[String]]>([])
        let (gate, open) = AsyncStream<Void>.makeStream()
        // Answers each write with its own id; the first group waits for the gate.
        let commit: @Sendable ([ItemOperation]) async -> [GroupCommit.Outcome] = { operations in
            let ids = operations.map { operation -> String in
                if case .delete(_, let id) = operation.write { id } else { "" }
            }
            let first = groups.withLock { groups in
                groups.append(ids)
                return groups.count == 1
            }
            if first { for await _ in gate {} }
            return ids.map { .success(ItemWrite.Result(status: 200, body: .string($0), version: nil)) }
        }
        func submit(_ id: String) async -> String? {
            let outcome = await groupCommit.submit(ItemOperation(write: .delete(collection: "posts", id: id)), commit: commit)
            return (try? outcome.get())?.body.stringValue
        }
        try await withThrowingTaskGroup(of: (String, String?).self) { tasks in
            tasks.addTask { ("a", await submit("a")) }
            while groups.current.isEmpty { await Task.yield() }
            for id in ["b", "c", "d"] { tasks.addTask { (id, await submit(id)) } }
            // b, c and d queue behind a's commit; then a's commit ends.
            while groupCommit.waitingCount < 3 { await Task.yield() }
            open.finish()
            for try await (id, answer) in tasks { #expect(answer == id) }
        }
        #expect(groups.current.count == 2)
        #expect(groups.current.first == ["a"])
        #expect(Set(groups.current.last ?? []) == ["b", "c", "d"])
        #expect(groupCommit.waitingCount == 0)
    }

    // MARK: Helpers

    /// Two PostgreSQL backends: over the same data in schemas of their own, or (`sharingData`)
    /// two servers of one schema.
    private func withBackends(sharingData: Bool = false, _ body: (PostgresBackend, PostgresBackend) async throws -> Void) async throws {
        let first = try TestPostgres.database()
        let second = sharingData ? first : try TestPostgres.database()
        let logger = Logger(label: "test")
        let grouped = try await PostgresBackend.open(first, initialData: sampleData, feedLimits: FeedLimits(), logger: logger)
        let serial: PostgresBackend
        do {
            serial = try await PostgresBackend.open(second, initialData: sharingData ? JSONValue?.none : sampleData, feedLimits: FeedLimits(), logger: logger)
        } catch {
            await grouped.close()
            await TestPostgres.drop(first)
            throw error
        }
        do {
            try await body(grouped, serial)
        } catch {
            Issue.record(error)
        }
        await grouped.close()
        await serial.close()
        await TestPostgres.drop(first)
        await TestPostgres.drop(second)
    }

    private func status(_ outcome: GroupCommit.Outcome) -> Int {
        switch outcome {
        case .success(let result): result.status
        case .failure(let error): (error as? APIError)?.status.code ?? 500
        }
    }

    private func expectSame(_ grouped: [GroupCommit.Outcome], _ serial: [GroupCommit.Outcome]) throws {
        try #require(grouped.count == serial.count)
        for (index, (together, alone)) in zip(grouped, serial).enumerated() {
            switch (together, alone) {
            case (.success(let together), .success(let alone)):
                #expect(together.status == alone.status, "write \(index)")
                #expect(together.body == alone.body, "write \(index)")
                #expect(together.version == alone.version, "write \(index)")
            case (.failure(let together as APIError), .failure(let alone as APIError)):
                #expect(together.status == alone.status, "write \(index)")
                #expect(together.message == alone.message, "write \(index)")
            default:
                Issue.record("write \(index): \(together) grouped, \(alone) alone")
            }
        }
    }

    /// The same records, versions and feed.
    private func expectSameData(_ grouped: PostgresBackend, _ serial: PostgresBackend) async throws {
        #expect(try await grouped.everything().value == serial.everything().value)
        let groupedFeed = try await grouped.changes(after: .after(0), in: nil, limit: 1_000, visibility: .open)
        let serialFeed = try await serial.changes(after: .after(0), in: nil, limit: 1_000, visibility: .open)
        #expect(groupedFeed.changes.map(\.json) == serialFeed.changes.map(\.json))
        #expect(groupedFeed.next == serialFeed.next)
    }
}
