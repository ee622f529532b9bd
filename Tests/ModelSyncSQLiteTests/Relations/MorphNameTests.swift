import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// Polymorphic type columns written by another system (Laravel's morph map stores class names).
@Suite("Morph names")
struct MorphNameTests {
    @Model(table: "videos")
    struct Video: SQLModel, Equatable {
        var id: Int?
        var title: String

        static var morphName: String { #"App\Models\Video"# }
        static let comments = morphMany(Comment.self, as: "commentable")
    }

    /// Keeps the default: its table name.
    @Model(table: "posts")
    struct Post: SQLModel, Equatable {
        var id: Int?
        var title: String

        static let comments = morphMany(Comment.self, as: "commentable")
    }

    @Model(table: "comments")
    struct Comment: SQLModel, Equatable {
        var id: Int?
        var commentableType: String?
        var commentableId: Int?
        var body: String

        static let commentable = morphTo("commentable", types: [Video.self, Post.self])
    }

    @Test(arguments: TestStorage.allCases)
    func typeColumnsHoldTheDeclaredNames(store: TestStorage) throws {
        let db = try store.open(models: [Video.self, Post.self, Comment.self])
        var video = Video(title: "Intro")
        var post = Post(title: "Hello")
        try db.write { db in
            try video.insert(db)
            try post.insert(db)
            // As the other system wrote them: a class name for the video, the table name for the post.
            try db.execute(
                "INSERT INTO comments (commentableType, commentableId, body) VALUES (?, ?, 'on the video'), ('posts', ?, 'on the post'), ('videos', ?, 'not the video')",
                [.text(#"App\Models\Video"#), .integer(Int64(video.id ?? 0)), .integer(Int64(post.id ?? 0)), .integer(Int64(video.id ?? 0))])
        }
        let onVideo = try db.read { try Video.comments.load(for: video, $0) }
        #expect(onVideo.map(\.body) == ["on the video"])
        #expect(try db.read { try Post.comments.load(for: post, $0) }.map(\.body) == ["on the post"])

        let comments = try db.read { try Comment.order(\.id).fetchAll($0) }
        let owners = try db.read { try Comment.commentable.load(for: Array(comments.prefix(2)), $0) }
        #expect(owners[0] as? Video == video)
        #expect(owners[1] as? Post == post)
        // "videos" names no model here: the video is "App\Models\Video".
        #expect(throws: RelationError.self) { try db.read { try Comment.commentable.load(for: comments[2], $0) } }

        // The delete rule (cascade by default) follows the declared name too.
        _ = try db.write { try video.delete($0) }
        #expect(try db.read { try Comment.order(\.id).fetchAll($0) }.map(\.body) == ["on the post", "not the video"])
    }
}
