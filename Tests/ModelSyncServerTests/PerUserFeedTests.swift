import Foundation
import ModelSyncJSON
import ModelSyncRemote
@testable import ModelSyncServer
import ServerTestSupport
import Testing

/// The feed under access rules is each reader's own: a row that leaves a reader's view reaches
/// that reader as a removal, a cursor serves only the reader it was issued to, and the live
/// stream sends what the feed would.
@Suite struct PerUserFeedTests {
    typealias Who = AccessTests.Who

    func feed(_ base: String, _ query: String, as who: Who) async throws -> Reply {
        try await send(.GET, "\(base)/_changes?\(query)", headers: who.headers)
    }

    /// The (id, deleted) pairs of a feed answer.
    func entries(_ reply: Reply) -> [(Int, Bool)] {
        (reply.json?["changes"]?.arrayValue ?? []).compactMap { change in change["id"]?.intValue.map { ($0, change["deleted"] == true) } }
    }

    func text(_ reply: Reply) -> String { String(decoding: reply.body, as: UTF8.self) }

    func move(_ path: String, to owner: Int, _ base: String) async throws {
        let moved = try await send(.PATCH, "\(base)/\(path)", body: #"{"userId": \#(owner)}"#, headers: Who.admin.headers)
        #expect(moved.status == 200)
    }

    /// An admin gives Ann's message to Bob: Ann's feed removes it, Bob's adds it.
    @Test(arguments: Backend.allCases) func aRowGivenToAnotherOwnerLeavesTheFormerOwnersFeed(backend: Backend) async throws {
        try await AccessTests().withAccessServer(backend) { base async throws in
            let annCursor = try #require(try await feed(base, "collections=messages", as: .ann).json?["next"]?.stringValue)
            let bobCursor = try #require(try await feed(base, "collections=messages", as: .bob).json?["next"]?.stringValue)
            let adminCursor = try #require(try await feed(base, "collections=messages", as: .admin).json?["next"]?.stringValue)
            try await move("messages/1", to: 2, base)
            let ann = try await feed(base, "collections=messages&since=\(annCursor)", as: .ann)
            #expect(entries(ann).map(\.0) == [1] && entries(ann).map(\.1) == [true])
            #expect(ann.json?["changes"]?[0]?["record"] == nil && !text(ann).contains("Ann's secret"))
            let bob = try await feed(base, "collections=messages&since=\(bobCursor)", as: .bob)
            #expect(entries(bob).map(\.0) == [1] && entries(bob).map(\.1) == [false])
            #expect(bob.json?["changes"]?[0]?["record"]?["userId"] == 2)
            // A reader of every row keeps it: the change, not a removal.
            #expect(entries(try await feed(base, "collections=messages&since=\(adminCursor)", as: .admin)).map(\.1) == [false])
        }
    }

    /// A reader's feed read a change at a time gives what one page gives, in order, deletions and
    /// departures included (SQLite reads each page's records only up to the page's end).
    @Test(arguments: Backend.allCases) func aReadersFeedPagedOneAtATimeIsTheWholeFeed(backend: Backend) async throws {
        try await AccessTests().withAccessServer(backend) { base async throws in
            let start = try #require(try await feed(base, "collections=messages,posts", as: .ann).json?["next"]?.stringValue)
            for title in ["one", "two", "three"] {
                #expect(try await send(.POST, "\(base)/messages", body: #"{"text":"\#(title)"}"#, headers: Who.ann.headers).status == 201)
            }
            try await move("messages/1", to: 2, base)
            #expect(try await send(.DELETE, "\(base)/posts/1", headers: Who.admin.headers).status == 200)
            let whole = try await feed(base, "collections=messages,posts&since=\(start)", as: .ann)
            var paged: [(Int, Bool)] = []
            var cursor = start
            for _ in 0..<20 {
                let page = try await feed(base, "collections=messages,posts&limit=1&since=\(cursor)", as: .ann)
                paged += entries(page)
                cursor = try #require(page.json?["next"]?.stringValue)
                if page.json?["more"] != true { break }
            }
            #expect(entries(whole).count == 5)
            #expect(paged.map(\.0) == entries(whole).map(\.0) && paged.map(\.1) == entries(whole).map(\.1))
            #expect(cursor == whole.json?["next"]?.stringValue)
        }
    }

    /// A row given away and back is, for its owner, the record again (once), not a removal;
    /// and a reader of every row never sees a departure.
    @Test(arguments: Backend.allCases) func aRowGivenBackIsTheRecordAgain(backend: Backend) async throws {
        try await AccessTests().withAccessServer(backend) { base async throws in
            let cursor = try #require(try await feed(base, "collections=messages,posts", as: .ann).json?["next"]?.stringValue)
            try await move("messages/1", to: 2, base)
            try await move("messages/1", to: 1, base)
            try await move("posts/1", to: 2, base)
            let ann = try await feed(base, "collections=messages&since=\(cursor)", as: .ann)
            #expect(entries(ann).map(\.0) == [1] && entries(ann).map(\.1) == [false])
            // Posts are public (644): Ann still reads post 1, so it is its change, not a removal.
            let posts = try await feed(base, "collections=posts&since=\(cursor)", as: .ann)
            #expect(entries(posts).map(\.0) == [1] && entries(posts).map(\.1) == [false])
            #expect(entries(try await feed(base, "collections=posts&since=0", as: .anonymous)).allSatisfy { !$0.1 })
        }
    }

    /// A cursor serves only its reader: another user's, another role's, or one from before
    /// there were rules starts the reader over (410, with a horizon of now that is theirs).
    @Test(arguments: Backend.allCases) func aCursorIsOnlyItsReaders(backend: Backend) async throws {
        try await AccessTests().withAccessServer(backend) { base async throws in
            let annCursor = try #require(try await feed(base, "", as: .ann).json?["next"]?.stringValue)
            #expect(annCursor.contains("."))
            let stolen = try await feed(base, "since=\(annCursor)", as: .bob)
            #expect(stolen.status == 410 && !text(stolen).contains("secret"))
            let horizon = try #require(stolen.json?["horizon"]?.stringValue)
            #expect(horizon != annCursor && horizon.hasPrefix(annCursor.prefix { $0 != "." } + "."))
            #expect(try await feed(base, "since=\(horizon)", as: .bob).status == 200)
            // The same user with another role, an untagged cursor, a forged tag: start over.
            let editor = try await send(.GET, "\(base)/_changes?since=\(annCursor)", headers: [("Authorization", "Bearer test:1:editor")])
            #expect(editor.status == 410)
            let sequence = annCursor.prefix { $0 != "." }
            #expect(try await feed(base, "since=\(sequence)", as: .ann).status == 410)
            #expect(try await feed(base, "since=\(sequence).0000000000000000", as: .ann).status == 410)
            #expect(try await send(.GET, "\(base)/messages?_since=\(annCursor)", headers: Who.bob.headers).status == 410)
            // The beginning and now suit anyone; nonsense is still a 400.
            #expect(try await feed(base, "since=0", as: .bob).status == 200)
            #expect(try await feed(base, "since=now", as: .bob).status == 200)
            #expect(try await feed(base, "since=x.y", as: .bob).status == 400)
            #expect(try await feed(base, "since=\(annCursor)", as: .ann).status == 200)
        }
    }

    /// A cursor from a server under rules, sent after they were lifted, starts over too.
    @Test(arguments: Backend.allCases) func aTaggedCursorOnAnOpenServerStartsOver(backend: Backend) async throws {
        try await withServer(AccessTests.data, backend: backend) { _, base in
            let gone = try await send(.GET, "\(base)/_changes?since=3.0123456789abcdef")
            #expect(gone.status == 410 && gone.json?["horizon"]?.stringValue.flatMap { Int($0) } != nil)
            #expect(try await send(.GET, "\(base)/_changes?since=3").status == 200)
        }
    }

    /// The tag names the reader and the rules: other rules, another user or role, another tag.
    @Test func theCursorTagNamesReaderAndRules() throws {
        let rules = try AccessRules(json: ["posts": 644, "messages": 600])
        let reordered = try AccessRules(json: ["messages": 600, "posts": 644])
        let widened = try AccessRules(json: ["posts": 644, "messages": 640])
        let ann = Caller(userID: "1")
        let tag = Visibility(rules: rules, caller: ann).cursorTag
        #expect(tag?.count == 16)
        #expect(Visibility(rules: reordered, caller: ann).cursorTag == tag)
        #expect(Visibility(rules: widened, caller: ann).cursorTag != tag)
        #expect(Visibility(rules: rules, caller: Caller(userID: "2")).cursorTag != tag)
        #expect(Visibility(rules: rules, caller: Caller(userID: "1", role: "editor")).cursorTag != tag)
        #expect(Visibility.open.cursorTag == nil)
    }

    /// The live stream sends a reader what its feed would: the deletion of its own row among
    /// others', and the removal of a row given away; its event ids are the reader's cursors.
    @Test(.timeLimit(.minutes(5)), arguments: Backend.allCases) func theStreamSendsWhatTheFeedWould(backend: Backend) async throws {
        try await AccessTests().withAccessServer(backend) { base async throws in
            let remote = RemoteStore(baseURL: try #require(URL(string: base)))
            // From each reader's cursor of now: whether the stream opens before or after the
            // writes below, they reach it (from the backlog or live).
            func stream(_ who: Who) async throws -> AsyncThrowingStream<ServerSentEvent, any Error>.AsyncIterator {
                let cursor = try #require(try await feed(base, "collections=messages", as: who).json?["next"]?.stringValue)
                let url = try #require(URL(string: "\(base)/_changes/stream?since=\(cursor)&collections=messages"))
                return remote.events(at: url, headers: HeaderFields(who.headers.map { (name: $0.0, value: $0.1) })).makeAsyncIterator()
            }
            var ann = try await stream(.ann)
            var bob = try await stream(.bob)
            #expect(try await send(.POST, "\(base)/messages", body: #"{"text":"Ann's second"}"#, headers: Who.ann.headers).status == 201)
            #expect(try await send(.POST, "\(base)/messages", body: #"{"text":"Bob's second"}"#, headers: Who.bob.headers).status == 201)
            let annFirst = try #require(try await ann.next())
            #expect(annFirst.data.contains("Ann's second") && !annFirst.data.contains("Bob"))
            let bobFirst = try #require(try await bob.next())
            #expect(bobFirst.data.contains("Bob's second"))
            // Bob deletes his own row; the admin gives Ann's message 1 to Bob.
            #expect(try await send(.DELETE, "\(base)/messages/2", headers: Who.bob.headers).status == 200)
            try await move("messages/1", to: 2, base)
            let bobDeletion = try #require(try await bob.next())
            #expect(bobDeletion.data.contains(#""deleted":true"#) && bobDeletion.data.contains(#""id":2"#))
            let bobGained = try #require(try await bob.next())
            #expect(bobGained.data.contains("Ann's secret"))
            let annRemoval = try #require(try await ann.next())
            #expect(annRemoval.data.contains(#""deleted":true"#) && annRemoval.data.contains(#""id":1"#))
            // The event id is Ann's cursor: the feed takes it from her, not from Bob.
            let eventID = try #require(annRemoval.id)
            #expect(eventID.contains("."))
            #expect(try await feed(base, "since=\(eventID)", as: .ann).status == 200)
            #expect(try await feed(base, "since=\(eventID)", as: .bob).status == 410)
        }
    }
}
