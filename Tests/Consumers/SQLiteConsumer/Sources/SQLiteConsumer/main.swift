import ModelSyncSQLite

// A model stored in SQLite declares it: `@Model` then generates its row codec.
@Model(table: "articles")
struct Article: SQLModel, Equatable {
    @PrimaryKey(autoincrement: true) var id: Int?
    var title: String
    var tags: [String] = []
}

let db = try Database(inMemory: [Article.self])
var article = Article(title: "Hello", tags: ["swift"])
try db.write { try article.insert($0) }
let read = try db.read { try Article.find(article.id, $0) }
precondition(read == article, "the row read back differs")
print("SQLiteConsumer: stored and read back article \(article.id ?? 0)")
