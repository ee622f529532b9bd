import Foundation
import ModelSyncCore
import ModelSyncJSON
import ModelSyncSQLite
import ModelSyncServer

/// SQL text with the values of its `?`, in the order they appear in it.
struct SQLPart {
    var sql: String
    var arguments: [SQLValue]

    init(_ sql: String, _ arguments: [SQLValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    static func + (lhs: SQLPart, rhs: SQLPart) -> SQLPart {
        SQLPart(lhs.sql + rhs.sql, lhs.arguments + rhs.arguments)
    }

    static func + (lhs: SQLPart, rhs: String) -> SQLPart {
        SQLPart(lhs.sql + rhs, lhs.arguments)
    }

    static func + (lhs: String, rhs: SQLPart) -> SQLPart {
        SQLPart(lhs + rhs.sql, rhs.arguments)
    }

    /// The parts joined by `separator`.
    static func joined(_ parts: [SQLPart], by separator: String) -> SQLPart {
        SQLPart(parts.map(\.sql).joined(separator: separator), parts.flatMap(\.arguments))
    }
}

/// A list query (``/ModelSyncServer/ListQuery``) as SQL over the records' JSON text, with the
/// JSON file's rules exactly: a value's text as `scalarText(_:)` spells it (a number's as
/// written), strings compared by their bytes, numbers by the `Double` the JSON file reads, a
/// missing member matching no filter but sorting last. What SQL has no builtin for runs in Swift
/// as application functions on the reader (`functions`): the `_like` matcher (linear time), `q`
/// (Swift's lowercasing and search), a number's `Double`, a string holding U+0000 (which
/// `json_extract` cuts), and the value at a path SQLite's JSON paths do not spell. Every value of the request is bound, never spliced into the SQL.
enum ListSQL {
    /// Where a field's value is: a JSON document and a path of SQLite into it.
    struct Location {
        let document: SQLPart
        let path: SQLPart
    }

    /// The field as `value(of:at:)` reads it (the whole name when it has no dot, else the keys
    /// between dots): a path into `record` when each key is one SQLite spells as JSON text has
    /// it on every version, else `modelsync_at` reads it in Swift.
    static func location(of field: String) -> Location {
        let keys: [Substring] = field.utf8.contains(UInt8(ascii: ".")) ? field.split(separator: ".") : [Substring(field)]
        guard keys.allSatisfy(isPlain) else {
            return Location(document: SQLPart("modelsync_at(record, ?)", [.text(field)]), path: SQLPart("'$'"))
        }
        return Location(document: SQLPart("record"), path: SQLPart("?", [.text("$" + keys.map { ".\"\($0)\"" }.joined())]))
    }

    /// Whether a quoted label of a JSON path names `key` on every SQLite: not empty, and nothing
    /// the writer escapes (a quote, a backslash, a control character: older versions compare the
    /// label with the key's escaped text, newer ones with its value).
    static func isPlain(_ key: Substring) -> Bool {
        !key.isEmpty && !key.utf8.contains { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }
    }

    static func type(_ at: Location) -> SQLPart { "json_type(" + at.document + ", " + at.path + ")" }
    static func json(_ at: Location) -> SQLPart { "(" + at.document + " -> " + at.path + ")" }
    static func extract(_ at: Location) -> SQLPart { "json_extract(" + at.document + ", " + at.path + ")" }

    /// A string's value: `json_extract`, but for one that holds U+0000 (`\u0000` in its JSON
    /// text, as the writer escapes it), which `json_extract` cuts there: read in Swift.
    static func string(_ at: Location) -> SQLPart {
        "(CASE WHEN instr(" + json(at) + ", '\\u0000') > 0 THEN modelsync_string(" + json(at) + ") ELSE " + extract(at) + " END)"
    }

    /// The value's text as `scalarText(_:)` spells it: a string's value, a number's JSON text
    /// as written, `true`, `false`, `null`; NULL when it is missing, an array or an object.
    static func scalarText(_ at: Location) -> SQLPart {
        "(CASE " + type(at) + " WHEN 'text' THEN " + string(at) + " WHEN 'array' THEN NULL WHEN 'object' THEN NULL ELSE " + json(at) + " END)"
    }

    /// The text a sort compares: `scalarText`, or an array's or object's JSON text (its
    /// `description`); NULL when missing.
    static func sortText(_ at: Location) -> SQLPart {
        "(CASE " + type(at) + " WHEN 'text' THEN " + string(at) + " ELSE " + json(at) + " END)"
    }

    /// 1 for a number, 0 for another value, NULL when missing: what a sort reads to tell
    /// whether a field holds numbers in some rows and other values in others.
    static func isNumber(_ at: Location) -> SQLPart { "(" + type(at) + " IN ('integer', 'real'))" }

    /// A number's `Double`, as the JSON file reads it (`JSONNumber.doubleValue`).
    static func number(_ at: Location) -> SQLPart { "modelsync_number(" + json(at) + ")" }

    /// The condition of the query's filters, `_like` and `q`.
    static func condition(_ query: ListQuery) -> SQLPart {
        var parts: [SQLPart] = [SQLPart("1")]
        for (field, accepted) in query.equal {
            parts.append(scalarText(location(of: field)) + SQLPart(" IN (SELECT value FROM json_each(?))", [SQLiteBackend.text(.array(accepted.map(JSONValue.string)))]))
        }
        for (field, comparison, text, pattern) in query.conditions {
            let at = location(of: field)
            switch comparison {
            case .like: parts.append(pattern == nil ? SQLPart("0") : "modelsync_like(" + json(at) + SQLPart(", ?)", [.text(text)]))
            case .ne: parts.append("(" + type(at) + " IS NOT NULL AND coalesce(" + order(at, text) + " <> 0, 1))")
            case .gte: parts.append(order(at, text) + " IN (0, 1)")
            case .lte: parts.append(order(at, text) + " IN (-1, 0)")
            case .gt: parts.append(order(at, text) + " = 1")
            case .lt: parts.append(order(at, text) + " = -1")
            }
        }
        if let search = query.search { parts.append(SQLPart("modelsync_search(record, ?)", [.text(search)])) }
        return SQLPart.joined(parts.map { "(" + $0 + ")" }, by: " AND ")
    }

    /// -1, 0 or 1 as `ListQuery`'s comparison orders the value and `text`: numerically when it is
    /// a number and `text` reads as a `Double` (Swift's reading, `nan` and `inf` included), else
    /// by their texts' bytes; NULL when missing, an array or an object.
    static func order(_ at: Location, _ text: String) -> SQLPart {
        let value = scalarText(at)
        let textual = "(CASE WHEN " + value + SQLPart(" = ? THEN 0 WHEN ", [.text(text)]) + value + SQLPart(" < ? THEN -1 WHEN ", [.text(text)]) + value + " IS NOT NULL THEN 1 END)"
        guard let other = Double(text) else { return textual }
        // Nothing equals NaN or orders before it: Swift's comparison answers "after".
        let numeric = other.isNaN
            ? SQLPart("1")
            : "(CASE WHEN " + number(at) + SQLPart(" = ? THEN 0 WHEN ", [.real(other)]) + number(at) + SQLPart(" < ? THEN -1 ELSE 1 END)", [.real(other)])
        return "(CASE WHEN " + isNumber(at) + " THEN " + numeric + " ELSE " + textual + " END)"
    }

    /// The `ORDER BY` terms of the sort, then `row_id` (ties keep the data's order): missing
    /// values last (first descending); numbers by their `Double`; other values by their text's
    /// bytes. Exactly the JSON file's order when no field holds numbers in some matching rows
    /// and other values in others (`isNumber` tells); its comparison then is no order SQL can
    /// sort by, and the list sorts in Swift instead.
    ///
    /// Under a parent rule (`rows`), the last term is `+row_id`: no index gives that order, so
    /// the planner searches the index on the parent key (a few rows, then sorted) rather than
    /// read the whole collection in order to spare the sort.
    static func ordering(_ query: ListQuery, _ rows: RowFilter = .everything) -> SQLPart {
        var terms: [SQLPart] = []
        for (field, descending) in query.sort {
            let at = location(of: field), direction = descending ? " DESC" : ""
            terms.append("(" + type(at) + " IS NULL)" + direction)
            terms.append("(CASE WHEN " + isNumber(at) + " THEN " + number(at) + " END)" + direction)
            terms.append("(CASE WHEN " + isNumber(at) + " THEN NULL ELSE " + sortText(at) + " END)" + direction)
        }
        return SQLPart.joined(terms + [SQLPart(SharingSQL.readsParents(rows) ? "+row_id" : "row_id")], by: ", ")
    }

    /// The last `_like` pattern each reader parsed: a list calls the matcher once a row with the
    /// same pattern.
    private static let likePatterns = Locked<[String: LikePattern]>([:])

    /// The application functions list queries call (registered on every connection).
    static let functions: [SQLiteScalarFunction] = [
        SQLiteScalarFunction("modelsync_number", argumentCount: 1, deterministic: true) { arguments in
            guard case .text(let text) = arguments[0], let number = JSONNumber(text: text) else { return .null }
            return .real(number.doubleValue)
        },
        SQLiteScalarFunction("modelsync_string", argumentCount: 1, deterministic: true) { arguments in
            guard case .text(let json) = arguments[0], case .string(let string) = try JSONValue(parsing: Array(json.utf8)) else { return .null }
            return .text(string)
        },
        // The value's JSON text and the pattern: the value's text is `scalarText(_:)`'s, read in
        // Swift (a string's U+0000 included).
        SQLiteScalarFunction("modelsync_like", argumentCount: 2, deterministic: true) { arguments in
            guard case .text(let json) = arguments[0], case .text(let source) = arguments[1],
                  let text = ModelSyncServer.scalarText(try JSONValue(parsing: Array(json.utf8)))
            else { return .integer(0) }
            let cached = likePatterns.withLock { $0[source] }
            let pattern: LikePattern
            if let cached {
                pattern = cached
            } else {
                guard let parsed = try? LikePattern(source) else { return .integer(0) }
                pattern = parsed
                // A few patterns at a time: a client sending many costs no memory.
                likePatterns.withLock { patterns in
                    if patterns.count >= 16 { patterns.removeAll() }
                    patterns[source] = parsed
                }
            }
            return .integer(pattern.matches(text) ? 1 : 0)
        },
        SQLiteScalarFunction("modelsync_search", argumentCount: 2, deterministic: true) { arguments in
            guard case .text(let record) = arguments[0], case .text(let needle) = arguments[1] else { return .integer(0) }
            return .integer(ListQuery.contains(try JSONValue(parsing: Array(record.utf8)), needle) ? 1 : 0)
        },
        SQLiteScalarFunction("modelsync_at", argumentCount: 2, deterministic: true) { arguments in
            guard case .text(let record) = arguments[0], case .text(let field) = arguments[1],
                  let found = value(of: try JSONValue(parsing: Array(record.utf8)), at: field)
            else { return .null }
            return SQLiteBackend.text(found)
        },
    ]
}
