import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("Eager loading into a graph")
struct GraphQueryTests {
    typealias User = Rel.User
    typealias Post = Rel.Post
    typealias Profile = Rel.Profile
    typealias Hero = Rel.Hero
    typealias Enemy = Rel.Enemy

    @Test(arguments: TestStorage.allCases)
    func ownersComeWithTheirRelatedModelsAtEveryLevel(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, posts, profile) = try db.write { db in
            let users = try Rel.insert([User(name: "Ann"), User(name: "Bob"), User(name: "Cid")], db)
            let posts = try Rel.insert(
                [
                    Post(userId: users[0].id!, title: "a1", editorId: users[1].id),
                    Post(userId: users[1].id!, title: "b1"),
                    Post(userId: users[0].id!, title: "a2", editorId: users[2].id),
                ], db)
            let profile = try Rel.insert([Profile(userId: users[1].id!, bio: "Bob's")], db)[0]
            return (users, posts, profile)
        }

        // One level, two relations.
        let graph = try db.read { try User.order(\.name).including(User.posts, Post.order(.desc(\.title))).including(User.profile).fetchAll($0) }
        #expect(graph.map { $0.0.0 } == users)
        #expect(graph.map { $0.0.1 } == [[posts[2], posts[0]], [posts[1]], []])
        #expect(graph.map(\.1) == [nil, profile, nil])

        // A nested level: each user's posts, each with its editor.
        let nested = try db.read { try User.order(\.name).including(User.posts, Post.order(\.title).including(Post.editor)).fetchAll($0) }
        #expect(nested.count == 3)
        #expect(nested[0].1.map(\.0) == [posts[0], posts[2]])
        #expect(nested[0].1.map(\.1) == [users[1], users[2]])
        #expect(nested[1].1.map(\.0) == [posts[1]] && nested[1].1[0].1 == nil)
        #expect(nested[2].1.isEmpty)

        // Upwards, with the parent's own relation.
        let upwards = try db.read { try Post.order(\.title).including(Post.author, User.all().including(User.profile)).fetchAll($0) }
        #expect(upwards.map(\.0) == [posts[0], posts[2], posts[1]])
        #expect(upwards.map { $0.1?.0 } == [users[0], users[0], users[1]])
        #expect(upwards.map { $0.1?.1 } == [nil, nil, profile])

        // The filter of an included query applies to the related side only.
        let first = try db.read { try User.where(\.name == "Ann").including(User.posts, Post.where(\.title == "a2")).fetchOne($0) }
        #expect(first?.0 == users[0] && first?.1 == [posts[2]])
    }

    @Test(arguments: TestStorage.allCases)
    func aGraphIsObservedThroughEveryTableItReads(store: TestStorage) async throws {
        let db = try Rel.open(store)
        let ann = try await db.write { try Rel.insert([User(name: "Ann")], $0)[0] }
        let graph = User.order(\.name).including(User.posts, Post.order(\.title).including(Post.editor))
        var graphs = db.observe(graph).makeAsyncIterator()
        #expect(try await graphs.next()?.map { $0.1.count } == [0])

        // A row of an included relation's table.
        let post = try await db.write { try Rel.insert([Post(userId: ann.id!, title: "a1")], $0)[0] }
        let withPost = try await graphs.next()
        #expect(withPost?.first?.1.map(\.0) == [post])

        // A row read only by the nested level (the post's editor).
        let bob = try await db.write { db in
            let bob = try Rel.insert([User(name: "Bob")], db)[0]
            var edited = post
            edited.editorId = bob.id
            try edited.save(db)
            return bob
        }
        let withEditor = try await graphs.next()
        #expect(withEditor?.map(\.0) == [ann, bob])
        #expect(withEditor?.first?.1.first?.1 == bob)
    }

    @MainActor
    @Test func aLiveGraphHasItsFirstValueAtOnce() throws {
        let db = try Rel.open(.memory)
        let ann = try db.write { try Rel.insert([User(name: "Ann")], $0)[0] }
        let live = try LiveQuery(User.all().including(User.posts), in: db)
        #expect(live.value.map(\.0) == [ann])
        #expect(live.value.map(\.1) == [[]])
    }

    @Test func throughAPivot() throws {
        let db = try Rel.open(.memory)
        let (hero, enemies) = try db.write { db in
            let hero = try Rel.insert([Hero(name: "Link")], db)[0]
            let enemies = try Rel.insert([Enemy(name: "Ganon"), Enemy(name: "Vaati")], db)
            try Hero.enemies.attach(enemies[1], to: hero, pivot: Rel.HeroEnemy(level: 3), db)
            try Hero.enemies.attach(enemies[0], to: hero, pivot: Rel.HeroEnemy(level: 9), db)
            return (hero, enemies)
        }
        let graph = try db.read { try Hero.all().including(Hero.enemies, Enemy.order(\.name)).fetchAll($0) }
        #expect(graph.count == 1 && graph[0].0 == hero)
        #expect(graph[0].1.map(\.model) == enemies)
        #expect(graph[0].1.map(\.pivot.level) == [9, 3])
    }
}
