import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// The request type: filter, order, limit, the fetch methods, and SQL inspection.
@Suite("SQLite query: core")
struct QueryCoreTests {
    static let columns = #""id", "name", "code", "quantity", "flags", "price", "note", "status", "created_at", "token", "tags""#

    @Test func sqlAndArgumentsWithoutADatabase() throws {
        let query = Item.where(\.quantity == 12).order(.desc(\.id)).limit(10)
        #expect(try query.sql == #"SELECT \#(Self.columns) FROM "items" WHERE "quantity" = ? ORDER BY "id" DESC LIMIT ?"#)
        #expect(try query.arguments == [.integer(12), .integer(10)])
        #expect(query.readTables == ["items"])
        #expect(try Item.all().sql == #"SELECT \#(Self.columns) FROM "items""#)
    }

    @Test(arguments: TestStorage.allCases)
    func fetchAllFilteredOrderedLimited(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let query = Item.where(\.quantity == 12).order(.desc(\.id)).limit(10)
        #expect(names(try db.read { try query.fetchAll($0) }) == ["elder_berry", "Banana"])
        // The design's example shape, on a real database.
        let recent = try db.read { try Item.where(\.quantity >= 5).order(.desc(\.id)).limit(2).fetchAll($0) }
        #expect(names(recent) == ["elder_berry", "date"])
        // Models come back whole.
        #expect(try db.read { try Item.where(\.id == 1).fetchAll($0) } == [{ var item = sampleItems[0]; item.id = 1; return item }()])
    }

    /// A connection keeps the statement of a recent query shape: run again, it binds the new
    /// values, and a schema change under it (SQLite prepares it again) changes nothing.
    @Test(arguments: TestStorage.allCases)
    func aRecentShapeRunsAgainWithItsOwnValues(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let items = try db.read { try Item.order(\.id).fetchAll($0) }
        let ids = items.map(\.id) + [Int.max]
        let found = try db.read { db in try ids.reversed().map { try Item.where(\.id == $0).fetchOne(db) } }
        #expect(found == (items.map { $0 } + [nil]).reversed())
        try db.write { db in
            try db.execute("CREATE INDEX items_by_quantity ON items (quantity)")
            try db.execute("DELETE FROM items WHERE id = ?", [.integer(Int64(items[0].id ?? 0))])
        }
        let after = try db.read { db in try ids.map { try Item.where(\.id == $0).fetchOne(db) } }
        #expect(after == [nil] + items.dropFirst().map { $0 } + [nil])
    }

