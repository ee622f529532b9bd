import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

enum Status: String, ModelEnum { case draft, published }

@Model
struct Author: SQLModel, Equatable {
    var name: String
    var email: String?
}

/// Every kind of column: integers, text, optionals, dates, blobs, enums, JSON text.
@Model(table: "posts", columns: .snakeCase, indexes: [["userId", "publishedAt"]])
struct Post: SQLModel, Equatable {
    var id: Int?
    @Column(indexed: true) var userId: Int
    var title: String
    @Column("post_slug", unique: true) var slug: String
    var body: String?
    var views: Int = 0
    var rating: Double = 0
    var isPinned: Bool = false
    var status: Status = .draft
    var publishedAt: Date?
    var tags: [String] = []
    var attachment: Data?
    var website: URL?
    var token: UUID?
    var price: Decimal = 0
    var author: Author?

    init(id: Int? = nil, userId: Int = 1, title: String, slug: String? = nil) {
        self.id = id
        self.userId = userId
        self.title = title
        self.slug = slug ?? title.lowercased().replacingOccurrences(of: " ", with: "-")
    }
}

/// A composite key in a WITHOUT ROWID table, with a unique group.
@Model(table: "memberships", withoutRowID: true, unique: [["userId", "role"]])
struct Membership: SQLModel, Equatable {
    @PrimaryKey var groupId: Int
    @PrimaryKey var userId: Int
    var role: String
}

@Model
struct Event: SQLModel, Equatable {
    @PrimaryKey(autoincrement: true) var id: Int64?
    var name: String
}

// Databases come from ModelSyncTesting: `TestStorage.allCases` runs a test against a
// temporary file and memory, `TemporaryDirectory` holds files a test opens itself.

/// The error `body` throws, as a `SQLiteError` (a test failure when it throws something else
/// or nothing).
func sqliteError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> SQLiteError? {
    do {
        try body()
        Issue.record("expected a SQLiteError", sourceLocation: sourceLocation)
    } catch let error as SQLiteError {
        return error
    } catch {
        Issue.record("expected a SQLiteError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
