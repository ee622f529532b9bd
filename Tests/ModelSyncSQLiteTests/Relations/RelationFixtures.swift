import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// The models of the relation tests: users with posts and a profile; heroes and enemies
/// linked through a pivot with a `level`; notes on heroes or enemies; tags on both.
enum Rel {
    @Model(table: "users")
    struct User: SQLModel, Equatable {
        var id: Int?
        var name: String

        static let posts = hasMany(Post.self)
        static let profile = hasOne(Profile.self)
        static let edited = hasMany(Post.self, foreignKey: \.editorId)
    }

    // Post, Profile and Hero leave `relations` to `@Model` (every relation declared); Enemy lists
    // its own.
    @Model(table: "posts")
    struct Post: SQLModel, Equatable {
        var id: Int?
        var userId: Int
        var title: String
        var editorId: Int?

        static let author = belongsTo(User.self, onDelete: .cascade)
        static let editor = belongsTo(User.self, foreignKey: \.editorId, onDelete: .setNull)
    }

    @Model(table: "profiles")
    struct Profile: SQLModel, Equatable {
        var id: Int?
        var userId: Int
        var bio: String

        static let user = belongsTo(User.self)
    }

    @Model(table: "heroes")
    struct Hero: SQLModel, Equatable {
        var id: Int?
        var name: String

        static let enemies = belongsToMany(Enemy.self, through: HeroEnemy.self)
        static let notes = morphMany(Note.self, as: "subject", onDelete: .cascade)
        static let tags = morphToMany(Tag.self, through: Tagging.self, as: "taggable")
    }

    @Model(table: "enemies")
    struct Enemy: SQLModel, Equatable {
        var id: Int?
        var name: String

        static let heroes = belongsToMany(Hero.self, through: HeroEnemy.self)
        static let notes = morphMany(Note.self, as: "subject", onDelete: .setNull)
        static let tags = morphToMany(Tag.self, through: Tagging.self, as: "taggable", onDelete: .restrict)
        static let relations: [any ModelRelation<Enemy>] = [notes, tags]
    }

    /// The pivot, with a column of its own.
    @Model(table: "hero_enemies", unique: [["heroId", "enemyId"]])
    struct HeroEnemy: SQLModel, Equatable {
        var id: Int?
        var heroId: Int = 0
        var enemyId: Int = 0
        var level: Int = 1

        static let relations: [any ModelRelation<HeroEnemy>] = [
            belongsTo(Hero.self, onDelete: .cascade), belongsTo(Enemy.self, onDelete: .cascade),
        ]
    }

    @Model(table: "notes")
    struct Note: SQLModel, Equatable {
        var id: Int?
        var subjectType: String?
        var subjectId: Int?
        var text: String

        static let subject = morphTo("subject", types: [Hero.self, Enemy.self])
    }

    @Model(table: "tags")
    struct Tag: SQLModel, Equatable {
        var id: Int?
        var name: String

        static let heroes = morphedByMany(Hero.self, through: Tagging.self, as: "taggable")
        static let enemies = morphedByMany(Enemy.self, through: Tagging.self, as: "taggable")
    }

    @Model(table: "taggings")
    struct Tagging: SQLModel, Equatable {
        var id: Int?
        var tagId: Int = 0
        var taggableType: String = ""
        var taggableId: Int = 0

        static let relations: [any ModelRelation<Tagging>] = [belongsTo(Tag.self, onDelete: .cascade)]
    }

    static let models: [any SQLModel.Type] = [
        User.self, Post.self, Profile.self, Hero.self, Enemy.self, HeroEnemy.self, Note.self, Tag.self, Tagging.self,
    ]

    /// Opens a database of `store` with every relation model's table.
    static func open(_ store: TestStorage) throws -> Database {
        try store.open(models: models)
    }

    /// Inserts `models`, returning them with their ids.
    static func insert<M: SQLModel>(_ models: [M], _ db: SQLiteConnection) throws -> [M] {
        var models = models
        for index in models.indices { try models[index].insert(db) }
        return models
    }
}

/// The error `body` throws, as a `RelationError` (a test failure when it throws something
/// else or nothing).
func relationError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> RelationError? {
    do {
        try body()
        Issue.record("expected a RelationError", sourceLocation: sourceLocation)
    } catch let error as RelationError {
        return error
    } catch {
        Issue.record("expected a RelationError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
