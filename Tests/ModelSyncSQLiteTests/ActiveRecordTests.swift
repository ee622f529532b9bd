import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("SQLite: ActiveRecord")
struct ActiveRecordTests {
    @Test(arguments: TestStorage.allCases)
    func insertAssignsTheRowIDAndFindReadsItBack(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        var post = Post(title: "Hello world")
        try db.write { try post.insert($0) }
        #expect(post.id == 1)
        var second = Post(title: "Second")
        try db.write { try second.insert($0) }
        #expect(second.id == 2)
        #expect(try db.read { try Post.find(1, $0) } == post)
        #expect(try db.read { try Post.find(99, $0) } == nil)
        #expect(try db.read { try Post.exists(2, $0) })
        #expect(try db.read { try Post.exists(3, $0) } == false)
    }

    /// An optional rowid key is bound as it is: a set one is kept, a nil one is assigned by
    /// SQLite and read back, with or without a conflict clause; a skipped insert leaves the
    /// model's nil key as it was.
    @Test(arguments: TestStorage.allCases)
    func anOptionalKeyIsKeptWhenSetAndAssignedWhenNil(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        var chosen = Post(id: 10, title: "Ten")
        var assigned = Post(title: "Next")
        var ignoring = Post(title: "Also next")
        try db.write { db in
            try chosen.insert(db)
            try assigned.insert(db)
            #expect(try ignoring.insert(db, onConflict: .ignore))
        }
        #expect(chosen.id == 10)
        #expect(assigned.id == 11)
        #expect(ignoring.id == 12)
        #expect(try db.read { try Post.find(11, $0) } == assigned)
        var clashing = Post(title: "Next")  // the same slug as `assigned`
        #expect(try db.write { try clashing.insert($0, onConflict: .ignore) } == false)
        #expect(clashing.id == nil)
        #expect(try db.read { try Post.count($0) } == 3)
    }

