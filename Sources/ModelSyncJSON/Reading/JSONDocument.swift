/// A parsed JSON document: the input bytes plus a flat tape of nodes that indexes every value.
///
/// Parsing validates the whole input against RFC 8259 (strict number grammar, no trailing commas,
/// no control characters in strings, UTF-8 checked inside strings) but decodes nothing: strings and
/// numbers are converted only when a reader asks for them. An optional UTF-8 byte order mark at the
/// start is skipped.
///
/// ```swift
/// let document = try JSONDocument(string: #"{"id": 7, "tags": ["a", "b"]}"#)
/// ```
public struct JSONDocument: Sendable {
    /// The input, unchanged. Node offsets point into it.
    let bytes: [UInt8]
    /// The tape: the root value is node 0.
    let nodes: [JSONNode]

    /// Parses and validates `bytes`.
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 encoded JSON text, smaller than 4 GiB.
    ///   - maxDepth: The deepest nesting of arrays and objects accepted; deeper input throws
    ///     ``JSONError/Reason/tooDeep(limit:)``. A negative limit acts like 0 (scalars only).
    /// - Throws: ``JSONError`` with the byte offset, line and column of the first problem.
    public init(bytes: [UInt8], maxDepth: Int = 512) throws {
        self.bytes = bytes
        self.nodes = try bytes.withUnsafeBufferPointer {
            try JSONParser.parse($0, maxDepth: max(0, maxDepth))
        }
    }

    /// Parses and validates the UTF-8 form of `string`.
    ///
    /// - Throws: ``JSONError`` with the byte offset, line and column of the first problem.
    public init(string: String, maxDepth: Int = 512) throws {
        try self.init(bytes: Array(string.utf8), maxDepth: maxDepth)
    }

    /// Calls `body` with an unsafe view of the bytes and nodes, valid only during the call.
    func withTape<R>(_ body: (JSONTape) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { bytes in
            try nodes.withUnsafeBufferPointer { nodes in
                try body(JSONTape(bytes: bytes, nodes: nodes))
            }
        }
    }
}

extension JSONDocument {
    /// A value's place in a document, to read or decode it later without finding it again.
    package struct Node: Sendable, Hashable {
        let index: Int

        /// The document's root value.
        package static let root = Node(index: 0)
    }

    /// The elements of the array at `path`, in order; nil when there is no array there.
    package func elements(ofArrayAt path: JSONPath) -> [Node]? {
        withTape { tape -> [Node]? in
            guard let start = tape.locate(path.components, from: 0), tape[start].kind == .array else { return nil }
            var nodes: [Node] = []
            nodes.reserveCapacity(Int(tape[start].length))
            var element = start + 1
            for _ in 0..<Int(tape[start].length) {
                nodes.append(Node(index: element))
                element = Int(tape[element].end)
            }
            return nodes
        }
    }

    /// Whether the value at `node` is `null`.
    package func isNull(_ node: Node) -> Bool {
        withTape { $0[node.index].kind == .null }
    }

    /// The value of member `name` of the object at `node`: nil when `node` is not an object or
    /// has no such member (the last of duplicate keys wins, as when decoding). Finds it
    /// without building a value.
    package func member(_ name: String, of node: Node) -> Node? {
        withTape { tape in
            tape[node.index].kind == .object ? tape.member(of: node.index, named: name).map(Node.init) : nil
        }
    }

    /// The values of the members `names` of the object at `node`, in the order of `names`,
    /// found in one pass over its members (the last of duplicate keys wins): nil for a missing
    /// one; nil as a whole when `node` is not an object.
    package func members(_ names: JSONMemberNames, of node: Node) -> [Node?]? {
        withTape { tape -> [Node?]? in
            let object = tape[node.index]
            guard object.kind == .object else { return nil }
            var found = [Node?](repeating: nil, count: names.utf8.count)
            var child = node.index + 1
            for _ in 0..<Int(object.length) {
                for index in names.utf8.indices where names.utf8[index].withUnsafeBufferPointer({ tape.keyEquals(child, $0) }) {
                    found[index] = Node(index: child + 1)
                }
                child = Int(tape[child + 1].end)
            }
            return found
        }
    }

    /// The value at `path` below `node`, or nil when a step is missing.
    ///
    /// - Throws: ``JSONError`` when a string or number in it cannot be converted.
    package func value(at node: Node, path: JSONPath = JSONPath()) throws -> JSONValue? {
        try withTape { tape in
            try tape.locate(path.components, from: node.index).map { try JSONValue(tape: tape, node: $0) }
        }
    }
}

/// Names of members that ``JSONDocument/members(_:of:)`` finds together, kept as UTF-8.
package struct JSONMemberNames: Sendable {
    let utf8: [[UInt8]]

    package init(_ names: [String]) {
        utf8 = names.map { Array($0.utf8) }
    }
}
