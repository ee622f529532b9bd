import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

extension Rel {
/// Users 1 (Ada) and 2 (Bob), 3 (Cy, no posts); posts 1–3 by Ada (post 2 edited by Bob), 4 by Bob.
static func seedUsers(_ db: Database) throws -> (users: [User], posts: [Post]) {
    try db.write { db in
        let users = try Rel.insert([User(name: "Ada"), User(name: "Bob"), User(name: "Cy")], db)
        let posts = try Rel.insert(
            [
                Post(userId: 1, title: "alpha"), Post(userId: 1, title: "beta", editorId: 2), Post(userId: 1, title: "gamma"),
                Post(userId: 2, title: "delta"),
            ], db)
        return (users, posts)
    }
}

@Suite("SQLite: relations")
struct RelationsTests {
    @Test func conventionalForeignKeysAndOverrides() {
        #expect(Post.author.foreignKey == "userId")
        #expect(Post.editor.foreignKey == "editorId")
        #expect(User.posts.foreignKey == "userId")
        #expect(User.edited.foreignKey == "editorId")
        #expect(Hero.enemies.ownerForeignKey == "heroId")
        #expect(Hero.enemies.relatedForeignKey == "enemyId")
        #expect(Hero.tags.ownerForeignKey == "taggableId")
        #expect(Tag.heroes.relatedForeignKey == "taggableId")
        #expect(Note.subject.typeProperty == "subjectType")
    }

