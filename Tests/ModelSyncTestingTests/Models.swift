import Foundation
import ModelSync

@Model(table: "users")
struct User: SQLModel, Equatable {
    var id: Int?
    var name: String
    @Column(unique: true) var email: String
    var isAdmin: Bool = false
    var age: Int = 30
}

@Model(table: "posts")
struct Post: SQLModel, Equatable {
    var id: Int?
    var userId: Int
    var title: String
    var body: String = ""
}

extension Post: RemoteResource {
    static let remote = RemoteConfiguration(path: "posts")
}

/// The number of users, read synchronously (async tests otherwise pick the async `read`).
func userCount(_ db: Database) throws -> Int {
    try db.read { try User.count($0) }
}
