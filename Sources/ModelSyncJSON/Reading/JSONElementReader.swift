/// Reads the elements of a root JSON array one at a time, each onto a small tape of its own that
/// the next element reuses.
///
/// Decoding a large array this way never builds a tape for the whole document: the element's
/// tape stays in cache while the element is decoded (a whole-document tape of a 128 MiB array is
/// over 100 MiB that is written once, faulted in page by page, and read back from memory), and
/// the memory it takes is that of the largest element. The input is validated as strictly as by
/// ``JSONDocument``, with the same errors at the same offsets.
///
/// The input can also arrive a window at a time (`JSONFileElementReader`): then the caller makes
/// sure that the window holds the next element whole before asking for it, and moves the reader
/// along with ``rebase(onto:dropping:)`` when it slides the window.
struct JSONElementReader {
    private(set) var bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    /// Where the next element (or the comma before it) is looked for.
    private(set) var position: Int
    /// How many elements were read.
    private(set) var count = 0
    /// The current element's tape: scratch space whose first `nodeCount` nodes are meaningful.
    private var nodes: [JSONNode] = []
    private var nodeCount = 0
    /// The parser's stack of open containers, reused from element to element.
    private var stack: [Int] = []
    /// The offset where the current element starts.
    private(set) var elementStart = 0
    /// The offset just after the array's opening bracket.
    private var contentStart: Int
    private var finished = false

    /// Opens the root array of `bytes`; nil when the input (after an optional byte order mark and
    /// whitespace) does not start with `[`, or when `maxDepth` allows no array, so that the
    /// caller parses it as a whole document (and gets that path's errors).
    init?(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws {
        guard bytes.count <= Int(UInt32.max) else {
            throw JSONError(.syntax("input of 4 GiB or more"), offset: 0)
        }
        let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
        let open = JSONParser.skipWhitespace(bytes, hasBOM ? 3 : 0)
        guard maxDepth >= 1, open < bytes.count, bytes[open] == UInt8(ascii: "[") else { return nil }
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.position = open + 1
        self.contentStart = open + 1
    }

    /// Parses the next element; false after the last one, once the array is closed and nothing
    /// but whitespace follows it.
    ///
    /// - Throws: ``JSONError`` for malformed input, as a whole-document parse would.
    mutating func next() throws -> Bool {
        guard !finished else { return false }
        var i = JSONParser.skipWhitespace(bytes, position)
        if count == 0 {
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { return try finish(after: i) }
        } else {
            guard i < bytes.count else { throw JSONParser.error("unexpected end of input", at: i, in: bytes) }
            switch bytes[i] {
            case UInt8(ascii: ","): i += 1
            case UInt8(ascii: "]"): return try finish(after: i)
            default: throw JSONParser.error("expected ',' or ']' after array element", at: i, in: bytes)
            }
        }
        elementStart = i
        (nodeCount, position) = try JSONParser.parseValue(bytes, from: i, depth: 1, maxDepth: maxDepth, into: &nodes, stack: &stack)
        count += 1
        return true
    }

    /// Checks that only whitespace follows the array's closing bracket at `close`.
    private mutating func finish(after close: Int) throws -> Bool {
        finished = true
        let end = JSONParser.skipWhitespace(bytes, close + 1)
        guard end == bytes.count else {
            throw JSONParser.error("unexpected \(JSONParser.describeByte(bytes[end])) after the root value", at: end, in: bytes)
        }
        position = end
        return false
    }

    /// A capacity for an array that holds `kept` elements and is about to take the current one:
    /// enough for the elements the rest of the input likely holds, judging by the average size
    /// of those read so far, plus an eighth.
    ///
    /// Reserving it once spares the doubling copies of a large array and the freed buffers they
    /// leave scattered in the heap. The prediction is capped at the unread input's size in
    /// memory (a tiny first element before a huge one predicts far too many). The capacity still
    /// grows by at least a quarter, less than doubling would, so that predictions that keep
    /// falling short copy each element a bounded number of times.
    func predictedCapacity(keeping kept: Int, elementStride: Int) -> Int {
        let read = max(position - contentStart, 1)
        let unread = bytes.count - position
        let predicted = Double(unread) * Double(count) / Double(read)
        let affordable = unread / max(elementStride, 1)
        let more = min(Int(min(predicted * 1.125, Double(Int32.max))), affordable)
        return kept + 1 + max(more, kept / 4, 16)
    }

    /// Whether the array's closing bracket was read.
    var isFinished: Bool { finished }

    /// Moves the reader onto `window`, which holds the same input as before minus its first
    /// `dropped` bytes, plus whatever was read after them.
    mutating func rebase(onto window: UnsafeBufferPointer<UInt8>, dropping dropped: Int) {
        bytes = window
        position -= dropped
        elementStart -= dropped
        contentStart -= dropped
    }

    /// Reads the rest of the array without keeping anything, so that a syntax error anywhere
    /// in the input takes precedence over a decoding error (as when the whole document is
    /// parsed before decoding starts).
    mutating func validateRest() throws {
        while try next() {}
    }

    /// A tape with no nodes over the reader's input, to create a context before the first
    /// element.
    var emptyTape: JSONTape { JSONTape(bytes: bytes, nodes: UnsafeBufferPointer(start: nil, count: 0)) }

    /// Calls `body` with the current element's tape: its root is node 0, offsets point into the
    /// whole input. Valid only during the call.
    func withTape<R>(_ body: (JSONTape) throws -> R) rethrows -> R {
        try nodes.withUnsafeBufferPointer { nodes in
            try body(JSONTape(bytes: bytes, nodes: UnsafeBufferPointer(rebasing: nodes[..<nodeCount])))
        }
    }
}
