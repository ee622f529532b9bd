import Foundation
import ModelSync
import Testing

enum Status: String, ModelEnum { case draft, published }

@Model
struct Author: Equatable {
    var name: String
    var email: String?
}

/// Every kind of column: integers, text, optionals, dates, blobs, enums, JSON text.
@Model(table: "posts", columns: .snakeCase, indexes: [["userId", "publishedAt"]])
struct Post: Equatable {
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
struct Membership: Equatable {
    @PrimaryKey var groupId: Int
    @PrimaryKey var userId: Int
    var role: String
}

@Model
struct Event: Equatable {
    @PrimaryKey(autoincrement: true) var id: Int64?
    var name: String
}

/// A fresh directory under the system's temporary directory, removed on deinit.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("modelsync-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Where a test's database lives: each ActiveRecord test runs against both.
enum Store: String, CustomTestStringConvertible, CaseIterable {
    case file, memory

    var testDescription: String { rawValue }

    /// Opens a database of this kind; keep `directory` alive as long as the database.
    func open(
        _ directory: TemporaryDirectory, models: [any SQLModel.Type] = [],
        configuration: DatabaseConfiguration = DatabaseConfiguration()
    ) throws -> Database {
        switch self {
        case .file: try Database(path: directory.path("test.sqlite"), models: models, configuration: configuration)
        case .memory: try Database(inMemory: models, configuration: configuration)
        }
    }
}

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
