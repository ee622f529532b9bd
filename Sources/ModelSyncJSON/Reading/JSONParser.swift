/// Builds the tape in one non-recursive pass: open containers live on an explicit stack, so
/// hostile nesting hits `maxDepth` instead of the thread's stack.
///
/// Nodes are written straight into the storage of the array that becomes `JSONDocument.nodes`.
/// When that storage is nearly full the pass pauses at a value boundary, the driver moves the
/// nodes into a larger array, and the pass resumes from the saved state.
struct JSONParser {
    private let maxDepth: Int
    /// The limit that ``JSONError/Reason/tooDeep(limit:)`` names: `maxDepth` plus the depth at
    /// which the pass started (an array element starts one level down).
    private var depthLimit: Int
    /// Stop after the first complete value and leave what follows it to the caller, instead of
    /// requiring the end of the input.
    private var stopsAfterValue = false
    /// Where the paused pass resumes.
    private var position: Int
    /// The number of nodes written.
    private var nodeCount = 0
    /// The enclosing container of each open container (-1 for the root), outermost first.
    private var stack: [Int] = []
    /// The innermost open container, or -1 when at the root level.
    private var container = -1

    private init(position: Int, maxDepth: Int) {
        self.position = position
        self.maxDepth = maxDepth
        self.depthLimit = maxDepth
    }

