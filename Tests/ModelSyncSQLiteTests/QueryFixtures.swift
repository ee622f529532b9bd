import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// The model the query tests read: integers, text, optionals, an enum, a date, a UUID, a JSON
/// column, and an `@Ignored` property that has no column.
@Model(table: "items", columns: .snakeCase)
struct Item: SQLModel, Equatable {
    var id: Int?
    var name: String
    var code: String = ""
    var quantity: Int = 0
    var flags: Int = 0
    var price: Double?
    var note: String?
    var status: Status = .draft
    var createdAt: Date?
    var token: UUID?
    var tags: [String] = []
    @Ignored var isSelected = false

    init(_ name: String, code: String = "", quantity: Int = 0, flags: Int = 0, price: Double? = nil, note: String? = nil) {
        self.name = name
        self.code = code
        self.quantity = quantity
        self.flags = flags
        self.price = price
        self.note = note
    }
}

/// The rows every query test starts from (ids 1 to 6 in this order).
let sampleItems: [Item] = {
    var items = [
        Item("apple", code: "2201", quantity: 5, flags: 0b101, price: 1.5, note: "red"),
        Item("Banana", code: "2202", quantity: 12, flags: 0b001, price: 0.25),
        Item("cherry", code: "22019", quantity: 0, flags: 0b100, price: nil, note: "50% off"),
        Item("date", code: "3301", quantity: 7, flags: 0b110, price: 3, note: "it's; -- not SQL"),
        Item("elder_berry", code: "12", quantity: 12, flags: 0, price: 2, note: nil),
        Item("fig", code: "2299", quantity: 1, flags: 0b111, price: nil, note: "a\u{0}b"),
    ]
    items[0].status = .published
    items[3].status = .published
    items[0].createdAt = Date(timeIntervalSince1970: 1_700_000_000)
    items[1].createdAt = Date(timeIntervalSince1970: 1_700_000_100)
    items[0].token = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
    items[2].tags = ["sour", "small"]
    return items
}()

/// A database of `store`'s kind holding ``sampleItems`` (and the fixtures' posts table).
func itemsDatabase(_ store: TestStorage) throws -> Database {
    let db = try store.open(models: [Item.self, Post.self])
    var items = sampleItems
    try db.write { try Item.saveAll(&items, $0) }
    return db
}

/// The names of items, in the order read.
func names(_ items: [Item]) -> [String] { items.map(\.name) }
