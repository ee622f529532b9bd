import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// The titles of user 1's posts, in id order: what most tests observe.
@Sendable private func userOneTitles(_ db: SQLiteConnection) throws -> [String] {
    try Post.all(db, where: "user_id = ?", [1], order: "id").map(\.title)
}

private func insertPost(_ title: String, userId: Int = 1, in db: SQLiteConnection) throws {
    var post = Post(userId: userId, title: title)
    try post.insert(db)
}

private struct Abort: Error {}

/// Observes the number of user 1's posts; every fetch also reports itself on the second
/// iterator, so a test knows that a fetch has run without waiting for a time.
private func observeUserOneCount(
    _ db: Database
) -> (DatabaseObservation<Int>.Iterator, AsyncStream<Void>.Iterator) {
    let (fetched, fetchedSignal) = AsyncStream<Void>.makeStream()
    let counts = db.observe(tables: ["posts"]) { db in
        defer { fetchedSignal.yield() }
        return try Post.count(db, where: "user_id = ?", [1])
    }
    return (counts.makeAsyncIterator(), fetched.makeAsyncIterator())
}

@Suite("SQLite: observation", .timeLimit(.minutes(5)))
struct ObservationTests {
    @Test("delivers the current results, then new results after each commit", arguments: TestStorage.allCases)
    func emitsOnCommit(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        var titles = db.observe(tables: ["posts"], userOneTitles).makeAsyncIterator()
        #expect(try await titles.next() == [])

        try await db.write { try insertPost("First", in: $0) }
        #expect(try await titles.next() == ["First"])
        try await db.write { try insertPost("Second", in: $0) }
        #expect(try await titles.next() == ["First", "Second"])
        try await db.write { try $0.execute("UPDATE posts SET title = 'First!' WHERE title = 'First'") }
        #expect(try await titles.next() == ["First!", "Second"])
        try await db.write { _ = try Post.deleteAll($0, where: "title = ?", ["Second"]) }
        #expect(try await titles.next() == ["First!"])
        #expect(db.observationNotificationCount == 4)
    }

