import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol
import ModelSyncSQLite
import ModelSyncServer

/// Sharing rules on SQLite: the lookups a `RowFilter` needs (a record by id,
/// a user's memberships), each one indexed read on the connection of the read or the write it
/// belongs to; the filter written as an SQL condition, so that lists leave out in SQL the rows
/// it refuses; and the expression indexes that make membership lookups indexed.
///
/// Fields and collections appear in the SQL as literals (a rules file names them, never a
/// request; a user's id is bound): SQLite uses an expression index only for the expression it was made with, so the
/// lookups spell each path exactly as its index does.
extension SQLiteBackend {
    /// The memberships that give `userID` a role through any of `links`: one indexed read per link.
    package func memberships(of userID: String, in links: [SharingRule.Membership]) async throws -> [MembershipList.Entry] {
        try await reading { connection in
            try links.flatMap { link in
                try Self.memberships(in: link, userID: userID, connection).map { MembershipList.Entry(link: link, rowID: $0.rowID, role: $0.role) }
            }
        }
    }

    /// The membership rows of `link` naming `userID`, by the index on its user field (made at
    /// start, `createSharingIndexes(for:_:)`): the row each is on and its role. SQL narrows by
    /// the user's value as text and as a number; Swift keeps the rows whose user field's text is
    /// `userID`, byte for byte (as `scalarText(_:)` spells it), and reads
    /// the row and the role as the other backends do.
    static func memberships(in link: SharingRule.Membership, userID: String, _ connection: SQLiteConnection) throws -> [(rowID: String, role: String)] {
        // (A field no JSON path spells, a `"` in its name: every membership row, checked here.)
        let query = SharingSQL.memberships(in: link, userID: userID)
            ?? ("SELECT record, NULL, NULL, NULL FROM \(SQLiteSchema.records) WHERE collection = \(SharingSQL.literal(link.collection))", [])
        var found: [(rowID: String, role: String)] = []
        try connection.withStatement(query.sql, query.arguments) { statement in
            while try statement.step() {
                // SQL's texts of the user and the row when it spells them as Swift does (strings,
                // integers: a user of 5,000 boards costs no 5,000 records read into values);
                // else the record, read here.
                guard case .text(let record) = statement.value(at: 0) else {
                    guard statement.value(at: 1).textValue?.isIdentical(to: userID) == true,
                          let rowID = statement.value(at: 2).textValue, let role = statement.value(at: 3).textValue
                    else { continue }
                    found.append((rowID, role))
                    continue
                }
                let row = try JSONValue(parsing: Array(record.utf8))
                guard row[link.user].flatMap(scalarText)?.isIdentical(to: userID) == true,
                      let rowID = row[link.field].flatMap(scalarText), let role = row[link.role]?.stringValue
                else { continue }
                found.append((rowID, role))
            }
        }
        return found
    }

    /// The records of `collection` whose `field` (`id`: the rows themselves) is one of `values`,
    /// at their current versions, of those `visibility` lets its reader list: the rows a
    /// membership moves in or out. By the records' index on `(collection, id_text)`, or by the
    /// index on the parent field (made at start); Swift keeps the rows whose field's text is
    /// one of `values`, byte for byte.
    package func currentChanges(of collection: String, where field: String, isOneOf values: [String], visibility: Visibility) async throws -> [SyncChange] {
        try await currentChanges(of: collection, where: field, isOneOf: values, visibility: visibility, versions: 0...Int.max, limit: Int.max)
    }

