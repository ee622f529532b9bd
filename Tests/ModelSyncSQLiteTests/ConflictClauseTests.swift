import Foundation
import Logging
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A unique email besides the primary key, and a child table whose rows cascade.
@Model(table: "members")
struct Member: SQLModel, Equatable {
    var id: Int?
    @Column(unique: true) var email: String
    var name: String
    var visits: Int = 0
}

@Model(table: "member_notes")
struct MemberNote: SQLModel, Equatable {
    var id: Int?
    var memberId: Int
    var text: String

    static let member = belongsTo(Member.self, onDelete: .cascade)
    static let relations: [any ModelRelation<MemberNote>] = [member]
}

@Suite("SQLite: conflict clauses")
struct ConflictClauseTests {
    @Test(arguments: TestStorage.allCases)
    func insertOrIgnoreSkipsAClashingRow(store: TestStorage) throws {
        let db = try store.open(models: [Member.self])
        var ada = Member(email: "ada@example.com", name: "Ada")
        #expect(try db.write { try ada.insert($0, onConflict: .ignore) })
        #expect(ada.id == 1)
        var again = Member(email: "ada@example.com", name: "Other Ada")
        #expect(try db.write { try again.insert($0, onConflict: .ignore) } == false)
        #expect(again.id == nil)
        #expect(try db.read { try Member.all($0) } == [ada])
        // Without a clause, the clash is an error.
        let error = sqliteError { _ = try db.write { try again.insert($0) } }
        #expect(error?.extendedResultCode == .constraintUnique)
        for action in [SQLiteConflictAction.abort, .fail, .rollback] {
            let error = sqliteError { _ = try db.write { try again.insert($0, onConflict: action) } }
            #expect(error?.extendedResultCode == .constraintUnique, "\(action)")
        }
        #expect(try db.read { try Member.count($0) } == 1)
    }

    @Test(arguments: TestStorage.allCases)
    func insertOrReplaceDeletesTheClashingRow(store: TestStorage) throws {
        let db = try store.open(models: [Member.self, MemberNote.self])
        var ada = Member(email: "ada@example.com", name: "Ada")
        try db.write { try ada.insert($0) }
        var note = MemberNote(memberId: ada.id ?? 0, text: "cascades")
        try db.write { try note.insert($0) }
        var replacement = Member(email: "ada@example.com", name: "New Ada")
        #expect(try db.write { try replacement.insert($0, onConflict: .replace) })
        #expect(replacement.id == 2)
        #expect(try db.read { try Member.all($0) } == [replacement])
        #expect(try db.read { try MemberNote.count($0) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func updateOrFailIgnoreOrReplace(store: TestStorage) throws {
        let db = try store.open(models: [Member.self])
        var ada = Member(email: "ada@example.com", name: "Ada")
        var bob = Member(email: "bob@example.com", name: "Bob")
        try db.write { try ada.insert($0); try bob.insert($0) }
        var clashing = bob
        clashing.email = ada.email
        clashing.name = "Bob, renamed"

        let failed = sqliteError { _ = try db.write { try clashing.update($0, onConflict: .fail) } }
        #expect(failed?.extendedResultCode == .constraintUnique)
        #expect(try db.write { try clashing.update($0, onConflict: .ignore) } == false)
        #expect(try db.read { try Member.all($0, order: "id") } == [ada, bob])

        #expect(try db.write { try clashing.update($0, onConflict: .replace) })
        #expect(try db.read { try Member.all($0) } == [clashing])

        // A missing row is an error, whatever the clause.
        var missing = Member(id: 99, email: "nobody@example.com", name: "Nobody")
        #expect(sqliteError { _ = try db.write { try missing.update($0, onConflict: .ignore) } }?.kind == .rowNotFound(table: "members"))
        // save inserts it.
        #expect(try db.write { try missing.save($0, onConflict: .ignore) })
        missing.name = "Somebody"
        #expect(try db.write { try missing.save($0, onConflict: .ignore) })
        missing.email = clashing.email
        #expect(try db.write { try missing.save($0, onConflict: .ignore) } == false)
        #expect(try db.read { try Member.find(99, $0) }?.name == "Somebody")
    }

