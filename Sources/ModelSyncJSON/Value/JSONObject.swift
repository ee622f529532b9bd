import ModelSyncCore

/// A JSON object: members in insertion order, looked up by key.
///
/// Lookup is a linear scan for up to 16 members and a hash table beyond, so large objects stay
/// fast. Assigning to an existing key keeps its position; when parsing a document with duplicate
/// keys, the last value wins. Two objects are equal when they have the same members, in any order.
///
/// Keys are compared by their UTF-8 bytes, not by Swift's `String` equality: `"é"` and
/// `"e\u{301}"` are two different keys, as they are in JSON text.
public struct JSONObject: Sendable, Hashable, Sequence, CustomStringConvertible, ExpressibleByDictionaryLiteral {
    /// A member: its key and value.
    public typealias Element = (key: String, value: JSONValue)

    private var entries: [Element] = []
    /// Key → position in `entries`, kept only for objects with more than `indexThreshold` members.
    private var index: [UTF8Key: Int]?
    private static let indexThreshold = 16

    /// Creates an empty object.
    public init() {}

    /// Creates an object from a literal; a repeated key keeps its first position and last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }

    /// Creates an object from key-value pairs; a repeated key keeps its first position and last
    /// value.
    public init(_ pairs: [(String, JSONValue)]) {
        entries.reserveCapacity(pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    /// The number of members.
    public var count: Int { entries.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { entries.isEmpty }

    /// The keys, in order.
    public var keys: [String] { entries.map(\.key) }

    /// The values, in key order.
    public var values: [JSONValue] { entries.map(\.value) }

    /// The value for `key`, or nil if absent. Assigning nil removes the member; assigning to a new
    /// key appends it.
    public subscript(key: String) -> JSONValue? {
        get {
            position(of: key).map { entries[$0].value }
        }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            if let position = position(of: key) {
                entries[position].value = newValue
                return
            }
            entries.append((key, newValue))
            if index != nil {
                index?[UTF8Key(key)] = entries.count - 1
            } else if entries.count > Self.indexThreshold {
                rebuildIndex()
            }
        }
    }

    /// Removes the member for `key` and returns its value, or nil if there was none.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let position = position(of: key) else { return nil }
        let value = entries.remove(at: position).value
        if index != nil { rebuildIndex() }
        return value
    }

    /// Reserves room for `count` members.
    mutating func reserveCapacity(_ count: Int) {
        entries.reserveCapacity(count)
    }

    private func position(of key: String) -> Int? {
        if let index { return index[UTF8Key(key)] }
        return entries.firstIndex { UTF8Key.sameBytes($0.key, key) }
    }

    private mutating func rebuildIndex() {
        guard entries.count > Self.indexThreshold else {
            index = nil
            return
        }
        var index = [UTF8Key: Int](minimumCapacity: entries.count)
        for (position, entry) in entries.enumerated() { index[UTF8Key(entry.key)] = position }
        self.index = index
    }

    /// Iterates over the members in order.
    public func makeIterator() -> IndexingIterator<[Element]> {
        entries.makeIterator()
    }

    /// Whether both objects have the same members, in any order (see ``JSONValue/==(_:_:)``).
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        JSONValue.object(lhs) == JSONValue.object(rhs)
    }

    /// Hashes the members independently of their order, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hash(into: &hasher, depth: 0)
    }

    func hash(into hasher: inout Hasher, depth: Int) {
        var combined = 0
        for (key, value) in entries {
            var member = Hasher()
            member.combineUTF8(of: key)
            value.hash(into: &member, depth: depth)
            combined ^= member.finalize()  // XOR does not depend on the order
        }
        hasher.combine(count)
        hasher.combine(combined)
    }

    /// The object as compact JSON text.
    public var description: String {
        JSONValue.object(self).description
    }
}

/// A string that hashes and compares by its UTF-8 bytes, for keys that must not merge strings
/// Swift calls equal (canonically equivalent) but whose bytes differ.
struct UTF8Key: Hashable {
    let string: String

    init(_ string: String) { self.string = string }

    static func == (lhs: UTF8Key, rhs: UTF8Key) -> Bool {
        sameBytes(lhs.string, rhs.string)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combineUTF8(of: string)
    }

    /// Whether two strings have the same UTF-8 bytes.
    static func sameBytes(_ lhs: String, _ rhs: String) -> Bool { lhs.isIdentical(to: rhs) }
}

extension Hasher {
    /// Feeds the UTF-8 bytes of `string` (and their count, so concatenations differ).
    mutating func combineUTF8(of string: String) {
        var string = string
        string.withUTF8 { bytes in
            combine(bytes.count)
            combine(bytes: UnsafeRawBufferPointer(bytes))
        }
    }
}