    /// The same at versions in `versions`, oldest first, at most `limit`: read by version in
    /// batches (the rows SQL returns may not all be shown, so a batch's length says nothing of
    /// the rest), until `limit` are shown or none are left.
    package func currentChanges(
        of collection: String, where field: String, isOneOf values: [String], visibility: Visibility, versions: ClosedRange<Int>, limit: Int
    ) async throws -> [SyncChange] {
        let rows = visibility.rows(of: collection)
        guard !values.isEmpty, rows != .nothing, limit > 0 else { return [] }
        return try await reading { connection in
            let wanted = Set(values.map(ExactText.init))
            let (condition, arguments) = SharingSQL.fieldIsOneOf(field, values)
            // Whether SQL vouches for the row (by its own parent and memberships, by index): a
            // membership move reads a few rows, and looks up no user's every membership for them.
            var sureArguments: [SQLValue] = []
            let sure = rows == .everything ? "1" : SharingSQL.vouch(rows, row: "moved", &sureArguments)
            let facts = RowFacts.sqlite(connection)
            let batch = max(limit, 100)
            var changes: [SyncChange] = []
            var after = versions.lowerBound - 1
            while true {
                let bounds: [SQLValue] = [.integer(Int64(after)), .integer(Int64(versions.upperBound))]
                var read = 0
                try connection.withStatement(
                    """
                    SELECT version, record, created_with, \(sure) FROM \(SQLiteSchema.records) AS moved \
                    WHERE collection = \(SharingSQL.literal(collection)) AND \(condition) AND version > ? AND version <= ? ORDER BY version LIMIT \(batch)
                    """, sureArguments + arguments + bounds
                ) { statement in
                    while try statement.step() {
                        read += 1
                        let version = Int(statement.value(at: 0).integerValue ?? 0)
                        after = version
                        let record = try Self.parsed(statement.value(at: 1))
                        guard let text = (field == "id" ? recordID(of: record) : record[field].flatMap(scalarText)), wanted.contains(ExactText(text)) else { continue }
                        let change = SyncChange(
                            sequence: version, collection: collection, id: record["id"] ?? .null, record: record,
                            createdWith: statement.value(at: 2).textValue)
                        if statement.value(at: 3).integerValue == 1 {
                            if let shown = try visibility.shown(change, rows: .everything, facts) { changes.append(shown) }
                        } else if let shown = try visibility.shown(change, rows: rows, facts) {
                            changes.append(shown)
                        }
                    }
                }
                guard read == batch, changes.count < limit else { break }
            }
            return Array(changes.prefix(limit))
        }
    }

    /// The shared fields the tombstone of this deletion (or departure) kept, by its sequence
    /// (the primary key).
    package func deletions(of collection: String, where field: String, isOneOf values: [String], after since: Int) async throws -> [SyncChange] {
        let wanted = Set(values.map(ExactText.init))
        return try await reading { connection in
            // The reader's window of tombstones, by the tombstones' sequence index; the field is read here.
            let rows = try connection.rows(
                "SELECT sequence, id, fields FROM \(SQLiteSchema.tombstones) WHERE sequence > ? AND collection = ? AND fields IS NOT NULL ORDER BY sequence",
                [.integer(Int64(since)), .text(collection)])
            return try rows.compactMap { row in
                guard let value = try Self.parsed(row[2])[field].flatMap(scalarText), wanted.contains(ExactText(value)) else { return nil }
                return SyncChange(sequence: Int(row[0].integerValue ?? 0), collection: collection, id: try Self.parsed(row[1]), record: nil)
            }
        }
    }

    package func tombstoneFields(in collection: String, id: JSONValue, sequence: Int) async throws -> JSONObject? {
        try await reading { connection in
            guard let row = try connection.rows(
                "SELECT id, fields FROM \(SQLiteSchema.tombstones) WHERE sequence = ? AND collection = ?", [.integer(Int64(sequence)), .text(collection)]
            ).first, let kept = scalarText(try Self.parsed(row[0])), let given = scalarText(id), kept.isIdentical(to: given)
            else { return nil }
            return try Self.parsed(row[1]).objectValue
        }
    }

    /// Makes the indexes the sharing rules' lookups read: each membership collection by its user
    /// field (a user's memberships), each collection whose rows inherit by its parent field (the
    /// rows a membership moves). Parents are looked up by id, through the records' index on
    /// `(collection, id_text)`. Indexes of earlier rules stay.
    static func createSharingIndexes(for rules: AccessRules?, _ connection: SQLiteConnection) throws {
        for statement in SharingSQL.indexes(for: rules) { try connection.execute(statement) }
    }
}