    @Test("a typed query is observed through the tables it reads", arguments: TestStorage.allCases)
    func observesATypedQuery(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self, Event.self])
        let query = Post.where(\.userId == 1).order(.desc(\.id))
        #expect(query.readTables == ["posts"])
        var posts = db.observe(query).makeAsyncIterator()
        #expect(try await posts.next()?.map(\.title) == [])

        try await db.write { try insertPost("First", in: $0) }
        #expect(try await posts.next()?.map(\.title) == ["First"])
        // Another user's post changes the table but not the results: nothing is delivered.
        try await db.write { try insertPost("Elsewhere", userId: 2, in: $0) }
        try await db.write { var event = Event(name: "unrelated"); try event.insert($0) }
        try await db.write { try insertPost("Second", in: $0) }
        #expect(try await posts.next()?.map(\.title) == ["Second", "First"])
    }

    @Test("a rolled-back transaction, savepoint or failed statement notifies nobody", arguments: TestStorage.allCases)
    func noEmitOnRollback(store: TestStorage) async throws {
        let database = try store.open(models: [Post.self, Event.self])
        var titles = database.observe(tables: ["posts"], userOneTitles).makeAsyncIterator()
        #expect(try await titles.next() == [])

        await #expect(throws: Abort.self) {
            try await database.write { db in
                try insertPost("Lost", in: db)
                throw Abort()
            }
        }
        // A nested write is a savepoint: rolled back alone, inside a transaction that commits a
        // change to another table.
        try await database.write { db in
            var event = Event(name: "kept")
            try event.insert(db)
            #expect(throws: Abort.self) {
                try database.write { (db: SQLiteConnection) in
                    try insertPost("Lost too", in: db)
                    throw Abort()
                }
            }
        }
        // An autocommit statement that fails (NOT NULL) commits nothing.
        #expect(throws: SQLiteError.self) {
            try database.writeWithoutTransaction { try $0.execute("INSERT INTO posts (user_id, title) VALUES (1, NULL)") }
        }
        try await database.write { var event = Event(name: "again"); try event.insert($0) }
        #expect(database.observationNotificationCount == 0)

        try await database.write { try insertPost("Kept", in: $0) }
        #expect(try await titles.next() == ["Kept"])
        #expect(database.observationNotificationCount == 1)
        #expect(try await database.read { try Event.count($0) } == 2)
    }

    @Test("writes to other tables notify nobody", arguments: TestStorage.allCases)
    func noEmitOnUnrelatedTable(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self, Event.self])
        var posts = db.observe(Post.self).makeAsyncIterator()
        #expect(try await posts.next() == [])

        try await db.write { var event = Event(name: "unrelated"); try event.insert($0) }
        try db.writeWithoutTransaction { try $0.execute("UPDATE Event SET name = 'still unrelated'") }
        #expect(db.observationNotificationCount == 0)

        try await db.write { try insertPost("Related", in: $0) }
        #expect(try await posts.next()?.map(\.title) == ["Related"])
    }

    @Test("equal consecutive results are delivered once; other values every time", arguments: TestStorage.allCases)
    func skipsDuplicates(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        var (counts, fetches) = observeUserOneCount(db)
        #expect(try await counts.next() == 0)
        await fetches.next()

        try await db.write { try insertPost("Someone else's", userId: 2, in: $0) }   // same table, same count
        await fetches.next()                                                     // fetched: 0 again
        try await db.write { try insertPost("Mine", in: $0) }
        #expect(try await counts.next() == 1)                                    // not a second 0

        // Values that are not Equatable are delivered after every concerned commit.
        struct Count: Sendable { var value: Int }
        var raw = db.observe(tables: ["posts"]) { db in Count(value: try Post.count(db, where: "user_id = ?", [1])) }
            .makeAsyncIterator()
        #expect(try await raw.next()?.value == 1)
        try await db.write { try insertPost("Another one", userId: 2, in: $0) }
        #expect(try await raw.next()?.value == 1)
    }

    @Test("a slow consumer gets the latest results, not every one in between", arguments: TestStorage.allCases)
    func slowConsumerGetsLatest(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        // The center fetches an observation again only after it delivered the previous result,
        // so a fetch reported means the one before was delivered.
        var (counts, fetches) = observeUserOneCount(db)
        #expect(try await counts.next() == 0)
        await fetches.next()

        for title in ["One", "Two", "Three"] {
            try await db.write { try insertPost(title, in: $0) }
            await fetches.next()
        }
        try await db.write { try insertPost("Someone else's", userId: 2, in: $0) }   // same count: 3 delivered
        await fetches.next()
        #expect(try await counts.next() == 3)   // not 1, then 2

        // Back to the value the consumer last read before it reads again: nothing new for it.
        try await db.write { try insertPost("Four", in: $0) }
        await fetches.next()
        try await db.write { _ = try Post.deleteAll($0, where: "title = ?", ["Four"]) }
        await fetches.next()
        try await db.write { try insertPost("Someone else's again", userId: 2, in: $0) }
        await fetches.next()
        try await db.write { try insertPost("Five", in: $0) }
        #expect(try await counts.next() == 4)   // not 3 again
    }

    @Test("an observation whose fetch reads through a cursor refreshes", arguments: TestStorage.allCases)
    func observesACursor(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        var counts = db.observe { db in
            let cursor = try Post.all().fetchCursor(db)
            var count = 0
            while try cursor.next() != nil { count += 1 }
            return count
        }.makeAsyncIterator()
        #expect(try await counts.next() == 0)
        try await db.write { try insertPost("First", in: $0) }
        // Counted when the write returns: checked first, so a missed table fails here
        // instead of waiting for a refresh that never comes.
        try #require(db.observationNotificationCount == 1)
        #expect(try await counts.next() == 1)
    }

    @Test("discovers the tables a fetch reads, through views, and follows them as they change", arguments: TestStorage.allCases)
    func discoversTables(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self, Event.self, Membership.self])
        try await db.write { try $0.execute("CREATE VIEW pinned_posts AS SELECT * FROM posts WHERE is_pinned") }
        // Reads `Event`, and `posts` (through the view) only once there is an event.
        var values = db.observe { db in
            try Event.count(db) == 0 ? -1 : Int(try db.scalar("SELECT count(*) FROM pinned_posts")?.integerValue ?? -2)
        }.makeAsyncIterator()
        #expect(try await values.next() == -1)

        try await db.write { try insertPost("Not read yet", in: $0) }
        try await db.write { var membership = Membership(groupId: 1, userId: 1, role: "owner"); try membership.insert($0) }
        #expect(db.observationNotificationCount == 0)

        try await db.write { var event = Event(name: "start"); try event.insert($0) }
        #expect(try await values.next() == 0)
        try await db.write { try $0.execute("UPDATE posts SET is_pinned = 1") }
        #expect(try await values.next() == 1)
        #expect(db.observationNotificationCount == 2)
    }

    @Test("writes outside write(): autocommit, scripts, WITHOUT ROWID, DELETE of every row, triggers", arguments: TestStorage.allCases)
    func writesOutsideTransactions(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self, Event.self, Membership.self])
        try await db.write { db in
            try db.execute("CREATE TRIGGER event_posts AFTER INSERT ON Event BEGIN INSERT INTO posts (user_id, title, post_slug) VALUES (1, NEW.name, NEW.name); END")
        }
        var titles = db.observe(tables: ["POSTS"], userOneTitles).makeAsyncIterator()   // names ignore case
        var memberships = db.observe(Membership.self).makeAsyncIterator()
        #expect(try await titles.next() == [])
        #expect(try await memberships.next() == [])

        try db.writeWithoutTransaction { try insertPost("Autocommit", in: $0) }
        #expect(try await titles.next() == ["Autocommit"])
        try db.writeWithoutTransaction { try $0.executeScript("INSERT INTO posts (user_id, title, post_slug) VALUES (1, 'Script', 'script'); UPDATE posts SET views = 1") }
        #expect(try await titles.next() == ["Autocommit", "Script"])
        try db.writeWithoutTransaction { db in
            try db.execute("BEGIN")
            try insertPost("Manual", in: db)
            try db.execute("COMMIT")
        }
        #expect(try await titles.next() == ["Autocommit", "Script", "Manual"])
        try await db.write { var event = Event(name: "Triggered"); try event.insert($0) }
        #expect(try await titles.next() == ["Autocommit", "Script", "Manual", "Triggered"])
        try await db.write { try $0.execute("DELETE FROM posts") }   // SQLite's truncate: no update hook
        #expect(try await titles.next() == [])

        // WITHOUT ROWID tables are invisible to SQLite's update hook.
        let owner = Membership(groupId: 1, userId: 1, role: "owner")
        try await db.write { var membership = owner; try membership.insert($0) }
        #expect(try await memberships.next() == [owner])
        try db.writeWithoutTransaction { try $0.execute("DELETE FROM memberships") }
        #expect(try await memberships.next() == [])
    }

    @Test("several observers each get their own results", arguments: TestStorage.allCases)
    func severalObservers(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self, Event.self])
        var mine = db.observe(tables: ["posts"], userOneTitles).makeAsyncIterator()
        var everyone = db.observe { try Post.count($0) }.makeAsyncIterator()
        var events = db.observe(Event.self).makeAsyncIterator()
        var mineAgain = db.observe(tables: ["posts"], userOneTitles).makeAsyncIterator()
        #expect(try await mine.next() == [])
        #expect(try await everyone.next() == 0)
        #expect(try await events.next() == [])
        #expect(try await mineAgain.next() == [])
        #expect(db.activeObservationCount == 4)

        try await db.write { db in
            try insertPost("Mine", in: db)
            try insertPost("Theirs", userId: 2, in: db)
        }
        #expect(try await mine.next() == ["Mine"])
        #expect(try await mineAgain.next() == ["Mine"])
        #expect(try await everyone.next() == 2)
        try await db.write { var event = Event(name: "one"); try event.insert($0) }
        #expect(try await events.next()?.map(\.name) == ["one"])
        #expect(db.observationNotificationCount == 4)
    }

    @Test("concurrent writers: every delivered value is a committed state, the last one the final state", arguments: TestStorage.allCases)
    func concurrentWriters(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        let tasks = 4, writesPerTask = 25
        var counts = db.observe { try Post.count($0) }.makeAsyncIterator()
        #expect(try await counts.next() == 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in 0..<writesPerTask {
                        try await db.write { try insertPost("\(task)-\(index)", userId: task, in: $0) }
                    }
                }
            }
            try await group.waitForAll()
        }
        var seen: [Int] = []
        while let count = try await counts.next() {
            seen.append(count)
            if count == tasks * writesPerTask { break }
        }
        #expect(seen == seen.sorted() && Set(seen).count == seen.count)   // increasing, no repeats
        #expect(seen.last == tasks * writesPerTask)
    }

    @Test("breaking out of the loop ends the observation", arguments: TestStorage.allCases)
    func breakUnregisters(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        try await db.write { try insertPost("One", in: $0) }
        for try await posts in db.observe(Post.self) {
            #expect(posts.count == 1)
            #expect(db.activeObservationCount == 1)
            break
        }
        #expect(db.activeObservationCount == 0)
        // A dropped iterator ends its observation too.
        do {
            var iterator = db.observe(Post.self).makeAsyncIterator()
            _ = try await iterator.next()
            #expect(db.activeObservationCount == 1)
        }
        #expect(db.activeObservationCount == 0)
        try await db.write { try insertPost("Two", in: $0) }
        #expect(db.observationNotificationCount == 0)
    }

    @Test("cancelling the consuming task ends the observation", arguments: TestStorage.allCases)
    func cancellationUnregisters(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        let (received, receivedSignal) = AsyncStream<Int>.makeStream()
        let consumer = Task {
            for try await posts in db.observe(Post.self) { receivedSignal.yield(posts.count) }
        }
        var counts = received.makeAsyncIterator()
        #expect(await counts.next() == 0)
        try await db.write { try insertPost("One", in: $0) }
        #expect(await counts.next() == 1)

        consumer.cancel()
        try await consumer.value
        #expect(db.activeObservationCount == 0)
        try await db.write { try insertPost("Two", in: $0) }
        #expect(db.observationNotificationCount == 1)
    }

    @Test("a fetch that throws ends the sequence with its error", arguments: TestStorage.allCases)
    func fetchErrorEnds(store: TestStorage) async throws {
        let db = try store.open(models: [Post.self])
        var rows = db.observe(tables: ["missing"]) { try $0.rows("SELECT * FROM missing") }.makeAsyncIterator()
        let error = await #expect(throws: SQLiteError.self) { try await rows.next() }
        #expect(error?.message.contains("no such table") == true)
        #expect(db.activeObservationCount == 0)
    }
}
