import Foundation
import ModelSyncJSON
import ModelSyncSQLite
import ModelSyncServer
import ModelSyncServerSQLite
import ModelSyncTesting
import ServerTestSupport
import Testing

/// Lists on SQLite filter, search, sort and page in SQL over the records' JSON text: these
/// send one list of queries where a translation could differ to the JSON file and to SQLite,
/// and expect the same answers (status, count, links, body), byte for byte.
@Suite("Lists in SQL answer as the JSON file does")
struct ListSQLTests {
    /// Values that are numbers in some rows and text, booleans, `null`, arrays or objects in
    /// others; nested members; numbers written several ways; strings Swift calls equal that
    /// differ in bytes; keys with a backslash, a quote, a dot-free name SQLite's paths would
    /// misread.
    static let data: JSONValue = {
        let text = #"""
            {"posts": [
              {"id": 1, "title": "Alpha", "views": 10, "rank": 2, "tag": "x", "meta": {"score": 5, "name": "a"}, "a\\b": "back", "q\"t": "quote", "[0]": "bracket"},
              {"id": 2, "title": "beta", "views": "9", "rank": 1, "tag": "y", "meta": {"score": "5"}},
              {"id": 3, "title": "Gamma \u00e9", "views": 9.0, "rank": 1.0, "meta": {"score": 1e2}, "a\\b": "other"},
              {"id": 4, "title": "e\u0301", "views": null, "rank": 3, "tags": ["x", "y"]},
              {"id": 5, "title": "\u00e9", "views": true, "rank": 1, "meta": [1]},
              {"id": 6, "title": "delta", "views": -0, "rank": 2.5, "meta": {"score": 100}},
              {"id": 7, "views": 9007199254740993, "rank": 0},
              {"id": 8, "title": "KELVIN \u212a", "views": 9007199254740992, "tag": "x", "rank": -1},
              {"id": "9", "title": "nine", "views": [1], "tag": "x", "rank": 1e0},
              {"id": 10, "title": "Ten\u0000nul", "views": {"a": 1}, "rank": 10, "q\"t": "quote"}
            ]}
            """#
        return (try? JSONValue(parsing: Array(text.utf8))) ?? .null
    }()

    static let queries = [
        "views=9", "views=9.0", "views=-0", "views=0", "views=true", "views=null", "views=10", "views=9007199254740993",
        "views_gte=9", "views_gt=9", "views_lt=10", "views_lte=9", "views_ne=9", "views_ne=x", "views_gt=a", "views_gte=nan", "views_lt=nan",
        "views_ne=nan", "views_lt=inf", "views_gte=-inf", "views_gte=9007199254740992", "views_gt=9007199254740992", "views_gte=0x9",
        "meta.score=5", "meta.score_gte=5", "meta.score=100", "meta.score=1e2", "meta.name=a", "meta..score=5", "meta.score_ne=5", ".=x", "._ne=x",
        "title=%C3%A9", "title=e%CC%81", "title_gt=e", "title_lt=%C3%A9", "title_like=%5Ee", "title_like=%C3%A9", "title_like=kelvin", "title_like=nul", "title=Ten", "title_lt=Ten%00", "title_gt=Ten",
        "q=e", "q=%C3%A9", "q=k", "q=9", "q=x", "q=ALPHA", "q=quote", "q=1e2",
        "a%5Cb=back", "a%5Cb_ne=back", "q%22t=quote", "q%22t_like=quo", "%5B0%5D=bracket", "missing_ne=1", "tags=x", "tags_ne=x",
        "_sort=rank", "_sort=-rank", "_sort=rank,-id", "_sort=title", "_sort=title&_order=desc", "_sort=tag,title", "_sort=a%5Cb", "_sort=q%22t,-rank",
        "_sort=views", "_sort=-views", "_sort=title,-rank", "rank_gte=1&_sort=-title", "_sort=meta.score", "_sort=meta", "_sort=tag,-views", "_sort=id",
        "_page=2&_limit=3", "_start=2&_end=5", "_start=8&_limit=5", "_limit=0", "_sort=views&_page=2&_limit=2", "_sort=rank&_start=3&_end=6",
        "tag=x&_sort=-rank&_page=1&_limit=2", "views_ne=9&_sort=views&_start=1&_limit=3", "_page=9&_limit=3", "q=a&_sort=-title&_page=1&_per_page=2",
    ]

    @Test func everyQueryAnswersAsTheJSONFileDoes() async throws {
        var answers: [Backend: [String: String]] = [:]
        for backend in [Backend.jsonDocument, .sqlite] {
            try await withServer(Self.data, backend: backend) { _, base async throws in
                for query in Self.queries {
                    let reply = try await send(.GET, "\(base)/posts?\(query)")
                    let body = reply.json.map { String(decoding: $0.jsonBytes(), as: UTF8.self) } ?? String(decoding: reply.body, as: UTF8.self)
                    let links = (reply.header("Link") ?? "-").replacingOccurrences(of: base, with: "")
                    answers[backend, default: [:]][query] = "\(reply.status) \(reply.header("X-Total-Count") ?? "-") \(links) \(body)"
                }
            }
        }
        for query in Self.queries {
            #expect(answers[.sqlite]?[query] == answers[.jsonDocument]?[query], "\(query)")
        }
    }

    /// Strings Swift calls equal (`é` composed and decomposed) are two values to a filter, as
    /// they are to ids and to SQL: on every backend.
    @Test(arguments: Backend.allCases) func filtersCompareStringsByTheirBytes(backend: Backend) async throws {
        let data: JSONValue = ["posts": [["id": 4, "title": "e\u{301}"], ["id": 5, "title": "\u{E9}"], ["id": 6, "title": "f"]]]
        try await withServer(data, backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?title=%C3%A9").ids == [5])
            #expect(try await send(.GET, "\(base)/posts?title=e%CC%81").ids == [4])
            #expect(try await send(.GET, "\(base)/posts?title_gte=%C3%A9&title_lte=%C3%A9").ids == [5])
        }
    }

    /// Numbers equal by value but written apart (`1`, `1.0`, `1e0`) tie in a sort and keep the
    /// data's order on every backend, as the JSON file compares them (by their `Double`).
    @Test(arguments: Backend.allCases) func numbersEqualByValueTieInASort(backend: Backend) async throws {
        let text = #"{"posts": [{"id": 1, "rank": 1.0}, {"id": 2, "rank": 0}, {"id": 3, "rank": 1}, {"id": 4, "rank": 1e0}]}"#
        let data = try JSONValue(parsing: Array(text.utf8))
        try await withServer(data, backend: backend) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?_sort=rank").ids == [2, 1, 3, 4])
            #expect(try await send(.GET, "\(base)/posts?_sort=-rank").ids == [1, 3, 4, 2])
        }
    }

    /// A list reads into Swift only the records of its page: SQL filters, sorts and counts the
    /// others. A record Swift cannot read (nested past its depth limit, put in the file behind
    /// the server's back) outside the page leaves the page as it is.
    @Test func aPageReadsOnlyItsOwnRecordsIntoSwift() async throws {
        let directory = try TemporaryDirectory(prefix: "modelsync-sqlite-list-page")
        defer { directory.remove() }
        let path = directory.path("data.sqlite")
        let server = try await SyncServer.start(data: ["posts": [["id": 1, "views": 10], ["id": 2, "views": 20], ["id": 3, "views": 30], ["id": 4, "views": 1]]], sqlite: path)
        let base = server.baseURL.absoluteString
        let deep = #"{"id":99,"views":15,"title":"deep","nested":"# + String(repeating: #"{"a":"#, count: 600) + "1" + String(repeating: "}", count: 601)
        let database = try Database(path: path, configuration: DatabaseConfiguration(foreignKeys: false, createsTables: false))
        try await database.write { connection in
            try connection.execute(
                "INSERT INTO modelsync_server_records (collection, id_text, integer_id, version, record) VALUES ('posts', '99', 99, 1000000, ?)", [.text(deep)])
        }
        let page = try await send(.GET, "\(base)/posts?views_gte=10&_sort=-views&_limit=2")
        let searched = try await send(.GET, "\(base)/posts?views_lt=20&_sort=views&_start=1&_end=2")
        await server.shutdown()
        #expect(page.status == 200)
        #expect(page.ids == [3, 2])
        #expect(page.header("X-Total-Count") == "4")
        #expect(searched.ids == [1])
        #expect(searched.header("X-Total-Count") == "3")
    }

    /// A field named with a quote or a backslash is a member's name, read as the JSON file reads
    /// it, never a path SQLite misreads or SQL text.
    @Test func fieldsWithQuotesAndBackslashesAreNamesNotSQL() async throws {
        try await withServer(Self.data, backend: .sqlite) { _, base async throws in
            #expect(try await send(.GET, "\(base)/posts?a%5Cb=back").ids == [1])
            #expect(try await send(.GET, "\(base)/posts?q%22t=quote").ids == [1, 10])
            #expect(try await send(.GET, "\(base)/posts?%27)%20OR%201=1%20--=x").ids == [])
            #expect(try await send(.GET, "\(base)/posts?title%22)%20OR%20(%221_ne=x").ids == [])
        }
    }
}
