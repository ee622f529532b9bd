import Foundation
import ModelSyncJSON
import ModelSyncProtocol

/// The query string of a request, in order, with repeated names kept.
package struct QueryParameters: Sendable {
    package var pairs: [(name: String, value: String)]

    package init(_ query: String?) {
        pairs = (query ?? "").split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), !name.isEmpty else { return nil }
            let value = parts.count > 1 ? Self.decode(parts[1]) ?? "" : ""
            return (name, value)
        }
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// Every value of `name`, with comma-separated lists split (`_sort=a,b`).
    package func values(_ name: String) -> [String] {
        pairs.filter { $0.name == name }.flatMap { $0.value.split(separator: ",").map(String.init) }
    }

    package func first(_ name: String) -> String? { pairs.first { $0.name == name }?.value }

    /// A non-negative integer parameter; a malformed one is a 400.
    package func integer(_ name: String, minimum: Int = 0) throws -> Int? {
        guard let text = first(name) else { return nil }
        guard let value = Int(text), value >= minimum else {
            throw APIError.badRequest("\(name) must be an integer of at least \(minimum), got \"\(text)\"")
        }
        return value
    }
}

/// The text a value is compared by in filters: strings as they are, numbers by their text,
/// `true`/`false`/`null` as written.
package func scalarText(_ value: JSONValue) -> String? {
    switch value {
    case .string(let string): string
    case .number(let number): number.text
    case .bool(let bool): bool ? "true" : "false"
    case .null: "null"
    case .array, .object: nil
    }
}

/// The value at a dotted field path (`author.name`).
package func value(of item: JSONValue, at field: String) -> JSONValue? {
    // Most fields are no path: read without splitting, which allocated for every row a filter
    // or sort looks at (it made `GET /posts?userId=` over 1,000 rows twice as slow).
    guard field.utf8.contains(UInt8(ascii: ".")) else { return item[field] }
    var current: JSONValue? = item
    for key in field.split(separator: ".") { current = current?[String(key)] }
    return current
}

/// Orders two field values: numbers numerically, everything else by text; missing values last.
private func precedes(_ lhs: JSONValue?, _ rhs: JSONValue?) -> Bool? {
    switch (lhs, rhs) {
    case (nil, nil): return nil
    case (nil, _): return false
    case (_, nil): return true
    case (.number(let a)?, .number(let b)?):
        return a.doubleValue == b.doubleValue ? nil : a.doubleValue < b.doubleValue
    case (let a?, let b?):
        let (x, y) = (scalarText(a) ?? a.description, scalarText(b) ?? b.description)
        return x == y ? nil : x < y
    }
}

/// Compares a field value with a query value: numerically when both are numbers.
private func compare(_ value: JSONValue, _ text: String) -> ComparisonResult? {
    if let number = value.doubleValue, let other = Double(text) {
        return number == other ? .orderedSame : number < other ? .orderedAscending : .orderedDescending
    }
    guard let string = scalarText(value) else { return nil }
    return string == text ? .orderedSame : string < text ? .orderedAscending : .orderedDescending
}

