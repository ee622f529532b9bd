import Foundation
import ModelSyncRemote
import ModelSyncServer
import ModelSyncTesting
import Testing

/// RemoteStore against a cassette committed under `Cassettes/`: no server runs. The cassette
/// was recorded from the bundled server's sample data (`recordOnce` records it again when the
/// file is deleted: run the suite once with the file removed).
@Suite("Remote: replayed from a cassette")
struct CassetteReplayTests {
    static let cassette = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Cassettes/sample-posts.json")

    /// The exchanges the cassette holds, sent through `api`.
    static func exchanges(_ api: RemoteStore) async throws -> (user: User, comments: [Comment], post: Post) {
        let user = try await api.fetch(User.self, id: 1)
        let comments = try await api.list(Comment.self, parameters: ["post": 1])
        var post = Post(userId: 1, title: "From a cassette", text: "Replayed")
        try await api.save(&post)
        return (user, comments, post)
    }

    @Test func theCommittedCassetteReplaysWithoutAServer() async throws {
        if !FileManager.default.fileExists(atPath: Self.cassette.path) {
            let recorder = try CassetteTransport(cassette: Self.cassette, matchesHost: false)
            try await withTestServer { server in
                var options = RemoteStore.Options()
                options.headers["Authorization"] = "Bearer recorded-secret"
                _ = try await Self.exchanges(RemoteStore(baseURL: server.baseURL, transport: recorder, options: options))
            }
        }
        let transport = try CassetteTransport(cassette: Self.cassette, mode: .replayOnly, matchesHost: false)
        // Nothing listens on this address: every answer comes from the cassette.
        let api = RemoteStore(baseURL: try #require(URL(string: "http://replay.invalid")), transport: transport)
        let replayed = try await Self.exchanges(api)
        #expect(replayed.user.name == "Leanne Graham")
        #expect(replayed.comments.count == 5 && replayed.comments.allSatisfy { $0.post == 1 })
        #expect(replayed.post.id == 101)

        let text = try String(contentsOf: Self.cassette, encoding: .utf8)
        #expect(text.contains("Authorization: <redacted>") && !text.contains("recorded-secret"))
    }

    @Test func aRequestTheCassetteLacksIsATypedError() async throws {
        let api = RemoteStore(
            baseURL: try #require(URL(string: "http://replay.invalid")),
            transport: try CassetteTransport(cassette: Self.cassette, mode: .replayOnly, matchesHost: false))
        await #expect(throws: CassetteError.self) { _ = try await api.fetch(User.self, id: 2) }
    }
}
