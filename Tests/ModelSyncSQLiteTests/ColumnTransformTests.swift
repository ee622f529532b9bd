import Foundation
import ModelSyncSQLite
import ModelSyncStorage
import ModelSyncTesting
import Testing

/// Whole cents ⇄ an amount as text: 1234 ⇄ "12.34". Refuses anything else.
struct AmountTransformer: JSONTransformer {
    struct NotAnAmount: Error, Equatable {
        var text: String
    }

    func decode(_ json: String) throws -> Int {
        let parts = json.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 2, parts[0].allSatisfy(\.isASCII), let whole = Int(parts[0]), whole >= 0,
            let cents = Int(parts[1])
        else { throw NotAnAmount(text: json) }
        return whole * 100 + cents
    }

    func encode(_ value: Int) throws -> String {
        let cents = value % 100
        return "\(value / 100)." + (cents < 10 ? "0" : "") + "\(cents)"
    }
}

/// "3x4" ⇄ [3, 4]: a representation that is not a column type, stored as JSON text.
struct DimensionsTransformer: JSONTransformer {
    func decode(_ json: [Int]) throws -> String { json.map(String.init).joined(separator: "x") }
    func encode(_ value: String) throws -> [Int] { value.split(separator: "x").compactMap { Int($0) } }
}

/// `true` ⇄ "yes", `false` ⇄ "no".
struct YesNoTransformer: JSONTransformer {
    func decode(_ json: String) throws -> Bool { json == "yes" }
    func encode(_ value: Bool) throws -> String { value ? "yes" : "no" }
}

extension JSONTransformer where Self == AmountTransformer {
    static var amount: Self { Self() }
}

extension JSONTransformer where Self == DimensionsTransformer {
    static var dimensions: Self { Self() }
}

extension JSONTransformer where Self == YesNoTransformer {
    static var yesNo: Self { Self() }
}

/// Columns that hold their transformer's representation, next to one whose transformer is
/// JSON only.
@Model(table: "priced_items", columns: .snakeCase)
struct PricedItem: SQLModel, Equatable {
    var id: Int?
    var name: String
    @Transform(.amount, inDatabase: true) var price: Int
    @Transform(.millisecondsSince1970, inDatabase: true) var seenAt: Date?
    @Transform(.dimensions, inDatabase: true) var size: String = "1x1"
    @Transform(.amount, inDatabase: true) var shipping: Int = 250
    @Transform(.yesNo, inDatabase: true) var inStock: Bool = true
    @Transform(.amount) var listPrice: Int = 0
}

/// The same declaration without `inDatabase:`: its JSON must be the same.
@Model(table: "plain_priced_items", columns: .snakeCase)
struct PlainPricedItem: SQLModel, Equatable {
    var id: Int?
    var name: String
    @Transform(.amount) var price: Int
    @Transform(.millisecondsSince1970) var seenAt: Date?
    @Transform(.dimensions) var size: String = "1x1"
    @Transform(.amount) var shipping: Int = 250
    @Transform(.yesNo) var inStock: Bool = true
    @Transform(.amount) var listPrice: Int = 0
}

/// A primary key stored through its transformer, and a soft-deletion date in milliseconds.
@Model(table: "vouchers")
struct Voucher: SoftDeletableModel, Equatable {
    @PrimaryKey @Transform(.amount, inDatabase: true) var value: Int
    var label: String
    @Transform(.millisecondsSince1970, inDatabase: true) var deletedAt: Date?

    static let redemptions = hasMany(Redemption.self, foreignKey: \.voucherValue)
}

/// A foreign key stored through the transformer of the key it refers to.
@Model(table: "redemptions")
struct Redemption: SQLModel {
    var id: Int?
    @Transform(.amount, inDatabase: true) var voucherValue: Int

    static let voucher = belongsTo(Voucher.self, foreignKey: \.voucherValue)
}

/// A nested model stored as "x,y" text instead of its JSON.
@Model
struct GridPoint: Equatable {
    var x: Int
    var y: Int
}

