import Foundation
import ModelSyncSQLite
import ModelSyncTesting
import Testing

/// One condition: the SQL it renders after `FROM "items"`, its arguments, and the items it
/// matches on a real database (by name, in id order).
struct ConditionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let query: SQLQuery<Item, Item>
    let sql: String
    let arguments: [SQLValue]
    let matches: [String]

    init(_ name: String, _ query: SQLQuery<Item, Item>, _ sql: String, _ arguments: [SQLValue], _ matches: [String]) {
        self.name = name
        self.query = query
        self.sql = sql
        self.arguments = arguments
        self.matches = matches
    }

    var testDescription: String { name }
}

/// Every operator of the builder, each checked for its SQL text and arguments and for the
/// rows it returns on a file and an in-memory database.
@Suite("SQLite query: operators")
struct QueryOperatorTests {
    static let createdAt = Date(timeIntervalSince1970: 1_700_000_050)
    static let token = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    static let comparisons: [ConditionCase] = [
        ConditionCase("=", Item.where(\.quantity == 12), #" WHERE "quantity" = ?"#, [12], ["Banana", "elder_berry"]),
        ConditionCase("!=", Item.where(\.quantity != 12), #" WHERE "quantity" <> ?"#, [12], ["apple", "cherry", "date", "fig"]),
        ConditionCase("<", Item.where(\.quantity < 5), #" WHERE "quantity" < ?"#, [5], ["cherry", "fig"]),
        ConditionCase("<=", Item.where(\.quantity <= 5), #" WHERE "quantity" <= ?"#, [5], ["apple", "cherry", "fig"]),
        ConditionCase(">", Item.where(\.quantity > 7), #" WHERE "quantity" > ?"#, [7], ["Banana", "elder_berry"]),
        ConditionCase(">=", Item.where(\.quantity >= 7), #" WHERE "quantity" >= ?"#, [7], ["Banana", "date", "elder_berry"]),
        ConditionCase("text =", Item.where(\.name == "fig"), #" WHERE "name" = ?"#, ["fig"], ["fig"]),
        ConditionCase("optional < value", Item.where(\.price < 2), #" WHERE "price" < ?"#, [.real(2)], ["apple", "Banana"]),
        ConditionCase("enum", Item.where(\.status == .published), #" WHERE "status" = ?"#, ["published"], ["apple", "date"]),
        ConditionCase("date", Item.where(\.createdAt > createdAt), #" WHERE "created_at" > ?"#, [.real(1_700_000_050)], ["Banana"]),
        ConditionCase("UUID", Item.where(\.token == token), #" WHERE "token" = ?"#, [.text(token.uuidString)], ["apple"]),
        ConditionCase(
            "column = column", Item.where { $0.quantity > $0.flags }, #" WHERE "quantity" > "flags""#, [],
            ["Banana", "date", "elder_berry"]),
    ]

    static let nulls: [ConditionCase] = [
        ConditionCase("== nil", Item.where(\.price == nil), #" WHERE "price" IS NULL"#, [], ["cherry", "fig"]),
        ConditionCase("!= nil", Item.where(\.note != nil), #" WHERE "note" IS NOT NULL"#, [], ["apple", "cherry", "date", "fig"]),
        ConditionCase("isNull", Item.where { $0.note.isNull }, #" WHERE "note" IS NULL"#, [], ["Banana", "elder_berry"]),
        ConditionCase("isNotNull", Item.where { $0.price.isNotNull }, #" WHERE "price" IS NOT NULL"#, [], ["apple", "Banana", "date", "elder_berry"]),
    ]

    static let ranges: [ConditionCase] = [
        ConditionCase("BETWEEN", Item.where { $0.quantity.between(1, and: 7) }, #" WHERE "quantity" BETWEEN ? AND ?"#, [1, 7], ["apple", "date", "fig"]),
        ConditionCase(
            "NOT BETWEEN", Item.where { $0.quantity.notBetween(1, and: 7) }, #" WHERE "quantity" NOT BETWEEN ? AND ?"#, [1, 7],
            ["Banana", "cherry", "elder_berry"]),
        ConditionCase("IN", Item.where { $0.name.in(["fig", "apple", "kiwi"]) }, #" WHERE "name" IN (SELECT value FROM json_each(?))"#, [#"["fig","apple","kiwi"]"#], ["apple", "fig"]),
        ConditionCase("IN ()", Item.where { $0.name.in([]) }, #" WHERE "name" IN ()"#, [], []),
        ConditionCase("NOT IN", Item.where { $0.quantity.notIn([12, 0]) }, #" WHERE "quantity" NOT IN (SELECT value FROM json_each(?))"#, ["[12,0]"], ["apple", "date", "fig"]),
        ConditionCase(
            "NOT IN ()", Item.where { $0.quantity.notIn([]) }, #" WHERE "quantity" NOT IN ()"#, [],
            ["apple", "Banana", "cherry", "date", "elder_berry", "fig"]),
        // A nil in the list is an `IS [NOT] NULL` test of its own: inside `IN (…)` it would
        // match no row, inside `NOT IN (…)` it would make every row unknown.
        ConditionCase(
            "IN optional", Item.where { $0.price.in([0.25, 3, nil]) }, #" WHERE "price" IN (?, ?) OR "price" IS NULL"#,
            [.real(0.25), .real(3)], ["Banana", "cherry", "date", "fig"]),
        ConditionCase(
            "IN optional, and", Item.where(\.quantity > 0).where { $0.price.in([0.25, nil]) },
            #" WHERE "quantity" > ? AND ("price" IN (?) OR "price" IS NULL)"#, [0, .real(0.25)], ["Banana", "fig"]),
        ConditionCase(
            "NOT (IN optional)", Item.where { !$0.price.in([0.25, nil]) }, #" WHERE NOT ("price" IN (?) OR "price" IS NULL)"#,
            [.real(0.25)], ["apple", "date", "elder_berry"]),
        ConditionCase("IN [nil]", Item.where { $0.price.in([nil]) }, #" WHERE "price" IS NULL"#, [], ["cherry", "fig"]),
        ConditionCase(
            "NOT IN optional", Item.where { $0.price.notIn([0.25, nil]) }, #" WHERE "price" NOT IN (?) AND "price" IS NOT NULL"#,
            [.real(0.25)], ["apple", "date", "elder_berry"]),
        ConditionCase(
            "NOT IN optional, or", Item.where { $0.price.notIn([0.25, 3, nil]) || $0.quantity == 0 },
            #" WHERE ("price" NOT IN (?, ?) AND "price" IS NOT NULL) OR "quantity" = ?"#, [.real(0.25), .real(3), 0],
            ["apple", "cherry", "elder_berry"]),
        ConditionCase(
            "NOT IN [nil]", Item.where { $0.price.notIn([nil]) }, #" WHERE "price" IS NOT NULL"#, [],
            ["apple", "Banana", "date", "elder_berry"]),
    ]

    /// The byte-exact SQL of `hasPrefix`, `hasSuffix` and `contains` on `column`.
    static func bytes(_ node: String, lower: Bool) -> String { lower ? "CAST(lower(\(node)) AS BLOB)" : "CAST(\(node) AS BLOB)" }
    static func prefix(_ column: String, lower: Bool = false, clause: Bool = true) -> String {
        let value = bytes("\"\(column)\"", lower: lower), text = bytes("?", lower: lower)
        return (clause ? " WHERE " : "") + "ifnull(substr(\(value), 1, length(\(text))), \(value)) = \(text)"
    }
    static func suffix(_ column: String, lower: Bool = false, clause: Bool = true) -> String {
        let value = bytes("\"\(column)\"", lower: lower), text = bytes("?", lower: lower)
        return (clause ? " WHERE " : "") + "ifnull(substr(\(value), (length(\(value)) - length(\(text))) + 1), \(value)) = \(text)"
    }
    static func contains(_ column: String, lower: Bool = false) -> String {
        " WHERE instr(\(bytes("\"\(column)\"", lower: lower)), \(bytes("?", lower: lower))) > 0"
    }

    static let text: [ConditionCase] = [
        ConditionCase("LIKE", Item.where { $0.name.like("%an%") }, #" WHERE "name" LIKE ?"#, ["%an%"], ["Banana"]),
        ConditionCase(
            "LIKE ESCAPE", Item.where { $0.note.like("%50!%%", escape: "!") }, #" WHERE "note" LIKE ? ESCAPE ?"#, ["%50!%%", "!"],
            ["cherry"]),
        ConditionCase("LIKE ignores ASCII case", Item.where { $0.name.like("b%") }, #" WHERE "name" LIKE ?"#, ["b%"], ["Banana"]),
        ConditionCase("GLOB", Item.where { $0.code.glob("22*") }, #" WHERE "code" GLOB ?"#, ["22*"], ["apple", "Banana", "cherry", "fig"]),
        ConditionCase("hasPrefix", Item.where { $0.code.hasPrefix("22") }, prefix("code"), ["22", "22"], ["apple", "Banana", "cherry", "fig"]),
        ConditionCase("hasPrefix is case-sensitive", Item.where { $0.name.hasPrefix("b") }, prefix("name"), ["b", "b"], []),
        ConditionCase(
            "hasPrefix ignoringCase", Item.where { $0.name.hasPrefix("b", ignoringCase: true) }, prefix("name", lower: true), ["b", "b"],
            ["Banana"]),
        ConditionCase(
            "hasPrefix length (22__)", Item.where { $0.code.hasPrefix("22", length: 4) }, #" WHERE "code" GLOB ? AND "# + prefix("code", clause: false),
            ["????", "22", "22"], ["apple", "Banana", "fig"]),
        ConditionCase(
            "hasPrefix length ignoringCase", Item.where { $0.code.hasPrefix("22", length: 4, ignoringCase: true) },
            #" WHERE "code" GLOB ? AND "# + prefix("code", lower: true, clause: false), ["????", "22", "22"], ["apple", "Banana", "fig"]),
        ConditionCase("hasPrefix too long a prefix", Item.where { $0.code.hasPrefix("2201", length: 2) }, " WHERE 0", [], []),
        ConditionCase("hasSuffix", Item.where { $0.code.hasSuffix("01") }, suffix("code"), ["01", "01"], ["apple", "date"]),
        ConditionCase(
            "hasSuffix length", Item.where { $0.code.hasSuffix("9", length: 5) }, #" WHERE "code" GLOB ? AND "# + suffix("code", clause: false),
            ["?????", "9", "9"], ["cherry"]),
        ConditionCase("contains", Item.where { $0.name.contains("an") }, contains("name"), ["an"], ["Banana"]),
        ConditionCase("contains a wildcard literally", Item.where { $0.name.contains("_") }, contains("name"), ["_"], ["elder_berry"]),
        ConditionCase("contains % ignoringCase", Item.where { $0.note.contains("0%", ignoringCase: true) }, contains("note", lower: true), ["0%"], ["cherry"]),
        ConditionCase(
            "contains _ ignoringCase", Item.where { $0.name.contains("R_B", ignoringCase: true) }, contains("name", lower: true), ["R_B"],
            ["elder_berry"]),
        ConditionCase("contains * literally", Item.where { $0.name.contains("*") }, contains("name"), ["*"], []),
        ConditionCase(
            "COLLATE NOCASE", Item.where { $0.name.collating(.nocase) == "BANANA" }, #" WHERE ("name" COLLATE NOCASE) = ?"#, ["BANANA"],
            ["Banana"]),
        ConditionCase("binary comparison is case-sensitive", Item.where(\.name == "BANANA"), #" WHERE "name" = ?"#, ["BANANA"], []),
    ]

    static let bits: [ConditionCase] = [
        ConditionCase("&", Item.where((\.flags & 0b100) == 0b100), #" WHERE ("flags" & ?) = ?"#, [4, 4], ["apple", "cherry", "date", "fig"]),
        ConditionCase("|", Item.where { ($0.flags | 0b010) == 0b111 }, #" WHERE ("flags" | ?) = ?"#, [2, 7], ["apple", "fig"]),
        ConditionCase("<<", Item.where { ($0.flags << 1) == 2 }, #" WHERE ("flags" << ?) = ?"#, [1, 2], ["Banana"]),
        ConditionCase(">>", Item.where { ($0.flags >> 2) == 1 }, #" WHERE ("flags" >> ?) = ?"#, [2, 1], ["apple", "cherry", "date", "fig"]),
        ConditionCase("~", Item.where { (~$0.flags & 1) == 1 }, #" WHERE ((~"flags") & ?) = ?"#, [1, 1], ["cherry", "date", "elder_berry"]),
        ConditionCase("+ and *", Item.where { $0.quantity * 2 + 1 > 20 }, #" WHERE (("quantity" * ?) + ?) > ?"#, [2, 1, 20], ["Banana", "elder_berry"]),
        ConditionCase("-", Item.where { $0.quantity - $0.flags == 0 }, #" WHERE ("quantity" - "flags") = ?"#, [0], ["apple"]),
    ]

    static let logic: [ConditionCase] = [
        ConditionCase("NOT", Item.where(!(\.quantity > 4)), #" WHERE NOT ("quantity" > ?)"#, [4], ["cherry", "fig"]),
        ConditionCase(
            "AND", Item.where(\.quantity > 4 && \.price < 2 && \.name != "x"), #" WHERE "quantity" > ? AND "price" < ? AND "name" <> ?"#,
            [4, .real(2), "x"], ["apple", "Banana"]),
        ConditionCase("OR", Item.where(\.quantity == 0 || \.quantity == 1), #" WHERE "quantity" = ? OR "quantity" = ?"#, [0, 1], ["cherry", "fig"]),
        ConditionCase(
            "AND inside OR", Item.where((\.quantity > 4 && (\.price == nil || \.price < 1)) || \.name == "fig"),
            #" WHERE ("quantity" > ? AND ("price" IS NULL OR "price" < ?)) OR "name" = ?"#, [4, .real(1), "fig"], ["Banana", "fig"]),
        ConditionCase(
            "NOT of a group, nested three deep",
            Item.where(!(\.quantity == 12 || (\.flags > 4 && !(\.name == "fig" || \.name == "date")))),
            #" WHERE NOT ("quantity" = ? OR ("flags" > ? AND NOT ("name" = ? OR "name" = ?)))"#, [12, 4, "fig", "date"],
            ["cherry", "date", "fig"]),
        ConditionCase(
            "where after where is AND", Item.where(\.quantity > 4).where(\.quantity < 10 || \.name == "Banana"),
            #" WHERE "quantity" > ? AND ("quantity" < ? OR "name" = ?)"#, [4, 10, "Banana"], ["apple", "Banana", "date"]),
        ConditionCase("all([]) is true", Item.where(.all([])), " WHERE 1", [], ["apple", "Banana", "cherry", "date", "elder_berry", "fig"]),
        ConditionCase("any([]) is false", Item.where(.any([])), " WHERE 0", [], []),
        ConditionCase(
            "any of alls", Item.where(.any([.all([\.quantity == 12, \.flags == 0]), .all([\.quantity == 1])])),
            #" WHERE ("quantity" = ? AND "flags" = ?) OR "quantity" = ?"#, [12, 0, 1], ["elder_berry", "fig"]),
        ConditionCase("NOT IS NULL", Item.where(\.quantity == 5).where { !$0.name.isNull }, #" WHERE "quantity" = ? AND NOT ("name" IS NULL)"#, [5], ["apple"]),
    ]

    @Test(arguments: TestStorage.allCases, comparisons + nulls + ranges)
    func comparisonsNullsAndRanges(store: TestStorage, condition: ConditionCase) throws {
        try check(condition, store)
    }

    @Test(arguments: TestStorage.allCases, text)
    func textPatternsAndCollation(store: TestStorage, condition: ConditionCase) throws {
        try check(condition, store)
    }

    @Test(arguments: TestStorage.allCases, bits + logic)
    func bitsArithmeticAndLogic(store: TestStorage, condition: ConditionCase) throws {
        try check(condition, store)
    }

    private func check(_ condition: ConditionCase, _ store: TestStorage) throws {
        #expect(try condition.query.sql == #"SELECT \#(QueryCoreTests.columns) FROM "items""# + condition.sql)
        #expect(try condition.query.arguments == condition.arguments)
        let db = try itemsDatabase(store)
        #expect(names(try db.read { try condition.query.order(\.id).fetchAll($0) }) == condition.matches)
        #expect(try db.read { try condition.query.fetchCount($0) } == condition.matches.count)
    }

    @Test(arguments: TestStorage.allCases)
    func subqueriesInAndExists(store: TestStorage) throws {
        let db = try itemsDatabase(store)
        try db.write { db in
            for (index, userId) in [12, 12, 7, 99, 3].enumerated() {
                var post = Post(userId: userId, title: "Post \(index)")
                try post.insert(db)
            }
        }
        let postColumns = Post.schema.fields.map { "\"\($0.column)\"" }.joined(separator: ", ")

        let inSubquery = Item.where { $0.quantity.in(Post.where(\.title != "Post 0").select(\.userId)) }
        #expect(try inSubquery.sql == #"SELECT \#(QueryCoreTests.columns) FROM "items" WHERE "quantity" IN (SELECT "user_id" FROM "posts" WHERE "title" <> ?)"#)
        #expect(try inSubquery.arguments == ["Post 0"])
        #expect(inSubquery.readTables == ["items", "posts"])
        #expect(names(try db.read { try inSubquery.order(\.id).fetchAll($0) }) == ["Banana", "date", "elder_berry"])

        let notInSubquery = Item.where { $0.quantity.notIn(Post.all().select(\.userId)) }
        #expect(try notInSubquery.sql.hasSuffix(#"WHERE "quantity" NOT IN (SELECT "user_id" FROM "posts")"#))
        #expect(names(try db.read { try notInSubquery.order(\.id).fetchAll($0) }) == ["apple", "cherry", "fig"])

        // An optional column against a subquery of its wrapped type.
        let optional = Item.where { $0.id.in(Post.where(\.userId == 7).select(\.userId)) }
        #expect(names(try db.read { try optional.fetchAll($0) }) == [])

        let exists = Item.where(.exists(Post.where { $0.userId == .outer(\Item.quantity) }))
        #expect(try exists.sql == #"SELECT \#(QueryCoreTests.columns) FROM "items" WHERE EXISTS (SELECT \#(postColumns) FROM "posts" WHERE "user_id" = "items"."quantity")"#)
        #expect(try exists.arguments == [])
        #expect(exists.readTables == ["items", "posts"])
        #expect(names(try db.read { try exists.order(\.id).fetchAll($0) }) == ["Banana", "date", "elder_berry"])

        let notExists = Item.where(!.exists(Post.where { $0.userId == .outer(\Item.quantity) }))
        #expect(names(try db.read { try notExists.order(\.id).fetchAll($0) }) == ["apple", "cherry", "fig"])

        // The other direction: the posts of items, an optional key against a plain column.
        let postsOfItems = Post.where(.exists(Item.where { $0.id == .outer(\Post.userId) }))
        #expect(try postsOfItems.sql.hasSuffix(#"WHERE EXISTS (SELECT \#(QueryCoreTests.columns) FROM "items" WHERE "id" = "posts"."user_id")"#))
        #expect(try db.read { try postsOfItems.fetchAll($0) }.map(\.title) == ["Post 4"])
    }
}
