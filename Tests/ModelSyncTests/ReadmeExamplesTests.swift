import Foundation
import Logging
import ModelSync
import ModelSyncServer
import ModelSyncTesting
import Observation
import Testing
#if canImport(SwiftUI)
import SwiftUI
#endif

// The README's examples, verbatim where they are code, so that they cannot rot; and those the
// README moved to the DocC articles (nested resources: REST.md; column transformers, full-text
// search, tracing, conflict clauses, hooks, timestamps: SQLiteFeatures.md; relations:
// Relations.md), which keep them as they were.
enum Readme {
    enum Role: String, ModelEnum { case admin, member }

    @Model(jsonKeys: .snakeCase)
    struct User {
        @PrimaryKey var id: Int
        var displayName: String                       // JSON key "display_name"
        var role: Role = .member                      // default when the key is missing
    }

    @Model
    struct Post: SQLModel {                           // stored in SQLite too (see below)
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

    /// The README's sharing rules, verbatim: the server takes them.
    @Test func sharingSection() throws {
        let file = #"""
        {
          "boards":   {"owner": "ownerId",
                       "members": {"collection": "memberships", "field": "boardId"},
                       "create": "signedIn", "delete": "owner"},
          "cards":    {"parent": {"collection": "boards", "field": "boardId"}},
          "comments": {"parent": {"collection": "cards", "field": "cardId"}, "owner": "authorId"}
        }
        """#
        _ = try AccessRules(json: JSONValue(parsing: Array(file.utf8)))
    }

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

        let bracket = JSONEncodingOverride<Post>.field(\.views) { $0 < 100 ? "few" : "many" }
        let once = try JSONModelEncoder().encode(post, overriding: [bracket])   // …"stats":{"views":"few"}}
        let plain = try JSONModelEncoder().encode(post)                       // …"stats":{"views":12}}
        #expect(String(decoding: once, as: UTF8.self).hasSuffix(#""stats":{"views":"few"}}"#))
        #expect(String(decoding: plain, as: UTF8.self).hasSuffix(#""stats":{"views":12}}"#))
    }
}

// MARK: - Codable

extension Readme {
    struct Address: Codable, Equatable, CodableField {    // any Codable type; the conformance is all it takes
        var street: String
        var city: String
    }

    @Model(jsonKeys: .snakeCase)
    struct Customer: SQLModel {
        var id: Int?
        var displayName: String
        var address: Address                               // JSON: a nested object; SQLite: JSON text
    }
}

@Suite struct ReadmeCodableExampleTests {
    typealias Address = Readme.Address
    typealias Customer = Readme.Customer

    @Test func codableSection() throws {
        let customer = Customer(displayName: "Ann", address: Address(street: "1 Main St", city: "Springfield"))
        let data = try JSONEncoder().encode(customer)          // the codec's JSON: "display_name", …
        let same = try JSONDecoder().decode(Customer.self, from: data)

        #expect(try JSONValue(parsing: [UInt8](data)) == JSONModelEncoder().encodeToValue(customer))
        #expect(try JSONValue(parsing: [UInt8](data))["display_name"] == "Ann")
        #expect(same.displayName == "Ann" && same.address == customer.address)
        let db = try Database(inMemory: [Customer.self])
        var saved = customer
        try db.write { try saved.insert($0) }
        #expect(try db.read { try Customer.find(saved.id, $0) }?.address == customer.address)
    }
}

// MARK: - SQLite

extension Readme {
    @Model(table: "articles", columns: .snakeCase, indexes: [["userId", "publishedAt"]])
    struct Article: SQLModel {
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

    @Test func fullTextSection() throws {
        let db = try Database(inMemory: [Article.self])
        var article = Article(userId: 1, title: "Hello again", slug: "hello")
        try db.write { try article.insert($0) }

        try db.write { try Article.search.create($0) }            // rows already there are indexed too
        let query = FullTextQuery.words("hello again")            // user input, quoted: never FTS5 syntax
        let found = try db.read {
            try Article.where(Article.search.matches(query)).order(Article.search.rank(query)).fetchAll($0)
        }

        #expect(found.map(\.id) == [article.id])
    }

    @Test func sqliteAsyncCode() async throws {
        let db = try Database(inMemory: [Article.self])

        var draft = Article(userId: 3, title: "Async", slug: "async")
        try await draft.insert(db)                               // draft.id is set
        draft.title = "Async, edited"
        try await draft.save(db)
        let latest = try await Article.where(\.userId == 3).order(.desc(\.id)).fetchAll(db)

        #expect(draft.id != nil)
        #expect(latest.map(\.title) == ["Async, edited"])
    }
}

extension Readme.Article {
    static let search = FullTextIndex<Readme.Article>(\.title)      // FTS5, kept in step by triggers
}

extension Readme.Post: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

extension ReadmeExamplesTests {
    @Test func restSection() async throws {
        try await withTestServer { server in try await restExample(baseURL: server.baseURL) }
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

extension Readme {
    @Model
    struct Todo {
        var id: Int?
        var userId: Int = 0
        var title: String
    }

    @Model
    struct Comment {
        var id: Int?
        var body: String
    }

    @Model
    struct OrderLine {
        @PrimaryKey var orderId: Int
        @PrimaryKey var line: Int
        var product: String
    }
}

extension Readme.User: RemoteResource {
    static let remote = RemoteConfiguration(path: "users")
}

extension Readme.Todo: RemoteResource {
    static let remote = RemoteConfiguration(path: "todos")
}

extension Readme.Comment: RemoteResource {
    static let remote = RemoteConfiguration(path: "comments")
}

extension Readme.OrderLine: RemoteResource {                       // @PrimaryKey orderId, @PrimaryKey line
    static let remote = RemoteConfiguration(path: "lines")
    static func remotePath(for id: RemoteID) throws -> [String] {  // the default: ["lines", "7,3"]
        ["orders", id.parts[0], "lines", id.parts[1]]
    }
}

@Suite struct ReadmeNestedResourcesExampleTests {
    typealias Post = Readme.Post
    typealias User = Readme.User
    typealias Todo = Readme.Todo
    typealias Comment = Readme.Comment
    typealias OrderLine = Readme.OrderLine

    @Test func nestedResourcesSection() async throws {
        let data: JSONValue = ["users": [["id": 1, "display_name": "Ann"]], "todos": [["id": 1, "userId": 1, "title": "Buy tea"]]]
        try await withTestServer(data: data) { server in
            let api = RemoteStore(baseURL: server.baseURL)
            let todos = try await api.list(Todo.self, of: User.self, parentID: 1)   // GET /users/1/todos: no User needed
            var todo = Todo(title: "Call Bob")
            try await api.create(&todo, in: User.self, parentID: 1, encoding: [.field(\.title) { $0.uppercased() }])
            // POST /users/1/todos with "title":"CALL BOB"; todo.title stays "Call Bob"
            #expect(todos.map(\.title) == ["Buy tea"])
            #expect(todo.title == "Call Bob" && todo.id == 2 && todo.userId == 1)
            #expect(try await server.data["todos"]?[1]?["title"] == "CALL BOB")

            // Django REST Framework's pages and an order line, served as canned answers.
            let next = JSONValue.string(server.baseURL.absoluteString + "/posts/9/comments?limit=2&offset=2")
            server.inject(Fault(.status(200, body: ["count": 3, "next": next, "results": [["id": 1, "body": "a"], ["id": 2, "body": "b"]]])))
            server.inject(Fault(.status(200, body: ["count": 3, "next": nil, "results": [["id": 3, "body": "c"]]])))
            server.inject(Fault(.status(200, body: ["orderId": 7, "line": 3, "product": "tea"])))
            var counts: [Int] = []
            for try await page in api.pages(Comment.self, of: Post.self, parentID: 9, parameters: ["limit": 2], pagination: .nextURL()) {
                counts.append(page.count)                            // GET /posts/9/comments?limit=2, then each `next`
            }
            let line = try await api.fetch(OrderLine.self, id: RemoteID(7, 3))     // GET /orders/7/lines/3
            #expect(counts == [2, 1])
            #expect(line.product == "tea")
            #expect(server.recordedRequests.map(\.uri).suffix(3) == ["/posts/9/comments?limit=2", "/posts/9/comments?limit=2&offset=2", "/orders/7/lines/3"])
        }
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

// MARK: - Key-value storage

@Suite struct ReadmeStorageExampleTests {
    typealias Post = Readme.Post

    @Test func keyValueStorageSection() throws {
        let temporary = try TemporaryDirectory(prefix: "readme-storage")
        let directory = temporary.url
        let post = Post(id: 1, userId: 7, text: "Hi")

        let settings = try StorageSuite(name: "settings", in: directory)  // no `in:`: a per-user directory
        try settings.save("dark", forKey: "theme")                       // strings, numbers, Bool, Data, Date…
        let theme = try settings.fetch(String.self, forKey: "theme")     // "dark"; nil when missing
        try settings.save(post)                                          // a model, under "Post.1"
        let saved = try settings.fetch(Post.self, id: 1)
        try settings.save([post], forKey: "recent")                      // arrays under a key of your choice
        try settings.update(Int.self, forKey: "launches", default: 0) { $0 += 1 }   // read-modify-write
        try settings.delete(post)
        do {
            try settings.save(true, forKey: "../escape")
            Issue.record("expected the key to be rejected")
        } catch let error as StorageError {
            #expect(error.description == "storage suite 'settings', key '../escape': the key contains '/'")
        }

        #expect(theme == "dark")
        #expect(saved?.text == "Hi")
        #expect(try settings.fetch(String.self, forKey: "nothing") == nil)
        #expect(try settings.keys() == ["launches", "recent", "theme"])
        #expect(try settings.fetch(Int.self, forKey: "launches") == 1)
        #expect(try settings.fetch([Post].self, forKey: "recent")?.map(\.id) == [1])
    }
}

// MARK: - Relations

extension Readme {
    @Model(table: "writers")
    struct Writer: SQLModel, Equatable {
        var id: Int?
        var name: String

        static let books = hasMany(Book.self)                      // Book.writerId = Writer.id
    }

    @Model(table: "books")
    struct Book: SQLModel, Equatable {
        var id: Int?
        @Column(indexed: true) var writerId: Int
        var title: String

        static let writer = belongsTo(Writer.self, onDelete: .cascade)  // FOREIGN KEY … ON DELETE CASCADE
    }

    @Model(table: "heroes")
    struct Hero: SQLModel, Equatable {
        var id: Int?
        var name: String

        static let enemies = belongsToMany(Enemy.self, through: Rivalry.self)  // Rivalry.heroId, .enemyId
        static let notes = morphMany(Note.self, as: "subject")                 // subjectType "heroes"
    }

    @Model(table: "enemies")
    struct Enemy: SQLModel, Equatable {
        var id: Int?
        var name: String
    }

    @Model(table: "rivalries", unique: [["heroId", "enemyId"]])
    struct Rivalry: SQLModel, Equatable {
        var id: Int?
        var heroId: Int = 0
        var enemyId: Int = 0
        var level: Int = 1                                         // the pivot's own column
    }

    @Model(table: "notes")
    struct Note: SQLModel, Equatable {
        var id: Int?
        var subjectType: String?
        var subjectId: Int?
        var text: String

        static let subject = morphTo("subject", types: [Hero.self, Enemy.self])
    }
}

@Suite struct ReadmeRelationsExampleTests {
    typealias Writer = Readme.Writer
    typealias Book = Readme.Book
    typealias Hero = Readme.Hero
    typealias Enemy = Readme.Enemy
    typealias Rivalry = Readme.Rivalry
    typealias Note = Readme.Note

    @Test func relationsSection() throws {
        let db = try Database(inMemory: [Writer.self, Book.self, Hero.self, Enemy.self, Rivalry.self, Note.self])
        var (link, ganon, note) = (Hero(name: "Link"), Enemy(name: "Ganon"), Note(subjectType: "heroes", subjectId: 1, text: "brave"))
        try db.write { db in
            for var writer in [Writer(name: "Le Guin"), Writer(name: "Okorafor")] { try writer.insert(db) }
            for (writerId, title) in [(1, "Tehanu"), (2, "Binti"), (1, "Lavinia")] {
                var book = Book(writerId: writerId, title: title)
                try book.insert(db)
            }
            try link.insert(db)
            try ganon.insert(db)
            try note.insert(db)
        }

        let writers = try db.read { try Writer.all($0) }
        let books = try db.read { try Writer.books.load(for: writers, $0, Book.order(\.title)) }  // [[Book]]: one query
        let writer = try db.read { try Book.writer.load(for: books[0][0], $0) }
        let shelves = try db.read { try Writer.order(\.name).including(Writer.books, Book.order(\.title)).fetchAll($0) }  // [(Writer, [Book])]
        #expect(books.map { $0.map(\.title) } == [["Lavinia", "Tehanu"], ["Binti"]])
        #expect(writer == writers[0])
        #expect(shelves.map { "\($0.0.name): \($0.1.map(\.title))" } == [#"Le Guin: ["Lavinia", "Tehanu"]"#, #"Okorafor: ["Binti"]"#])
        #expect(
            try Writer.books.sql(for: writers).description
                == #"SELECT "id", "writerId", "title" FROM "books" WHERE "writerId" IN (SELECT value FROM json_each(?)) -- [TEXT '[1,2]']"#)

        try db.write { try Hero.enemies.attach(ganon, to: link, pivot: Rivalry(level: 9), $0) }
        let foes = try db.read { try Hero.enemies.load(for: link, $0, Enemy.all(), pivot: Rivalry.where(\.level >= 5)) }
        #expect(foes.map { "\($0.model.name) \($0.pivot.level)" } == ["Ganon 9"])
        let subject = try db.read { try Note.subject.load(for: note, $0) } as? Hero
        #expect(subject == link)

        // Deleting the hero takes its notes (the library's rule) and its rivalries stay for lack of a rule.
        try db.write { _ = try link.delete($0) }
        #expect(try db.read { try Note.count($0) } == 0)
        // Deleting a writer cascades to the books, in SQL.
        try db.write { _ = try writers[0].delete($0) }
        #expect(try db.read { try Book.all($0) }.map(\.title) == ["Binti"])
    }
}

extension ReadmeSQLiteExampleTests {
    @Test func queriesSection() throws {
        let db = try Database(inMemory: [Article.self])
        var rows = [
            Article(userId: 1, title: "Hello", slug: "hello"), Article(userId: 2, title: "Hello there", slug: "there"),
            Article(userId: 2, title: "Other", slug: "other"), Article(userId: 3, title: String(repeating: "x", count: 101), slug: "long"),
        ]
        try db.write { try Article.saveAll(&rows, $0) }

        let recent = try db.read { try Article.where(\.userId == 1).order(.desc(\.id)).limit(10).fetchAll($0) }

        let query = Article.where { $0.title.glob("Hello*") && ($0.publishedAt == nil || $0.userId.in([1, 2])) }
        #expect(try query.sql.hasSuffix(#"FROM "articles" WHERE "title" GLOB ? AND ("published_at" IS NULL OR "user_id" IN (SELECT value FROM json_each(?)))"#))
        #expect("\(try query.arguments)" == "[TEXT 'Hello*', TEXT '[1,2]']")

        let titles = try db.read { try Article.order(\.title).select(\.id, \.title).fetchAll($0) }        // [(Int?, String)]
        let busy = try db.read {
            try Article.all().select { ($0.userId, $0.rowCount()) }.group(by: \.userId).having { $0.rowCount() > 1 }.fetchAll($0)
        }
        let moved = try db.write { try Article.where(\.userId == 2).updateAll($0, .set(\.title, to: "Moved")) }   // 2 rows
        let removed = try db.write { try Article.where(sql: "length(title) > ?", [100]).deleteAll($0) }  // raw SQL
        let first = try db.read { try Article.query(sql: "SELECT * FROM articles WHERE id = ?", [1]).fetchOne($0) }

        // Prepared once, run many times: each run only binds its values to the cached statement.
        let latestOfUser = try Article.preparedQuery(Int.self) { userId in Article.where(\.userId == userId).order(.desc(\.id)) }
        let latest = try db.read { db in try [1, 2, 3].map { try latestOfUser.fetchOne(db, $0)?.title } }   // ["Hello", "Moved", nil]

        #expect(latest == ["Hello", "Moved", nil])
        #expect(recent.map(\.title) == ["Hello"])
        #expect(try db.read { try query.fetchCount($0) } == 1)  // "Hello there" is "Moved" now
        #expect(titles.map(\.1) == ["Hello", "Hello there", "Other", String(repeating: "x", count: 101)])
        #expect(titles.map(\.0) == [1, 2, 3, 4])
        #expect(busy.count == 1 && busy[0] == (2, 2))
        #expect(try db.read { try Article.where(\.title == "Moved").fetchCount($0) } == 2)
        #expect(try db.read { try Article.all().fetchCount($0) } == 3)
        #expect(first?.slug == "hello")
        #expect(moved == 2 && removed == 1)
    }
}

extension Readme {
    @Model(table: "readings")
    struct Reading: SQLModel {
        var id: Int?
        @Transform(.millisecondsSince1970, inDatabase: true) var takenAt: Date?   // column: REAL, milliseconds
        @Transform(.iso8601) var loggedAt: Date                                     // JSON only; column: REAL, seconds
    }
}

extension ReadmeSQLiteExampleTests {
    @Test func transformersOnColumnsSection() throws {
        typealias Reading = Readme.Reading
        let db = try Database(inMemory: [Reading.self])
        var reading = Reading(takenAt: Date(timeIntervalSince1970: 1_700_000_001), loggedAt: Date(timeIntervalSince1970: 1_700_000_002))
        try db.write { try reading.insert($0) }

        let since = Date(timeIntervalSince1970: 1_700_000_000)
        let query = Reading.where(\.takenAt >= since)
        // `print` in the README.
        #expect("\(try query.arguments)" == "[REAL 1700000000000.0]")

        #expect(try db.read { try query.fetchAll($0) }.map(\.id) == [reading.id])
        #expect(try db.read { try $0.rows("SELECT takenAt, loggedAt FROM readings") } == [[.real(1_700_000_001_000), .real(1_700_000_002)]])
        let json = try JSONModelEncoder().encodeToString(reading)
        #expect(json.contains(#""takenAt":1700000001000"#) && json.contains(#""loggedAt":"2023-11-14T22:13:22Z""#))
    }
}

extension ReadmeSQLiteExampleTests {
    @Test func liveQueriesSection() async throws {
        let db = try Database(inMemory: [Article.self])
        // `print(titles)` in the README: here the titles go to a stream the test reads.
        let (printed, output) = AsyncStream<[String]>.makeStream()
        let watcher = Task {
            // A query, any fetch closure (`db.observe { db in … }`: the tables it reads are found from
            // its statements), named tables (`db.observe(tables:_:)`) or a whole table (`Article.self`).
            for try await articles in db.observe(Article.where(\.userId == 1).order(\.id)) {
                output.yield(articles.map(\.title))              // now, then after each commit that changes them
            }
        }
        var titles = printed.makeAsyncIterator()
        #expect(await titles.next() == [])
        try await db.write { db in
            var article = Article(userId: 1, title: "Live", slug: "live")
            try article.insert(db)
        }
        #expect(await titles.next() == ["Live"])
        watcher.cancel()                                          // or leave the loop: the observation stops
        try await watcher.value
        #expect(db.activeObservationCount == 0)
    }
}

// MARK: - SwiftUI

#if canImport(SwiftUI)
// The README's view, compiled where SwiftUI exists.
extension Readme {
    struct PostList: View {
        let posts: LiveQuery<[Post]>              // try LiveQuery(Post.order(\.id), in: db)
        let server: LoadableResource<[Post]>      // LoadableResource(cache, list: Post.self)

        var body: some View {
            List(posts.value, id: \.id) { post in Text(post.text) }         // the database, live
                .overlay { if server.isLoading && posts.value.isEmpty { ProgressView() } }
                .task { await server.refresh() }        // written through: the list follows
                .refreshable { await server.refresh() }
        }
    }
}
#endif

@Suite struct ReadmeSwiftUIExampleTests {
    typealias Post = Readme.Post

    @MainActor @Test func observableObjects() async throws {
        try await withServer { testServer in
            let db = try Database(inMemory: [Post.self])
            var options = RemoteStore.Options()
            options.retry = RetryPolicy(maxAttempts: 1)
            let cache = CachedStore(remote: RemoteStore(baseURL: testServer.baseURL, options: options), database: db)
            // `print` in the README: here the change goes to a stream the test reads.
            let (changes, changed) = AsyncStream<Void>.makeStream()

            let posts = try LiveQuery(Post.order(\.id), in: db)     // the rows now, fetched before init returns
            let server = LoadableResource(cache, list: Post.self)   // the cached rows now (nothing without a database)
            withObservationTracking { _ = posts.value } onChange: { changed.yield() }
            await server.refresh()                                  // isLoading, then the server's rows, or error

            #expect(server.value?.count == 100 && server.error == nil && !server.isLoading)
            for await _ in changes { break }
            // `Post` is not `Equatable`, so the observation's first background fetch may deliver
            // the empty rows again: wait for the change that brings the server's.
            while posts.value.isEmpty { await nextChange { _ = posts.value }.happened() }
            #expect(posts.value.map(\.id) == server.value?.map(\.id))
        }
    }
}


extension ReadmeSQLiteExampleTests {
    @Test func tracingAndFunctionsSection() throws {
        var logger = Logger(label: "app.sql")                    // import Logging (swift-log)
        logger.logLevel = .trace
        let slugify = SQLiteScalarFunction("slugify", argumentCount: 1, deterministic: true) { arguments in
            guard case .text(let title) = arguments[0] else { return .null }
            return .text(title.lowercased().split(separator: " ").joined(separator: "-"))
        }
        let traced = try Database(inMemory: [Article.self], configuration: DatabaseConfiguration(logger: logger, functions: [slugify]))
        var hello = Article(userId: 1, title: "Hello World", slug: "hello")
        try traced.write { try hello.insert($0) }
        // trace: INSERT INTO "articles" ("user_id", "title", …) VALUES (1, 'Hello World', …) [sqlite.duration: 0.03 ms, …]
        let slugs = try traced.read { try Article.order(\.id).select(sql: "slugify(title)", as: String.self).fetchAll($0) }  // ["hello-world"]

        #expect(slugs == ["hello-world"])
        #expect(traced.configuration.logger?.logLevel == .trace)
    }
}

extension ReadmeSQLiteExampleTests {
    @Test func conflictClausesSection() throws {
        let db = try Database(inMemory: [Article.self])
        var existing = Article(userId: 1, title: "Swift", slug: "swift")
        try db.write { try existing.insert($0) }

        var tag = Article(userId: 1, title: "Tag page", slug: "swift")
        let written = try db.write { try tag.insert($0, onConflict: .ignore) }        // false: "swift" exists
        var renamed = Article(userId: 1, title: "Renamed", slug: "swift")
        try db.write { try renamed.upsert($0, uniqueKey: [\.slug]) }                   // updates that row; renamed.id is its id
        var many = (1...1000).map { Article(userId: 3, title: "Bulk \($0)", slug: "bulk-\($0)") }
        let count = try db.write { try Article.insertAll(&many, $0, onConflict: .ignore) }  // multi-row INSERTs, one transaction

        #expect(written == false && tag.id == nil)
        #expect(renamed.id == existing.id && renamed.title == "Renamed")
        #expect(count == 1000 && Set(many.compactMap(\.id)).count == 1000)
        #expect(try db.read { try Article.count($0) } == 1001)
    }
}

extension Readme {
    enum InvoiceError: Error { case negativeTotal }

    @Model(table: "invoices")
    struct Invoice: SQLModel {
        var id: Int?
        var number = ""
        var total: Int

        mutating func willInsert(_ db: SQLiteConnection) throws {
            if total < 0 { throw InvoiceError.negativeTotal }         // refuses: nothing is written
            if number.isEmpty { number = "INV-\(total)" }             // changes are written
        }

        func didDelete(_ db: SQLiteConnection) throws {
            try db.execute("INSERT INTO audit (event) VALUES (?)", [.text("deleted \(number)")])
        }
    }
}


extension ReadmeSQLiteExampleTests {
    typealias Invoice = Readme.Invoice
    typealias InvoiceError = Readme.InvoiceError

    @Test func lifecycleHooksSection() throws {
        var migrations = Migrator()
        migrations.registerSQL("audit", "CREATE TABLE audit (id INTEGER PRIMARY KEY, event TEXT NOT NULL)")
        let db = try Database(inMemory: [Invoice.self], migrations: migrations)

        var invoice = Invoice(total: 120)
        try db.write { try invoice.insert($0) }                          // invoice.number == "INV-120"
        var refund = Invoice(total: -5)
        do { try db.write { try refund.insert($0) } } catch InvoiceError.negativeTotal { /* no row */ }
        try db.write { _ = try invoice.delete($0) }                      // one audit row, same transaction

        #expect(invoice.number == "INV-120" && refund.id == nil)
        #expect(try db.read { try Invoice.count($0) } == 0)
        #expect(try db.read { try $0.scalar("SELECT event FROM audit") } == .text("deleted INV-120"))
    }
}

extension Readme {
    @Model(table: "notes_log", columns: .snakeCase)
    struct LogNote: SQLModel {
        var id: Int?
        var text: String
        var createdAt: Date?                                     // set by the first insert
        var updatedAt: Date?                                     // set by every write
        var deletedAt: Date?                                     // set by delete
    }
}
extension Readme.LogNote: TimestampedModel, SoftDeletableModel {}

extension ReadmeSQLiteExampleTests {
    typealias LogNote = Readme.LogNote

    @Test func timestampsAndSoftDeletesSection() throws {
        let db = try Database(inMemory: [LogNote.self])

        var note = LogNote(text: "Remember")
        try db.write { try note.insert($0) }                         // note.createdAt == note.updatedAt
        try db.write { _ = try note.delete($0) }                     // UPDATE … SET deleted_at = …
        let live = try db.read { try LogNote.all($0) }               // []: deleted rows are left out
        let bin = try db.read { try LogNote.all().onlyDeleted().fetchAll($0) }   // [note], deletedAt set
        try db.write { _ = try note.restore($0) }                    // back; forceDelete(_:) removes the row

        #expect(note.createdAt != nil && note.updatedAt != nil)         // restore moved updatedAt
        #expect(live.isEmpty && bin.map(\.text) == ["Remember"] && bin[0].deletedAt != nil)
        #expect(try db.read { try LogNote.all($0) }.map(\.text) == ["Remember"])
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
        let server = try await TestServer.start(data: SyncServer.sampleData)
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

@Suite struct ReadmeOfflineWritesExampleTests {
    typealias Post = Readme.Post

    @Test func offlineWritesSection() async throws {
        let directory = try TemporaryDirectory(prefix: "readme-sync")
        defer { directory.remove() }
        try await withTestServer { server in
            let api = RemoteStore(baseURL: server.baseURL)
            let db = try Database(path: directory.path("app.sqlite"), models: [Post.self])

            let sync = SyncStore(remote: api, database: db, models: [Post.self])
            var post = Post(userId: 1, text: "Written offline")
            try await sync.save(&post)                 // row + outbox entry in one transaction; no network
            post.text = "Edited offline"
            try await sync.save(&post)                 // coalesced into the pending create
            let local = try await db.read { try Post.all($0) }   // local queries see it at once
            #expect(local.map(\.text) == ["Edited offline"] && post.id == -1)
            try await sync.push()                      // POST /posts (Idempotency-Key); the real id replaces the temporary one
            for await status in sync.statusUpdates() { // pending count, pushing or idle, last error, parked entries
                #expect(status.pendingCount == 0)
                break
            }
            sync.startAutomaticPush()                  // after every change; backs off after failures
            sync.stopAutomaticPush()
            let stored = try await db.read { try Post.all($0) }
            #expect(stored.count == 1 && (stored.first?.id ?? 0) > 0)
        }
    }
}

@Suite struct ReadmeSyncExampleTests {
    typealias Post = Readme.Post

    @Test(.timeLimit(.minutes(5))) func syncSection() async throws {
        let directory = try TemporaryDirectory(prefix: "readme-sync2")
        defer { directory.remove() }
        try await withTestServer { server in
            let api = RemoteStore(baseURL: server.baseURL)
            let db = try Database(path: directory.path("app.sqlite"), models: [Post.self])

            let sync = SyncStore(remote: api, database: db, models: [Post.self])
            sync.configure(Post.self, conflicts: .merge())   // the default; or .serverWins, .clientWins, .custom { … }
            try await sync.pull(Post.self)                   // a delta after the stored cursor, in one transaction
            try await sync.push()                            // PATCH / DELETE carry If-Match; a 412 goes to the policy
            sync.startLivePull([Post.self])                  // pull as soon as the server reports a change
            let conflicts = try await sync.status().conflicts  // each with the base, local, server and kept values
            sync.stopLivePull()

            #expect(conflicts.isEmpty)
            let pulled = try await db.read { try Post.all($0) }
            let served = try await server.data["posts"]?.arrayValue?.count
            #expect(pulled.count == served)
        }
    }
}