    @Test(arguments: TestStorage.allCases)
    func belongsToGeneratesForeignKeysIntoTheTable(store: TestStorage) throws {
        #expect(
            try Post.createTableSQL()
                == #"CREATE TABLE "posts" ("id" INTEGER PRIMARY KEY, "userId" INTEGER NOT NULL, "title" TEXT NOT NULL, "editorId" INTEGER, "#
                + #"FOREIGN KEY ("userId") REFERENCES "users" ("id") ON DELETE CASCADE, "#
                + #"FOREIGN KEY ("editorId") REFERENCES "users" ("id") ON DELETE SET NULL)"#)
        let db = try Rel.open(store)
        let keys = try db.read { try $0.rows(#"SELECT "from", "table", "to", on_delete FROM pragma_foreign_key_list('posts') ORDER BY "from""#) }
        #expect(keys == [["editorId", "users", "id", "SET NULL"], ["userId", "users", "id", "CASCADE"]])
    }

    @Test(arguments: TestStorage.allCases)
    func belongsToLoadsTheParentOfOneAndOfMany(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, posts) = try seedUsers(db)

        #expect(try Post.author.sql(for: [posts[0]]) == RelationSQL(sql: #"SELECT "id", "name" FROM "users" WHERE "id" = ?"#, arguments: [1]))
        #expect(try db.read { try Post.author.load(for: posts[0], $0) } == users[0])

        #expect(
            try Post.author.sql(for: posts)
                == RelationSQL(sql: #"SELECT "id", "name" FROM "users" WHERE "id" IN (SELECT value FROM json_each(?))"#, arguments: ["[1,2]"]))
        #expect(try db.read { try Post.author.load(for: posts, $0) } == [users[0], users[0], users[0], users[1]])
        // A nil key has no parent, and takes no part in the query.
        #expect(try Post.editor.sql(for: posts).arguments == [2])
        #expect(try db.read { try Post.editor.load(for: posts, $0) } == [nil, users[1], nil, nil])
        // A filter on the parents' side.
        #expect(try db.read { try Post.author.load(for: posts, $0, where: "name <> ?", ["Ada"]) } == [nil, nil, nil, users[1]])
        #expect(try db.read { try Post.author.load(for: [], $0) } == [])
    }

    @Test(arguments: TestStorage.allCases)
    func hasManyAndHasOneLoadWithFiltersAndOrder(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, posts) = try seedUsers(db)

        #expect(
            try User.posts.sql(for: [users[0]], order: "id DESC")
                == RelationSQL(sql: #"SELECT "id", "userId", "title", "editorId" FROM "posts" WHERE "userId" = ? ORDER BY id DESC"#, arguments: [1]))
        #expect(try db.read { try User.posts.load(for: users[0], $0, order: "id DESC") } == [posts[2], posts[1], posts[0]])

        let filtered = try User.posts.sql(for: users, where: "title <> ?", ["beta"], order: "title DESC")
        #expect(
            filtered
                == RelationSQL(
                    sql: #"SELECT "id", "userId", "title", "editorId" FROM "posts" WHERE "userId" IN (SELECT value FROM json_each(?)) AND (title <> ?) ORDER BY title DESC"#,
                    arguments: ["[1,2,3]", "beta"]))
        #expect(try db.read { try User.posts.load(for: users, $0, where: "title <> ?", ["beta"], order: "title DESC") } == [[posts[2], posts[0]], [posts[3]], []])
        #expect(try db.read { try User.edited.load(for: users, $0) } == [[], [posts[1]], []])

        var profile = Profile(userId: 2, bio: "Bob's")
        try db.write { try profile.insert($0) }
        #expect(try User.profile.sql(for: [users[1]]) == RelationSQL(sql: #"SELECT "id", "userId", "bio" FROM "profiles" WHERE "userId" = ?"#, arguments: [2]))
        #expect(try db.read { try User.profile.load(for: users[1], $0) } == profile)
        #expect(try db.read { try User.profile.load(for: users, $0) } == [nil, profile, nil])
    }

    @Test(arguments: TestStorage.allCases)
    func belongsToManyCarriesThePivotRow(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (heroes, enemies) = try db.write { db in
            (try Rel.insert([Hero(name: "Link"), Hero(name: "Zelda")], db), try Rel.insert([Enemy(name: "Ganon"), Enemy(name: "Moblin")], db))
        }
        try db.write { db in
            try Hero.enemies.attach(enemies[0], to: heroes[0], pivot: HeroEnemy(level: 9), db)
            try Hero.enemies.attach(enemies[1], to: heroes[0], db)                          // the pivot's defaults
            try Enemy.heroes.attach(heroes[1], to: enemies[0], pivot: HeroEnemy(level: 5), db)   // from the other side
        }

        #expect(
            try Hero.enemies.sql(for: [heroes[0]], where: #""hero_enemies"."level" >= ?"#, [2])
                == RelationSQL(
                    sql: #"SELECT "enemies"."id", "enemies"."name", "hero_enemies"."id", "hero_enemies"."heroId", "hero_enemies"."enemyId", "hero_enemies"."level" "#
                        + #"FROM "enemies" JOIN "hero_enemies" ON "hero_enemies"."enemyId" = "enemies"."id" WHERE "hero_enemies"."heroId" = ? AND ("hero_enemies"."level" >= ?)"#,
                    arguments: [1, 2]))
        let strong = try db.read { try Hero.enemies.load(for: heroes[0], $0, where: #""hero_enemies"."level" >= ?"#, [2]) }
        #expect(strong == [Linked(model: enemies[0], pivot: HeroEnemy(id: 1, heroId: 1, enemyId: 1, level: 9))])

        let all = try db.read { try Hero.enemies.load(for: heroes, $0, order: #""hero_enemies"."level""#) }
        #expect(all.map { $0.map(\.model.name) } == [["Moblin", "Ganon"], ["Ganon"]])
        #expect(all.map { $0.map(\.pivot.level) } == [[1, 9], [5]])
        #expect(try db.read { try Enemy.heroes.load(for: enemies, $0, order: #""heroes"."id""#) }.map { $0.map(\.model) } == [heroes, [heroes[0]]])

        // A second link of the same pair breaks the pivot's unique group.
        let duplicate = sqliteError { try db.write { try Hero.enemies.attach(enemies[0], to: heroes[0], $0) } }
        #expect(duplicate?.isConstraintViolation == true)

        #expect(try db.write { try Hero.enemies.detach(enemies[0], from: heroes[0], $0) } == 1)
        #expect(try db.read { try Hero.enemies.load(for: heroes[0], $0) }.map(\.model) == [enemies[1]])
        #expect(try db.write { try Hero.enemies.detachAll(from: heroes[0], $0) } == 1)
        #expect(try db.read { try Hero.enemies.load(for: heroes, $0) }.map(\.count) == [0, 1])
    }

    @Test(arguments: TestStorage.allCases)
    func polymorphicBelongsToAndItsInverse(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (heroes, enemies, notes) = try db.write { db in
            let heroes = try Rel.insert([Hero(name: "Link"), Hero(name: "Zelda")], db)
            let enemies = try Rel.insert([Enemy(name: "Ganon")], db)
            let notes = try Rel.insert(
                [
                    Note(subjectType: "heroes", subjectId: 1, text: "brave"), Note(subjectType: "enemies", subjectId: 1, text: "evil"),
                    Note(subjectType: "heroes", subjectId: 2, text: "wise"), Note(subjectType: nil, subjectId: nil, text: "loose"),
                    Note(subjectType: "heroes", subjectId: 1, text: "green"),
                ], db)
            return (heroes, enemies, notes)
        }

        #expect(
            try Note.subject.sql(for: notes)
                == [
                    RelationSQL(sql: #"SELECT "id", "name" FROM "heroes" WHERE "id" IN (SELECT value FROM json_each(?))"#, arguments: ["[1,2]"]),
                    RelationSQL(sql: #"SELECT "id", "name" FROM "enemies" WHERE "id" = ?"#, arguments: [1]),
                ])
        let subjects = try db.read { try Note.subject.load(for: notes, $0) }
        #expect(subjects.map { $0 as? Hero } == [heroes[0], nil, heroes[1], nil, heroes[0]])
        #expect(subjects[1] as? Enemy == enemies[0])
        #expect(try db.read { try Note.subject.load(for: notes[3], $0) } == nil)

        #expect(
            try Hero.notes.sql(for: [heroes[0]])
                == RelationSQL(sql: #"SELECT "id", "subjectType", "subjectId", "text" FROM "notes" WHERE "subjectType" = ? AND "subjectId" = ?"#, arguments: ["heroes", 1]))
        #expect(try db.read { try Hero.notes.load(for: heroes[0], $0, order: "text") } == [notes[0], notes[4]])
        #expect(try db.read { try Hero.notes.load(for: heroes, $0) } == [[notes[0], notes[4]], [notes[2]]])
        #expect(try db.read { try Enemy.notes.load(for: enemies, $0) } == [[notes[1]]])

        // A type name that none of the relation's types has is an error, not a nil.
        var stray = Note(subjectType: "dragons", subjectId: 1, text: "?")
        try db.write { try stray.insert($0) }
        #expect(relationError { _ = try db.read { try Note.subject.load(for: stray, $0) } } == .unknownType(column: "subjectType", value: "dragons"))
    }

    @Test(arguments: TestStorage.allCases)
    func polymorphicManyToManyTagsHeroesAndEnemies(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (heroes, enemies, tags) = try db.write { db in
            (
                try Rel.insert([Hero(name: "Link")], db), try Rel.insert([Enemy(name: "Ganon")], db),
                try Rel.insert([Tag(name: "green"), Tag(name: "boss")], db)
            )
        }
        try db.write { db in
            try Hero.tags.attach(tags[0], to: heroes[0], db)
            try Enemy.tags.attach(tags[1], to: enemies[0], db)
            try Tag.enemies.attach(enemies[0], to: tags[0], db)       // from the tag's side
        }
        #expect(
            try db.read { try $0.rows(#"SELECT "tagId", "taggableType", "taggableId" FROM "taggings" ORDER BY "id""#) }
                == [[1, "heroes", 1], [2, "enemies", 1], [1, "enemies", 1]])

        #expect(
            try Hero.tags.sql(for: heroes)
                == RelationSQL(
                    sql: #"SELECT "tags"."id", "tags"."name", "taggings"."id", "taggings"."tagId", "taggings"."taggableType", "taggings"."taggableId" "#
                        + #"FROM "tags" JOIN "taggings" ON "taggings"."tagId" = "tags"."id" WHERE "taggings"."taggableType" = ? AND "taggings"."taggableId" = ?"#,
                    arguments: ["heroes", 1]))
        #expect(try db.read { try Hero.tags.load(for: heroes[0], $0) }.map(\.model) == [tags[0]])
        #expect(try db.read { try Enemy.tags.load(for: enemies[0], $0, order: #""tags"."name""#) }.map(\.model) == [tags[1], tags[0]])

        #expect(
            try Tag.heroes.sql(for: tags)
                == RelationSQL(
                    sql: #"SELECT "heroes"."id", "heroes"."name", "taggings"."id", "taggings"."tagId", "taggings"."taggableType", "taggings"."taggableId" "#
                        + #"FROM "heroes" JOIN "taggings" ON "taggings"."taggableId" = "heroes"."id" WHERE "taggings"."taggableType" = ? AND "taggings"."tagId" IN (SELECT value FROM json_each(?))"#,
                    arguments: ["heroes", "[1,2]"]))
        #expect(try db.read { try Tag.heroes.load(for: tags, $0) }.map { $0.map(\.model) } == [[heroes[0]], []])
        #expect(try db.read { try Tag.enemies.load(for: tags, $0) }.map { $0.map(\.model) } == [[enemies[0]], [enemies[0]]])

        #expect(try db.write { try Enemy.tags.detach(tags[1], from: enemies[0], $0) } == 1)
        #expect(try db.read { try Tag.enemies.load(for: tags, $0) }.map(\.count) == [1, 0])
    }

    @Test(arguments: TestStorage.allCases)
    func relatedSideQueriesOfTheQueryBuilder(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, posts) = try seedUsers(db)

        let query = Post.where(\.title != "beta").order(.desc(\.title))
        #expect(
            try User.posts.sql(for: users, query)
                == RelationSQL(
                    sql: #"SELECT "id", "userId", "title", "editorId" FROM "posts" WHERE "userId" IN (SELECT value FROM json_each(?)) AND ("title" <> ?) ORDER BY "title" DESC"#,
                    arguments: ["[1,2,3]", "beta"]))
        #expect(try db.read { try User.posts.load(for: users, $0, query) } == [[posts[2], posts[0]], [posts[3]], []])
        #expect(try db.read { try User.posts.load(for: users[0], $0, Post.order(.desc(\.id))) } == [posts[2], posts[1], posts[0]])
        #expect(try db.read { try User.profile.load(for: users, $0, Profile.all()) } == [nil, nil, nil])
        #expect(try Post.author.sql(for: [posts[3]], User.where(\.name == "Bob")).sql.hasSuffix(#"WHERE "id" = ? AND ("name" = ?)"#))
        #expect(try db.read { try Post.author.load(for: posts, $0, User.where(\.name == "Bob")) } == [nil, nil, nil, users[1]])

        let (heroes, enemies) = try db.write { db in
            (try Rel.insert([Hero(name: "Link")], db), try Rel.insert([Enemy(name: "Ganon"), Enemy(name: "Moblin"), Enemy(name: "Keese")], db))
        }
        try db.write { db in
            for (enemy, level) in zip(enemies, [9, 3, 1]) { try Hero.enemies.attach(enemy, to: heroes[0], pivot: HeroEnemy(level: level), db) }
        }
        let strong = try Hero.enemies.sql(for: heroes, Enemy.where(\.name != "Ganon"), pivot: HeroEnemy.where(\.level >= 2).order(.desc(\.level)))
        #expect(
            strong.sql.hasSuffix(
                #"WHERE "hero_enemies"."heroId" = ? AND ("enemies"."name" <> ?) AND ("hero_enemies"."level" >= ?) ORDER BY "hero_enemies"."level" DESC"#))
        #expect(strong.arguments == [1, "Ganon", 2])
        #expect(
            try db.read { try Hero.enemies.load(for: heroes[0], $0, Enemy.all(), pivot: HeroEnemy.where(\.level >= 2).order(.desc(\.level))) }
                .map(\.model.name) == ["Ganon", "Moblin"])
        #expect(try db.read { try Hero.enemies.load(for: heroes, $0, Enemy.where(\.name != "Ganon").order(\.name)) }.map { $0.map(\.pivot.level) } == [[1, 3]])

        // A limit would apply to all owners at once: refused.
        let limited = sqliteError { _ = try User.posts.sql(for: users, Post.all().limit(1)) }
        #expect(limited?.kind == .misuse)
    }

    @Test(arguments: TestStorage.allCases)
    func eagerLoadingPassesSQLitesParameterLimit(store: TestStorage) throws {
        let db = try Rel.open(store)
        let count = 33_000   // beyond SQLITE_MAX_VARIABLE_NUMBER's default of 32,766
        let users = try db.write { db in
            let users = try Rel.insert((0..<count).map { User(name: "u\($0)") }, db)
            for user in users where user.id! % 1000 == 0 {
                var post = Post(userId: user.id!, title: "p\(user.id!)")
                try post.insert(db)
            }
            return users
        }
        let posts = try db.read { try User.posts.load(for: users, $0) }
        #expect(posts.count == count)
        #expect(posts.reduce(0) { $0 + $1.count } == count / 1000)
        #expect(posts[999].map(\.title) == ["p1000"])
        #expect(try db.read { try Post.author.load(for: posts.flatMap { $0 }, $0) }.map { $0?.name } == (1...33).map { "u\($0 * 1000 - 1)" })
    }
}

@Suite("SQLite: relation delete rules")
struct RelationDeleteRuleTests {
    @Test(arguments: TestStorage.allCases)
    func foreignKeyRulesCascadeAndSetNull(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, posts) = try seedUsers(db)
        #expect(try db.write { try users[1].delete($0) })       // Bob: his post goes, his edit is unset
        #expect(try db.read { try Post.all($0, order: "id") } == [posts[0], Post(id: 2, userId: 1, title: "beta", editorId: nil), posts[2]])
        #expect(try db.write { try users[0].delete($0) })
        #expect(try db.read { try Post.count($0) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func foreignKeyRestrictIsATypedErrorNamingTheTables(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, _) = try seedUsers(db)
        var profile = Profile(userId: 1, bio: "Ada's")
        try db.write { try profile.insert($0) }
        let error = relationError { try db.write { _ = try users[0].delete($0) } }
        #expect(error == .deleteRestricted(table: "users", referencingTable: "profiles", columns: ["userId"], rows: 1))
        #expect(error?.description == "cannot delete from users: 1 row(s) of profiles refer to it through userId (restrict)")
        // Nothing was deleted: not the user, not the posts its cascade would have taken.
        #expect(try db.read { try User.count($0) } == 3)
        #expect(try db.read { try Post.count($0) } == 4)
    }

    @Test(arguments: TestStorage.allCases)
    func polymorphicRulesAreAppliedByDelete(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (heroes, enemies, tags) = try db.write { db in
            let heroes = try Rel.insert([Hero(name: "Link"), Hero(name: "Zelda")], db)
            let enemies = try Rel.insert([Enemy(name: "Ganon"), Enemy(name: "Moblin")], db)
            _ = try Rel.insert(
                [
                    Note(subjectType: "heroes", subjectId: 1, text: "a"), Note(subjectType: "heroes", subjectId: 2, text: "b"),
                    Note(subjectType: "enemies", subjectId: 1, text: "c"), Note(subjectType: "enemies", subjectId: 2, text: "d"),
                ], db)
            let tags = try Rel.insert([Tag(name: "green")], db)
            try Hero.tags.attach(tags[0], to: heroes[0], db)
            try Enemy.tags.attach(tags[0], to: enemies[0], db)
            try Hero.enemies.attach(enemies[0], to: heroes[0], db)
            return (heroes, enemies, tags)
        }

        // Cascade: the hero's notes and taggings go (and its pivot rows, by SQL).
        #expect(try db.write { try heroes[0].delete($0) })
        #expect(try db.read { try Note.all($0, order: "id") }.map(\.text) == ["b", "c", "d"])
        #expect(try db.read { try Tagging.count($0, where: "taggableType = 'heroes'") } == 0)
        #expect(try db.read { try HeroEnemy.count($0) } == 0)

        // Set null: the enemy's notes stay, unattached.
        #expect(try db.write { try enemies[1].delete($0) })
        #expect(try db.read { try Note.all($0, where: "text = 'd'") }.map(\.subjectId) == [nil])

        // Restrict: a tagged enemy cannot be deleted, and its notes are left as they were.
        let error = relationError { try db.write { _ = try enemies[0].delete($0) } }
        #expect(error == .deleteRestricted(table: "enemies", referencingTable: "taggings", columns: ["taggableType", "taggableId"], rows: 1))
        #expect(try db.read { try Note.all($0, where: "text = 'c'") }.map(\.subjectId) == [1])
        #expect(try db.read { try Enemy.count($0) } == 1)

        // Deleting the tag cascades to its taggings (SQL), which frees the enemy.
        #expect(try db.write { try tags[0].delete($0) })
        #expect(try db.write { try enemies[0].delete($0) })
        #expect(try db.read { try Note.all($0, where: "text = 'c'") }.map(\.subjectId) == [nil])
    }

    @Test func declarationsThatCannotWorkAreTypedErrors() throws {
        #expect(
            relationError { _ = try BelongsTo<Rel.Note, Rel.User>().sql(for: [Note(text: "x")]) }
                == .invalidDeclaration(model: "Note", reason: "it has no stored property 'userId'"))
        #expect(
            relationError { _ = try BelongsTo<Rel.Post, Rel.User>(onDelete: .setNull).foreignKeyClause() }
                == .invalidDeclaration(model: "Post", reason: "set null on delete needs an optional 'userId'"))
        #expect(
            relationError { _ = try BlobOwner.children.sql(for: [BlobOwner(key: Data([1])), BlobOwner(key: Data([2]))]) }
                == .unsupportedKey(.blob([1])))
    }
}

}

/// Owners keyed by bytes: eager loading cannot put blobs in its JSON key list.
@Model(table: "blob_owners")
private struct BlobOwner: SQLModel {
    @PrimaryKey var key: Data

    static let children = hasMany(BlobChild.self, foreignKey: \.ownerKey)
}

@Model(table: "blob_children")
private struct BlobChild: SQLModel {
    var id: Int?
    var ownerKey: Data
}
