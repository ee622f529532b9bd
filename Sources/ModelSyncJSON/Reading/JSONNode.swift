/// The kind of a value on a JSON tape.
enum JSONNodeKind: UInt8, Sendable {
    case null, `false`, `true`, number, string, array, object
}

/// One value of a parsed document, stored flat on the tape in document order.
///
/// An array node is followed by its elements' subtrees; an object node by key (a string node),
/// value subtree, key, value subtree, and so on. `end` lets a reader skip a whole subtree.
struct JSONNode: Sendable {
    var kind: JSONNodeKind
    /// A combination of ``hasEscapes``, ``isFloat`` and ``isNegative``.
    var flags: UInt8
    /// Strings: offset just after the opening quote. Numbers and literals: offset of the first
    /// character. Containers: offset of `[` or `{`.
    var start: UInt32
    /// Strings: raw byte count between the quotes. Numbers and literals: byte count. Arrays: element
    /// count. Objects: member count.
    var length: UInt32
    /// The index of the first node after this node's subtree (scalars: own index + 1).
    var end: UInt32

    /// A string contains at least one backslash escape.
    static let hasEscapes: UInt8 = 1
    /// A number has a fraction or an exponent.
    static let isFloat: UInt8 = 2
    /// A number starts with a minus sign.
    static let isNegative: UInt8 = 4
}