/// Lookups for a `RowFilter` on one connection: a record by id through the
/// `(collection, id_text)` index, a user's memberships through the index on the user field. For
/// the feed, a record that was deleted is looked up in its tombstone's shared fields, so that
/// the deletion of a card whose board went first still reaches the board's members.
struct SQLiteRowLookups: RowLookups {
    let connection: SQLiteConnection
    /// Whether a deleted record is looked up in its latest tombstone (the feed).
    var fallsBackToTombstones = false

    func record(in collection: String, id: String) throws -> JSONValue? {
        if let found = try SQLiteBackend.record(collection, id: id, connection) { return found.record }
        guard fallsBackToTombstones else { return nil }
        // The tombstone's id is JSON text: a string's, or a number's digits (by the index on
        // (collection, id)); the latest deletion of this id that kept its fields.
        var candidates = [String(decoding: JSONValue.string(id).jsonBytes(), as: UTF8.self)]
        if case .number(_)? = try? JSONValue(parsing: Array(id.utf8)) { candidates.append(id) }
        let rows = try connection.rows(
            """
            SELECT id, fields FROM \(SQLiteSchema.tombstones) WHERE collection = ? AND id IN (SELECT value FROM json_each(?)) \
            AND departed = 0 AND fields IS NOT NULL ORDER BY sequence DESC
            """, [.text(collection), SQLiteBackend.text(.array(candidates.map(JSONValue.string)))])
        for row in rows {
            guard let stoneID = try? SQLiteBackend.parsed(row[0]), scalarText(stoneID)?.isIdentical(to: id) == true else { continue }
            return try SQLiteBackend.parsed(row[1])
        }
        return nil
    }

    func memberships(in link: SharingRule.Membership, userID: String) throws -> [(rowID: String, role: String)] {
        try SQLiteBackend.memberships(in: link, userID: userID, connection)
    }
}

extension RowFacts {
    /// Facts looked up on `connection` (the feed's also in tombstones).
    static func sqlite(_ connection: SQLiteConnection, tombstones: Bool = false) -> RowFacts {
        RowFacts(SQLiteRowLookups(connection: connection, fallsBackToTombstones: tombstones))
    }
}

/// The SQL that sharing rules read: literals, JSON paths, a field's text, a `RowFilter`
/// as a condition, and the indexes.
enum SharingSQL {
    /// `text` as an SQL string literal.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The JSON path of the top-level member `field` (`$."boardId"`), as a literal: a quoted
    /// label is one member's name, dots and all, as `record[field]` reads it. Nil for a
    /// name no path of SQLite spells on every version (`ListSQL.isPlain(_:)`: a quote, a
    /// backslash, a control character).
    static func path(_ field: String) -> String? {
        guard ListSQL.isPlain(Substring(field)) else { return nil }
        return literal("$.\"\(field)\"")
    }

    /// The text of the member `field` of the current row's `record` where SQL spells it as
    /// `scalarText(_:)` does: a string's value, an integer's digits; NULL for
    /// other values (see `inexact(at:)`) and a missing member. Nil for a name no path spells.
    static func exactText(at field: String, of row: String? = nil) -> String? {
        guard let path = path(field) else { return nil }
        let record = row.map { "\($0).record" } ?? "record"
        return "(CASE json_type(\(record), \(path)) WHEN 'text' THEN json_extract(\(record), \(path)) WHEN 'integer' THEN CAST(json_extract(\(record), \(path)) AS TEXT) END)"
    }

