import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// A connection keeps the statements of the query shapes it ran last and, for a query that
/// renders like one of them, binds the new values to that statement. Each test here fails on a
/// wrong cache hit: a query answered with another shape's statement, or with values left from
/// an earlier run.
@Suite("SQLite query: the shape cache")
struct QueryShapeCacheTests {
    /// Shapes that differ only in an operator, a column, a direction, a limit or the first-row
    /// form, run in turn on one connection, each read their own rows.
    @Test(arguments: TestStorage.allCases)
    func shapesThatDifferInOnePartReadTheirOwnRows(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let items = try db.read { try Item.order(\.id).fetchAll($0) }
        let cases: [(SQLQuery<Item, Item>, [Item])] = [
            (Item.where(\.quantity == 12).order(\.id), items.filter { $0.quantity == 12 }),
            (Item.where(\.quantity > 5).order(\.id), items.filter { $0.quantity > 5 }),
            (Item.where(\.flags == 5).order(\.id), items.filter { $0.flags == 5 }),
            (Item.where(\.quantity > 5).order(.desc(\.id)), items.filter { $0.quantity > 5 }.reversed()),
            (Item.where(\.quantity > 5).order(\.id).limit(2), Array(items.filter { $0.quantity > 5 }.prefix(2))),
            (Item.where(\.quantity > 5).order(\.id).limit(2, offset: 1), Array(items.filter { $0.quantity > 5 }.dropFirst().prefix(2))),
            (Item.where { $0.quantity > 5 && $0.price.isNotNull }.order(\.id), items.filter { $0.quantity > 5 && $0.price != nil }),
            (Item.where { $0.quantity > 5 || $0.price.isNotNull }.order(\.id), items.filter { $0.quantity > 5 || $0.price != nil }),
        ]
        try db.read { db throws in
            for round in 0..<3 {
                // Each round in another order, so that every shape follows every other one.
                for (query, expected) in round == 1 ? cases.reversed() : cases {
                    #expect(try query.fetchAll(db) == expected)
                    #expect(try query.fetchOne(db) == expected.first)
                    #expect(try query.fetchAll(db) == expected)  // not the first-row form's LIMIT 1
                }
            }
        }
    }

    /// One shape with every key, in a scattered order, finds each row; a key with no row finds
    /// none (no row is left from the previous run).
    @Test(arguments: TestStorage.allCases)
    func oneShapeWithOtherValuesFindsEachRow(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let items = try db.read { try Item.order(\.id).fetchAll($0) }
        let keys = items.compactMap(\.id)
        try db.read { db throws in
            for key in keys.reversed() + [-1] + keys + [Int.max] {
                #expect(try Item.where(\.id == key).fetchOne(db) == items.first { $0.id == key })
                #expect(try Item.where(\.id == key).fetchAll(db) == items.filter { $0.id == key })
            }
            for name in items.map(\.name) + ["apple\u{0}", "Apple"] {
                #expect(try Item.where(\.name == name).fetchOne(db)?.name == items.first { $0.name == name }?.name)
            }
        }
    }

    /// A schema change between two runs of one shape on one connection: SQLite prepares the
    /// statement again, so a renamed column fails as unknown instead of reading stale rows, and
    /// a table dropped and created again is read as it is now.
    @Test(arguments: TestStorage.allCases)
    func aSchemaChangeBetweenRunsOfOneShape(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        try db.write { db in
            #expect(try Item.where(\.quantity == 12).order(\.id).fetchOne(db)?.name == "Banana")
            try db.execute(#"ALTER TABLE "items" RENAME COLUMN "quantity" TO "amount""#)
            let error = sqliteError { _ = try Item.where(\.quantity == 7).order(\.id).fetchOne(db) }
            #expect(error?.kind == .unknownColumn(table: "items", column: "quantity"))
            try db.execute(#"ALTER TABLE "items" RENAME COLUMN "amount" TO "quantity""#)
            #expect(try Item.where(\.quantity == 7).order(\.id).fetchOne(db)?.name == "date")

            // The same columns in another table of the same name, with other rows.
            let createTable = try #require(try db.scalar("SELECT sql FROM sqlite_master WHERE name = 'items'")?.textValue)
            try db.execute(#"ALTER TABLE "items" RENAME TO "items_old""#)
            try db.execute(createTable)
            try db.execute(#"INSERT INTO "items" SELECT * FROM "items_old" WHERE "quantity" <> 12"#)
            try db.execute(#"UPDATE "items" SET "quantity" = 12 WHERE "name" = 'fig'"#)
            #expect(try Item.where(\.quantity == 12).order(\.id).fetchOne(db)?.name == "fig")
            #expect(try Item.where(\.quantity == 12).order(\.id).fetchAll(db).map(\.name) == ["fig"])
        }
    }

    /// A key path that is not the object the schema holds (built at run time) finds the same
    /// column through the index as a literal does by identity.
    @Test func aKeyPathBuiltAtRunTimeNamesTheSameColumn() throws {
        let literal: KeyPath<Item, Int> = \.quantity
        let built = (\Item.self as KeyPath<Item, Item>).appending(path: \Item.quantity)
        #expect(try Item.where(built == 12).rendered() == Item.where(literal == 12).rendered())
        #expect(try Item.where(\.flags == 12).sql != Item.where(literal == 12).sql)
    }

    /// Threads that resolve a table's key paths for the first time race to remember them (the
    /// table keeps the field of each key path object it saw, read without a lock): every query
    /// still names its own column, whether its key path is a literal or one built at run time
    /// (a new object each time, so the remembered slots also run out mid-race).
    @Test func firstLookupsOfOneTableFromManyThreadsNameTheirOwnColumns() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    // Key paths are not Sendable: each task names its own (the same objects).
                    let literals = ShapeCacheWide.columnKeyPaths
                    for round in 0..<200 {
                        let (literal, column) = literals[(task + round) % literals.count]
                        let keyPath =
                            round.isMultiple(of: 3) ? (\ShapeCacheWide.self as KeyPath<ShapeCacheWide, ShapeCacheWide>).appending(path: literal) : literal
                        let sql = try ShapeCacheWide.where(keyPath == round).sql
                        #expect(sql.hasSuffix(#"WHERE "\#(column)" = ?"#), "\(sql)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Readers of a pool run one shape with other values at the same time: each connection's
    /// cache is its own, and every lookup finds its own row.
    @Test func concurrentReadersOfOneShape() async throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("shapes.sqlite"), models: [Item.self])
        try await db.write { db in
            for index in 0..<200 {
                var item = Item("item \(index)", quantity: index)
                try item.insert(db)
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<100 {
                        let quantity = (task * 37 + round * 11) % 200
                        let found = try await db.read { db in
                            try Item.where(\.quantity == quantity).fetchOne(db)
                        }
                        #expect(found?.name == "item \(quantity)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

/// A model only ``QueryShapeCacheTests/firstLookupsOfOneTableFromManyThreadsNameTheirOwnColumns()``
/// queries, so that its table has resolved no key path before that test.
@Model(table: "shape_cache_wide")
struct ShapeCacheWide: SQLModel {
    var id: Int?
    var a = 0
    var b = 0
    var c = 0
    var d = 0
    var e = 0
    var f = 0
    var g = 0
    var h = 0

    /// Each Int field's key path literal and column.
    static var columnKeyPaths: [(KeyPath<ShapeCacheWide, Int>, String)] {
        [(\.a, "a"), (\.b, "b"), (\.c, "c"), (\.d, "d"), (\.e, "e"), (\.f, "f"), (\.g, "g"), (\.h, "h")]
    }
}
