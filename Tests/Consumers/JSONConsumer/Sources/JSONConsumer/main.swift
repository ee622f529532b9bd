import ModelSyncJSON

// `@Model` from the JSON product alone: no SQLite, no HTTP client in this build.
enum Role: String, FieldValue, JSONCodable { case admin, member }

@Model(jsonKeys: .snakeCase)
struct User: Equatable {
    @PrimaryKey var id: Int
    var displayName: String
    var role: Role = .member
}

let json = #"{"id": 1, "display_name": "Ada", "role": "admin"}"#
let user = try JSONModelDecoder().decode(User.self, from: json)
let again = try JSONModelDecoder().decode(User.self, from: try JSONModelEncoder().encode(user))
precondition(user == again && user.role == .admin, "the JSON round trip changed the user")
print("JSONConsumer: \(user.displayName) round-tripped")
