import Foundation
import ModelSyncJSON

enum Role: String, FieldValue, JSONCodable, CaseIterable {
    case admin, member, guest
}

enum Priority: Int, FieldValue, JSONCodable {
    case low = 1, high = 2
}

@Model(jsonKeys: .snakeCase)
struct User: Equatable {
    var id: Int
    var name: String
    var emailAddress: String?
    var role: Role = .member
    var isActive: Bool = true
}

@Model
struct Post: Equatable {
    var id: Int?
    var userId: Int
    var title: String
    @JSON("body") var text: String
    @Transform(.millisecondsSince1970) var publishedAt: Date?
    var tags: [String] = []
    var author: User?
    var rating: Double = 0
    @Ignored var isSelected = false
}

/// One property of every supported kind.
@Model
struct Everything: Equatable {
    var int: Int
    var int8: Int8
    var uint64: UInt64
    var double: Double
    var float: Float
    var bool: Bool
    var string: String
    var date: Date
    var url: URL
    var uuid: UUID
    var data: Data
    var decimal: Decimal
    var role: Role
    var priority: Priority
    var optional: String?
    var list: [Int]
    var matrix: [[Int]]
    var scores: [String: Double]
    var users: [User]
    var maybeUsers: [User]?
}

@Model
struct Comment: Equatable {
    @PrimaryKey var postId: Int
    @PrimaryKey var index: Int
    @JSON("author.name") var authorName: String
    @JSON("author.email") var authorEmail: String?
    @JSON("meta.stats.likes") var likes: Int = 0
    var text: String
}

@Model(dates: .secondsSince1970, decodeExcluding: ["localNote"], encodeExcluding: ["password"])
struct Account: Equatable {
    var id: Int
    var createdAt: Date
    var password: String?
    var localNote: String = "local"
}

/// Uses all three hooks: accepts `{"fullName": "..."}` from an older API version, derives
/// `initials`, and adds a computed key on output.
@Model
struct Person: Equatable {
    var name: String
    @Ignored var initials = ""

    static func willDecode(_ json: inout JSONValue) throws {
        if json["name"] == nil, let legacy = json["fullName"] {
            json["name"] = legacy
        }
    }

    mutating func didDecode() throws {
        guard !name.isEmpty else { throw PersonError.emptyName }
        initials = String(name.split(separator: " ").compactMap(\.first))
    }

    func didEncode(_ json: inout JSONValue) throws {
        json["nameLength"] = .number(JSONNumber(name.count))
    }
}

enum PersonError: Error {
    case emptyName
}

/// A transformer defined by a user: prices as strings of cents ("1234" ⇄ 12.34).
struct CentsTransformer: JSONTransformer {
    func decode(_ json: String) throws -> Double {
        guard let cents = Int(json) else { throw JSONError(.invalidValue("\"\(json)\" is not a number of cents")) }
        return Double(cents) / 100
    }

    func encode(_ value: Double) throws -> String {
        String(Int((value * 100).rounded()))
    }
}

extension JSONTransformer where Self == CentsTransformer {
    static var cents: CentsTransformer { CentsTransformer() }
}

@Model
struct Product: Equatable {
    var id: Int
    @Transform(.cents) var price: Double
    @Transform(.iso8601WithFractionalSeconds) var updatedAt: Date
    @Transform(.secondsSince1970) var createdAt: Date?
    @Transform(.url) var homepage: URL
}

/// A model that refers to itself through an array.
@Model
struct TreeNode: Equatable {
    var name: String
    var children: [TreeNode] = []
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
