import Foundation
import ModelSync
import ModelSyncServer
import Testing

// The README's examples, verbatim where they are code, so that they cannot rot.
enum Readme {
    enum Role: String, ModelEnum { case admin, member }

    @Model(jsonKeys: .snakeCase)
    struct User {
        @PrimaryKey var id: Int
        var displayName: String                       // JSON key "display_name"
        var role: Role = .member                      // default when the key is missing
    }

    @Model
    struct Post {
        var id: Int?                                  // `id` is the primary key by convention
        var userId: Int
        @JSON("body") var text: String                // JSON key differs from the property
        @JSON("stats.views") var views: Int = 0       // reaches into a nested object
        @Transform(.millisecondsSince1970) var publishedAt: Date?
        var author: User?                             // nested models and arrays of them
        @Ignored var isSelected = false               // never encoded or decoded
    }
}

@Suite struct ReadmeExamplesTests {
    typealias Post = Readme.Post

    @Test func jsonSection() throws {
        let json = #"{"data": {"id": "1", "userId": 7, "body": "Hi", "stats": {"views": 12}}}"#

        // Lenient by default: "1" becomes 1, and the report says so.
        let (post, report) = try JSONModelDecoder().decodeWithReport(Post.self, from: json, at: "data")
        #expect(report.description == #"data.id: coerced string "1" to Int"#)

        // Strict mode accepts only the declared shapes.
        let strict = JSONModelDecoder(mode: .strict)
        #expect(throws: JSONError.self) { try strict.decode(Post.self, from: json, at: "data") }

        // Encoding: declaration order, stable bytes; nil as null or omitted.
        let bytes = try JSONModelEncoder(options: JSONEncodingOptions(nilEncoding: .omit)).encode(post)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"id":1,"userId":7,"body":"Hi","stats":{"views":12}}"#)
        #expect(Readme.User.schema.primaryKey == ["id"])
        #expect(Post.schema.primaryKey == ["id"])
    }
}

// MARK: - SQLite

extension Readme {
    @Model(table: "articles", columns: .snakeCase, indexes: [["userId", "publishedAt"]])
    struct Article {
        @PrimaryKey(autoincrement: true) var id: Int?       // assigned by SQLite on insert
        @Column(indexed: true) var userId: Int               // column "user_id"
        var title: String
        @Column("url_slug", unique: true) var slug: String
        var tags: [String] = []                              // arrays, dictionaries, models: JSON text
        var publishedAt: Date?                               // optionals are nullable columns
    }
}

@Suite struct ReadmeSQLiteExampleTests {
    typealias Article = Readme.Article

    @Test func sqliteSection() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("app.sqlite").path

        var migrations = Migrator()
        migrations.register("1-create-articles") { db in try Article.createTable(db) }
        migrations.registerSQL("2-seed", "INSERT INTO articles (user_id, title, url_slug) VALUES (1, 'Welcome', 'welcome')")
        let db = try Database(path: path, models: [Article.self], migrations: migrations)

        var article = Article(userId: 1, title: "Hello", slug: "hello")
        try db.write { try article.insert($0) }                  // article.id is set
        article.title = "Hello again"
        try db.write { try article.save($0) }                    // UPDATE, by primary key
        let recent = try db.read { try Article.all($0, where: "user_id = ?", [1], order: "id DESC", limit: 10) }
        #expect(article.id == 2)
        #expect(recent.map(\.title) == ["Hello again", "Welcome"])

        var batch = [Article(userId: 2, title: "A", slug: "a"), Article(userId: 2, title: "B", slug: "a")]
        do {
            try db.write { try Article.saveAll(&batch, $0) }     // one transaction: all or nothing
            Issue.record("expected the batch to fail")
        } catch let error as SQLiteError {
            #expect(error.batchIndex == 1)
            #expect(error.message == "batch row 1 (primary key NULL): UNIQUE constraint failed: articles.url_slug")
        }
        #expect(try db.read { try Article.count($0) } == 2)
    }
}

extension Readme.Post: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

extension ReadmeExamplesTests {
    @Test func restSection() async throws {
        let server = try await ModelSyncServer.start(data: ModelSyncServer.sampleData)
        do {
            try await restExample(baseURL: server.baseURL)
            await server.shutdown()
        } catch {
            await server.shutdown()
            throw error
        }
    }

    /// The README's REST example; its base URL is `URL(string: "http://127.0.0.1:3000")!`.
    private func restExample(baseURL: URL) async throws {
        let api = RemoteStore(baseURL: baseURL)
        var post = try await api.fetch(Post.self, id: 1)          // GET /posts/1
        post.text = "Edited"
        try await api.save(&post)                                 // PUT /posts/1
        var draft = Post(userId: 1, text: "Hello")
        try await api.save(&draft)                                // POST /posts; draft.id is set
        let mine = try await api.list(Post.self, parameters: ["userId": 1, "_sort": "id"])
        var counts: [Int] = []
        for try await page in api.pages(Post.self, pagination: .pages(size: 20)) {
            counts.append(page.count)                             // GET /posts?_limit=20&_page=1, …
        }
        #expect(try await api.fetch(Post.self, id: 1).text == "Edited")
        #expect(draft.id == 101)
        #expect(mine.count == 11 && mine.last?.id == 101)
        #expect(counts == [20, 20, 20, 20, 20, 1])
    }
}

