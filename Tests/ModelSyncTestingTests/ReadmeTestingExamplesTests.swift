import Foundation
import ModelSync
import ModelSyncTesting
import Testing

// The README's "Testing your app" examples, verbatim except for the enclosing namespace, so
// that they cannot rot.
enum ReadmeTesting {
    @Model(table: "users")
    struct User: SQLModel {
        var id: Int?
        var name: String
        @Column(unique: true) var email: String
        var isAdmin = false
    }

    @Model(table: "posts")
    struct Post: SQLModel {
        var id: Int?
        var userId: Int
        var title: String
    }

    static let users = Factory<User>(seed: 1) { faker in User(name: faker.name(), email: "") }
        .sequence(\.email) { n in "user\(n)@example.com" }            // unique
        .state("admin") { $0.set(\.isAdmin, true) }                  // a named state
    static let posts = Factory<Post> { faker in Post(userId: 0, title: faker.sentence()) }
        .set(\.userId) { context in try context.build(users).id ?? 0 } // an author, only when needed

    // One database for many tests, each one rolled back at its end.
    static let shared = SharedTestDatabase(models: [User.self]) { db in _ = try users.create(10, in: db) }
}

@Suite struct ReadmeTestingExamplesTests {
    typealias User = ReadmeTesting.User
    var users: Factory<User> { ReadmeTesting.users }
    var posts: Factory<ReadmeTesting.Post> { ReadmeTesting.posts }

    @Test(.testDatabase(.file, models: [ReadmeTesting.User.self, ReadmeTesting.Post.self]))      // a temporary file, removed after
    func postsHaveAuthors() throws {
        let db = try #require(TestScope.database)
        let saved = try posts.create(3, in: db)                      // 3 posts and 3 authors, with ids
        let ada = try users.state("admin").set(\.name, "Ada").make() // per-call override, not saved
        #expect(saved.count == 3 && ada.isAdmin)
        #expect(try db.read { try User.count($0) } == 3)
        #expect(Set(saved.map(\.userId)) == [1, 2, 3])
    }

    @Test(.rollback(ReadmeTesting.shared))
    func seesTheSeedAndItsOwnRows() throws {
        let db = try #require(TestScope.database)
        _ = try users.create(in: db)
        #expect(try db.read { try User.count($0) } == 11)
    }

    @Test func cassetteExample() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("Tests/Cassettes/posts.json")
        let transport = try CassetteTransport(cassette: URL(fileURLWithPath: path))
        let api = RemoteStore(baseURL: URL(string: "https://api.example.com")!, transport: transport)
        #expect(transport.isRecording && api.baseURL.host == "api.example.com")
    }
}
