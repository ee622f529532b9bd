import Foundation
import ModelSync
import ModelSyncTesting
import Testing

let users = Factory<User>(seed: 1) { faker in User(name: faker.name(), email: "") }
    .sequence(\.email) { n in "user\(n)@example.com" }
    .state("admin") { $0.set(\.isAdmin, true).set(\.name, "Admin") }
    .state("minor") { $0.set(\.age, 12) }

@Suite("Testing: factories")
struct FactoryTests {
    @Test func makeUsesTheDefaultsAndDoesNotSave() throws {
        let db = try TestStorage.memory.open(models: [User.self])
        let user = try users.make()
        #expect(user.id == nil)
        #expect(!user.name.isEmpty)
        #expect(user.email.hasPrefix("user") && user.email.hasSuffix("@example.com"))
        #expect(user.isAdmin == false && user.age == 30)
        #expect(try db.read { try User.count($0) } == 0)
    }

    @Test func sequencesAreUniqueAcrossCopiesAndStates() throws {
        let factory = Factory<User> { _ in User(name: "x", email: "") }.sequence(\.email) { "u\($0)@example.com" }
            .state("admin") { $0.set(\.isAdmin, true) }
        let made = try factory.make(2) + [try factory.state("admin").make(), try factory.set(\.name, "y").make()]
        #expect(made.map(\.email) == ["u1@example.com", "u2@example.com", "u3@example.com", "u4@example.com"])
    }

    @Test func statesOverrideOnlyTheirAttributesAndCombine() throws {
        let admin = try users.state("admin").make()
        #expect(admin.isAdmin && admin.name == "Admin" && admin.age == 30)
        #expect(admin.email.hasSuffix("@example.com"))
        let both = try users.state("admin").state("minor").make()
        #expect(both.isAdmin && both.age == 12)
        // The original factory is unchanged.
        #expect(try users.make().isAdmin == false)
    }

    @Test func anUnknownStateIsATypedError() {
        #expect(throws: FactoryError.unknownState("owner", known: ["admin", "minor"])) { try users.state("owner") }
    }

    @Test func perCallOverridesReplaceTheDefaultInItsPlace() throws {
        let ada = try users.set(\.name, "Ada").set(\.email, "ada@example.com").make()
        #expect(ada.name == "Ada" && ada.email == "ada@example.com")
    }

    @Test func fakeValuesAreReproducibleFromTheSeed() throws {
        func names(seed: UInt64) throws -> [String] {
            try Factory<User>(seed: seed) { faker in User(name: faker.name(), email: faker.email()) }.make(5).map(\.name)
        }
        #expect(try names(seed: 9) == names(seed: 9))
        #expect(try names(seed: 9) != names(seed: 10))
    }

    @Test func lazyAttributesRunOnlyWhenUsed() throws {
        let authors = Locked(0)
        let posts = Factory<Post> { faker in Post(userId: 0, title: faker.sentence()) }
            .set(\.userId) { context in
                authors.withLock { $0 += 1 }
                return try context.build(users).id ?? -1
            }
        let made = try posts.make()
        #expect(made.userId == -1)  // the author was made, not saved: no id
        #expect(authors.current == 1)
        _ = try posts.set(\.userId, 5).make(3)
        #expect(authors.current == 1)
    }

    @Test(arguments: TestStorage.allCases)
    func createSavesAndAssignsIdsWithRelatedModels(storage: TestStorage) throws {
        let db = try storage.open(models: [User.self, Post.self])
        let posts = Factory<Post> { faker in Post(userId: 0, title: faker.sentence()) }
            .set(\.userId) { context in try context.build(users).id ?? -1 }
        let created = try posts.create(3, in: db)
        #expect(created.compactMap(\.id) == [1, 2, 3])
        let authors = try db.read { try User.all($0) }
        #expect(authors.count == 3)
        #expect(Set(created.map(\.userId)) == Set(authors.compactMap(\.id)))
        #expect(try db.read { try Post.all($0) } == created)

        let admin = try users.state("admin").create(in: db)
        #expect(admin.id == 4)
        #expect(try db.read { try User.find(4, $0) } == admin)
    }

    @Test func aFailingCreateOfSeveralSavesNone() throws {
        let db = try TestStorage.memory.open(models: [User.self])
        let clashing = users.set(\.email, "same@example.com")
        #expect(throws: SQLiteError.self) { try clashing.create(2, in: db) }
        #expect(try db.read { try User.count($0) } == 0)
    }
}
