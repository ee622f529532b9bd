import Foundation
import ModelSyncJSON
import Testing

@Suite struct ErrorTests {
    let decoder = JSONModelDecoder()

    @Test func errorsNameTheKeyPathAndWhatWasFound() throws {
        var posts: [String] = []
        for index in 0..<5 {
            let userID = index == 3 ? #"{"nested": true}"# : "\(index)"
            posts.append(#"{"userId": 1, "title": "t", "body": "b", "author": {"id": \#(userID), "name": "n"}}"#)
        }
        let json = #"{"posts": [\#(posts.joined(separator: ","))]}"#
        let error = try #require(throws: JSONError.self) { try decoder.decode([Post].self, from: json, at: "posts") }
        #expect(error.path.description == "posts[3].author.id")
        #expect(error.reason == .typeMismatch(expected: "Int", found: "object"))
        #expect(error.description == "at posts[3].author.id: expected Int, found object")
    }

    @Test func wrongShapes() throws {
        let numberForObject = try #require(throws: JSONError.self) { try decoder.decode(User.self, from: "42") }
        #expect(numberForObject.reason == .typeMismatch(expected: "object (User)", found: "number 42"))

        // Lenient mode wraps a single value in an array, but an object is still not a User list element
        // when it lacks the shape, and strict mode rejects the object outright.
        let objectForArray = try #require(throws: JSONError.self) {
            try JSONModelDecoder(mode: .strict).decode([User].self, from: #"{"id": 1, "name": "x"}"#)
        }
        #expect(objectForArray.reason == .typeMismatch(expected: "array of User", found: "object"))

        let stringForModel = try #require(throws: JSONError.self) {
            try decoder.decode(Post.self, from: #"{"userId": 1, "title": "t", "body": "b", "author": "ann"}"#)
        }
        #expect(stringForModel.path.description == "author")

        let badEnum = try #require(throws: JSONError.self) { try decoder.decode(User.self, from: #"{"id": 1, "name": "x", "role": "owner"}"#) }
        #expect(badEnum.path.description == "role")
        #expect(badEnum.reason == .invalidValue(#"string "owner" is not a valid Role (expected one of: admin, member, guest)"#))
    }

    @Test func overflowingNumbers() throws {
        let tooBig = try #require(throws: JSONError.self) { try decoder.decode(Everything.self, from: everything(int8: "300")) }
        #expect(tooBig.path.description == "int8")
        #expect(tooBig.reason == .numberOutOfRange("300", type: "Int8"))

        let hugeInt = try #require(throws: JSONError.self) { try decoder.decode([Int].self, from: "[99999999999999999999]") }
        #expect(hugeInt.reason == .numberOutOfRange("99999999999999999999", type: "Int"))
        #expect(hugeInt.path.description == "[0]")

        let hugeDouble = try #require(throws: JSONError.self) { try decoder.decode([Double].self, from: "[1, 1e400]") }
        #expect(hugeDouble.reason == .numberOutOfRange("1e400", type: "Double"))

        let negativeUnsigned = try #require(throws: JSONError.self) { try decoder.decode([UInt].self, from: "[-1]") }
        #expect(negativeUnsigned.reason == .numberOutOfRange("-1", type: "UInt"))
    }

    @Test func malformedJSONHasAPosition() throws {
        let error = try #require(throws: JSONError.self) { try decoder.decode(User.self, from: "{\n  \"id\": 1,\n  \"name\": }") }
        guard case .syntax = error.reason else {
            Issue.record("expected a syntax error, got \(error)")
            return
        }
        #expect(error.line == 3)
        #expect(error.column == 11)
    }

    @Test func invalidUTF8() throws {
        var bytes = Array(#"{"id": 1, "name": "ab"}"#.utf8)
        bytes[20] = 0xFF
        let error = try #require(throws: JSONError.self) { try decoder.decode(User.self, from: bytes) }
        #expect(error.reason == .invalidUTF8)
        #expect(error.offset == 20)
    }

    @Test func deepNestingHasALimit() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let error = try #require(throws: JSONError.self) { try decoder.decode(JSONValue.self, from: deep) }
        #expect(error.reason == .tooDeep(limit: 512))

        let tree = String(repeating: #"{"name": "n", "children": ["#, count: 40) + #"{"name": "leaf"}"# + String(repeating: "]}", count: 40)
        let shallowLimit = JSONModelDecoder(options: JSONDecodingOptions(maxDepth: 20))
        #expect(throws: JSONError.self) { try shallowLimit.decode(TreeNode.self, from: tree) }
        #expect(try decoder.decode(TreeNode.self, from: tree).children.count == 1)
    }

    @Test func invalidFoundationValues() throws {
        let badUUID = try #require(throws: JSONError.self) { try decoder.decode(Everything.self, from: everything(uuid: "\"nope\"")) }
        #expect(badUUID.path.description == "uuid")
        #expect(badUUID.reason == .invalidValue(#""nope" is not a UUID"#))
        let badData = try #require(throws: JSONError.self) { try decoder.decode(Everything.self, from: everything(data: "\"***\"")) }
        #expect(badData.path.description == "data")
        let badURL = try #require(throws: JSONError.self) { try decoder.decode(Everything.self, from: everything(url: "\"\"")) }
        #expect(badURL.path.description == "url")
    }

    private func everything(int8: String = "1", uuid: String = "\"E621E1F8-C36C-495A-93FC-0C247A3E6E5F\"", data: String = "\"\"", url: String = "\"https://e.com\"") -> String {
        """
        {"int": 1, "int8": \(int8), "uint64": 1, "double": 1, "float": 1, "bool": true, "string": "",
         "date": "2020-01-01T00:00:00Z", "url": \(url), "uuid": \(uuid), "data": \(data), "decimal": 1,
         "role": "admin", "priority": 1, "list": [], "matrix": [], "scores": {}, "users": []}
        """
    }
}
