import ModelSyncJSON

extension SyncServer {
    /// Sample data in the shape of jsonplaceholder: 10 users, 100 posts (10 per user) and 500
    /// comments (5 per post), plus a `profile` resource. Generated, so always the same.
    public static let sampleData: JSONValue = {
        let names = ["Leanne Graham", "Ervin Howell", "Clementine Bauch", "Patricia Lebsack", "Chelsey Dietrich",
                     "Dennis Schulist", "Kurtis Weissnat", "Nicholas Runolfsdottir", "Glenna Reichert", "Clementina DuBuque"]
        let words = ["sunt", "aut", "facere", "repellat", "provident", "occaecati", "excepturi", "optio", "reprehenderit",
                     "qui", "est", "esse", "ea", "molestias", "quasi", "exercitationem", "dolorem", "eum", "magnam", "nesciunt"]
        func text(_ seed: Int, _ count: Int) -> JSONValue {
            .string((0..<count).map { words[(seed * 7 + $0 * 3) % words.count] }.joined(separator: " "))
        }
        let users: [JSONValue] = names.enumerated().map { index, name in
            let username = name.split(separator: " ").first.map(String.init) ?? name
            return ["id": .number(JSONNumber(index + 1)), "name": .string(name), "username": .string(username),
                    "email": .string("\(username.lowercased())@example.com")]
        }
        let posts: [JSONValue] = (1...100).map { id in
            ["userId": .number(JSONNumber((id - 1) / 10 + 1)), "id": .number(JSONNumber(id)),
             "title": text(id, 4), "body": text(id + 1, 12)]
        }
        let comments: [JSONValue] = (1...500).map { id in
            ["postId": .number(JSONNumber((id - 1) / 5 + 1)), "id": .number(JSONNumber(id)),
             "name": text(id, 3), "email": .string("reader\(id)@example.com"), "body": text(id + 2, 10)]
        }
        return ["users": .array(users), "posts": .array(posts), "comments": .array(comments), "profile": ["name": "modelsync"]]
    }()
}
