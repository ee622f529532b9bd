import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// Ordering, limits, selections, grouping and aggregates: SQL text, arguments and rows.
@Suite("SQLite query: clauses")
struct QueryClauseTests {
    let from = #"SELECT \#(QueryCoreTests.columns) FROM "items""#

    @Test(arguments: TestStorage.allCases)
    func orderingOnSeveralColumns(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let byTerms = Item.order(.desc(\.quantity), .asc(\.name))
        #expect(try byTerms.sql == from + #" ORDER BY "quantity" DESC, "name""#)
        #expect(names(try db.read { try byTerms.fetchAll($0) }) == ["Banana", "elder_berry", "date", "apple", "fig", "cherry"])

        let explicit = Item.all().order(.asc(\.quantity), .desc(\.name))
        #expect(try explicit.sql == from + #" ORDER BY "quantity", "name" DESC"#)
        #expect(names(try db.read { try explicit.fetchAll($0) }) == ["cherry", "fig", "apple", "date", "elder_berry", "Banana"])

        // A later order replaces the earlier one.
        let replaced = byTerms.order(.asc(\.id))
        #expect(try replaced.sql == from + #" ORDER BY "id""#)
        #expect(names(try db.read { try replaced.fetchAll($0) }) == sampleItems.map(\.name))

        let noCase = Item.all().order { [$0.name.collating(.nocase).desc] }
        #expect(try noCase.sql == from + #" ORDER BY "name" COLLATE NOCASE DESC"#)
        #expect(names(try db.read { try noCase.fetchAll($0) }) == ["fig", "elder_berry", "date", "cherry", "Banana", "apple"])
    }

    @Test(arguments: TestStorage.allCases)
    func nullsFirstAndLast(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let ascLast = Item.all().order(.asc(\.price, nulls: .last), .asc(\.id))
        #expect(try ascLast.sql == from + #" ORDER BY "price" NULLS LAST, "id""#)
        #expect(names(try db.read { try ascLast.fetchAll($0) }) == ["Banana", "apple", "elder_berry", "date", "cherry", "fig"])

        let descFirst = Item.all().order(.desc(\.price, nulls: .first), .asc(\.id))
        #expect(try descFirst.sql == from + #" ORDER BY "price" DESC NULLS FIRST, "id""#)
        #expect(names(try db.read { try descFirst.fetchAll($0) }) == ["cherry", "fig", "date", "elder_berry", "apple", "Banana"])

        // SQLite's defaults: NULLs first ascending, last descending.
        let descDefault = Item.all().order(.desc(\.price), .asc(\.id))
        #expect(names(try db.read { try descDefault.fetchAll($0) }) == ["date", "elder_berry", "apple", "Banana", "cherry", "fig"])
    }

    @Test(arguments: TestStorage.allCases)
    func limitAndOffset(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let page = Item.order(\.id).limit(2, offset: 1)
        #expect(try page.sql == from + #" ORDER BY "id" LIMIT ? OFFSET ?"#)
        #expect(try page.arguments == [2, 1])
        #expect(names(try db.read { try page.fetchAll($0) }) == ["Banana", "cherry"])
        #expect(try db.read { try page.fetchCount($0) } == 2)

        let rest = Item.order(\.id).offset(4)
        #expect(try rest.sql == from + #" ORDER BY "id" LIMIT -1 OFFSET ?"#)
        #expect(try rest.arguments == [4])
        #expect(names(try db.read { try rest.fetchAll($0) }) == ["elder_berry", "fig"])

        // fetchOne keeps the offset and narrows the limit.
        #expect(try db.read { try page.fetchOne($0) }?.name == "Banana")
        #expect(try db.read { try Item.order(\.id).limit(0).fetchOne($0) } == nil)
    }