    /// A recent shape's statement is bound straight from the query's tree: every kind of value
    /// (text with a NUL, reals, `Int.max`, raw SQL's own arguments, a subquery's values, limits
    /// and offsets) reaches its own parameter on every run, also while a cursor holds the
    /// shape's statement.
    @Test(arguments: TestStorage.allCases)
    func aRecentShapeBindsEveryKindOfValue(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        typealias Case = (note: String, price: Double, minimum: Int, excluded: Int, limit: Int, offset: Int)
        func query(_ c: Case) -> SQLQuery<Item, Item> {
            Item.where { $0.note == c.note || $0.price > c.price }
                .where(sql: #""quantity" >= ?"#, [.integer(Int64(c.minimum))])
                .where { $0.code.in(Item.where(\.quantity != c.excluded).select(\.code)) }
                .order(\.id).limit(c.limit, offset: c.offset)
        }
        func expected(_ c: Case) -> [String] {
            let matching = sampleItems.filter { item in
                (item.note == c.note || (item.price ?? -.infinity) > c.price) && item.quantity >= c.minimum && item.quantity != c.excluded
            }
            return names(Array(matching.dropFirst(c.offset).prefix(c.limit)))
        }
        let cases: [Case] = [
            ("a\u{0}b", 100, 0, -1, 10, 0),
            ("a", 100, 0, -1, 10, 0),  // not the text cut at its NUL
            ("red", 1.9, 0, -1, 10, 0),
            ("red", 1.9, 6, -1, 1, 1),
            ("x", 0.1, 1, 12, 2, 0),
            ("x", 0.1, Int.max, -1, 10, 0),
            ("red", -1, Int.min, Int.max, Int.max, 2),
        ]
        #expect(expected(cases[0]) == ["fig"] && expected(cases[3]) == ["elder_berry"] && expected(cases[4]) == ["apple", "date"])
        try db.read { db throws in
            for _ in 0..<2 {
                for c in cases {
                    #expect(try query(c).fetchAll(db).map(\.name) == expected(c))
                    #expect(try query(c).fetchOne(db)?.name == expected(c).first)
                }
            }
            // The shape's statement is busy with a cursor: a run of the same shape meanwhile
            // gets a statement of its own, and neither disturbs the other.
            let cursor = try query(cases[2]).fetchCursor(db)
            #expect(try cursor.next()?.name == "apple")
            #expect(try query(cases[4]).fetchAll(db).map(\.name) == ["apple", "date"])
            #expect(try cursor.next()?.name == "date")
            #expect(try query(cases[0]).fetchOne(db)?.name == "fig")
            #expect(try cursor.next()?.name == "elder_berry")
            #expect(try cursor.next() == nil)
        }
    }

    @Test(arguments: TestStorage.allCases)
    func fetchOneCountAndExists(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let query = Item.where(\.quantity > 4).order(\.name)
        #expect(try query.renderedFirst() == SQLFragment(#"SELECT \#(Self.columns) FROM "items" WHERE "quantity" > ? ORDER BY "name" LIMIT ?"#, [4, 1]))
        #expect(try query.renderedCount() == SQLFragment(#"SELECT count(*) FROM "items" WHERE "quantity" > ?"#, [4]))
        #expect(
            try query.renderedExists()
                == SQLFragment(#"SELECT EXISTS (SELECT \#(Self.columns) FROM "items" WHERE "quantity" > ? ORDER BY "name")"#, [4]))
        #expect(
            try query.limit(2).renderedCount()
                == SQLFragment(#"SELECT count(*) FROM (SELECT \#(Self.columns) FROM "items" WHERE "quantity" > ? ORDER BY "name" LIMIT ?)"#, [4, 2]))
        #expect(try db.read { try query.limit(2).fetchCount($0) } == 2)
        let one = try db.read { try query.fetchOne($0) }
        #expect(one?.name == "Banana")  // BINARY collation: uppercase first
        #expect(try db.read { try query.fetchCount($0) } == 4)
        #expect(try db.read { try query.exists($0) })
        #expect(try db.read { try Item.where(\.quantity > 100).exists($0) } == false)
        #expect(try db.read { try Item.where(\.quantity > 100).fetchOne($0) } == nil)
        #expect(try db.read { try Item.all().fetchCount($0) } == 6)
    }

    /// A connection renders a query's SQL once per shape and then only binds: queries that
    /// differ in values alone, or in a way the values decide (an IN list of one value, of
    /// several, with a NUL, of reals), each read their own rows, in any order.
    @Test(arguments: TestStorage.allCases)
    func queriesOfOneShapeWithOtherValuesReadTheirOwnRows(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let cases: [(SQLQuery<Item, Item>, [String])] = [
            (Item.where(\.quantity == 12), ["Banana", "elder_berry"]),
            (Item.where(\.quantity == 5), ["apple"]),
            (Item.where { $0.name.in(["fig", "apple"]) }, ["apple", "fig"]),
            (Item.where { $0.name.in(["date"]) }, ["date"]),
            (Item.where { $0.name.in(["date", "x\u{0}y"]) }, ["date"]),
            (Item.where { $0.name.in(["cherry", "date", "fig"]) }, ["cherry", "date", "fig"]),
            (Item.where { $0.note.in(["red", "a\u{0}b"]) }, ["apple", "fig"]),
            (Item.where { $0.price.in([1.5, 3]) }, ["apple", "date"]),
            (Item.where { $0.price.in([0.25, 2]) }, ["Banana", "elder_berry"]),
            (Item.where(\.quantity == 12).limit(1), ["Banana"]),
            (Item.where(\.quantity == 7).limit(1), ["date"]),
        ]
        try db.read { db throws in
            for _ in 0..<2 {
                for (query, expected) in cases {
                    #expect(try query.order(\.id).fetchAll(db).map(\.name) == expected)
                }
                for (query, expected) in cases {
                    #expect(try query.order(\.id).fetchOne(db)?.name == expected.first)
                }
            }
        }
    }

    @Test(arguments: TestStorage.allCases)
    func fetchOneByPrimaryKey(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        try db.write { try Membership.createTable($0) }
        #expect(try db.read { try Item.all().fetchOne($0, key: 3) }?.name == "cherry")
        // The key is added to the query's own filter.
        #expect(try db.read { try Item.where(\.quantity > 4).fetchOne($0, key: 3) } == nil)
        #expect(try db.read { try Item.all().fetchOne($0, key: 99) } == nil)
        #expect(try Item.where(\.quantity > 4).where(key: 3).rendered() == SQLFragment(#"SELECT \#(Self.columns) FROM "items" WHERE "quantity" > ? AND "id" = ?"#, [4, 3]))
        #expect(names(try db.read { try Item.all().where(key: 2).fetchAll($0) }) == ["Banana"])

        // A composite key, and keys of the wrong length.
        try db.write { db in
            var membership = Membership(groupId: 1, userId: 2, role: "admin")
            try membership.insert(db)
        }
        let byKey = Membership.all().where(key: [1, 2])
        #expect(try byKey.sql.hasSuffix(#"FROM "memberships" WHERE "groupId" = ? AND "userId" = ?"#))
        #expect(try byKey.arguments == [1, 2])
        #expect(try db.read { try Membership.all().fetchOne($0, key: [1, 2]) }?.role == "admin")
        #expect(try db.read { try Membership.all().fetchOne($0, key: [2, 1]) } == nil)
        #expect(sqliteError { _ = try db.read { try Membership.all().fetchOne($0, key: 1) } }?.kind == .misuse)
    }

    @Test(arguments: TestStorage.allCases)
    func theStringAPIRunsOnTheBuilder(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let items = try db.read { try Item.all($0, where: "quantity = ?", [12], order: "id DESC", limit: 1) }
        #expect(names(items) == ["elder_berry"])
        #expect(try db.read { try Item.count($0, where: "price IS NULL") } == 2)
        #expect(try db.write { try Item.deleteAll($0, where: "quantity = ?", [12]) } == 2)
        // Arguments without a condition are a mistake, as they were before the builder.
        let misuse = sqliteError { _ = try db.read { try Item.all($0, where: nil, [1]) } }
        #expect(misuse?.kind == .misuse)
        #expect(try db.read { try Item.count($0) } == 4)
    }

    @Test(arguments: TestStorage.allCases)
    func booleanColumnsAreConditions(store: TestStorage) throws {
        let db = try store.open(models: [Post.self])
        try db.write { db in
            for (index, pinned) in [true, false, true].enumerated() {
                var post = Post(title: "Post \(index)")
                post.isPinned = pinned
                try post.insert(db)
            }
        }
        let pinned = Post.where(\.isPinned)
        #expect(try pinned.sql.hasSuffix(#"FROM "posts" WHERE "is_pinned""#))
        #expect(try db.read { try pinned.order(\.id).fetchAll($0) }.map(\.title) == ["Post 0", "Post 2"])
        let notPinned = Post.where(!SQLCondition(\.isPinned))
        #expect(try notPinned.sql.hasSuffix(#"WHERE NOT "is_pinned""#))
        #expect(try db.read { try notPinned.fetchAll($0) }.map(\.title) == ["Post 1"])
        let equal = Post.where(\.isPinned == false)
        #expect(try equal.arguments == [0])
        #expect(try db.read { try equal.fetchAll($0) }.map(\.title) == ["Post 1"])
    }

    @Test(arguments: TestStorage.allCases)
    func aKeyPathWithoutAColumnFailsNamingIt(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let query = Item.where(\.isSelected == true)
        let error = sqliteError { _ = try query.sql }
        #expect(error?.kind == .unknownColumn(table: "items", column: #"\Item.isSelected"#))
        let fetchError = sqliteError { _ = try db.read { try query.fetchAll($0) } }
        #expect(fetchError?.kind == .unknownColumn(table: "items", column: #"\Item.isSelected"#))
        // Nothing changed.
        #expect(try db.read { try Item.all().fetchCount($0) } == 6)
    }
}
