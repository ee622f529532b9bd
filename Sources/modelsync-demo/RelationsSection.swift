import Foundation
import ModelSync

@Model(table: "heroes")
struct Hero: SQLModel, Equatable {
    var id: Int?
    var name: String

    static let enemies = belongsToMany(Enemy.self, through: Rivalry.self)
    static let remarks = morphMany(Remark.self, as: "subject", onDelete: .cascade)
    static let tags = morphToMany(Tag.self, through: Tagging.self, as: "taggable")
    static let relations: [any ModelRelation<Hero>] = [remarks, tags]
}

@Model(table: "enemies")
struct Enemy: SQLModel, Equatable {
    var id: Int?
    var name: String

    static let heroes = belongsToMany(Hero.self, through: Rivalry.self)
    static let tags = morphToMany(Tag.self, through: Tagging.self, as: "taggable", onDelete: .restrict)
    static let relations: [any ModelRelation<Enemy>] = [tags]
}

/// The pivot between heroes and enemies, with a column of its own.
@Model(table: "rivalries", unique: [["heroId", "enemyId"]])
struct Rivalry: SQLModel, Equatable {
    var id: Int?
    var heroId: Int = 0
    var enemyId: Int = 0
    var level: Int = 1

    static let relations: [any ModelRelation<Rivalry>] = [
        belongsTo(Hero.self, onDelete: .cascade), belongsTo(Enemy.self, onDelete: .cascade),
    ]
}

/// A remark about a hero or an enemy: a polymorphic reference.
@Model(table: "remarks")
struct Remark: SQLModel, Equatable {
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

/// Tags on heroes and on enemies, in one pivot with a type column.
@Model(table: "taggings")
struct Tagging: SQLModel, Equatable {
    var id: Int?
    var tagId: Int = 0
    var taggableType: String = ""
    var taggableId: Int = 0

    static let relations: [any ModelRelation<Tagging>] = [belongsTo(Tag.self, onDelete: .cascade)]
}

/// Relations: a many-to-many with pivot data, eager loading, polymorphic references, tags on
/// two types, and delete rules.
enum RelationsSection {
    static func run() throws {
        section("Relations")
        let db = try Database(inMemory: [Hero.self, Enemy.self, Rivalry.self, Remark.self, Tag.self, Tagging.self])
        step("Rivalry's table: its belongsTo relations are foreign keys", try Rivalry.createTableSQL())

        var heroes = [Hero(name: "Link"), Hero(name: "Zelda")]
        var enemies = [Enemy(name: "Ganon"), Enemy(name: "Moblin")]
        var tags = [Tag(name: "legendary"), Tag(name: "green")]
        try db.write { db in
            for index in heroes.indices { try heroes[index].insert(db) }
            for index in enemies.indices { try enemies[index].insert(db) }
            for index in tags.indices { try tags[index].insert(db) }
            try Hero.enemies.attach(enemies[0], to: heroes[0], pivot: Rivalry(level: 9), db)
            try Hero.enemies.attach(enemies[1], to: heroes[0], pivot: Rivalry(level: 2), db)
            try Hero.enemies.attach(enemies[0], to: heroes[1], pivot: Rivalry(level: 7), db)
            var remarks = [
                Remark(subjectType: "heroes", subjectId: heroes[0].id, text: "wields the Master Sword"),
                Remark(subjectType: "enemies", subjectId: enemies[0].id, text: "returns every age"),
            ]
            for index in remarks.indices { try remarks[index].insert(db) }
            try Hero.tags.attach(tags[0], to: heroes[0], db)
            try Hero.tags.attach(tags[1], to: heroes[0], db)
            try Enemy.tags.attach(tags[0], to: enemies[0], db)
        }

        let rivals = try db.read { try Hero.enemies.load(for: heroes, $0, Enemy.all(), pivot: Rivalry.order(.desc(\.level))) }
        step(
            "Every hero's enemies with the rivalry's level, in one query",
            zip(heroes, rivals).map { hero, linked in
                "\(hero.name): " + linked.map { "\($0.model.name) (level \($0.pivot.level))" }.joined(separator: ", ")
            }.joined(separator: "\n"))
        step("The statement", try Hero.enemies.sql(for: heroes, Enemy.all(), pivot: Rivalry.order(.desc(\.level))))

        let remarks = try db.read { try Remark.all($0) }
        let subjects = try db.read { try Remark.subject.load(for: remarks, $0) }
        step(
            "Remarks and what they are about (a hero or an enemy)",
            zip(remarks, subjects).map { remark, subject in
                let name = (subject as? Hero)?.name ?? (subject as? Enemy).map { "enemy \($0.name)" } ?? "nothing"
                return "\(remark.text) → \(name)"
            }.joined(separator: "\n"))

        let tagged = try db.read { db in (try Tag.heroes.load(for: tags, db), try Tag.enemies.load(for: tags, db)) }
        step(
            "Tags on heroes and on enemies, through one pivot",
            tags.indices.map { index in
                "\(tags[index].name): " + (tagged.0[index].map(\.model.name) + tagged.1[index].map(\.model.name)).joined(separator: ", ")
            }.joined(separator: "\n"))

        do {
            try db.write { _ = try enemies[0].delete($0) }
        } catch let error as RelationError {
            step("A tagged enemy cannot be deleted (restrict)", error)
        }
        try db.write { _ = try heroes[0].delete($0) }
        step(
            "Deleting Link takes his rivalries (SQL cascade), remarks and taggings (library cascade)",
            "rivalries: \(try db.read { try Rivalry.count($0) }), remarks: \(try db.read { try Remark.count($0) }), "
                + "taggings: \(try db.read { try Tagging.count($0) })")
    }
}