    @Test("an offset set before limit(_:) is kept", arguments: TestStorage.allCases)
    func offsetThenLimit(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let page = Item.order(\.id).offset(2).limit(3)
        #expect(try page.sql == from + #" ORDER BY "id" LIMIT ? OFFSET ?"#)
        #expect(try page.arguments == [3, 2])
        #expect(names(try db.read { try page.fetchAll($0) }) == ["cherry", "date", "elder_berry"])

        // An offset given to limit(_:offset:) replaces the earlier one.
        let replaced = Item.order(\.id).offset(2).limit(1, offset: 4)
        #expect(try replaced.arguments == [1, 4])
        #expect(names(try db.read { try replaced.fetchAll($0) }) == ["elder_berry"])
    }

    @Test("counting a query of chosen columns or aggregates counts the rows it reads", arguments: TestStorage.allCases)
    func countOfSelections(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        // An aggregate reads one row from many.
        let total = Item.all().select { $0.quantity.sum() }
        #expect(try total.renderedCount() == SQLFragment(#"SELECT count(*) FROM (SELECT sum("quantity") FROM "items")"#, []))
        #expect(try db.read { try total.fetchAll($0) } == [37])
        #expect(try db.read { try total.fetchCount($0) } == 1)

        let filtered = Item.where(\.quantity > 6).select { ($0.quantity.max(), $0.rowCount()) }
        #expect(try filtered.renderedCount() == SQLFragment(#"SELECT count(*) FROM (SELECT max("quantity"), count(*) FROM "items" WHERE "quantity" > ?)"#, [6]))
        #expect(try db.read { try filtered.fetchCount($0) } == 1)

        let grouped = Item.all().select { ($0.status, $0.quantity.sum()) }.group(by: \.status)
        #expect(try db.read { try grouped.fetchAll($0) }.count == 2)
        #expect(try db.read { try grouped.fetchCount($0) } == 2)

        // Chosen columns without aggregates: one element per row.
        let chosen = Item.where(\.quantity > 6).select(\.name)
        #expect(try db.read { try chosen.fetchCount($0) } == 3)
    }

