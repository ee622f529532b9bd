/// An unsafe view of a ``JSONDocument``'s bytes and nodes, valid only inside
/// `JSONDocument.withTape(_:)`. Node indices must be valid; nothing is checked in release builds.
struct JSONTape {
    let bytes: UnsafeBufferPointer<UInt8>
    let nodes: UnsafeBufferPointer<JSONNode>

    @inline(__always)
    subscript(node: Int) -> JSONNode { nodes[node] }

    /// The source bytes of a scalar node: a string's raw content between the quotes, a number's or
    /// a literal's text.
    @inline(__always)
    private func content(_ node: JSONNode) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(node.start)..<Int(node.start) + Int(node.length)])
    }

    // MARK: Strings

    /// The decoded value of a string node.
    ///
    /// - Throws: ``JSONError/Reason/invalidValue(_:)`` for an escaped lone surrogate such as
    ///   `"\uD800"`, which no Swift string can hold.
    func string(_ node: Int) throws -> String {
        let n = nodes[node]
        let raw = content(n)
        if n.flags & JSONNode.hasEscapes == 0 {
            return String(decoding: raw, as: UTF8.self)
        }
        // Decoding never makes a string longer: every escape is at least as long as its UTF-8.
        return try String(unsafeUninitializedCapacity: raw.count) { output in
            try unescape(raw, into: output, node: node)
        }
    }

    /// Whether a string node equals `key`, the UTF-8 bytes of an unescaped key.
    @inline(__always)
    func keyEquals(_ node: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = nodes[node]
        let raw = content(n)
        if n.flags & JSONNode.hasEscapes == 0 {
            return raw.count == key.count && Self.equal(raw, key)
        }
        guard key.count <= raw.count else { return false }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: raw.count) { scratch in
            guard let length = try? unescape(raw, into: scratch, node: node) else { return false }
            return length == key.count && Self.equal(UnsafeBufferPointer(rebasing: scratch[..<length]), key)
        }
    }

    /// Compares two buffers of equal length, eight bytes at a time.
    @inline(__always)
    private static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let a8 = UnsafeRawBufferPointer(a), b8 = UnsafeRawBufferPointer(b)
        var i = 0
        while a.count - i >= 8 {
            guard a8.loadUnaligned(fromByteOffset: i, as: UInt64.self) == b8.loadUnaligned(fromByteOffset: i, as: UInt64.self) else {
                return false
            }
            i += 8
        }
        while i < a.count {
            guard a[i] == b[i] else { return false }
            i += 1
        }
        return true
    }

    /// Decodes the escapes of a validated raw string into `output` (at least `raw.count` long) and
    /// returns the decoded length.
    private func unescape(_ raw: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>, node: Int) throws -> Int {
        var i = 0, o = 0
        while i < raw.count {
            let b = raw[i]
            guard b == UInt8(ascii: "\\") else {
                output[o] = b
                o += 1
                i += 1
                continue
            }
            let escaped = raw[i + 1]
            i += 2
            switch escaped {
            case UInt8(ascii: "b"): output[o] = 0x08
            case UInt8(ascii: "f"): output[o] = 0x0C
            case UInt8(ascii: "n"): output[o] = 0x0A
            case UInt8(ascii: "r"): output[o] = 0x0D
            case UInt8(ascii: "t"): output[o] = 0x09
            case UInt8(ascii: "u"): break
            default: output[o] = escaped  // '"', '\' or '/'
            }
            guard escaped == UInt8(ascii: "u") else {
                o += 1
                continue
            }
            var scalar = hex4(raw, i)
            i += 4
            if scalar & 0xFC00 == 0xD800,
               raw.count - i >= 6, raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u"),
               case let low = hex4(raw, i + 2), low & 0xFC00 == 0xDC00 {
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            } else if scalar & 0xF800 == 0xD800 {
                let offset = Int(nodes[node].start) + i - 6
                let (line, column) = JSONParser.location(of: offset, in: bytes)
                let hex = String(decoding: raw[i - 4..<i], as: UTF8.self)
                var error = JSONError(.invalidValue("lone surrogate \\u\(hex) in string"), offset: offset, line: line, column: column)
                error.node = node
                throw error
            }
            o += Self.encodeUTF8(scalar, into: output, at: o)
        }
        return o
    }

    /// The value of the four hex digits at `i` (already validated).
    @inline(__always)
    private func hex4(_ raw: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 {
        var value: UInt32 = 0
        for k in i..<i + 4 {
            value = value << 4 | UInt32(JSONParser.hexValue(raw[k]) ?? 0)
        }
        return value
    }

    /// Writes the UTF-8 form of a scalar value (not a surrogate) and returns its length.
    @inline(__always)
    private static func encodeUTF8(_ scalar: UInt32, into output: UnsafeMutableBufferPointer<UInt8>, at o: Int) -> Int {
        switch scalar {
        case 0..<0x80:
            output[o] = UInt8(scalar)
            return 1
        case 0x80..<0x800:
            output[o] = UInt8(0xC0 | scalar >> 6)
            output[o + 1] = UInt8(0x80 | scalar & 0x3F)
            return 2
        case 0x800..<0x10000:
            output[o] = UInt8(0xE0 | scalar >> 12)
            output[o + 1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[o + 2] = UInt8(0x80 | scalar & 0x3F)
            return 3
        default:
            output[o] = UInt8(0xF0 | scalar >> 18)
            output[o + 1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            output[o + 2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[o + 3] = UInt8(0x80 | scalar & 0x3F)
            return 4
        }
    }

    // MARK: Numbers

    /// The exact value of a number node; nil if it has a fraction or exponent (`1.0`, `1e2`) or
    /// does not fit.
    @inline(__always)
    func int64(_ node: Int) -> Int64? {
        let n = nodes[node]
        guard n.flags & JSONNode.isFloat == 0 else { return nil }
        return JSONNumberParsing.int64(integer: content(n))
    }

    /// The exact value of a number node; nil if it has a fraction or exponent, is negative (`-0`
    /// gives 0) or does not fit.
    @inline(__always)
    func uint64(_ node: Int) -> UInt64? {
        let n = nodes[node]
        guard n.flags & JSONNode.isFloat == 0 else { return nil }
        return JSONNumberParsing.uint64(integer: content(n))
    }

    /// The correctly rounded value of a number node; ±infinity when out of range (`1e400`).
    @inline(__always)
    func double(_ node: Int) -> Double {
        JSONNumberParsing.double(content(nodes[node]))
    }

    /// The value of `bytes` if it is exactly a JSON integer that fits `Int64`; see
    /// `JSONNumberParsing.parseInt64(_:)`.
    static func parseInt64(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        JSONNumberParsing.parseInt64(bytes)
    }

    /// The value of `bytes` if it is exactly a JSON number; see `JSONNumberParsing.parseDouble(_:)`.
    static func parseDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        JSONNumberParsing.parseDouble(bytes)
    }

    // MARK: Text

    /// The node's source text: a number exactly as written, a string with its quotes and escapes,
    /// a container from its opening to its closing bracket.
    func rawText(_ node: Int) -> String {
        let n = nodes[node]
        let range: Range<Int>
        switch n.kind {
        case .string: range = Int(n.start) - 1..<Int(n.start) + Int(n.length) + 1
        case .array, .object: range = Int(n.start)..<containerEnd(from: Int(n.start))
        default: range = Int(n.start)..<Int(n.start) + Int(n.length)
        }
        return String(decoding: bytes[range], as: UTF8.self)
    }

    /// The offset after the bracket that closes the (valid) container opening at `start`.
    private func containerEnd(from start: Int) -> Int {
        var depth = 0
        var i = start
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { return i + 1 }
            case UInt8(ascii: "\""):
                i += 1
                while i < bytes.count && bytes[i] != UInt8(ascii: "\"") {
                    i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1
                }
            default:
                break
            }
            i += 1
        }
        return bytes.count
    }

    /// A short description for error messages: `string "abc"`, `number 12.5`, `true`, `null`,
    /// `array`, `object`. Strings longer than 40 characters are cut.
    func describe(_ node: Int) -> String {
        switch nodes[node].kind {
        case .null: return "null"
        case .true: return "true"
        case .false: return "false"
        case .array: return "array"
        case .object: return "object"
        case .number: return "number \(rawText(node))"
        case .string:
            let text = (try? string(node)) ?? rawText(node)
            return text.count > 40 ? "string \"\(text.prefix(40))…\"" : "string \"\(text)\""
        }
    }

    /// The 1-based line and column (in bytes) of a byte offset, for error messages.
    func location(of offset: Int) -> (line: Int, column: Int) {
        JSONParser.location(of: offset, in: bytes)
    }
}