    @Test(arguments: TestStorage.allCases)
    func upsertOnAUniqueKeyHandsBackTheRowsID(store: TestStorage) throws {
        let db = try store.open(models: [Member.self])
        var ada = Member(email: "ada@example.com", name: "Ada", visits: 1)
        try db.write { try ada.upsert($0, uniqueKey: [\.email]) }
        #expect(ada.id == 1)

        // Same email, no id: the existing row is updated and its id comes back.
        var again = Member(email: "ada@example.com", name: "Ada Lovelace", visits: 2)
        try db.write { try again.upsert($0, uniqueKey: [\.email]) }
        #expect(again == Member(id: 1, email: "ada@example.com", name: "Ada Lovelace", visits: 2))
        // Only the listed properties are overwritten; the model becomes the stored row.
        var partial = Member(id: 50, email: "ada@example.com", name: "Ignored", visits: 3)
        try db.write { try partial.upsert($0, uniqueKey: [\.email], updating: [\.visits]) }
        #expect(partial == Member(id: 1, email: "ada@example.com", name: "Ada Lovelace", visits: 3))

        var bob = Member(email: "bob@example.com", name: "Bob")
        try db.write { try bob.upsert($0, uniqueKey: [\.email]) }
        #expect(bob.id == 2)
        #expect(try db.read { try Member.count($0) } == 2)

        // A target that is not a unique key is SQLite's error; an empty one is a misuse.
        let notUnique = sqliteError { _ = try db.write { try bob.upsert($0, uniqueKey: [\.name]) } }
        #expect(notUnique?.message.contains("ON CONFLICT clause does not match") == true)
        #expect(sqliteError { _ = try db.write { try bob.upsert($0, uniqueKey: []) } }?.kind == .misuse)
    }

    @Test(arguments: TestStorage.allCases)
    func insertAllWritesManyRowsPerStatementInOneTransaction(store: TestStorage) throws {
        let handler = RecordingLogHandler()
        let db = try store.open(models: [Post.self], configuration: DatabaseConfiguration(logger: handler.logger))
        // Post has 16 columns: 100 rows per statement under a limit of 1600 parameters.
        var posts = (0..<1050).map { Post(id: $0 % 3 == 0 ? $0 + 1 : nil, userId: $0 % 7, title: "Post \($0)") }
        let inserted = try db.write { db in
            let limit = db.parameterLimit
            db.parameterLimit = 1600
            defer { db.parameterLimit = limit }
            return try Post.insertAll(&posts, db)
        }
        #expect(inserted == 1050)
        #expect(posts.map(\.id) == (1...1050).map { $0 as Int? })
        let stored = try db.read { try Post.all($0, order: "id") }
        #expect(stored == posts)
        // Ten statements of 100 rows, then the 50 left in powers of two: 32, 16, 2.
        let inserts = handler.logged.filter { $0.message.hasPrefix("INSERT INTO \"posts\"") }
        #expect(inserts.count == 13)
        #expect(inserts.last?.message.contains("RETURNING") == true)

        // One failing row: nothing of the batch is written, the models keep their values.
        var clashing = [Post(title: "New one", slug: "new"), Post(title: "Dup", slug: posts[0].slug)]
        let error = sqliteError { _ = try db.write { try Post.insertAll(&clashing, $0) } }
        #expect(error?.extendedResultCode == .constraintUnique)
        #expect(clashing.allSatisfy { $0.id == nil })
        #expect(try db.read { try Post.count($0) } == 1050)
        // Models that all have their keys need no RETURNING.
        var keyed = [Post(id: 2000, title: "Keyed")]
        #expect(try db.write { try Post.insertAll(&keyed, $0) } == 1)
        #expect(handler.logged.last { $0.message.hasPrefix("INSERT") }?.message.contains("RETURNING") == false)
    }

    @Test(arguments: TestStorage.allCases)
    func insertAllOrIgnoreMatchesReturnedRowsToTheirModels(store: TestStorage) throws {
        let db = try store.open(models: [Member.self])
        var existing = Member(email: "b@example.com", name: "B")
        try db.write { try existing.insert($0) }
        var members = ["a", "b", "c", "b", "d"].map { Member(email: "\($0)@example.com", name: $0.uppercased()) }
        let inserted = try db.write { try Member.insertAll(&members, $0, onConflict: .ignore) }
        #expect(inserted == 3)
        #expect(members.map(\.id) == [2, nil, 3, nil, 4])
        #expect(try db.read { try Member.all($0, order: "id") }.map(\.email) == ["b", "a", "c", "d"].map { "\($0)@example.com" })

        var replacing = [Member(email: "a@example.com", name: "A2"), Member(email: "e@example.com", name: "E")]
        #expect(try db.write { try Member.insertAll(&replacing, $0, onConflict: .replace) } == 2)
        #expect(replacing.map(\.id) == [5, 6])
        #expect(try db.read { try Member.count($0) } == 5)
        var none: [Member] = []
        #expect(try db.write { try Member.insertAll(&none, $0) } == 0)
    }

