import Foundation
import ModelSyncJSON
import Testing

@Suite struct LenientDecodingTests {
    let lenient = JSONModelDecoder()
    let strict = JSONModelDecoder(mode: .strict)

    @Test func coercesScalarsAndReportsEachCoercion() throws {
        let json = #"{"id": "49", "name": 1234, "role": "admin", "is_active": "true"}"#
        let (user, report) = try lenient.decodeWithReport(User.self, from: json)
        #expect(user == User(id: 49, name: "1234", role: .admin, isActive: true))
        #expect(report.entries == [
            .init(path: "id", kind: .coerced(from: #"string "49""#, to: "Int")),
            .init(path: "name", kind: .coerced(from: "number 1234", to: "String")),
            .init(path: "is_active", kind: .coerced(from: #"string "true""#, to: "Bool")),
        ])
    }

    @Test func strictModeRejectsTheSameCoercions() throws {
        for json in [
            #"{"id": "49", "name": "Ann"}"#,
            #"{"id": 1, "name": 1234}"#,
            #"{"id": 1, "name": "Ann", "is_active": 1}"#,
        ] {
            let error = try #require(throws: JSONError.self) { try strict.decode(User.self, from: json) }
            guard case .typeMismatch = error.reason else {
                Issue.record("expected a type mismatch, got \(error)")
                continue
            }
        }
    }

    @Test func numbersAcceptWholeFloatsAndRejectFractionsForIntegers() throws {
        #expect(try strict.decode([Int].self, from: "[1.0, 2e2, -0.0]") == [1, 200, 0])
        let error = try #require(throws: JSONError.self) { try lenient.decode([Int].self, from: "[1, 2.5]") }
        #expect(error.path.description == "[1]")
        #expect(error.reason == .typeMismatch(expected: "Int", found: "number 2.5"))
    }

    @Test func boolsFromNumbersAndStrings() throws {
        let (values, report) = try lenient.decodeWithReport([Bool].self, from: #"[true, 0, 1, "false", "YES", "no"]"#)
        #expect(values == [true, false, true, false, true, false])
        #expect(report.entries.count == 5)
        #expect(throws: JSONError.self) { try lenient.decode([Bool].self, from: "[2]") }
        #expect(throws: JSONError.self) { try lenient.decode([Bool].self, from: #"["maybe"]"#) }
    }

    @Test func singleValueWhereAnArrayIsExpected() throws {
        let (post, report) = try lenient.decodeWithReport(
            Post.self, from: #"{"userId": 1, "title": "t", "body": "b", "tags": "swift"}"#)
        #expect(post.tags == ["swift"])
        #expect(report.entries.contains(.init(path: "tags", kind: .wrappedInArray)))
        #expect(throws: JSONError.self) {
            try strict.decode(Post.self, from: #"{"userId": 1, "title": "t", "body": "b", "tags": "swift"}"#)
        }
    }

    @Test func missingKeysWithoutDefaultsTakeZeroValuesOnlyWhenLenient() throws {
        let (user, report) = try lenient.decodeWithReport(User.self, from: "{}")
        #expect(user == User(id: 0, name: ""))
        #expect(report.entries.contains(.init(path: "id", kind: .zeroForMissingKey)))
        #expect(report.entries.contains(.init(path: "name", kind: .zeroForMissingKey)))
        #expect(report.entries.contains(.init(path: "role", kind: .defaultForMissingKey)))

        let error = try #require(throws: JSONError.self) { try strict.decode(User.self, from: #"{"id": 1}"#) }
        #expect(error.reason == .missingKey("name"))
        #expect(error.path.description == "name")
    }

    @Test func declaredDefaultsApplyInStrictModeToo() throws {
        let user = try strict.decode(User.self, from: #"{"id": 1, "name": "Ann"}"#)
        #expect(user.role == .member)
        #expect(user.isActive)
    }

    @Test func nullForNonOptionalTakesTheDefaultOrZero() throws {
        let (user, report) = try lenient.decodeWithReport(User.self, from: #"{"id": null, "name": "Ann", "role": null}"#)
        #expect(user.id == 0)
        #expect(user.role == .member)
        #expect(report.entries.contains(.init(path: "id", kind: .zeroForNull)))
        #expect(report.entries.contains(.init(path: "role", kind: .defaultForNull)))

        let error = try #require(throws: JSONError.self) { try strict.decode(User.self, from: #"{"id": null, "name": "Ann"}"#) }
        #expect(error.reason == .typeMismatch(expected: "Int", found: "null"))
        #expect(error.path.description == "id")
    }

    @Test func typesWithoutAZeroValueStillFailWhenMissing() throws {
        let error = try #require(throws: JSONError.self) {
            try lenient.decode(Account.self, from: #"{"id": 1}"#)
        }
        #expect(error.reason == .missingKey("createdAt"))
    }

    @Test func invalidArrayElementsCanBeDroppedAndReported() throws {
        let json = #"[{"id": 1, "name": "Ann"}, {"id": "x", "name": "Bad"}, 7, {"id": 3, "name": "Cy"}]"#
        let failing = try #require(throws: JSONError.self) { try lenient.decode([User].self, from: json) }
        #expect(failing.path.description == "[1].id")

        let dropping = JSONModelDecoder(options: JSONDecodingOptions(dropsInvalidElements: true))
        let (users, report) = try dropping.decodeWithReport([User].self, from: json)
        #expect(users.map(\.id) == [1, 3])
        let dropped = report.entries.compactMap { entry -> (JSONPath, JSONError)? in
            if case .droppedElement(let error) = entry.kind { return (entry.path, error) }
            return nil
        }
        #expect(dropped.map(\.0.description) == ["[1]", "[2]"])
        #expect(dropped.first?.1.path.description == "[1].id")
        #expect(dropped.last?.1.reason == .typeMismatch(expected: "object (User)", found: "number 7"))
    }

    @Test func reportPathsReachIntoNestedArrays() throws {
        let json = #"{"posts": [{"userId": 1, "title": "a", "body": "b"}, {"userId": "2", "title": "a", "body": "b", "author": {"id": "9", "name": "Z"}}]}"#
        let (posts, report) = try lenient.decodeWithReport([Post].self, from: json, at: "posts")
        #expect(posts.count == 2)
        let coerced = report.entries.filter { if case .coerced = $0.kind { true } else { false } }
        #expect(coerced.map(\.path.description) == ["posts[1].userId", "posts[1].author.id"])
    }
}
