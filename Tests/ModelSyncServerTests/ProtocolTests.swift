import Foundation
import ModelSyncJSON
import ModelSyncProtocol
@testable import ModelSyncServer
import ServerTestSupport
import Testing

/// The sync protocol's types: they round-trip through JSON, name where a message is wrong, and
/// the server's answers decode into them on both backends (so the two sides cannot drift).
@Suite struct ProtocolTests {
    @Test func messagesRoundTripThroughJSON() throws {
        let change = SyncChange(sequence: 7, collection: "posts", id: 3, record: ["id": 3, "title": "t"], createdWith: "key-1")
        let deletion = SyncChange(sequence: 8, collection: "posts", id: "a/b", record: nil)
        let page = SyncFeedPage(changes: [change, deletion], next: "8", more: true)
        #expect(try SyncFeedPage(json: page.json) == page)
        #expect(try SyncFeedPage(json: JSONValue(parsing: page.json.jsonBytes())) == page)
        #expect(deletion.isDeletion && change.etag == #""7""#)

        let batch = SyncBatchRequest(operations: [
            SyncBatchOperation(method: "POST", path: "/posts", headers: ["Idempotency-Key": "k"], body: ["title": "x"]),
            SyncBatchOperation(method: "DELETE", path: "/posts/3", headers: ["If-Match": #""2""#]),
        ])
        #expect(try SyncBatchRequest.operations(in: batch.json).map { try $0.get() } == batch.operations)
        let answer = SyncBatchResponse(results: [
            SyncBatchResult(status: 201, etag: #""9""#, replayed: true, body: ["id": 4]),
            SyncBatchResult(status: 412, etag: #""5""#, body: SyncErrorBody(error: "changed", current: ["id": 3]).json),
        ])
        #expect(try SyncBatchResponse(json: answer.json) == answer)
        #expect(SyncErrorBody(json: answer.results[1].body)?.current == ["id": 3])
        #expect(try SyncFeedGone(json: ["error": "gone", "horizon": "12"]).horizon == "12")
    }

    @Test func aMalformedMessageNamesTheMemberAtFault() {
        #expect(throws: SyncProtocolError.invalid(message: "missing", path: "page.next")) {
            try SyncFeedPage(json: ["changes": []])
        }
        #expect(throws: SyncProtocolError.invalid(message: "expected an integer", path: "page.changes[1].seq")) {
            try SyncFeedPage(json: ["changes": [["seq": 1, "collection": "c", "id": 1, "deleted": true], ["seq": "2", "collection": "c", "id": 2]], "next": "2"])
        }
        #expect(throws: SyncProtocolError.invalid(message: "expected an object", path: "batch")) { try SyncBatchResponse(json: []) }
        let operations = try? SyncBatchRequest.operations(in: ["operations": [["method": "POST"], ["method": "DELETE", "path": "/p/1", "headers": ["If-Match": 1]]]])
        #expect(operations?.compactMap { result -> SyncProtocolError? in if case .failure(let error) = result { error } else { nil } } == [
            .invalid(message: "missing", path: "batch.operations[0].path"), .invalid(message: "expected a string", path: "batch.operations[1].headers.If-Match"),
        ])
        #expect(SyncFeedPage.isFeedPage([["id": 1]]) == false)
    }