    @Test(arguments: TestStorage.allCases)
    func selectChosenColumnsAndDistinct(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let pairs = Item.where(\.quantity > 6).order(\.id).select(\.name, \.quantity)
        #expect(try pairs.sql == #"SELECT "name", "quantity" FROM "items" WHERE "quantity" > ? ORDER BY "id""#)
        let rows = try db.read { try pairs.fetchAll($0) }
        #expect(rows.map(\.0) == ["Banana", "date", "elder_berry"])
        #expect(rows.map(\.1) == [12, 7, 12])

        let single: SQLQuery<Item, String?> = Item.order(\.id).select(\.note)
        #expect(try db.read { try single.fetchAll($0) } == ["red", nil, "50% off", "it's; -- not SQL", nil, "a\u{0}b"])

        let distinct = Item.order(\.quantity).select(\.quantity).distinct()
        #expect(try distinct.sql == #"SELECT DISTINCT "quantity" FROM "items" ORDER BY "quantity""#)
        #expect(try db.read { try distinct.fetchAll($0) } == [0, 1, 5, 7, 12])
        #expect(try db.read { try distinct.fetchCount($0) } == 5)

        let expressions = Item.where(\.id == 2).select { ($0.name.collating(.nocase), $0.quantity * 2) }
        #expect(try expressions.sql == #"SELECT "name" COLLATE NOCASE, "quantity" * ? FROM "items" WHERE "id" = ?"#)
        #expect(try expressions.arguments == [2, 2])
        let doubled = try db.read { try expressions.fetchOne($0) }
        #expect(doubled?.0 == "Banana" && doubled?.1 == 24)

        // Typed reading: a text column read as an integer is a typed error naming the column.
        let wrong = Item.all().select(sql: #""name""#, as: Int.self)
        let error = sqliteError { _ = try db.read { try wrong.fetchAll($0) } }
        #expect(error?.kind == .typeMismatch(table: "items", column: "name"))
    }

    @Test(arguments: TestStorage.allCases)
    func aggregates(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let totals = Item.all().select { ($0.quantity.sum(), $0.price.min(), $0.price.max(), $0.quantity.average(), $0.note.count()) }
        #expect(try totals.sql == #"SELECT sum("quantity"), min("price"), max("price"), avg("quantity"), count("note") FROM "items""#)
        let row = try #require(try db.read { try totals.fetchOne($0) })
        #expect(row.0 == 37)
        #expect(row.1 == 0.25)
        #expect(row.2 == 3)
        #expect(row.3 == 37.0 / 6)
        #expect(row.4 == 4)

        let distinctCount = Item.all().select { ($0.quantity.count(distinct: true), $0.price.sum(), $0.quantity.max()) }
        #expect(try distinctCount.sql == #"SELECT count(DISTINCT "quantity"), sum("price"), max("quantity") FROM "items""#)
        let counted = try #require(try db.read { try distinctCount.fetchOne($0) })
        #expect(counted.0 == 5 && counted.1 == 6.75 && counted.2 == 12)

        // Over no rows: sum, min, max and avg are nil, count is 0.
        let empty = Item.where(\.quantity > 100).select { ($0.quantity.sum(), $0.name.min(), $0.price.max(), $0.price.average(), $0.rowCount()) }
        let none = try #require(try db.read { try empty.fetchOne($0) })
        #expect(none.0 == nil && none.1 == nil && none.2 == nil && none.3 == nil && none.4 == 0)
    }

    @Test(arguments: TestStorage.allCases)
    func groupByAndHaving(store: TestStorage) throws {
        let db = try itemsDatabase(store)

        let groups = Item.all()
            .select { ($0.status, $0.rowCount(), $0.quantity.sum()) }
            .group(by: \.status)
            .order(\.status)
        #expect(try groups.sql == #"SELECT "status", count(*), sum("quantity") FROM "items" GROUP BY "status" ORDER BY "status""#)
        let rows = try db.read { try groups.fetchAll($0) }
        #expect(rows.map(\.0) == [.draft, .published])
        #expect(rows.map(\.1) == [4, 2])
        #expect(rows.map(\.2) == [25, 12])

        let having = Item.all()
            .select { ($0.quantity, $0.rowCount()) }
            .group { $0.quantity }
            .having { $0.rowCount() > 1 }
        #expect(try having.sql == #"SELECT "quantity", count(*) FROM "items" GROUP BY "quantity" HAVING count(*) > ?"#)
        #expect(try having.arguments == [1])
        let repeated = try db.read { try having.fetchAll($0) }
        #expect(repeated.map(\.0) == [12] && repeated.map(\.1) == [2])
        #expect(try db.read { try having.fetchCount($0) } == 1)

        let havingSum = Item.all().select(\.status).group(by: \.status).having { $0.quantity.sum() > 20 && $0.rowCount() >= 4 }
        #expect(try havingSum.sql == #"SELECT "status" FROM "items" GROUP BY "status" HAVING sum("quantity") > ? AND count(*) >= ?"#)
        #expect(try db.read { try havingSum.fetchAll($0) } == [.draft])
    }

    @Test(arguments: TestStorage.allCases)
    func lazyCursor(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let query = Item.where(\.quantity > 0).order(\.id)
        let (streamed, inner) = try db.read { db in
            let cursor = try query.fetchCursor(db)
            var streamed: [String] = []
            var inner: [Int] = []
            while let item = try cursor.next() {
                streamed.append(item.name)
                // The same SQL run while the cursor is open gets a statement of its own.
                inner.append(try query.fetchCount(db))
                inner.append(try query.fetchAll(db).count)
            }
            #expect(try cursor.next() == nil)
            return (streamed, inner)
        }
        #expect(streamed == ["apple", "Banana", "date", "elder_berry", "fig"])
        #expect(Set(inner) == [5])
        // The cursor gave its statement back: the query still runs.
        #expect(try db.read { try query.fetchAll($0) }.count == 5)

        // A cursor over selected columns.
        let codes = try db.read { db in
            let cursor = try Item.order(.desc(\.id)).limit(2).select(\.code).fetchCursor(db)
            var codes: [String] = []
            while let code = try cursor.next() { codes.append(code) }
            return codes
        }
        #expect(codes == ["2299", "12"])
    }
}
