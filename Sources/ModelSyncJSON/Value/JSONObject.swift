/// A JSON object: members in insertion order, looked up by key.
///
/// Lookup is a linear scan for up to 16 members and a hash table beyond, so large objects stay
/// fast. Assigning to an existing key keeps its position; when parsing a document with duplicate
/// keys, the last value wins. Two objects are equal when they have the same members, in any order.
public struct JSONObject: Sendable, Hashable, Sequence, CustomStringConvertible, ExpressibleByDictionaryLiteral {
    /// A member: its key and value.
    public typealias Element = (key: String, value: JSONValue)

    private var entries: [Element] = []
    /// Key → position in `entries`, kept only for objects with more than `indexThreshold` members.
    private var index: [String: Int]?
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
                index?[key] = entries.count - 1
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
        if let index { return index[key] }
        return entries.firstIndex { $0.key == key }
    }

    private mutating func rebuildIndex() {
        guard entries.count > Self.indexThreshold else {
            index = nil
            return
        }
        var index = [String: Int](minimumCapacity: entries.count)
        for (position, entry) in entries.enumerated() { index[entry.key] = position }
        self.index = index
    }

    /// Iterates over the members in order.
    public func makeIterator() -> IndexingIterator<[Element]> {
        entries.makeIterator()
    }

    /// Whether both objects have the same members, in any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.count == rhs.count && lhs.entries.allSatisfy { rhs[$0.key] == $0.value }
    }

    /// Hashes the members independently of their order, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for (key, value) in entries {
            var member = Hasher()
            member.combine(key)
            member.combine(value)
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