    /// The multi-row upsert a sync pull writes its pages with: the same rows as an upsert per
    /// model, in order, existing rows updated in place (their children stay), across the
    /// statement sizes it splits a batch into.
    @Test(arguments: TestStorage.allCases)
    func upsertAllWritesAsAnUpsertPerModel(store: TestStorage) throws {
        let db = try store.open(models: [Member.self, MemberNote.self])
        var ada = Member(email: "ada@example.com", name: "Ada")
        try db.write { try ada.insert($0) }
        var note = MemberNote(memberId: ada.id ?? 0, text: "stays")
        try db.write { try note.insert($0) }
        var batch = (2...301).map { (n: Int) in Member(id: n, email: "m\(n)@example.com", name: "M\(n)") }
        batch.insert(Member(id: 1, email: "ada@example.com", name: "Ada, renamed", visits: 3), at: 100)
        // A key given twice ends with the later model's values.
        batch.append(Member(id: 7, email: "m7@example.com", name: "M7, again"))
        try db.write { try Member.upsertAll(batch, $0) }
        let rows = try db.read { try Member.all($0, order: "id") }
        #expect(rows.count == 301)
        #expect(rows.first == Member(id: 1, email: "ada@example.com", name: "Ada, renamed", visits: 3))
        #expect(rows.first { $0.id == 7 }?.name == "M7, again")
        #expect(rows.last == Member(id: 301, email: "m301@example.com", name: "M301"))
        #expect(try db.read { try MemberNote.all($0) } == [note])

        let other = try store.open(models: [Member.self, MemberNote.self])
        try other.write { db in
            var first = Member(email: "ada@example.com", name: "Ada")
            try first.insert(db)
            for member in batch { try member.upsert(db) }
        }
        #expect(try other.read { try Member.all($0, order: "id") } == rows)
        try db.write { try Member.upsertAll([], $0) }

        // A clash on another unique key fails the statement.
        let error = sqliteError { try db.write { try Member.upsertAll([Member(id: 500, email: "ada@example.com", name: "Clash")], $0) } }
        #expect(error?.extendedResultCode == .constraintUnique)
    }

    @Test func insertAllValidatesFirst() throws {
        let db = try Database(inMemory: [Ticket.self])
        var tickets = [Ticket(title: "Fine"), Ticket(title: "", priority: 9)]
        do {
            _ = try db.write { try Ticket.insertAll(&tickets, $0) }
            Issue.record("expected a ValidationError")
        } catch let error as ValidationError {
            #expect(error.batchIndex == 1)
        }
        #expect(try db.read { try Ticket.count($0) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func upsertWithAConflictActionKeepsUpsertingOnThePrimaryKey(store: TestStorage) throws {
        let db = try store.open(models: [Member.self, MemberNote.self])
        var ada = Member(email: "ada@example.com", name: "Ada")
        var bob = Member(email: "bob@example.com", name: "Bob")
        try db.write { try ada.insert($0); try bob.insert($0) }
        var note = MemberNote(memberId: bob.id ?? 0, text: "Bob's")
        try db.write { try note.insert($0) }
        // The server now says Bob (id 2) has Ada's email: Ada's stale row goes, Bob's row and
        // its notes stay.
        let bobNow = Member(id: bob.id, email: "ada@example.com", name: "Bob")
        _ = try db.write { try bobNow.upsert($0, onConflict: .replace, validate: false) }
        #expect(try db.read { try Member.all($0) } == [bobNow])
        #expect(try db.read { try MemberNote.all($0) } == [note])
        // A new row that clashes: inserted, the clashing one deleted.
        let carol = Member(id: 7, email: "ada@example.com", name: "Carol")
        _ = try db.write { try carol.upsert($0, onConflict: .replace) }
        #expect(try db.read { try Member.all($0) } == [carol])
    }
}