extension Readme.Post: Validatable {
    static let validator = Validator<Readme.Post> {
        Validate(\.text, .required("Write something"), .length(...280))
        Validate(\.userId, .range(1...))
        Validate("Only published posts have views", fields: \.views, \.publishedAt) { post in
            post.views == 0 || post.publishedAt != nil
        }
    }
}

@Suite struct ReadmeValidationExamplesTests {
    @Test func validationAndDraftsSection() throws {
        var post = Readme.Post(id: 1, userId: 7, text: "Hi")

        var draft = Draft(editing: post)                 // .clean: a copy of `post` to edit
        #expect(draft.state == .clean)
        draft.text = ""                                  // .dirty; draft.changedFields == ["text"]
        #expect(draft.state == .dirty)
        #expect(draft.changedFields == ["text"])
        let valid = draft.validate()                     // false: .invalid
        let errors = draft.errors(for: \.text)           // ["Write something"]
        #expect(!valid)
        #expect(draft.state == .invalid)
        #expect(errors == ["Write something"])
        draft.undo()                                     // .clean, with the loaded values
        #expect(draft.state == .clean)
        #expect(draft.text == "Hi")
        draft.text = "Edited"
        let patch = try draft.patchBody()                // {"body":"Edited"}: the changed fields only
        #expect(String(decoding: patch, as: UTF8.self) == #"{"body":"Edited"}"#)
        #expect(post.text == "Hi")
        post = try draft.commit()                        // valid: .clean; `post` changes only here
        #expect(post.text == "Edited")
        #expect(draft.state == .clean)

        post.views = 3
        let error = #expect(throws: ValidationError.self) { try post.validated() }
        #expect(error?["views"] == ["Only published posts have views"])
        #expect(error?[\Readme.Post.publishedAt] == ["Only published posts have views"])
        #expect(String(decoding: try JSONModelEncoder().encode(post, fields: ["text"]), as: UTF8.self) == #"{"body":"Edited"}"#)
    }
}

// MARK: - Identity map and offline cache

@Suite struct ReadmeIdentityExampleTests {
    typealias Post = Readme.Post
    typealias User = Readme.User

    @Test func identitySection() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cacheFile = directory.appendingPathComponent("identity.json")
        let page = #"[{"id": 1, "userId": 7, "body": "Hi", "author": {"id": 7, "display_name": "Ann"}}, {"id": 2, "userId": 7, "body": "Yo", "author": {"id": 7, "display_name": "Ann"}}]"#
        let server = try await ModelSyncServer.start(data: ModelSyncServer.sampleData)
        var options = RemoteStore.Options()
        options.retry = RetryPolicy(maxAttempts: 1)
        let api = RemoteStore(baseURL: server.baseURL, options: options)
        let db = try Database(path: directory.appendingPathComponent("app.sqlite").path, models: [Post.self])

        let map = IdentityMap(capacity: 10_000)
        let decoder = JSONModelDecoder(options: JSONDecodingOptions(identityMap: map))
        let posts = try decoder.decode([Post].self, from: page)       // one User entry per id, however often
        let user = try decoder.decode(User.self, from: #"{"id": 7, "role": "admin"}"#)
        #expect(user.displayName == "Ann" && user.role == .admin)     // kept: absent keys keep their values
        #expect(posts.count == 2 && map.count == 3)

        try map.save(to: cacheFile)                                  // atomic: temporary file, then rename
        try map.load(from: cacheFile, models: [Post.self, User.self])
        let changes = map.changes(of: User.self, id: 7)              // AsyncStream<User?>: every change, nil on removal
        #expect(map.count == 3)

        let cache = CachedStore(remote: api, database: db, identityMap: map)
        let result = try await cache.fetch(Post.self, id: 1, policy: .remoteElseCache)
        #expect(result.networkError == nil && result.value.author?.displayName == "Ann")  // merged: the page had it
        var updates: [String] = []
        for try await update in cache.fetchCachedThenFresh(Post.self, id: 1) {
            switch update {
            case .cached(let post): updates.append("cached \(post.text)")       // first: what the cache holds …
            case .notCached: updates.append("nothing cached yet")
            case .fresh(let post): updates.append("fresh \(post.text)")         // … then the server's answer
            }
        }
        #expect(updates.count == 2 && updates[0].hasPrefix("cached ") && updates[1].hasPrefix("fresh "))

        await server.shutdown()
        let offline = try await cache.fetch(Post.self, id: 1, policy: .remoteElseCache)
        #expect(offline.networkError != nil && offline.source == .cache)
        map.remove(User.self, id: 7)
        for await change in changes {
            #expect(change == nil)                                   // the removal
            break
        }
    }
}
