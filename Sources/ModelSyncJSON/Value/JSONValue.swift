import ModelSyncCore

/// Any JSON value, as a tree.
///
/// Build one with literals, parse one from text, read it with subscripts and typed accessors:
///
/// ```swift
/// var user: JSONValue = ["name": "Ada", "tags": ["admin"], "age": 36]
/// user["name"]?.stringValue                          // "Ada"
/// user[JSONPath(parsing: "tags[0]")]                  // "admin"
/// user[JSONPath(parsing: "address.city")] = "London"  // creates "address"
/// user.description  // {"name":"Ada","tags":["admin"],"age":36,"address":{"city":"London"}}
/// ```
///
/// Numbers keep their source text (see ``JSONNumber``) and objects keep their key order (see
/// ``JSONObject``), so parsing and writing a document changes only its whitespace.
public enum JSONValue: Sendable, Hashable, CustomStringConvertible, ExpressibleByNilLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, with its exact text.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, with its key order.
    case object(JSONObject)

    // MARK: Parsing

    /// Parses JSON text.
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 encoded JSON text.
    ///   - maxDepth: The deepest nesting of arrays and objects accepted.
    /// - Throws: ``JSONError`` for malformed input, and for strings holding an escaped lone
    ///   surrogate (`"\uD800"`), which Swift strings cannot represent.
    public init(parsing bytes: [UInt8], maxDepth: Int = 512) throws {
        try self.init(document: JSONDocument(bytes: bytes, maxDepth: maxDepth))
    }

    /// The value of an already parsed document: parse once, then both decode models from the
    /// document and read other members as values.
    ///
    /// - Throws: ``JSONError`` when a string or number of the document cannot be converted.
    public init(document: JSONDocument) throws {
        self = try document.withTape { try JSONValue(tape: $0, node: 0) }
    }

    /// Parses JSON text.
    ///
    /// - Throws: ``JSONError`` for malformed input, and for strings holding an escaped lone
    ///   surrogate (`"\uD800"`), which Swift strings cannot represent.
    public init(parsing string: String, maxDepth: Int = 512) throws {
        try self.init(parsing: Array(string.utf8), maxDepth: maxDepth)
    }

    /// Builds the value of the subtree at `node`, without recursion.
    init(tape: JSONTape, node: Int) throws {
        // Containers still being filled, innermost last.
        var open: [Builder] = []
        var i = node
        while true {
            let n = tape[i]
            var value: JSONValue
            switch n.kind {
            case .null: value = .null
            case .true: value = .bool(true)
            case .false: value = .bool(false)
            case .number: value = .number(JSONNumber(validatedText: tape.rawText(i)))
            case .string: value = .string(try tape.string(i))
            case .array, .object:
                if n.length > 0 {
                    open.append(Builder(isObject: n.kind == .object, count: Int(n.length)))
                    i += 1
                    if n.kind == .object {
                        open[open.count - 1].key = try tape.string(i)
                        i += 1
                    }
                    continue
                }
                value = n.kind == .array ? .array([]) : .object(JSONObject())
            }
            i += 1
            // Add the value to its container; a container that is now full is itself a value.
            while !open.isEmpty {
                open[open.count - 1].add(value)
                guard open[open.count - 1].isFull else { break }
                value = open.removeLast().value
            }
            guard let innermost = open.last else {
                self = value
                return
            }
            if innermost.isObject {
                open[open.count - 1].key = try tape.string(i)
                i += 1
            }
        }
    }

    /// An array or object under construction.
    private struct Builder {
        let isObject: Bool
        var remaining: Int
        var elements: [JSONValue] = []
        var members = JSONObject()
        /// The key of the member whose value comes next.
        var key = ""

        init(isObject: Bool, count: Int) {
            self.isObject = isObject
            remaining = count
            if isObject { members.reserveCapacity(count) } else { elements.reserveCapacity(count) }
        }

        var isFull: Bool { remaining == 0 }

        mutating func add(_ value: JSONValue) {
            if isObject { members[key] = value } else { elements.append(value) }
            remaining -= 1
        }

        var value: JSONValue { isObject ? .object(members) : .array(elements) }
    }

    // MARK: Writing

    /// The value as compact JSON text, object members in their stored order.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }

    /// Appends the value as compact JSON text.
    ///
    /// Works without recursion, so values nested far deeper than any parser limit still write.
    public func write(to writer: inout JSONWriter) {
        // Containers being written, innermost last.
        var open: [WriteFrame] = []
        var pending: JSONValue? = self
        while true {
            if let value = pending {
                pending = nil
                switch value {
                case .null:
                    writer.writeNull()
                case .bool(let value):
                    writer.writeBool(value)
                case .number(let number):
                    var text = number.text
                    text.withUTF8 { writer.writeRaw($0) }
                case .string(let string):
                    writer.writeString(string)
                case .array(let elements):
                    writer.writeByte(UInt8(ascii: "["))
                    open.append(.array(elements.makeIterator(), isFirst: true))
                case .object(let object):
                    writer.writeByte(UInt8(ascii: "{"))
                    open.append(.object(object.makeIterator(), isFirst: true))
                }
            }
            guard let frame = open.popLast() else { return }
            switch frame {
            case .array(var elements, let isFirst):
                guard let element = elements.next() else {
                    writer.writeByte(UInt8(ascii: "]"))
                    continue
                }
                if !isFirst { writer.writeByte(UInt8(ascii: ",")) }
                open.append(.array(elements, isFirst: false))
                pending = element
            case .object(var members, let isFirst):
                guard let member = members.next() else {
                    writer.writeByte(UInt8(ascii: "}"))
                    continue
                }
                if !isFirst { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeString(member.key)
                writer.writeByte(UInt8(ascii: ":"))
                open.append(.object(members, isFirst: false))
                pending = member.value
            }
        }
    }

    /// A container part-way through ``write(to:)``.
    private enum WriteFrame {
        case array(IndexingIterator<[JSONValue]>, isFirst: Bool)
        case object(IndexingIterator<[JSONObject.Element]>, isFirst: Bool)
    }

    // MARK: Equality and hashing

    /// Whether both values are the same JSON: strings compare by their UTF-8 bytes (two strings
    /// Swift calls equal, such as `"é"` and `"e\u{301}"`, are different JSON), numbers by value
    /// (see ``JSONNumber``), objects by their members in any order.
    ///
    /// Works without recursion, so any depth compares.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        var pairs: [(JSONValue, JSONValue)] = [(lhs, rhs)]
        while let (left, right) = pairs.popLast() {
            switch (left, right) {
            case (.null, .null):
                continue
            case (.bool(let a), .bool(let b)):
                guard a == b else { return false }
            case (.number(let a), .number(let b)):
                guard a == b else { return false }
            case (.string(let a), .string(let b)):
                guard a.isIdentical(to: b) else { return false }
            case (.array(let a), .array(let b)):
                guard a.count == b.count else { return false }
                pairs.append(contentsOf: zip(a, b))
            case (.object(let a), .object(let b)):
                guard a.count == b.count else { return false }
                for (key, value) in a {
                    guard let other = b[key] else { return false }
                    pairs.append((value, other))
                }
            default:
                return false
            }
        }
        return true
    }

    /// Hashes the value, consistent with `==`.
    ///
    /// Only the first `hashedDepth` levels contribute: equal values still hash equally, and
    /// hashing a deeply nested value cannot overflow the stack.
    public func hash(into hasher: inout Hasher) {
        hash(into: &hasher, depth: 0)
    }

    /// How many levels of nesting ``hash(into:)`` looks at.
    static let hashedDepth = 32

    func hash(into hasher: inout Hasher, depth: Int) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .number(let number):
            hasher.combine(2 as UInt8)
            hasher.combine(number)
        case .string(let string):
            hasher.combine(3 as UInt8)
            hasher.combineUTF8(of: string)
        case .array(let elements):
            hasher.combine(4 as UInt8)
            hasher.combine(elements.count)
            guard depth < Self.hashedDepth else { return }
            for element in elements { element.hash(into: &hasher, depth: depth + 1) }
        case .object(let object):
            hasher.combine(5 as UInt8)
            guard depth < Self.hashedDepth else { return hasher.combine(object.count) }
            object.hash(into: &hasher, depth: depth + 1)
        }
    }

    /// The value as compact JSON text.
    public var description: String {
        String(decoding: jsonBytes(), as: UTF8.self)
    }

    // MARK: Access

    /// The member for `key` if this is an object, otherwise nil.
    ///
    /// Assigning sets or (with nil) removes the member. Assigning a value to `null` first turns it
    /// into an empty object, which makes building values convenient; assigning to an array or a
    /// scalar does nothing.
    public subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let object) = self else { return nil }
            return object[key]
        }
        set {
            set(newValue, at: [.key(key)])
        }
    }

    /// The element at `index` if this is an array and the index is in range, otherwise nil.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The value at `path` (e.g. `posts[3].user.id`), or nil if any step is missing.
    ///
    /// Assigning a value creates missing objects along the path (and turns `null` into an object)
    /// but never creates array elements: an index must be in range. Assigning nil removes the
    /// object member or the array element at the end of the path (later elements move up). An
    /// assignment that cannot be carried out, e.g. a key step through a string, changes nothing.
    /// Assigning to the empty path replaces the whole value (nil makes it `null`).
    public subscript(path: JSONPath) -> JSONValue? {
        get {
            var value = self
            for component in path.components {
                switch component {
                case .key(let key): guard let next = value[key] else { return nil }; value = next
                case .index(let index): guard let next = value[index] else { return nil }; value = next
                }
            }
            return value
        }
        set {
            set(newValue, at: path.components[...])
        }
    }

    /// Assigns `newValue` at `path`; returns false, having changed nothing, when that is
    /// impossible or a no-op.
    @discardableResult
    private mutating func set(_ newValue: JSONValue?, at path: ArraySlice<JSONPath.Component>) -> Bool {
        guard let component = path.first else {
            self = newValue ?? .null
            return true
        }
        let rest = path.dropFirst()
        switch component {
        case .key(let key):
            var object: JSONObject
            switch self {
            case .object(let existing): object = existing
            case .null: object = JSONObject()
            default: return false
            }
            let wasNull = isNull
            // Drop self's reference so that the object is uniquely owned and mutates in place.
            self = .null
            let changed: Bool
            if rest.isEmpty {
                changed = newValue != nil || object[key] != nil
                if changed { object[key] = newValue }
            } else {
                // Likewise move the child out of the object while it changes.
                var child = JSONValue.null
                let existed = object[key] != nil
                if let existing = object[key] {
                    child = existing
                    object[key] = .null
                }
                changed = child.set(newValue, at: rest)
                if changed || existed { object[key] = child }
            }
            self = changed || !wasNull ? .object(object) : .null
            return changed
        case .index(let index):
            guard case .array(var elements) = self, elements.indices.contains(index) else { return false }
            self = .null
            defer { self = .array(elements) }
            if rest.isEmpty {
                if let newValue { elements[index] = newValue } else { elements.remove(at: index) }
                return true
            }
            return elements[index].set(newValue, at: rest)
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    /// The number as an `Int`, if this is a whole number that fits (`7`, `7.0`, `7e0`).
    public var intValue: Int? {
        guard case .number(let number) = self, let value = number.int64Value else { return nil }
        return Int(exactly: value)
    }

    /// The number as the nearest `Double`, if this is a number.
    public var doubleValue: Double? {
        guard case .number(let number) = self else { return nil }
        return number.doubleValue
    }

    /// The Boolean, if this is `true` or `false`.
    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }

    /// The object, if this is an object.
    public var objectValue: JSONObject? {
        guard case .object(let object) = self else { return nil }
        return object
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    // MARK: Literals

    /// Creates `null`.
    public init(nilLiteral: ()) {
        self = .null
    }

    /// Creates `true` or `false`.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }

    /// Creates a number.
    public init(integerLiteral value: Int) {
        self = .number(JSONNumber(value))
    }

    /// Creates a number; an infinite literal becomes `null`, as in JavaScript's `JSON.stringify`.
    public init(floatLiteral value: Double) {
        self = JSONNumber(exactly: value).map(JSONValue.number) ?? .null
    }

    /// Creates a string.
    public init(stringLiteral value: String) {
        self = .string(value)
    }

    /// Creates an array.
    public init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }

    /// Creates an object; a repeated key keeps its first position and last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements))
    }
}
