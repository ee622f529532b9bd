import Foundation
import ModelSync

@Model(table: "reminders")
struct Reminder: SQLModel, Equatable {
    @PrimaryKey(autoincrement: true) var id: Int?
    var title: String
    var done: Bool = false
}

/// Live queries: an observed fetch delivers its results now, then after each commit that
/// changes them.
enum LiveQueriesSection {
    private struct Abandoned: Error {}

    static func run() async throws {
        section("Live queries")

        let db = try Database(inMemory: [Reminder.self, Note.self])
        // The tables the fetch reads ("reminders") are discovered from its statements.
        let open = db.observe { db in
            try Reminder.all(db, where: "done = 0", order: "id").map(\.title)
        }
        let (printed, printedOne) = AsyncStream<Void>.makeStream()
        let watcher = Task {
            for try await titles in open {
                print("   live: open reminders = \(titles)")
                printedOne.yield()
            }
        }
        var prints = printed.makeAsyncIterator()
        await prints.next()

        /// Runs one write, then waits for the live query to print (when `changes` is true).
        func write(_ title: String, changes: Bool = true, _ body: @escaping @Sendable (SQLiteConnection) throws -> Void) async {
            print("\n-- \(title)")
            do { try await db.write(body) } catch { print("   rolled back: \(error)") }
            if changes { await prints.next() }
        }

        await write("Insert two reminders in one transaction") { db in
            var milk = Reminder(title: "Buy milk"), call = Reminder(title: "Call Ada")
            try milk.insert(db)
            try call.insert(db)
        }
        await write("Mark one done") { db in
            try db.execute("UPDATE reminders SET done = 1 WHERE title = ?", ["Buy milk"])
        }
        await write("Write to another table: nothing is printed", changes: false) { db in
            var note = Note(authorId: 1, title: "Unrelated", slug: "unrelated")
            try note.insert(db)
        }
        await write("A write that rolls back: nothing is printed", changes: false) { db in
            var reminder = Reminder(title: "Never saved")
            try reminder.insert(db)
            throw Abandoned()
        }
        await write("Rename a reminder that is done: the open ones are unchanged, nothing is printed", changes: false) { db in
            try db.execute("UPDATE reminders SET title = 'Buy oat milk' WHERE done = 1")
        }
        await write("Add a third") { db in
            var reminder = Reminder(title: "Water the plants")
            try reminder.insert(db)
        }
        watcher.cancel()
        _ = try? await watcher.value
        print("\n-- Cancel the watching task: the observation stops")
    }
}