/// Filters, full-text search and sorting of a collection (json-server's conventions), as data:
/// the JSON backend evaluates it in memory, PostgreSQL as SQL.
package struct ListQuery: Sendable {
    /// A comparison of `field_gte=…` and its kin.
    package enum Comparison: String, Sendable, CaseIterable {
        case gte = "_gte", lte = "_lte", gt = "_gt", lt = "_lt", ne = "_ne", like = "_like"
    }

    /// `field=value` filters: the field's text must be one of the values.
    package private(set) var equal: [(field: String, accepted: [String])] = []
    /// `field_gte=value` and its kin; `_like` holds a regular expression (case-insensitive),
    /// parsed and bounded (``LikePattern``).
    package private(set) var conditions: [(field: String, comparison: Comparison, text: String, pattern: LikePattern?)] = []
    /// `q=`: lowercased.
    package private(set) var search: String?
    package private(set) var sort: [(field: String, descending: Bool)] = []

    package init(_ parameters: QueryParameters) throws {
        for (name, text) in parameters.pairs {
            if name == "q" {
                search = text.lowercased()
            } else if name.hasPrefix("_") {
                continue
            } else if let comparison = Comparison.allCases.first(where: { name.hasSuffix($0.rawValue) && name.count > $0.rawValue.count }) {
                let pattern = try comparison == .like ? Self.pattern(text, of: name) : nil
                conditions.append((String(name.dropLast(comparison.rawValue.count)), comparison, text, pattern))
            } else if let index = equal.firstIndex(where: { $0.field == name }) {
                equal[index].accepted.append(text)
            } else {
                equal.append((name, [text]))
            }
        }
        let orders = parameters.values("_order").map { $0.lowercased() }
        for (index, field) in parameters.values("_sort").enumerated() {
            // `_sort=-views` (json-server 1.x) and `_order=desc` (0.x) both sort descending.
            let descending = field.hasPrefix("-") || (index < orders.count ? orders[index] : orders.last) == "desc"
            sort.append((field.hasPrefix("-") ? String(field.dropFirst()) : field, descending))
        }
    }

    /// Adds `field=value` (a nested route's parent).
    package mutating func require(_ field: String, equals text: String) {
        equal.append((field, [text]))
    }

    /// A `_like` parameter's pattern; a 400 naming what is refused (docs/PROTOCOL.md lists the
    /// syntax accepted).
    static func pattern(_ text: String, of parameter: String) throws -> LikePattern {
        do {
            return try LikePattern(text)
        } catch {
            throw APIError.badRequest("invalid regular expression in \(parameter): \(error)")
        }
    }

    /// Whether anything filters: a field, a comparison or `q`.
    package var filters: Bool { !equal.isEmpty || !conditions.isEmpty || search != nil }

    /// Whether the query takes time the caller controls per item: a pattern or a search.
    package var scansText: Bool { search != nil || conditions.contains { $0.comparison == .like } }

    /// The test of one item against the filters (sorting aside), built once for many items.
    package func matcher() -> @Sendable (JSONValue) -> Bool {
        let tests = conditions.map { condition in (condition.field, Self.test(condition.comparison, condition.text, condition.pattern)) }
        return { [self] item in matches(item, tests) }
    }

    /// The matching items, sorted (stable: ties keep the data's order).
    package func apply(to items: [JSONValue]) -> [JSONValue] {
        let tests = conditions.map { condition in (condition.field, Self.test(condition.comparison, condition.text, condition.pattern)) }
        var result = items.filter { matches($0, tests) }
        if !sort.isEmpty {
            result = result.enumerated().sorted { a, b in
                for key in sort {
                    if let before = precedes(value(of: a.element, at: key.field), value(of: b.element, at: key.field)) {
                        return before != key.descending
                    }
                }
                return a.offset < b.offset
            }.map(\.element)
        }
        return result
    }

    private static func test(_ comparison: Comparison, _ text: String, _ pattern: LikePattern?) -> @Sendable (JSONValue) -> Bool {
        switch comparison {
        case .gte: return { compare($0, text).map { $0 != .orderedAscending } ?? false }
        case .lte: return { compare($0, text).map { $0 != .orderedDescending } ?? false }
        case .gt: return { compare($0, text) == .orderedDescending }
        case .lt: return { compare($0, text) == .orderedAscending }
        case .ne: return { compare($0, text) != .orderedSame }
        case .like:
            guard let pattern else { return { _ in false } }
            return { value in scalarText(value).map(pattern.matches) ?? false }
        }
    }

    private func matches(_ item: JSONValue, _ tests: [(String, @Sendable (JSONValue) -> Bool)]) -> Bool {
        for (field, accepted) in equal {
            guard let found = value(of: item, at: field), let text = scalarText(found), accepted.contains(text) else {
                return false
            }
        }
        for (field, test) in tests {
            guard let found = value(of: item, at: field), test(found) else { return false }
        }
        if let search, !Self.contains(item, search) { return false }
        return true
    }

    /// Whether any string or number in `value` contains `needle` (lowercased), case-insensitively.
    private static func contains(_ value: JSONValue, _ needle: String) -> Bool {
        switch value {
        case .string(let string): string.lowercased().contains(needle)
        case .number(let number): number.text.contains(needle)
        case .array(let elements): elements.contains { contains($0, needle) }
        case .object(let object): object.values.contains { contains($0, needle) }
        case .bool, .null: false
        }
    }
}

/// The slice of a list that a request asks for: `_page` with `_limit`/`_per_page`, or
/// `_start`/`_end`/`_limit`.
package struct Slice: Sendable {
    package var range: Range<Int>
    /// Page links (`first`, `prev`, `next`, `last`) as query values of `_page`.
    package var pages: [(rel: String, page: Int)] = []

    package init(_ parameters: QueryParameters, count: Int, defaultPageSize: Int) throws {
        // Every bound is checked, whichever parameters apply: a malformed one is refused beside
        // the others (the document's bounds hold on every request).
        let page = try parameters.integer("_page", minimum: 1)
        let perPage = try parameters.integer("_per_page", minimum: 1)
        let limit = try parameters.integer("_limit", minimum: page == nil ? 0 : 1)
        let (start, end) = (try parameters.integer("_start"), try parameters.integer("_end"))
        if let page {
            let size = perPage ?? limit ?? defaultPageSize
            let offset = min((page - 1).multipliedReportingOverflow(by: size).overflow ? count : (page - 1) * size, count)
            range = offset..<min(offset + min(size, count), count)
            // `count + size - 1` would overflow for `_limit=Int.max`.
            let last = count == 0 ? 1 : (count - 1) / size + 1
            pages = [("first", 1)]
            if page > 1 { pages.append(("prev", min(page - 1, last))) }
            if page < last { pages.append(("next", page + 1)) }
            pages.append(("last", last))
            return
        }
        let first = min(start ?? 0, count)
        var last = count
        if let limit { last = min(first + min(limit, count), count) }
        if let end { last = min(end, count) }
        range = first..<max(first, last)
    }
}