struct GridPointTextTransformer: JSONTransformer {
    func decode(_ json: String) throws -> GridPoint {
        let parts = json.split(separator: ",").compactMap { Int($0) }
        guard parts.count == 2 else { throw AmountTransformer.NotAnAmount(text: json) }
        return GridPoint(x: parts[0], y: parts[1])
    }

    func encode(_ value: GridPoint) throws -> String { "\(value.x),\(value.y)" }
}

@Model(table: "grid_shapes")
struct GridShape: SQLModel, Equatable {
    var id: Int?
    @Transform(GridPointTextTransformer(), inDatabase: true) var origin: GridPoint
    var corner: GridPoint
}

@Suite("SQLite: transformers on columns")
struct ColumnTransformTests {
    static let seen = Date(timeIntervalSince1970: 1_700_000_000.5)

    static func item(_ name: String, price: Int, seenAt: Date? = seen, size: String = "3x4") -> PricedItem {
        PricedItem(name: name, price: price, seenAt: seenAt, size: size, listPrice: price + 100)
    }

    @Test(arguments: TestStorage.allCases)
    func columnsHoldTheRepresentationAndRoundTrip(store: TestStorage) throws {
        let db = try store.open(models: [PricedItem.self])
        var item = Self.item("lamp", price: 1234)
        try db.write { try item.insert($0) }
        let id = try #require(item.id)
        #expect(try db.read { try PricedItem.find(id, $0) } == item)

        let row = try db.read {
            try $0.rows(
                "SELECT price, typeof(price), seen_at, typeof(seen_at), size, shipping, in_stock, list_price, typeof(list_price) FROM priced_items")
        }
        #expect(
            row == [[
                .text("12.34"), .text("text"), .real(1_700_000_000_500), .text("real"), .text("[3,4]"), .text("2.50"), .text("yes"),
                .integer(1334), .text("integer"),
            ]])
    }

    @Test(arguments: TestStorage.allCases)
    func declaredColumnTypesFollowTheRepresentation(store: TestStorage) throws {
        let db = try store.open(models: [PricedItem.self])
        let columns = try db.read { try $0.columns(of: "priced_items") }
        let types = Dictionary(uniqueKeysWithValues: columns.map { ($0.name, $0.type) })
        #expect(types == ["id": "INTEGER", "name": "TEXT", "price": "TEXT", "seen_at": "REAL", "size": "TEXT", "shipping": "TEXT", "in_stock": "TEXT", "list_price": "INTEGER"])
        // Defaults are written in the stored form too.
        let defaults = Dictionary(uniqueKeysWithValues: columns.map { ($0.name, $0.defaultSQL) })
        #expect(defaults["shipping"] == "'2.50'")
        #expect(defaults["size"] == "'[1,1]'")
        #expect(defaults["in_stock"] == "'yes'")
        #expect(try db.read { try PricedItem.tableDifferences($0) } == [])
        #expect(PricedItem.sqlTable.columnType(2) == .string)
        #expect(PricedItem.sqlTable.columnType(3) == .optional(.double))
        #expect(PricedItem.sqlTable.columnType(7) == .integer(bitWidth: Int.bitWidth, isSigned: true))
    }

    @Test func aTableWithThePropertysColumnTypeIsADifference() throws {
        let db = try Database(inMemory: [])
        try db.write {
            try $0.execute(
                """
                CREATE TABLE priced_items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price INTEGER NOT NULL, seen_at REAL,
                size TEXT NOT NULL, shipping TEXT NOT NULL, in_stock TEXT NOT NULL, list_price INTEGER NOT NULL)
                """)
        }
        let differences = try db.read { try PricedItem.tableDifferences($0) }
        #expect(differences == ["column 'price' is INTEGER, price: Int stored as String needs TEXT"])
        let error = sqliteError { try db.read { try PricedItem.checkTable($0) } }
        #expect(error?.kind == .schemaMismatch(table: "priced_items", differences: differences))
    }

    @Test(arguments: TestStorage.allCases)
    func nilStaysNull(store: TestStorage) throws {
        let db = try store.open(models: [PricedItem.self])
        var item = Self.item("unseen", price: 5, seenAt: nil)
        try db.write { try item.insert($0) }
        #expect(try db.read { try $0.scalar("SELECT typeof(seen_at) FROM priced_items") } == .text("null"))
        let read = try db.read { try PricedItem.where(\.seenAt == nil).fetchAll($0) }
        #expect(read == [item])
        #expect(read.first?.seenAt == nil)
        let seen: [Date?] = try db.read { try PricedItem.all().select(\.seenAt).fetchAll($0) }
        #expect(seen == [nil])
    }

    @Test(arguments: TestStorage.allCases)
    func storedTextTheTransformerRefusesIsATypedError(store: TestStorage) throws {
        let db = try store.open(models: [PricedItem.self])
        try db.write {
            try $0.execute("INSERT INTO priced_items (id, name, price, size) VALUES (1, 'bad', 'twelve', '[1,2]')")
        }
        let error = sqliteError { _ = try db.read { try PricedItem.find(1, $0) } }
        #expect(error?.kind == .typeMismatch(table: "priced_items", column: "price"))
        #expect(error?.underlyingError as? AmountTransformer.NotAnAmount == AmountTransformer.NotAnAmount(text: "twelve"))
        // The same through a chosen column.
        let selected = sqliteError { _ = try db.read { try PricedItem.all().select(\.price).fetchAll($0) } }
        #expect(selected?.kind == .typeMismatch(table: "priced_items", column: "price"))

        // A value of another storage class, and JSON text that is not the representation.
        try db.write {
            try $0.execute("UPDATE priced_items SET price = '1.00', seen_at = 'yesterday' WHERE id = 1")
        }
        let wrongClass = sqliteError { _ = try db.read { try PricedItem.find(1, $0) } }
        #expect(wrongClass?.kind == .typeMismatch(table: "priced_items", column: "seen_at"))
        try db.write { try $0.execute("UPDATE priced_items SET seen_at = NULL, size = '{\"w\": 1}' WHERE id = 1") }
        let wrongJSON = sqliteError { _ = try db.read { try PricedItem.find(1, $0) } }
        #expect(wrongJSON?.kind == .typeMismatch(table: "priced_items", column: "size"))
    }

    @Test(arguments: TestStorage.allCases)
    func queriesBindTheirOperandsThroughTheTransformer(store: TestStorage) throws {
        let db = try store.open(models: [PricedItem.self])
        var items = [Self.item("a", price: 1234), Self.item("b", price: 500, seenAt: nil), Self.item("c", price: 7)]
        try db.write { try PricedItem.saveAll(&items, $0) }

        let query = PricedItem.where(\.price == 1234)
        #expect(try query.arguments == [.text("12.34")])
        #expect(try db.read { try query.fetchAll($0) } == [items[0]])
        #expect(try db.read { try PricedItem.where(\.price != 1234).order(\.id).fetchAll($0) } == [items[1], items[2]])
        #expect(try db.read { try PricedItem.where { $0.price.in([500, 7]) }.order(\.id).fetchAll($0) } == [items[1], items[2]])
        #expect(try db.read { try PricedItem.where(\.listPrice == 1334).fetchAll($0) } == [items[0]])  // JSON-only: the Int

        let later = PricedItem.where(\.seenAt >= Self.seen)
        #expect(try later.arguments == [.real(1_700_000_000_500)])
        #expect(try db.read { try later.fetchAll($0) }.map(\.name) == ["a", "c"])
        #expect(try db.read { try PricedItem.where { $0.size == "3x4" && $0.inStock }.fetchCount($0) } == 3)
        #expect(try PricedItem.where(\.inStock).arguments == [.text("yes")])

        // Chosen columns read through the transformer; writes bind through it.
        #expect(try db.read { try PricedItem.order(\.id).select(\.price).fetchAll($0) } == [1234, 500, 7])
        // Beside a plain column, each column is read its own way.
        let pairs = try db.read { try PricedItem.order(\.id).select(\.name, \.price).fetchAll($0) }
        #expect(pairs.map(\.0) == ["a", "b", "c"] && pairs.map(\.1) == [1234, 500, 7])
        let changed = try db.write { try PricedItem.where(\.price == 7).updateAll($0, .set(\.price, to: 999)) }
        #expect(changed == 1)
        #expect(try db.read { try $0.scalar("SELECT price FROM priced_items WHERE name = 'c'") } == .text("9.99"))
    }

    @Test(arguments: TestStorage.allCases)
    func keysAndLibraryWrittenDatesGoThroughTheTransformer(store: TestStorage) throws {
        var configuration = DatabaseConfiguration()
        configuration.now = { ColumnTransformTests.seen }
        let db = try store.open(models: [Voucher.self], configuration: configuration)
        var five = Voucher(value: 500, label: "five")
        var ten = Voucher(value: 1000, label: "ten")
        try db.write { try five.insert($0); try ten.insert($0) }
        #expect(try db.read { try $0.rows("SELECT value, typeof(value) FROM vouchers ORDER BY rowid") } == [[.text("5.00"), .text("text")], [.text("10.00"), .text("text")]])

        // Reads and writes by key bind the key's stored form.
        #expect(try db.read { try Voucher.find(500, $0) } == five)
        #expect(try db.read { try Voucher.all().fetchOne($0, key: 1000) } == ten)
        five.label = "five, renamed"
        try db.write { try five.save($0) }
        #expect(try db.read { try Voucher.find(500, $0) }?.label == "five, renamed")

        // A soft delete, one row and in bulk, writes `deletedAt` through its transformer.
        #expect(try db.write { try five.delete($0) })
        #expect(try db.read { try Voucher.find(500, $0) } == nil)
        #expect(try db.write { try Voucher.where(\.value == 1000).deleteAll($0) } == 1)
        let stamps = try db.read { try $0.rows("SELECT deletedAt FROM vouchers ORDER BY rowid") }
        #expect(stamps == [[.real(1_700_000_000_500)], [.real(1_700_000_000_500)]])
        let deleted = try db.read { try Voucher.all().onlyDeleted().order(\.label).fetchAll($0) }
        #expect(deleted.map(\.value) == [500, 1000])
        #expect(deleted.map(\.deletedAt) == [Self.seen, Self.seen])
    }

    @Test func relationsCompareKeysInTheirStoredForm() throws {
        let db = try Database(inMemory: [Voucher.self, Redemption.self])
        var five = Voucher(value: 500, label: "five")
        var ten = Voucher(value: 1000, label: "ten")
        var redemption = Redemption(voucherValue: 500)
        try db.write { try five.insert($0); try ten.insert($0); try redemption.insert($0) }
        #expect(try db.read { try $0.scalar("SELECT voucherValue FROM redemptions") } == .text("5.00"))
        #expect(try db.read { try Redemption.voucher.load(for: redemption, $0) }?.label == "five")
        #expect(try db.read { try Voucher.redemptions.load(for: [five, ten], $0) }.map { $0.map(\.id) } == [[redemption.id], []])
    }

    @Test func aNestedModelStoredThroughItsTransformerHasNoNestedColumns() throws {
        let db = try Database(inMemory: [GridShape.self])
        var shape = GridShape(origin: GridPoint(x: 3, y: 4), corner: GridPoint(x: 5, y: 6))
        try db.write { try shape.insert($0) }
        #expect(try db.read { try $0.scalar("SELECT origin FROM grid_shapes") } == .text("3,4"))
        #expect(try db.read { try GridShape.find(1, $0) } == shape)
        // The plain nested model's properties are columns (json_extract); the transformed one's are not.
        #expect(try db.read { try GridShape.where(\.corner.x == 5).fetchCount($0) } == 1)
        let error = sqliteError { _ = try db.read { try GridShape.where(\.origin.x == 3).fetchAll($0) } }
        #expect(error?.kind == .unknownColumn(table: "grid_shapes", column: "\(\GridShape.origin.x)"))
    }

    @Test func whatTheStoredFormCannotExpressIsRefused() throws {
        let db = try Database(inMemory: [PricedItem.self])
        let refused: [(String, () throws -> Void)] = [
            ("arithmetic", { _ = try db.read { try PricedItem.where { $0.price + 1 > 10 }.fetchAll($0) } }),
            ("aggregate", { _ = try db.read { try PricedItem.all().select { $0.price.sum() }.fetchAll($0) } }),
            ("pattern", { _ = try db.read { try PricedItem.where { $0.size.hasPrefix("3") }.fetchAll($0) } }),
            ("another column", { _ = try db.read { try PricedItem.where { $0.price == $0.listPrice }.fetchAll($0) } }),
            ("a bare value", { _ = try db.read { try PricedItem.where { $0.price == .value(1234) }.fetchAll($0) } }),
            ("a subquery", { _ = try db.read { try PricedItem.where { $0.price.in(PricedItem.all().select(\.listPrice)) }.fetchAll($0) } }),
        ]
        for (name, body) in refused {
            let error = sqliteError(body)
            #expect(error?.kind == .transformedColumn(table: "priced_items", column: "price") || error?.kind == .transformedColumn(table: "priced_items", column: "size"), "\(name)")
        }
        // Two columns stored through the same transformer compare.
        #expect(try db.read { try PricedItem.where { $0.price == $0.shipping }.fetchAll($0) } == [])
    }

    @Test func jsonOutputIsUnchanged() throws {
        let item = PricedItem(id: 1, name: "lamp", price: 1234, seenAt: Self.seen, size: "3x4", listPrice: 1334)
        let plain = PlainPricedItem(id: 1, name: "lamp", price: 1234, seenAt: Self.seen, size: "3x4", listPrice: 1334)
        let json = try JSONModelEncoder().encodeToString(item)
        #expect(json == #"{"id":1,"name":"lamp","price":"12.34","seenAt":1700000000500,"size":[3,4],"shipping":"2.50","inStock":"yes","listPrice":"13.34"}"#)
        #expect(json == (try JSONModelEncoder().encodeToString(plain)))
        #expect(try JSONModelDecoder().decode(PricedItem.self, from: json) == item)
    }

    /// One transformer, three places: the REST JSON, a key-value storage suite's file and the
    /// SQLite column all hold "12.34".
    @Test func oneTransformerServesJSONStorageAndSQLite() throws {
        let directory = try TemporaryDirectory(prefix: "column-transform")
        let item = PricedItem(id: 1, name: "lamp", price: 1234, seenAt: Self.seen, size: "3x4", listPrice: 1334)

        let wire = try JSONValue(parsing: try JSONModelEncoder().encodeToString(item))
        #expect(wire["price"] == "12.34")

        let suite = try StorageSuite(name: "items", in: directory.url)
        try suite.save(item)
        let files = try FileManager.default.contentsOfDirectory(atPath: suite.directory.path)
        #expect(files.count == 1)
        let name = try #require(files.first)
        let file = try String(contentsOf: suite.directory.appendingPathComponent(name), encoding: .utf8)
        let stored = try JSONValue(parsing: file)
        #expect(stored["price"] == "12.34")
        #expect(stored["seenAt"]?.doubleValue == 1_700_000_000_500)
        #expect(try suite.fetch(PricedItem.self, id: 1) == item)

        let db = try Database(inMemory: [PricedItem.self])
        var row = item
        try db.write { try row.insert($0) }
        #expect(try db.read { try $0.scalar("SELECT price FROM priced_items") } == .text("12.34"))
        #expect(try db.read { try $0.scalar("SELECT seen_at FROM priced_items") } == .real(1_700_000_000_500))
        #expect(try db.read { try PricedItem.find(1, $0) } == item)
    }
}
