import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("A model value keeps the relations it loaded")
struct RelationCacheTests {
    typealias User = Rel.User
    typealias Post = Rel.Post
    typealias Hero = Rel.Hero
    typealias Enemy = Rel.Enemy

    @Test func theSecondAccessAnswersFromTheValue() throws {
        let db = try Rel.open(.memory)
        let (hero, enemies) = try db.write { db in
            let hero = try Rel.insert([Hero(name: "Link")], db)[0]
            let enemies = try Rel.insert([Enemy(name: "Ganon"), Enemy(name: "Vaati")], db)
            try Hero.enemies.attach(enemies[0], to: hero, db)
            return (hero, enemies)
        }
        let loaded = try #require(try db.read { try Hero.find(hero.id, $0) })
        #expect(try db.read { try loaded.related(Hero.enemies, $0) }.map(\.model) == [enemies[0]])

        // A pivot row added later: not seen by the value that loaded the relation…
        try db.write { try Hero.enemies.attach(enemies[1], to: hero, $0) }
        #expect(try db.read { try loaded.related(Hero.enemies, $0) }.map(\.model) == [enemies[0]])
        let copy = loaded
        #expect(try db.read { try copy.related(Hero.enemies, $0) }.count == 1)  // copies share it
        // …but by a value read anew, and by this one once it forgets.
        let fresh = try #require(try db.read { try Hero.find(hero.id, $0) })
        #expect(try db.read { try fresh.related(Hero.enemies, $0) }.count == 2)
        loaded.invalidate(Hero.enemies)
        #expect(try db.read { try loaded.related(Hero.enemies, $0) }.count == 2)
        #expect(loaded == fresh)  // the cache is no part of the value
    }

    @Test func everyKindOfRelation() throws {
        let db = try Rel.open(.memory)
        let (user, post) = try db.write { db in
            let user = try Rel.insert([User(name: "Ann")], db)[0]
            let post = try Rel.insert([Post(userId: try #require(user.id), title: "first")], db)[0]
            return (user, post)
        }
        #expect(try db.read { try user.related(User.posts, $0) } == [post])
        #expect(try db.read { try user.related(User.profile, $0) } == nil)
        #expect(try db.read { try post.related(Post.author, $0) } == user)
        try db.write { db in
            _ = try Rel.insert([Post(userId: try #require(user.id), title: "second")], db)
            _ = try Rel.insert([Rel.Profile(userId: try #require(user.id), bio: "hi")], db)
        }
        #expect(try db.read { try user.related(User.posts, $0) }.count == 1)
        #expect(try db.read { try user.related(User.profile, $0) } == nil)
        // Two relations to one model are two entries.
        #expect(try db.read { try user.related(User.edited, $0) } == [])
        user.invalidateRelations()
        #expect(try db.read { try user.related(User.posts, $0) }.count == 2)
        #expect(try db.read { try user.related(User.profile, $0) }?.bio == "hi")
    }
}
