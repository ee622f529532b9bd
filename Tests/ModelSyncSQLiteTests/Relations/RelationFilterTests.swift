import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("Conditions across a relation")
struct RelationFilterTests {
    typealias User = Rel.User
    typealias Post = Rel.Post

    @Test(arguments: TestStorage.allCases)
    func modelsChosenByTheirRelatedRows(store: TestStorage) throws {
        let db = try Rel.open(store)
        let (users, posts) = try db.write { db in
            let users = try Rel.insert([User(name: "Ann"), User(name: "Bob"), User(name: "Cid")], db)
            let ids = try users.map { try #require($0.id) }
            let posts = try Rel.insert(
                [
                    Post(userId: ids[0], title: "a1", editorId: ids[1]),
                    Post(userId: ids[0], title: "a2", editorId: ids[2]),
                    Post(userId: ids[1], title: "b1"),
                ], db)
            return (users, posts)
        }
        func names(_ query: SQLQuery<User, User>) throws -> [String] { try db.read { try query.order(\.name).fetchAll($0) }.map(\.name) }

        #expect(try names(User.where(has: User.posts)) == ["Ann", "Bob"])
        #expect(try names(User.where(has: User.posts, Post.where(\.title == "b1"))) == ["Bob"])
        #expect(try names(User.all().where(hasNo: User.posts)) == ["Cid"])
        // b1 has no editor: its NULL key does not make `NOT IN` match nothing.
        #expect(try names(User.all().where(hasNo: User.edited)) == ["Ann"])
        // Each model once, however many related rows match; combined with other conditions.
        #expect(try db.read { try User.where(has: User.posts).fetchCount($0) } == 2)
        #expect(try names(User.where(\.name != "Bob").where(has: User.posts)) == ["Ann"])

        let annsPosts = try db.read { try Post.where(has: Post.author, User.where(\.name == "Ann")).order(\.title).fetchAll($0) }
        #expect(annsPosts == [posts[0], posts[1]])
        #expect(try db.read { try Post.where(has: Post.editor).fetchCount($0) } == 2)
        #expect(users.count == 3)
    }

    @Test func aPolymorphicRelationMatchesItsOwnType() throws {
        let db = try Rel.open(.memory)
        let (hero, enemy) = try db.write { db in
            let hero = try Rel.insert([Rel.Hero(id: 7, name: "Link")], db)[0]
            let enemy = try Rel.insert([Rel.Enemy(id: 7, name: "Ganon")], db)[0]
            _ = try Rel.insert([Rel.Note(subjectType: "enemies", subjectId: 7, text: "beware")], db)
            return (hero, enemy)
        }
        // Same id, other type: the hero has no note.
        #expect(try db.read { try Rel.Hero.where(has: Rel.Hero.notes).fetchAll($0) } == [])
        #expect(try db.read { try Rel.Enemy.where(has: Rel.Enemy.notes).fetchAll($0) } == [enemy])
        #expect(try db.read { try Rel.Hero.all().where(hasNo: Rel.Hero.notes).fetchAll($0) } == [hero])
    }
}
