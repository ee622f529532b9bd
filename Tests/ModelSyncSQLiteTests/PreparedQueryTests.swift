import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// Queries built once with parameters, run many times with new values.
@Suite("SQLite query: prepared")
struct PreparedQueryTests {
    /// A prepared lookup finds what the builder finds, for every key and for keys at the ends
    /// of `Int`, and its SQL is the builder's with `?` for the parameter.
    @Test(arguments: TestStorage.allCases)
    func aPreparedLookupFindsWhatTheBuilderFinds(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        // `id` is an `Int?`: so is its parameter, compared with `IS`.
        let byID = try Item.preparedQuery(Int?.self) { id in Item.where(\.id == id) }
        #expect(byID.sql == (try Item.where(\.id == 0).sql).replacingOccurrences(of: #""id" = ?"#, with: #""id" IS ?"#))
        let ids = try db.read { try Item.order(\.id).fetchAll($0) }.compactMap(\.id) + [0, Int.max, Int.min]
        try db.read { db throws in
            // Twice: the second round binds the statement the first left in the cache.
            for _ in 0..<2 {
                for id in ids {
                    #expect(try byID.fetchOne(db, id) == Item.where(\.id == id).fetchOne(db))
                    #expect(try byID.fetchAll(db, id) == Item.where(\.id == id).fetchAll(db))
                }
            }
        }
        #expect(try db.read { try byID.fetchOne($0, 1) }?.name == "apple")
    }

    /// Two parameters of different types, one of them used twice, beside the query's own
    /// constants, a limit and text holding a NUL: each value reaches its own places.
    @Test(arguments: TestStorage.allCases)
    func parametersBindInTheirOwnPlaces(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let query = try Item.preparedQuery(String?.self, Int.self) { note, quantity in
            Item.where { $0.note == note || $0.quantity == quantity }.where { $0.flags != 0b010 }
                .where { $0.quantity <= quantity + 100 }.order(\.id).limit(3)
        }
        func expected(_ note: String, _ quantity: Int) throws -> [String] {
            try db.read { db in
                try Item.where { $0.note == note || $0.quantity == quantity }.where { $0.flags != 0b010 }
                    .where { $0.quantity <= quantity + 100 }.order(\.id).limit(3).fetchAll(db).map { $0.name }
            }
        }
        let cases: [(String, Int)] = [("red", 12), ("a\u{0}b", -1), ("a", -1), ("it's; -- not SQL", 0), ("none", Int.max - 100), ("", 1)]
        #expect(try expected("red", 12) == ["apple", "Banana", "elder_berry"])
        #expect(try expected("a\u{0}b", -1) == ["fig"] && expected("a", -1).isEmpty)
        try db.read { db throws in
            for (note, quantity) in cases {
                #expect(try query.fetchAll(db, note, quantity).map { $0.name } == expected(note, quantity))
                #expect(try query.fetchOne(db, note, quantity)?.name == expected(note, quantity).first)
            }
        }
    }

    /// `==` with an optional parameter is `IS`: nil finds the rows whose column is NULL, as
    /// `== nil` does; `!=` is `IS NOT`.
    @Test func anOptionalParameterFindsNulls() throws {
        let db = try itemsDatabase(.memory)
        let withNote = try Item.preparedQuery(String?.self) { note in Item.where(\.note == note).order(\.id) }
        let withoutNote = try Item.preparedQuery(String?.self) { note in Item.where(\.note != note).order(\.id) }
        #expect(withNote.sql.contains(#""note" IS ?"#) && withoutNote.sql.contains(#""note" IS NOT ?"#))
        try db.read { db throws in
            #expect(try withNote.fetchAll(db, nil).map { $0.name } == ["Banana", "elder_berry"])
            #expect(try withNote.fetchAll(db, "red").map { $0.name } == ["apple"])
            #expect(try withoutNote.fetchAll(db, nil).map { $0.name } == ["apple", "cherry", "date", "fig"])
            #expect(try withoutNote.fetchAll(db, "red").map { $0.name } == ["Banana", "cherry", "date", "elder_berry", "fig"])
        }
    }

