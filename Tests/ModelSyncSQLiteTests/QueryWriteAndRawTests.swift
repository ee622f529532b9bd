import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// Bulk update and delete by condition, raw SQL fragments and statements, values that look
/// like SQL, and columns that do not exist.
@Suite("SQLite query: writes, raw SQL and safety")
struct QueryWriteAndRawTests {
    @Test(arguments: TestStorage.allCases)
    func updateAllByCondition(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let query = Item.where(\.quantity == 12)
        let update = try query.renderedUpdate(.set(\.note, to: "bulk"), .set(\.quantity) { $0.quantity + 1 }, .set(\.price, to: nil))
        #expect(update.sql == #"UPDATE "items" SET "note" = ?, "quantity" = "quantity" + ?, "price" = ? WHERE "quantity" = ?"#)
        #expect(update.arguments == ["bulk", 1, .null, 12])

        let changed = try db.write { try query.updateAll($0, .set(\.note, to: "bulk"), .set(\.quantity) { $0.quantity + 1 }, .set(\.price, to: nil)) }
        #expect(changed == 2)
        let updated = try db.read { try Item.where(\.note == "bulk").order(\.id).fetchAll($0) }
        #expect(names(updated) == ["Banana", "elder_berry"])
        #expect(updated.map(\.quantity) == [13, 13])
        #expect(updated.allSatisfy { $0.price == nil })
        // The other rows are untouched.
        #expect(try db.read { try Item.where(\.note != "bulk").fetchCount($0) } == 4)
        #expect(try db.write { try Item.where(\.quantity > 100).updateAll($0, .set(\.flags, to: 1)) } == 0)
        #expect(try db.write { try query.updateAll($0, []) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func deleteAllByCondition(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let byCondition = Item.where(\.price == nil || \.quantity == 0)
        #expect(try byCondition.renderedDelete() == SQLFragment(#"DELETE FROM "items" WHERE "price" IS NULL OR "quantity" = ?"#, [0]))
        #expect(try db.write { try byCondition.deleteAll($0) } == 2)
        #expect(names(try db.read { try Item.order(\.id).fetchAll($0) }) == ["apple", "Banana", "date", "elder_berry"])

        // With an order and a limit: the rows the SELECT reads, by rowid.
        let lastTwo = Item.order(.desc(\.id)).limit(2)
        #expect(
            try lastTwo.renderedDelete()
                == SQLFragment(#"DELETE FROM "items" WHERE rowid IN (SELECT rowid FROM "items" ORDER BY "id" DESC LIMIT ?)"#, [2]))
        #expect(try db.write { try lastTwo.deleteAll($0) } == 2)
        #expect(names(try db.read { try Item.order(\.id).fetchAll($0) }) == ["apple", "Banana"])

        #expect(try db.write { try Item.all().deleteAll($0) } == 2)
        #expect(try db.read { try Item.all().fetchCount($0) } == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func limitedDeleteInAWithoutRowIDTableUsesTheKey(store: TestStorage) throws {
        let db = try store.open(models: [Membership.self])
        try db.write { db in
            for (group, user) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
                var membership = Membership(groupId: group, userId: user, role: "r\(group)\(user)")
                try membership.insert(db)
            }
        }
        let firstTwo = Membership.order(\.groupId, \.userId).limit(2)
        #expect(try firstTwo.renderedDelete().sql == #"DELETE FROM "memberships" WHERE ("groupId", "userId") IN (SELECT "groupId", "userId" FROM "memberships" ORDER BY "groupId", "userId" LIMIT ?)"#)
        #expect(try db.write { try firstTwo.deleteAll($0) } == 2)
        #expect(try db.read { try Membership.order(\.role).select(\.role).fetchAll($0) } == ["r21", "r22"])
    }