    /// Validates `bytes` and returns its tape.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws -> [JSONNode] {
        // Offsets and indices are stored as UInt32.
        guard bytes.count <= Int(UInt32.max) else {
            throw JSONError(.syntax("input of 4 GiB or more"), offset: 0)
        }
        let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
        var parser = JSONParser(position: hasBOM ? 3 : 0, maxDepth: maxDepth)
        // Typical documents have one value per 8 to 20 bytes.
        var capacity = bytes.count / 8 + 16
        var nodes: [JSONNode] = []
        while true {
            var finished = false
            nodes = try [JSONNode](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                initialized = buffer.initialize(fromContentsOf: nodes)
                finished = try parser.run(bytes, into: buffer)
                initialized = parser.nodeCount
            }
            if finished { return nodes }
            // Grow to what the density so far predicts for the whole input, at least by half.
            let projected = Double(parser.nodeCount) * Double(bytes.count) / Double(max(parser.position, 1))
            capacity = max(capacity + capacity / 2, Int(projected * 1.1) + 16)
        }
    }

    /// Parses the one value at `start` (whitespace before it allowed) onto `nodes` from index 0,
    /// growing the array when it is full; returns the node count and the offset just after the
    /// value. What follows the value is the caller's business.
    ///
    /// `depth` is the value's nesting level in the whole document (1 for an element of the root
    /// array), so that `maxDepth` counts as it would in a parse of the whole document. `nodes` is
    /// scratch space that callers reuse from value to value: its count is its capacity, and only
    /// the first `count` nodes are meaningful; so is `stack`.
    static func parseValue(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, depth: Int, maxDepth: Int,
        into nodes: inout [JSONNode], stack: inout [Int]
    ) throws -> (count: Int, end: Int) {
        var parser = JSONParser(position: start, maxDepth: maxDepth - depth)
        parser.depthLimit = maxDepth
        parser.stopsAfterValue = true
        // The caller's stack storage, so that no value allocates one of its own.
        stack.removeAll(keepingCapacity: true)
        swap(&parser.stack, &stack)
        defer { swap(&parser.stack, &stack) }
        let blank = JSONNode(kind: .null, flags: 0, start: 0, length: 0, end: 0)
        if nodes.count < 64 { nodes = Array(repeating: blank, count: 64) }
        while true {
            let finished = try nodes.withUnsafeMutableBufferPointer { try parser.run(bytes, into: $0) }
            if finished { return (parser.nodeCount, parser.position) }
            nodes.append(contentsOf: repeatElement(blank, count: nodes.count))
        }
    }

    /// Parses until the document is complete (returns true) or `nodes` is nearly full (false).
    private mutating func run(
        _ bytes: UnsafeBufferPointer<UInt8>, into nodes: UnsafeMutableBufferPointer<JSONNode>
    ) throws -> Bool {
        let count = bytes.count
        var i = position
        var n = nodeCount
        var container = self.container
        var inObject = container >= 0 && nodes[container].kind == .object

        value: while true {
            // One round of this loop writes at most two nodes: a value and the next key, or an
            // object and its first key.
            guard nodes.count - n >= 2 else {
                position = i
                nodeCount = n
                self.container = container
                return false
            }
            i = Self.skipWhitespace(bytes, i)
            guard i < count else { throw Self.error("unexpected end of input", at: i, in: bytes) }
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "\""):
                let (close, flags) = try Self.scanString(bytes, quote: i)
                nodes[n] = JSONNode(kind: .string, flags: flags, start: UInt32(i + 1), length: UInt32(close - i - 1), end: UInt32(n + 1))
                n += 1
                i = close + 1
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let scan = Self.scanNumber(bytes, from: i)
                if let message = scan.error { throw Self.error(message, at: scan.end, in: bytes) }
                nodes[n] = JSONNode(kind: .number, flags: scan.flags, start: UInt32(i), length: UInt32(scan.end - i), end: UInt32(n + 1))
                n += 1
                i = scan.end
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                let (kind, literal): (JSONNodeKind, StaticString) =
                    c == UInt8(ascii: "t") ? (.true, "true") : c == UInt8(ascii: "f") ? (.false, "false") : (.null, "null")
                guard Self.matches(bytes, at: i, literal) else {
                    throw Self.error("invalid literal, expected '\(literal)'", at: i, in: bytes)
                }
                nodes[n] = JSONNode(kind: kind, flags: 0, start: UInt32(i), length: UInt32(literal.utf8CodeUnitCount), end: UInt32(n + 1))
                n += 1
                i += literal.utf8CodeUnitCount
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                guard stack.count < maxDepth else {
                    let (line, column) = Self.location(of: i, in: bytes)
                    throw JSONError(.tooDeep(limit: depthLimit), offset: i, line: line, column: column)
                }
                let isObject = c == UInt8(ascii: "{")
                nodes[n] = JSONNode(kind: isObject ? .object : .array, flags: 0, start: UInt32(i), length: 0, end: UInt32(n + 1))
                i = Self.skipWhitespace(bytes, i + 1)
                // In ASCII, ']' is '[' + 2 and '}' is '{' + 2.
                if i < count && bytes[i] == c + 2 {
                    n += 1
                    i += 1
                } else {
                    stack.append(container)
                    container = n
                    inObject = isObject
                    n += 1
                    if isObject {
                        i = try Self.scanKey(bytes, at: i, into: nodes, n)
                        n += 1
                    }
                    continue value
                }
            default:
                throw Self.unexpected(bytes, at: i)
            }

            // A value is complete. Count it, then close every container that ends here.
            while container >= 0 {
                nodes[container].length &+= 1
                i = Self.skipWhitespace(bytes, i)
                guard i < count else { throw Self.error("unexpected end of input", at: i, in: bytes) }
                let c = bytes[i]
                if c == UInt8(ascii: ",") {
                    i += 1
                    if inObject {
                        i = try Self.scanKey(bytes, at: i, into: nodes, n)
                        n += 1
                    }
                    continue value
                }
                guard c == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    let message = inObject ? "expected ',' or '}' after object member" : "expected ',' or ']' after array element"
                    throw Self.error(message, at: i, in: bytes)
                }
                i += 1
                nodes[container].end = UInt32(n)
                container = stack.popLast() ?? -1
                inObject = container >= 0 && nodes[container].kind == .object
            }
            // The root value is complete.
            if stopsAfterValue {
                position = i
                nodeCount = n
                return true
            }
            i = Self.skipWhitespace(bytes, i)
            guard i == count else {
                throw Self.error("unexpected \(Self.describeByte(bytes[i])) after the root value", at: i, in: bytes)
            }
            nodeCount = n
            return true
        }
    }

    /// Scans an object key at `i` (whitespace allowed before), writes its node at `n`, and returns
    /// the offset just after the colon that follows it.
    @inline(__always)
    private static func scanKey(
        _ bytes: UnsafeBufferPointer<UInt8>, at i: Int, into nodes: UnsafeMutableBufferPointer<JSONNode>, _ n: Int
    ) throws -> Int {
        let quote = skipWhitespace(bytes, i)
        guard quote < bytes.count, bytes[quote] == UInt8(ascii: "\"") else {
            if quote < bytes.count, bytes[quote] == UInt8(ascii: "}") {
                throw error("trailing comma before '}'", at: quote, in: bytes)
            }
            throw quote < bytes.count
                ? error("expected a string key, found \(describeByte(bytes[quote]))", at: quote, in: bytes)
                : error("unexpected end of input", at: quote, in: bytes)
        }
        let (close, flags) = try scanString(bytes, quote: quote)
        nodes[n] = JSONNode(kind: .string, flags: flags, start: UInt32(quote + 1), length: UInt32(close - quote - 1), end: UInt32(n + 1))
        let colon = skipWhitespace(bytes, close + 1)
        guard colon < bytes.count, bytes[colon] == UInt8(ascii: ":") else {
            throw colon < bytes.count
                ? error("expected ':' after object key", at: colon, in: bytes)
                : error("unexpected end of input", at: colon, in: bytes)
        }
        return colon + 1
    }

    @inline(__always)
    static func skipWhitespace(_ bytes: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int {
        var i = i
        while i < bytes.count {
            let b = bytes[i]
            // Fast exit for the common case: anything above space is not whitespace.
            guard b <= 0x20, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { break }
            i += 1
        }
        return i
    }

    @inline(__always)
    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int, _ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { literal in
            guard bytes.count - i >= literal.count else { return false }
            for k in 0..<literal.count where bytes[i + k] != literal[k] {
                return false
            }
            return true
        }
    }

    // MARK: Strings

    /// Validates the string whose opening quote is at `quote`; returns the offset of the closing
    /// quote and `JSONNode.hasEscapes` if there is a backslash.
    @inline(__always)
    static func scanString(_ bytes: UnsafeBufferPointer<UInt8>, quote: Int) throws -> (close: Int, flags: UInt8) {
        let count = bytes.count
        let raw = UnsafeRawBufferPointer(bytes)
        var flags: UInt8 = 0
        var i = quote + 1
        while true {
            // Skip eight ordinary bytes at a time; stop at the first byte that needs a look.
            while count - i >= 8 {
                let mask = specialBytes(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
                if mask != 0 {
                    i += mask.trailingZeroBitCount >> 3
                    break
                }
                i += 8
            }
            guard i < count else { throw error("unterminated string", at: quote, in: bytes) }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                return (i, flags)
            } else if b == UInt8(ascii: "\\") {
                flags = JSONNode.hasEscapes
                i = try scanEscape(bytes, at: i, quote: quote)
            } else if b >= 0x80 {
                i = try scanUTF8(bytes, at: i)
            } else if b < 0x20 {
                throw error("control character \(describeByte(b)) in string, it must be escaped", at: i, in: bytes)
            } else {
                i += 1  // an ordinary byte in the last seven
            }
        }
    }

    /// A word with the high bit set in each byte that is a quote, a backslash, a control character
    /// or non-ASCII (eight bytes read little-endian). Only the lowest set bit is exact (borrows
    /// move towards higher bytes), which is all callers use.
    @inline(__always)
    static func specialBytes(_ x: UInt64) -> UInt64 {
        bytesToEscape(x) | (x & 0x8080_8080_8080_8080)
    }

    /// A word with the high bit set in each byte that JSON requires to be escaped in a string: a
    /// quote, a backslash or a control character. Only the lowest set bit is exact.
    @inline(__always)
    static func bytesToEscape(_ x: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = x ^ (ones &* 0x22)
        let backslashes = x ^ (ones &* 0x5C)
        let zeroQuote = (quotes &- ones) & ~quotes
        let zeroBackslash = (backslashes &- ones) & ~backslashes
        let control = (x &- ones &* 0x20) & ~x
        return (zeroQuote | zeroBackslash | control) & 0x8080_8080_8080_8080
    }

    /// Validates the escape sequence whose backslash is at `i`; returns the offset after it.
    private static func scanEscape(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int, quote: Int) throws -> Int {
        guard i + 1 < bytes.count else { throw error("unterminated string", at: quote, in: bytes) }
        switch bytes[i + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
             UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return i + 2
        case UInt8(ascii: "u"):
            guard i + 6 <= bytes.count else { throw error("unterminated string", at: quote, in: bytes) }
            for k in i + 2..<i + 6 where hexValue(bytes[k]) == nil {
                throw error("invalid \\u escape, expected four hex digits", at: i, in: bytes)
            }
            return i + 6
        case let other:
            throw error("invalid escape sequence '\\\(describeByte(other, quoted: false))'", at: i, in: bytes)
        }
    }

    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Validates the multi-byte UTF-8 sequence whose lead byte is at `i` (Unicode table 3-7: no
    /// overlong forms, no surrogates, nothing above U+10FFFF); returns the offset after it.
    private static func scanUTF8(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) throws -> Int {
        let length: Int
        let second: ClosedRange<UInt8>
        switch bytes[i] {
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: throw invalidUTF8(at: i, in: bytes)
        }
        guard bytes.count - i >= length, second.contains(bytes[i + 1]) else { throw invalidUTF8(at: i, in: bytes) }
        for k in i + 2..<i + length where bytes[k] & 0xC0 != 0x80 {
            throw invalidUTF8(at: i, in: bytes)
        }
        return i + length
    }

    // MARK: Numbers

    /// Scans a number at `start` against the JSON grammar
    /// `-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?`.
    ///
    /// On success `error` is nil and `end` is the offset after the number; otherwise `end` is the
    /// offset of the offending byte. What follows the number is the caller's business.
    @inline(__always)
    static func scanNumber(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (end: Int, flags: UInt8, error: String?) {
        let count = bytes.count
        var i = start
        var flags: UInt8 = 0
        if i < count && bytes[i] == UInt8(ascii: "-") {
            flags = JSONNode.isNegative
            i += 1
        }
        guard i < count, isDigit(bytes[i]) else { return (i, flags, "expected a digit") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < count && isDigit(bytes[i]) { return (i, flags, "leading zeros are not allowed") }
        } else {
            i += 1
            while i < count && isDigit(bytes[i]) { i += 1 }
        }
        if i < count && bytes[i] == UInt8(ascii: ".") {
            flags |= JSONNode.isFloat
            i += 1
            guard i < count, isDigit(bytes[i]) else { return (i, flags, "expected a digit after '.'") }
            while i < count && isDigit(bytes[i]) { i += 1 }
        }
        if i < count && bytes[i] | 0x20 == UInt8(ascii: "e") {
            flags |= JSONNode.isFloat
            i += 1
            if i < count && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
            guard i < count, isDigit(bytes[i]) else { return (i, flags, "expected a digit in the exponent") }
            while i < count && isDigit(bytes[i]) { i += 1 }
        }
        return (i, flags, nil)
    }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- UInt8(ascii: "0") < 10 }

    // MARK: Errors

    /// The 1-based line and column (in bytes) of `offset`.
    static func location(of offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for i in 0..<min(offset, bytes.count) where bytes[i] == UInt8(ascii: "\n") {
            line += 1
            lineStart = i + 1
        }
        return (line, offset - lineStart + 1)
    }

    @inline(never)
    static func error(_ message: String, at offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> JSONError {
        let (line, column) = location(of: offset, in: bytes)
        return JSONError(.syntax(message), offset: offset, line: line, column: column)
    }

    @inline(never)
    private static func invalidUTF8(at offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> JSONError {
        let (line, column) = location(of: offset, in: bytes)
        return JSONError(.invalidUTF8, offset: offset, line: line, column: column)
    }

    /// The error for a byte that cannot start a value.
    @inline(never)
    private static func unexpected(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> JSONError {
        let b = bytes[i]
        if b == UInt8(ascii: "]") || b == UInt8(ascii: "}") {
            var before = i - 1
            while before >= 0, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[before]) { before -= 1 }
            if before >= 0, bytes[before] == UInt8(ascii: ",") {
                return error("trailing comma before \(describeByte(b))", at: i, in: bytes)
            }
        }
        return error("unexpected \(describeByte(b)), expected a value", at: i, in: bytes)
    }

    /// `'x'` for printable ASCII, `byte 0xNN` otherwise.
    static func describeByte(_ b: UInt8, quoted: Bool = true) -> String {
        if b > 0x20 && b < 0x7F {
            let character = String(UnicodeScalar(b))
            return quoted ? "'\(character)'" : character
        }
        let hex = String(b, radix: 16, uppercase: true)
        return "byte 0x\(b < 0x10 ? "0" : "")\(hex)"
    }
}