    /// The member `field` of the current row's `record` as a parent's key, the expression the
    /// index on a parent field is made with (`indexes(for:)`): its text where SQL spells it as
    /// `scalarText(_:)` does (a string, an integer but zero), 0 for any other scalar (a real,
    /// `true`, `null`, `-0`, an integer past 64 bits: Swift checks those rows), NULL for a
    /// missing member, an array or an object (no parent has them as id). Nil for a name no
    /// path spells.
    static func parentKey(at field: String) -> String? {
        guard let path = path(field) else { return nil }
        let value = "json_extract(record, \(path))"
        return """
            (CASE json_type(record, \(path)) WHEN 'text' THEN \(value) \
            WHEN 'integer' THEN (CASE WHEN typeof(\(value)) = 'integer' AND \(value) <> 0 THEN CAST(\(value) AS TEXT) ELSE 0 END) \
            WHEN 'real' THEN 0 WHEN 'true' THEN 0 WHEN 'false' THEN 0 WHEN 'null' THEN 0 END)
            """
    }

    /// Whether the member `field` of the current row's `record` holds a value whose text SQL does
    /// not spell as JSON has it (a real, `true`, `null`, an integer past 64 bits, `-0`): a
    /// condition keeps such a row for Swift's check.
    static func inexact(at field: String) -> String {
        guard let path = path(field) else { return "1" }
        let value = "json_extract(record, \(path))"
        return """
            (json_type(record, \(path)) NOT IN ('text', 'integer') \
            OR (json_type(record, \(path)) = 'integer' AND (typeof(\(value)) <> 'integer' OR \(value) = 0)))
            """
    }

    /// The query of the membership records of `link` whose user field may be `userID`, by the
    /// index on that field, with a role of text: the record when a value of the user or the row
    /// is one SQL does not spell as Swift, else NULL; the user's and the row's texts; the role.
    /// Nil when a field has a name no path spells. In
    /// no order: an order by `row_id` makes the planner read the collection in order instead.
    static func memberships(in link: SharingRule.Membership, userID: String) -> (sql: String, arguments: [SQLValue])? {
        guard let role = path(link.role), let user = exactText(at: link.user), let field = exactText(at: link.field) else { return nil }
        var arguments: [SQLValue] = []
        let matching = userMatch(link.user, userID, &arguments)
        let sql = """
            SELECT CASE WHEN \(inexact(at: link.user)) OR \(inexact(at: link.field)) THEN record END, \(user), \(field), \
            json_extract(record, \(role)) FROM \(SQLiteSchema.records) WHERE collection = \(literal(link.collection)) \
            AND \(matching) AND json_type(record, \(role)) = 'text'
            """
        return (sql, arguments)
    }

    /// A condition keeping the rows whose `field` (`id`: the row's id) may be one of `values`,
    /// through an index: the ids' texts; a field's texts, and the numbers (or booleans) they
    /// spell. Those that SQL keeps are checked byte for byte in Swift.
    static func fieldIsOneOf(_ field: String, _ values: [String]) -> (condition: String, arguments: [SQLValue]) {
        if field == "id" { return ("id_text IN (SELECT value FROM json_each(?))", [SQLiteBackend.text(.array(values.map(JSONValue.string)))]) }
        guard let extract = extract(field) else { return ("1", []) }
        var candidates: [JSONValue] = []
        for value in values {
            candidates.append(.string(value))
            if let integer = Int64(value) { candidates.append(.number(JSONNumber(integer))) }
            if let real = Double(value), real.isFinite, let number = JSONNumber(exactly: real) { candidates.append(.number(number)) }
            if value == "true" || value == "false" { candidates.append(.number(JSONNumber(value == "true" ? 1 : 0))) }
        }
        return ("\(extract) IN (SELECT value FROM json_each(?))", [SQLiteBackend.text(.array(candidates))])
    }

    /// `json_extract(record, <path>)`, as the expression indexes spell it.
    static func extract(_ field: String) -> String? {
        path(field).map { "json_extract(record, \($0))" }
    }