    /// A parameter compared with a column that holds its transformer's representation binds
    /// through the transformer, on either side of the comparison; a soft-deleting model's
    /// scope stays in the prepared query.
    @Test(arguments: TestStorage.allCases)
    func parametersBindAsTheirColumnStoresValues(store: TestStorage) throws {
        let db = try store.open(models: [Voucher.self])
        var five = Voucher(value: 500, label: "five")
        var ten = Voucher(value: 1000, label: "ten")
        try db.write { try five.insert($0); try ten.insert($0) }
        let byValue = try Voucher.preparedQuery(Int.self) { value in Voucher.where(\.value == value) }
        let valueOrTen = try Voucher.preparedQuery(Int.self) { value in Voucher.where { value == $0.value || $0.label == "ten" }.order(\.label) }
        try db.read { db throws in
            #expect(try byValue.fetchOne(db, 500) == five)
            #expect(try byValue.fetchOne(db, 1000) == ten)
            #expect(try byValue.fetchOne(db, 5) == nil)
            #expect(try valueOrTen.fetchAll(db, 500).map { $0.label } == ["five", "ten"])
        }
        #expect(try db.write { try five.delete($0) })
        #expect(try db.read { try byValue.fetchOne($0, 500) } == nil)
        #expect(try db.read { try valueOrTen.fetchAll($0, 500) }.map { $0.label } == ["ten"])
    }

    /// While a cursor holds the statement of the same SQL, a prepared run gets a statement of
    /// its own, and neither disturbs the other.
    @Test(arguments: TestStorage.allCases)
    func aPreparedRunBesideACursorOfTheSameSQL(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        let moreThan = try Item.preparedQuery(Int.self) { quantity in Item.where(\.quantity > quantity).order(\.id) }
        try db.read { db throws in
            let cursor = try Item.where(\.quantity > 6).order(\.id).fetchCursor(db)
            #expect(try cursor.next()?.name == "Banana")
            #expect(try moreThan.fetchAll(db, 0).map { $0.name } == ["apple", "Banana", "date", "elder_berry", "fig"])
            #expect(try cursor.next()?.name == "date")
            #expect(try moreThan.fetchOne(db, 7)?.name == "Banana")
            #expect(try cursor.next()?.name == "elder_berry")
            #expect(try cursor.next() == nil)
        }
    }

    /// Runs on many connections at once share one prepared query.
    @Test func onePreparedQueryServesConcurrentReads() async throws {
        let db = try itemsDatabase(.file)
        let byID = try Item.preparedQuery(Int?.self) { id in Item.where(\.id == id) }
        let names = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for id in 1...40 {
                group.addTask { (id, try await db.read { try byID.fetchOne($0, id % 7) }?.name) }
            }
            return try await group.reduce(into: [Int: String?]()) { $0[$1.0] = $1.1 }
        }
        let expected = [nil] + sampleItems.map { $0.name }
        #expect(names.count == 40 && names.allSatisfy { $0.value == expected[$0.key % 7] })
    }

    /// A query that cannot render fails when it is prepared; a parameter taken out of its
    /// prepared query fails the query it ends up in, with a typed error.
    @Test func misusesAreTypedErrors() throws {
        let db = try itemsDatabase(.memory)
        #expect {
            _ = try Item.preparedQuery(Bool.self) { selected in Item.where(\.isSelected == selected) }
        } throws: { error in
            guard let error = error as? SQLiteError, case .unknownColumn = error.kind else { return false }
            return true
        }
        var escaped: SQLExpression<Item, Int>?
        _ = try Item.preparedQuery(Int.self) { quantity in
            escaped = quantity
            return Item.where(\.quantity == quantity)
        }
        let parameter = try #require(escaped)
        #expect {
            _ = try db.read { try Item.where(\.quantity == parameter).fetchAll($0) }
        } throws: { error in
            guard let error = error as? SQLiteError, case .misuse = error.kind else { return false }
            return error.message.contains("parameter")
        }
        #expect(throws: SQLiteError.self) { try Item.where(\.quantity == parameter).sql }
    }
}
