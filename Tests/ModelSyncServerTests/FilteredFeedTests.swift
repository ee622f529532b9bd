import Foundation
import ModelSyncJSON
@testable import ModelSyncServer
import ServerTestSupport
import Testing

/// The collection feed with a list's filters (`GET /cards?_since=…&boardId=1`), on every
/// backend: a first read carries only what matches, across its pages; later pages carry a
/// departure (`"left": true`) for a record that no longer matches, and the record when it comes
/// to match.
@Suite struct FilteredFeedTests {
    static let data: JSONValue = [
        "cards": [
            ["id": 1, "boardId": 1, "title": "a"], ["id": 2, "boardId": 2, "title": "b"], ["id": 3, "boardId": 1, "title": "c"],
            ["id": 4, "boardId": 2, "title": "d"], ["id": 5, "boardId": 1, "title": "e"], ["id": 6, "boardId": 2, "title": "f"],
        ],
    ]

    struct Read {
        var records: [Int] = []
        var left: [Int] = []
        var deleted: [Int] = []
        var cursor = "0"
        var requests = 0
    }

    /// Reads the filtered feed from `cursor` to its end, `limit` changes a page.
    func read(_ base: String, filter: String, from cursor: String, limit: Int) async throws -> Read {
        var read = Read(cursor: cursor)
        while true {
            let reply = try await send(.GET, "\(base)/cards?_since=\(read.cursor)&_limit=\(limit)&\(filter)")
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            let page = try #require(reply.json)
            read.requests += 1
            for change in page["changes"]?.arrayValue ?? [] {
                let id = try #require(change["id"]?.intValue)
                if change["left"]?.boolValue == true {
                    read.left.append(id)
                } else if change["deleted"]?.boolValue == true {
                    read.deleted.append(id)
                } else {
                    read.records.append(id)
                }
            }
            read.cursor = try #require(page["next"]?.stringValue)
            if page["more"]?.boolValue != true { return read }
        }
    }

    @Test(arguments: Backend.allCases) func aFilteredFeedCarriesWhatMatchesAndWhatLeaves(backend: Backend) async throws {
        try await withServer(Self.data, backend: backend) { _, base in
            // A first read, two changes a page: board 1's cards only, no departures of board 2's.
            let first = try await read(base, filter: "boardId=1", from: "0", limit: 2)
            #expect(first.records.sorted() == [1, 3, 5])
            #expect(first.left.isEmpty && first.deleted.isEmpty)
            #expect(first.requests == 3)

            // Card 3 moves to board 2, card 4 to board 1, card 6 (never on board 1) is renamed,
            // card 5 is deleted.
            for (id, body) in [(3, #"{"boardId": 2}"#), (4, #"{"boardId": 1}"#), (6, #"{"title": "g"}"#)] {
                #expect(try await send(.PATCH, "\(base)/cards/\(id)", body: body).status == 200)
            }
            #expect(try await send(.DELETE, "\(base)/cards/5").status == 200)
            let next = try await read(base, filter: "boardId=1", from: first.cursor, limit: 100)
            #expect(next.records == [4])
            #expect(next.left.sorted() == [3, 6])
            #expect(next.deleted == [5])

            // Comparisons, patterns and a search filter the feed as they filter lists.
            #expect(try await read(base, filter: "id_gte=4", from: "0", limit: 100).records.sorted() == [4, 6])
            #expect(try await read(base, filter: "title_like=%5E(a%7Cg)%24", from: "0", limit: 100).records.sorted() == [1, 6])
            #expect(try await read(base, filter: "boardId=1&boardId=2&q=b", from: "0", limit: 100).records == [2])
            // A pattern past the bounds is a 400, as on a list.
            #expect(try await send(.GET, "\(base)/cards?_since=0&title_like=" + String(repeating: "(", count: 40)).status == 400)
        }
    }

    /// A cursor the document's pattern admits but the server never issued (its place in rows
    /// moving in out of order) is a 410, so that the client reads everything again.
    @Test func aWellFormedCursorNeverIssuedIsGone() async throws {
        let access = AccessControl(rules: try AccessRules(json: SharingRuleTests.tracker), tokens: TestTokens())
        try await withServer(SharingTests.data, options: ServerOptions(access: access)) { _, base in
            let page = try await send(.GET, "\(base)/_changes?since=0", headers: [("Authorization", "Bearer test:2:")])
            let tag = try #require(page.json?["next"]?.stringValue?.split(separator: ".").last)
            let reply = try await send(.GET, "\(base)/_changes?since=6800.\(tag).58.5756.386351", headers: [("Authorization", "Bearer test:2:")])
            #expect(reply.status == 410, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(try await send(.HEAD, "\(base)/_changes?since=6800.\(tag).58.5756.386351", headers: [("Authorization", "Bearer test:2:")]).status == 410)
        }
    }

    @Test func aCatchUpCursorWithoutATagKeepsItsMark() throws {
        let (sequence, tag, mark, _) = try ServerRoutes.parseCursor("12..40")
        #expect(sequence == .after(12) && tag == nil && mark == 40)
        #expect(throws: APIError.self) { try ServerRoutes.parseCursor("12..") }
        #expect(throws: APIError.self) { try ServerRoutes.parseCursor("12.") }
        #expect(throws: APIError.self) { try ServerRoutes.parseCursor("now..3") }
    }
}
