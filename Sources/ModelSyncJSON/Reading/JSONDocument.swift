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