    @Test(arguments: TestStorage.allCases)
    func rawFragmentsWithTheirOwnArguments(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        // A raw condition after a typed one is parenthesised, its arguments in place.
        let mixed = Item.where(\.quantity > 0).where(sql: #"length("name") = ? OR "code" = ?"#, [5, "12"]).where(\.flags < 8)
        #expect(try mixed.sql.hasSuffix(#"WHERE "quantity" > ? AND (length("name") = ? OR "code" = ?) AND "flags" < ?"#))
        #expect(try mixed.arguments == [0, 5, "12", 8])
        #expect(names(try db.read { try mixed.order(\.id).fetchAll($0) }) == ["apple", "elder_berry"])

        // A raw expression, typed, inside a typed comparison.
        let typed = Item.where(SQLExpression<Item, Int>.sql(#"length("name") + ?"#, [1]) > 7)
        #expect(try typed.sql.hasSuffix(#"WHERE (length("name") + ?) > ?"#))
        #expect(try typed.arguments == [1, 7])
        #expect(names(try db.read { try typed.order(\.id).fetchAll($0) }) == ["elder_berry"])

        // Raw ordering and selection.
        let lengths = Item.all().order(.sql(#"length("name") DESC, "id""#)).select(sql: #"length("name") * ?"#, [10], as: Int.self)
        #expect(try lengths.sql == #"SELECT length("name") * ? FROM "items" ORDER BY length("name") DESC, "id""#)
        #expect(try db.read { try lengths.fetchAll($0) } == [110, 60, 60, 50, 40, 30])
    }

    @Test(arguments: TestStorage.allCases)
    func rawStatementsMapRowsIntoModelsByColumnName(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        // Columns in any order, by name; the raw statement is a subquery.
        let raw = Item.query(sql: "SELECT tags, name, id, code, quantity, flags, price, note, status, created_at, token FROM items WHERE quantity = ?", [12])
        #expect(try raw.sql.hasSuffix(#"FROM (SELECT tags, name, id, code, quantity, flags, price, note, status, created_at, token FROM items WHERE quantity = ?)"#))
        #expect(raw.readTables == ["items"])
        let fetched = try db.read { try raw.order(\.id).fetchAll($0) }
        #expect(fetched == (try db.read { try Item.where(\.quantity == 12).order(\.id).fetchAll($0) }))
        #expect(names(fetched) == ["Banana", "elder_berry"])

        // The builder refines a raw statement like a table.
        #expect(try db.read { try Item.query(sql: "SELECT * FROM items").where(\.name == "fig").fetchOne($0) }?.code == "2299")

        // A statement lacking a column of the model: a typed error naming it.
        let partial = Item.query(sql: "SELECT id, name FROM items")
        let error = sqliteError { _ = try db.read { try partial.fetchAll($0) } }
        #expect(error?.kind == .unknownColumn(table: "items", column: "code"))

        // Writes through a raw statement are refused.
        let refused = sqliteError { _ = try db.write { try Item.query(sql: "SELECT * FROM items").deleteAll($0) } }
        #expect(refused?.kind == .misuse)
    }

    @Test(arguments: TestStorage.allCases)
    func unknownColumnsAreTypedErrorsNamingThem(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        // A raw column name the table lacks.
        let raw = sqliteError { _ = try db.read { try Item.where(sql: "colour = ?", ["red"]).fetchAll($0) } }
        #expect(raw?.kind == .unknownColumn(table: "items", column: "colour"))
        #expect(raw?.sql?.contains("colour = ?") == true)

        // An @Ignored property in an ordering, a selection, an assignment.
        let ordering = sqliteError { _ = try Item.order(\.isSelected).sql }
        #expect(ordering?.kind == .unknownColumn(table: "items", column: #"\Item.isSelected"#))
        let update = sqliteError { _ = try db.write { try Item.all().updateAll($0, .set(\.isSelected, to: true)) } }
        #expect(update?.kind == .unknownColumn(table: "items", column: #"\Item.isSelected"#))

        // A table created without a column the model has.
        let staleDB = try store.open()
        try staleDB.write { try $0.execute(#"CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, code TEXT NOT NULL, quantity INTEGER NOT NULL, flags INTEGER NOT NULL, price REAL, note TEXT, status TEXT NOT NULL, created_at REAL, token TEXT)"#) }
        let missing = sqliteError { _ = try staleDB.read { try Item.where(\.quantity > 1).fetchAll($0) } }
        #expect(missing?.kind == .unknownColumn(table: "items", column: "tags"))

        // Nothing was changed by the failures.
        #expect(try db.read { try Item.all().fetchCount($0) } == 6)
    }

    @Test(arguments: TestStorage.allCases)
    func valuesThatLookLikeSQLAreStoredAndMatchedExactly(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let tricky = ["it's", "x'); DROP TABLE items; --", "a\u{0}b", "\"quoted\"", "-- comment", "%_*?[", "a\u{0}"]
        try db.write { db in
            for (index, text) in tricky.enumerated() {
                var item = Item("tricky \(index)", note: text)
                try item.insert(db)
            }
        }
        for text in tricky {
            let query = Item.where(\.note == text)
            #expect(try query.arguments == [.text(text)])
            #expect(!(try query.sql.contains(text)))
            let matched = try db.read { try query.fetchAll($0) }
            // "a\0b" is also one of the sample items.
            #expect(matched.map(\.note) == Array(repeating: text, count: text == "a\u{0}b" ? 2 : 1))
        }
        // NUL does not cut a value short: "a" matches neither "a\0b" nor "a\0".
        #expect(try db.read { try Item.where(\.note == "a").fetchCount($0) } == 0)
        #expect(try db.read { try Item.where { $0.note.in(tricky) }.fetchCount($0) } == tricky.count + 1)
        // Wildcards in a prefix are literal.
        #expect(names(try db.read { try Item.where { $0.note.hasPrefix("%_*?") }.fetchAll($0) }) == ["tricky 5"])
        #expect(names(try db.read { try Item.where { $0.note.hasPrefix("%_", ignoringCase: true) }.fetchAll($0) }) == ["tricky 5"])
        // Every table is still there.
        #expect(try db.read { try Item.all().fetchCount($0) } == sampleItems.count + tricky.count)
    }

    /// Issue #38: `hasPrefix("")` and `hasSuffix("")` must match every row with text, as
    /// Swift's do, while wildcards in other prefixes and suffixes stay literal.
    @Test(arguments: TestStorage.allCases)
    func prefixesAndSuffixesMatchAsSwiftDoes(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        try db.write { db in
            for (index, text) in ["100%", "a_b", "", "%", "_", "%_x", "ab", "A_B"].enumerated() {
                var item = Item(text, code: "special \(index)", note: index.isMultiple(of: 2) ? text : nil)
                try item.insert(db)
            }
        }
        let items = try db.read { try Item.all().fetchAll($0) }
        #expect(items.contains { $0.note == nil })
        func sorted(_ items: [Item]) -> [String] { items.map(\.code).sorted() }
        for text in ["", "%", "_", "a_", "_b", "%_", "100", "0%", "A"] {
            let prefixed = try db.read { try Item.where { $0.name.hasPrefix(text) }.fetchAll($0) }
            let suffixed = try db.read { try Item.where { $0.name.hasSuffix(text) }.fetchAll($0) }
            #expect(sorted(prefixed) == sorted(items.filter { $0.name.hasPrefix(text) }), "hasPrefix(\(text.debugDescription))")
            #expect(sorted(suffixed) == sorted(items.filter { $0.name.hasSuffix(text) }), "hasSuffix(\(text.debugDescription))")
            // Negated too: the empty text is a value without the prefix, not an unknown.
            let unprefixed = try db.read { try Item.where { !$0.name.hasPrefix(text) && !$0.name.hasSuffix(text) }.fetchAll($0) }
            #expect(sorted(unprefixed) == sorted(items.filter { !$0.name.hasPrefix(text) && !$0.name.hasSuffix(text) }))
            // An optional column: NULL has no prefix, not even the empty one.
            let notes = try db.read { try Item.where { $0.note.hasPrefix(text) || $0.note.hasSuffix(text) }.fetchAll($0) }
            #expect(sorted(notes) == sorted(items.filter { $0.note.map { $0.hasPrefix(text) || $0.hasSuffix(text) } ?? false }))
            let folded = try db.read { try Item.where { $0.name.hasPrefix(text, ignoringCase: true) }.fetchAll($0) }
            #expect(sorted(folded) == sorted(items.filter { $0.name.lowercased().hasPrefix(text.lowercased()) }))
        }
        #expect(try db.read { try Item.where { $0.name.hasPrefix("") && $0.name.hasSuffix("") }.fetchCount($0) } == items.count)
        #expect(try db.read { try Item.where { $0.name.hasPrefix("", length: 0) }.fetchAll($0) }.map(\.name) == [""])
    }

    @Test func aValueThatCannotBeBoundIsATypedError() throws {
        let query = Item.where(SQLExpression<Item, UInt64>.sql(#""flags""#) == UInt64.max)
        let error = sqliteError { _ = try query.sql }
        #expect(error?.code == 25)  // SQLITE_RANGE
    }
}