    /// A client reads a feed page in place (`SyncFeedDocument`, its records left in the bytes):
    /// it must accept and refuse exactly what `SyncFeedPage` does, with the same errors.
    @Test func theFeedReadInPlaceAgreesWithThePage() throws {
        let pages: [String] = [
            #"{"changes": [{"seq": 7, "collection": "posts", "id": 3, "record": {"id": 3, "t": "x"}, "createdWith": "k"}, {"seq": 8, "collection": "posts", "id": "a/b", "deleted": true}], "next": "8", "more": true}"#,
            #"{"changes": [], "next": "0"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1, "record": {}, "deleted": false, "createdWith": null}], "next": "1", "more": null}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1, "deleted": true, "record": null}], "next": "1", "more": false}"#,
            // Duplicate members: the last wins, as when decoding.
            #"{"changes": [{"seq": 1, "seq": 2, "collection": "c", "id": 1, "record": {"a": 1}}], "next": "2", "next": "3"}"#,
            // Refused, each naming its member.
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1, "deleted": true}, {"seq": "2", "collection": "c", "id": 2}], "next": "2"}"#,
            #"{"changes": [{"seq": 1.5, "collection": "c", "id": 1, "record": {}}], "next": "2"}"#,
            #"{"changes": [{"collection": "c", "id": 1, "record": {}}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": 3, "id": 1, "record": {}}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "id": 1, "record": {}}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "record": {}}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": null, "record": {}}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1, "record": null}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1, "record": {}, "deleted": "no"}], "next": "2"}"#,
            #"{"changes": [{"seq": 1, "collection": "c", "id": 1, "record": {}, "createdWith": 4}], "next": "2"}"#,
            #"{"changes": [3], "next": "2"}"#,
            #"{"changes": [], "next": "2", "more": 1}"#,
        ]
        for text in pages {
            let document = try JSONDocument(string: text)
            let value = try JSONValue(parsing: text)
            let expected = Result { () throws(SyncProtocolError) in try SyncFeedPage(json: value) }
            let read = Result { () throws(SyncProtocolError) in try SyncFeedDocument(document: document) }
            switch (expected, read) {
            case (.success(let page), .success(let feed?)):
                #expect(feed.next == page.next && feed.more == page.more, "\(text)")
                #expect(feed.changes.map(\.sequence) == page.changes.map(\.sequence), "\(text)")
                #expect(feed.changes.map(\.id) == page.changes.map(\.id), "\(text)")
                #expect(feed.changes.map(\.createdWith) == page.changes.map(\.createdWith), "\(text)")
                #expect(feed.changes.map(\.etag) == page.changes.map(\.etag), "\(text)")
                #expect(try feed.changes.map { try $0.record.flatMap { try document.value(at: $0) } } == page.changes.map(\.record), "\(text)")
            case (.failure(let error), .failure(let readError)):
                #expect(error == readError, "\(text)")
            default:
                Issue.record("\(text): the page read \(expected), in place \(read)")
            }
        }
    }

    /// What is no feed page at all (a server that ignores `_since`) reads as none, not as an error.
    @Test func anAnswerThatIsNoFeedPageReadsAsNone() throws {
        for text in [#"[{"id": 1}]"#, #"{"changes": []}"#, #"{"changes": {}, "next": "1"}"#, #"{"changes": [], "next": 1}"#, #"{"changes": [], "next": null}"#, "3"] {
            let document = try JSONDocument(string: text)
            #expect(SyncFeedPage.isFeedPage(try JSONValue(parsing: text)) == false)
            #expect(try SyncFeedDocument(document: document) == nil, "\(text)")
        }
    }

    @Test func versionsAreNegotiated() throws {
        #expect(try SyncProtocol.negotiate(nil) == nil)
        #expect(try SyncProtocol.negotiate(" 1 ") == 1)
        #expect(throws: SyncProtocolError.unsupportedVersion("2", supported: [1])) { try SyncProtocol.negotiate("2") }
        #expect(throws: SyncProtocolError.unsupportedVersion("one", supported: [1])) { try SyncProtocol.negotiate("one") }
        // Only the digits as the document's enum has them (`"1"`), with HTTP's white space around.
        #expect(try SyncProtocol.negotiate("\t1") == 1)
        for text in ["+1", "01", "1 1", "", " "] {
            #expect(throws: SyncProtocolError.unsupportedVersion(text, supported: [1])) { try SyncProtocol.negotiate(text) }
        }
    }

    @Test(arguments: Backend.allCases) func theServersAnswersDecodeIntoTheProtocolsTypes(backend: Backend) async throws {
        try await withServer(["posts": [["id": 1, "title": "a"]]], backend: backend) { _, url in
            let base = url + "/"
            _ = try await send(.POST, base + "posts", body: #"{"title": "b"}"#, headers: [("Idempotency-Key", "create-b")])
            _ = try await send(.DELETE, base + "posts/1")
            let feed = try await send(.GET, base + "posts?_since=0", headers: [("ModelSync-Protocol", "1")])
            #expect(feed.header("ModelSync-Protocol") == "1")
            let page = try SyncFeedPage(json: try #require(feed.json))
            #expect(page.changes.map(\.sequence) == [2, 3] && page.next == "3" && !page.more)
            #expect(page.changes[0].createdWith == "create-b" && page.changes[1].isDeletion)
            #expect(try SyncFeedPage(json: try #require(try await send(.GET, base + "_changes?since=1").json)).changes.count == 2)

            let batch = SyncBatchRequest(operations: [
                SyncBatchOperation(method: "PATCH", path: "/posts/2", headers: ["If-Match": #""1""#], body: ["title": "stale"]),
                SyncBatchOperation(method: "POST", path: "/posts", headers: ["Idempotency-Key": "create-b"], body: ["title": "b"]),
            ])
            let answered = try await send(.POST, base + "_batch", body: String(decoding: batch.json.jsonBytes(), as: UTF8.self))
            let results = try SyncBatchResponse(json: try #require(answered.json)).results
            #expect(results.map(\.status) == [412, 201] && results[1].replayed)
            #expect(SyncErrorBody(json: results[0].body)?.current?["title"] == "b")

            let refused = try await send(.GET, base + "posts", headers: [("ModelSync-Protocol", "2")])
            #expect(refused.status == 400)
            #expect(SyncErrorBody(json: try #require(refused.json))?.details["supportedVersions"] == [1])
        }
    }

    @Test(arguments: Backend.allCases) func anOldCursorGetsTheHorizonAsTheProtocolSaysIt(backend: Backend) async throws {
        try await withServer(["posts": [["id": 1], ["id": 2]]], options: ServerOptions(feedLimits: FeedLimits(tombstoneCapacity: 1)), backend: backend) { _, url in
            _ = try await send(.DELETE, url + "/posts/1")
            _ = try await send(.DELETE, url + "/posts/2")
            let gone = try await send(.GET, url + "/posts?_since=0")
            #expect(gone.status == 410)
            #expect(try SyncFeedGone(json: try #require(gone.json)).horizon == "3")
        }
    }
}