    /// A condition keeping the rows whose `field` may be `userID` (as text), through the index on
    /// `json_extract` of the field: the text itself, and the number (or boolean) it spells, bound
    /// to `arguments` (a user's id comes from a token). Those that SQL keeps are checked byte for
    /// byte in Swift. `1` for a field no path spells.
    static func userMatch(_ field: String, _ userID: String, _ arguments: inout [SQLValue]) -> String {
        guard let extract = extract(field), let path = path(field) else { return "1" }
        var candidates: [SQLValue] = [.text(userID)]
        if let integer = Int64(userID) { candidates.append(.integer(integer)) }
        if let real = Double(userID), real.isFinite { candidates.append(.real(real)) }
        if userID == "true" { candidates.append(.integer(1)) }
        if userID == "false" { candidates.append(.integer(0)) }
        arguments += candidates
        let known = "\(extract) IN (\(candidates.map { _ in "?" }.joined(separator: ", ")))"
        return userID == "null" ? "(\(known) OR json_type(record, \(path)) = 'null')" : known
    }

    /// A condition on the current row (its `record` and `id_text`) that keeps every row `filter`
    /// admits, and leaves out most it refuses (its subqueries each read one collection, so their
    /// `record` is their own row's): a user's memberships through the index on their user field,
    /// parents by the records' ids. A part no path spells keeps every row; Swift checks each
    /// kept row that `vouch(_:row:depth:_:)` does not vouch for.
    static func condition(_ filter: RowFilter, _ arguments: inout [SQLValue]) -> String {
        switch filter {
        case .everything: return "1"
        case .nothing: return "0"
        case .ownedBy(let field, let userID):
            guard let text = exactText(at: field) else { return "1" }
            arguments.append(.text(userID))
            return "(\(text) = ? OR \(inexact(at: field)))"
        case .member(let link, let userID, let roles):
            guard let field = exactText(at: link.field), let role = extract(link.role) else { return "1" }
            func memberships() -> String {
                """
                FROM \(SQLiteSchema.records) WHERE collection = \(literal(link.collection)) \
                AND \(userMatch(link.user, userID, &arguments)) AND \(role) IN (\(roles.map(literal).joined(separator: ", ")))
                """
            }
            // The rows the user's memberships name; all of them when one names its row by a value
            // SQL does not spell (a subquery of its own, made once).
            let named = "id_text IN (SELECT \(field) \(memberships()))"
            return "(\(named) OR EXISTS (SELECT 1 \(memberships()) AND \(inexact(at: link.field))))"
        case .parent(let field, let collection, let rows):
            // By the index on the parent key: the rows naming one of the parents, and those
            // naming theirs by a value SQL does not spell (key 0). `+id_text` has no affinity,
            // so that the comparison is the index's (TEXT affinity would rule it out), and
            // never equals 0.
            guard let key = parentKey(at: field) else { return "1" }
            let parents = "SELECT +id_text FROM \(SQLiteSchema.records) WHERE collection = \(literal(collection)) AND \(condition(rows, &arguments))"
            return "\(key) IN (SELECT 0 UNION ALL \(parents))"
        case .any(let filters):
            return "(" + filters.map { condition($0, &arguments) }.joined(separator: " OR ") + ")"
        }
    }

    /// Whether `filter` keeps rows by their parent (`condition(_:_:)` then reads the index on
    /// the parent key).
    static func readsParents(_ filter: RowFilter) -> Bool {
        switch filter {
        case .parent: true
        case .any(let filters): filters.contains(where: readsParents)
        case .everything, .nothing, .ownedBy, .member: false
        }
    }