    @Test(arguments: TestStorage.allCases)
    func everyColumnTypeRoundTrips(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        var post = Post(userId: 7, title: "All types", slug: "all")
        post.body = "Body with 'quotes' and \"doubles\" and emoji 🎉"
        post.views = Int.max
        post.rating = 4.25
        post.isPinned = true
        post.status = .published
        post.publishedAt = Date(timeIntervalSince1970: 1_700_000_000.5)
        post.tags = ["swift", "sqlite"]
        post.attachment = Data([0, 255, 10])
        post.website = URL(string: "https://example.com/a?b=c")
        post.token = UUID()
        post.price = Decimal(string: "12345678901234567890.123")!
        post.author = Author(name: "Ada", email: nil)
        try db.write { try post.insert($0) }
        #expect(try db.read { try Post.find(post.id, $0) } == post)

        // The stored representation: dates as REAL seconds since 1970, decimals as TEXT,
        // booleans as INTEGER 0/1, arrays as JSON text.
        let stored = try db.read {
            try $0.rows(
                "SELECT typeof(published_at), published_at, typeof(price), price, typeof(is_pinned), is_pinned, typeof(tags), tags FROM posts")
        }
        #expect(stored == [[
            .text("real"), .real(1_700_000_000.5),
            .text("text"), .text("12345678901234567890.123"),
            .text("integer"), .integer(1),
            .text("text"), .text(#"["swift","sqlite"]"#),
        ]])

        // Saving nil persists NULL.
        post.body = nil
        post.author = nil
        post.attachment = nil
        try db.write { try post.save($0) }
        let row = try db.read { try $0.rows("SELECT body, author, attachment FROM posts") }
        #expect(row == [[.null, .null, .null]])
        #expect(try db.read { try Post.find(post.id, $0) } == post)
    }

    @Test(arguments: TestStorage.allCases)
    func updateSaveUpsertAndDelete(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        var post = Post(title: "Draft")
        try db.write { db in
            try post.save(db)  // nil id: insert
            post.title = "Edited"
            post.views = 3
            try post.save(db)  // existing: update
        }
        #expect(try db.read { try Post.count($0) } == 1)
        #expect(try db.read { try Post.find(post.id, $0)?.title } == "Edited")

        // Update only the listed properties.
        var changed = post
        changed.title = "Not written"
        changed.views = 10
        try db.write { try changed.update($0, only: [\.views]) }
        let stored = try #require(try db.read { try Post.find(post.id, $0) })
        #expect(stored.title == "Edited")
        #expect(stored.views == 10)
        // A key path that is not a stored field (a path into one here) is refused, nothing written.
        let notAField = sqliteError { try db.write { try changed.update($0, only: [\Post.title.count]) } }
        #expect(notAField?.message.contains("is not a stored field of Post") == true)
        #expect(try db.read { try Post.find(post.id, $0)?.title } == "Edited")

        // Save with an id that has no row inserts it; upsert inserts then updates.
        var explicit = Post(id: 50, title: "Fifty")
        try db.write { try explicit.save($0) }
        var upserted = Post(id: 60, title: "Sixty")
        try db.write { try upserted.upsert($0) }
        upserted.title = "Sixty, again"
        try db.write { try upserted.upsert($0) }
        #expect(try db.read { try Post.find(60, $0)?.title } == "Sixty, again")
        #expect(try db.read { try Post.count($0) } == 3)

        // Update of a missing row is an error.
        let missing = Post(id: 999, title: "Missing")
        let error = sqliteError { try db.write { try missing.update($0) } }
        #expect(error?.kind == .rowNotFound(table: "posts"))

        #expect(try db.write { try explicit.delete($0) })
        #expect(try db.write { try explicit.delete($0) } == false)
        #expect(try db.write { try Post.deleteAll($0, where: "title LIKE ?", ["Sixty%"]) } == 1)
        #expect(try db.read { try Post.all($0).map(\.id) } == [post.id])
        #expect(try db.write { try Post.deleteAll($0) } == 1)
        #expect(try db.read { try Post.count($0) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func queriesFilterOrderAndLimit(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        try db.write { db in
            for index in 1...10 {
                var post = Post(userId: index % 2, title: "Post \(index)")
                post.views = index * 10
                try post.insert(db)
            }
        }
        let odd = try db.read { try Post.all($0, where: "user_id = ?", [1], order: "views DESC", limit: 3) }
        #expect(odd.map(\.views) == [90, 70, 50])
        #expect(try db.read { try Post.first($0, order: "views")?.views } == 10)
        #expect(try db.read { try Post.first($0, where: "views > ?", [1000]) } == nil)
        #expect(try db.read { try Post.count($0, where: "views >= ?", [50]) } == 6)
        #expect(try db.read { try Post.all($0) }.count == 10)
    }

    @Test(arguments: TestStorage.allCases)
    func refreshAndFresh(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        var post = Post(title: "Original")
        try db.write { try post.insert($0) }
        try db.write { try $0.execute("UPDATE posts SET title = 'Changed elsewhere'") }
        #expect(try db.read { try post.fresh($0)?.title } == "Changed elsewhere")
        #expect(post.title == "Original")
        try db.read { try post.refresh($0) }
        #expect(post.title == "Changed elsewhere")
        try db.write { _ = try post.delete($0) }
        #expect(try db.read { try post.fresh($0) } == nil)
        #expect(sqliteError { try db.read { try post.refresh($0) } }?.kind == .rowNotFound(table: "posts"))
    }

    @Test(arguments: TestStorage.allCases)
    func insertReReadsWhatTheDatabaseFilledIn(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        try db.write { db in
            try db.execute(
                """
                CREATE TRIGGER fill_slug AFTER INSERT ON posts WHEN NEW.post_slug = ''
                BEGIN UPDATE posts SET post_slug = 'post-' || NEW.id WHERE id = NEW.id; END
                """)
        }
        var post = Post(title: "No slug", slug: "")
        try db.write { try post.insert($0) }
        #expect(post.slug == "post-1")
    }

    @Test(arguments: TestStorage.allCases)
    func compositeKeysWithoutRowID(store: TestStorage) throws {
        let db = try store.open(models: [Membership.self])
        var admin = Membership(groupId: 1, userId: 10, role: "admin")
        try db.write { db in
            try admin.insert(db)
            var member = Membership(groupId: 2, userId: 10, role: "member")
            try member.save(db)
            admin.role = "owner"
            try admin.save(db)
        }
        #expect(try db.read { try Membership.find(key: [1, 10], $0) } == admin)
        #expect(try db.read { try Membership.count($0) } == 2)
        // The unique group (userId, role) holds.
        let error = sqliteError {
            try db.write { db in
                var duplicate = Membership(groupId: 3, userId: 10, role: "member")
                try duplicate.insert(db)
            }
        }
        #expect(error?.isConstraintViolation == true)
        #expect(error?.extendedCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        let sql = try db.read { try $0.scalar("SELECT sql FROM sqlite_master WHERE name = 'memberships'") }
        #expect(sql?.textValue?.hasSuffix("WITHOUT ROWID") == true)
        #expect(sqliteError { _ = try db.read { try Membership.find(key: [1], $0) } }?.kind == .misuse)
    }

    @Test(arguments: TestStorage.allCases)
    func autoincrementNeverReusesIDs(store: TestStorage) throws {
        let db = try store.open(models: [Event.self])
        var first = Event(name: "a")
        var second = Event(name: "b")
        try db.write { db in
            try first.insert(db)
            try second.insert(db)
            try second.delete(db)
            var third = Event(name: "c")
            try third.insert(db)
            #expect(third.id == 3)
        }
        #expect(first.id == 1)
    }

    @Test(arguments: TestStorage.allCases)
    func uniqueViolationIsATypedErrorWithTheSQL(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        try db.write { db in
            var post = Post(title: "Same")
            try post.insert(db)
        }
        let error = sqliteError {
            try db.write { db in
                var post = Post(title: "Same")
                try post.insert(db)
            }
        }
        #expect(error?.code == 19)  // SQLITE_CONSTRAINT
        #expect(error?.message.contains("posts.post_slug") == true)
        #expect(error?.sql?.hasPrefix("INSERT INTO \"posts\"") == true)
    }

    // MARK: - Batches

    @Test(arguments: TestStorage.allCases)
    func batchSaveIsAllOrNothingAndNamesTheFailingRow(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        var posts = (0..<100).map { Post(title: "Post \($0)") }
        posts[50].slug = posts[10].slug
        let error = sqliteError { try db.write { try Post.saveAll(&posts, $0) } }
        #expect(error?.batchIndex == 50)
        #expect(error?.isConstraintViolation == true)
        #expect(error?.message.hasPrefix("batch row 50") == true)
        #expect(error?.sql?.hasPrefix("INSERT INTO \"posts\"") == true)
        #expect(try db.read { try Post.count($0) } == 0)
        #expect(posts.allSatisfy { $0.id == nil })

        posts[50].slug = "fixed"
        try db.write { try Post.saveAll(&posts, $0) }
        #expect(try db.read { try Post.count($0) } == 100)
        #expect(posts.map(\.id) == Array(1...100))
    }
}
