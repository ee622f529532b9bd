import ModelSyncSQLite
import ModelSyncTesting
import Testing

@Suite("Queries into JSON columns")
struct JSONColumnQueryTests {
    @Model
    struct Geo: Equatable {
        var lat: Double
        var lng: Double
    }

    @Model
    struct Address: Equatable {
        var city: String
        var zip: Int
        var geo: Geo
    }

    @Model(table: "people")
    struct Person: SQLModel, Equatable {
        var id: Int?
        var name: String
        var address: Address
        var tags: [String] = []
        var scores: [Int] = []
        var previous: Address?
    }

    private func people() -> [Person] {
        [
            Person(name: "Ada", address: Address(city: "London", zip: 1, geo: Geo(lat: 51.5, lng: -0.1)), tags: ["math", "swift"], scores: [3, 9]),
            Person(name: "Blaise", address: Address(city: "Paris", zip: 75, geo: Geo(lat: 48.9, lng: 2.4)), tags: ["math"], scores: [7]),
            Person(name: "Grace", address: Address(city: "New York", zip: 10, geo: Geo(lat: 40.7, lng: -74)), tags: ["navy", "cobol", "swift"]),
        ]
    }

    @Test(arguments: TestStorage.allCases)
    func nestedPropertiesAndArrayElements(store: TestStorage) throws {
        let db = try store.open(models: [Person.self])
        var people = people()
        try db.write { try Person.saveAll(&people, $0) }

        let inParis = Person.where(\.address.city == "Paris")
        #expect(try inParis.sql.contains(#"json_extract("address", ?)"#))
        #expect(try db.read { try inParis.fetchAll($0) }.map(\.name) == ["Blaise"])
        #expect(try db.read { try Person.where(\.address.geo.lat > 45).order(\.name).fetchAll($0) }.map(\.name) == ["Ada", "Blaise"])
        #expect(try db.read { try Person.order(\.address.zip).select(\.address.city).fetchAll($0) } == ["London", "New York", "Paris"])

        #expect(try db.read { try Person.where { $0.tags.contains("swift") }.order(\.name).fetchAll($0) }.map(\.name) == ["Ada", "Grace"])
        #expect(try db.read { try Person.where { $0.scores.contains(9) }.fetchAll($0) }.map(\.name) == ["Ada"])
        #expect(try db.read { try Person.where { $0.tags.elementCount() >= 2 }.order(.desc(\.name)).fetchAll($0) }.map(\.name) == ["Grace", "Ada"])
        // Values and paths are bound: hostile text matches nothing.
        #expect(try db.read { try Person.where { $0.tags.contains("x') OR 1=1 --") }.fetchCount($0) } == 0)
        #expect(try db.read { try Person.where(\.address.city == "London\0Paris").fetchCount($0) } == 0)
    }

    @Test func whatIsNoColumnFailsTyped() throws {
        let db = try TestStorage.memory.open(models: [Person.self])
        // A path through an optional nested model cannot be matched to its field.
        #expect(throws: SQLiteError.self) { try db.read { try Person.where(\.previous?.city == "Paris").fetchAll($0) } }
        // A value inside JSON is no assignment target.
        #expect(throws: SQLiteError.self) { try db.write { try Person.all().updateAll($0, .set(\.address.city, to: "Rome")) } }
    }
}