    /// A condition on the row `row` (a table alias) that holds only for rows `filter` admits:
    /// where SQL spells each value as Swift does (strings, integers), false for any other
    /// value. A row it holds for needs no check in Swift. Each part looks up one row's facts by
    /// index (correlated): its parent by id, the memberships on it by their row field, so that
    /// a few rows cost a few lookups, not a user's every membership.
    static func vouch(_ filter: RowFilter, row: String, depth: Int = 0, _ arguments: inout [SQLValue]) -> String {
        switch filter {
        case .everything: return "1"
        case .nothing: return "0"
        case .ownedBy(let field, let userID):
            guard let text = exactText(at: field, of: row) else { return "0" }
            arguments.append(.text(userID))
            return "\(text) = ?"
        case .member(let link, let userID, let roles):
            let member = "m\(depth)"
            guard let field = exactText(at: link.field, of: member), let user = exactText(at: link.user, of: member),
                  let fieldPath = path(link.field), let role = path(link.role)
            else { return "0" }
            arguments.append(.text(userID))
            return """
                EXISTS (SELECT 1 FROM \(SQLiteSchema.records) AS \(member) WHERE \(member).collection = \(literal(link.collection)) \
                AND json_extract(\(member).record, \(fieldPath)) IN (\(row).id_text, \(row).integer_id) AND \(field) = \(row).id_text \
                AND \(user) = ? AND json_extract(\(member).record, \(role)) IN (\(roles.map(literal).joined(separator: ", "))))
                """
        case .parent(let field, let collection, let rows):
            let parent = "p\(depth)"
            guard let text = exactText(at: field, of: row) else { return "0" }
            return """
                EXISTS (SELECT 1 FROM \(SQLiteSchema.records) AS \(parent) WHERE \(parent).collection = \(literal(collection)) \
                AND \(parent).id_text = \(text) AND \(vouch(rows, row: parent, depth: depth + 1, &arguments)))
                """
        case .any(let filters):
            return "(" + filters.map { vouch($0, row: row, depth: depth, &arguments) }.joined(separator: " OR ") + ")"
        }
    }

    /// The `CREATE INDEX IF NOT EXISTS` statements for `rules`: each membership collection by its
    /// user field, each collection whose rows inherit by its parent field (a membership
    /// collection by the field naming its row too). Partial indexes (`WHERE collection =
    /// '<name>'`): other collections' rows cost nothing. Their first column is the collection, so
    /// that the planner prefers them to the records' index on `collection` alone.
    static func indexes(for rules: AccessRules?) -> [String] {
        var wanted = MembershipList.links(of: rules).map { (collection: $0.collection, field: $0.user) }
        for (name, rule) in (rules?.rules ?? [:]).sorted(by: { $0.key < $1.key }) where name != "*" {
            if let parent = rule.sharing?.parent { wanted.append((name, parent.field)) }
        }
        var statements: [String] = []
        var seen = Set<String>()
        for (collection, field) in wanted {
            guard let extract = extract(field) else { continue }
            let name = indexName(collection: collection, field: field)
            guard seen.insert(name).inserted else { continue }
            statements.append(
                "CREATE INDEX IF NOT EXISTS \(name) ON \(SQLiteSchema.records) (collection, \(extract)) WHERE collection = \(literal(collection))")
        }
        // A list under a parent rule keeps the rows whose parent key names a parent the reader
        // may read: by an index on that key (`parentKey(at:)`), not a scan of the collection.
        for (name, rule) in (rules?.rules ?? [:]).sorted(by: { $0.key < $1.key }) where name != "*" {
            guard let parent = rule.sharing?.parent, let key = parentKey(at: parent.field) else { continue }
            let index = parentKeyIndexName(collection: name, field: parent.field)
            guard seen.insert(index).inserted else { continue }
            statements.append("CREATE INDEX IF NOT EXISTS \(index) ON \(SQLiteSchema.records) (collection, \(key)) WHERE collection = \(literal(name))")
        }
        return statements
    }

    /// The name of the index on a collection's parent key (`parentKey(at:)`).
    static func parentKeyIndexName(collection: String, field: String) -> String {
        "modelsync_server_records_parent_" + indexName(collection: collection, field: field).dropFirst("modelsync_server_records_field_".count)
    }

    /// An index's name for a collection's field: a digest of both (FNV-1a, stable across
    /// processes), so that any names make one valid, fixed identifier.
    static func indexName(collection: String, field: String) -> String {
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(collection.utf8.count):\(collection)\(field.utf8.count):\(field)".utf8 { digest = (digest ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(digest, radix: 16)
        return "modelsync_server_records_field_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
