/// A low-level builder of compact JSON text.
///
/// The writer appends UTF-8 to ``bytes`` and knows nothing about structure: callers write
/// brackets, commas and colons themselves. Every method writes one complete token.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.writeByte(UInt8(ascii: "{"))
/// writer.writeRaw(JSONWriter.escapedKey("id"))
/// writer.writeInteger(7)
/// writer.writeByte(UInt8(ascii: "}"))
/// // writer.bytes is {"id":7}
/// ```
public struct JSONWriter: Sendable {
    /// The text written so far.
    public var bytes: [UInt8]

    /// Creates an empty writer whose buffer has room for `capacity` bytes before growing.
    public init(capacity: Int = 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends one byte, e.g. `UInt8(ascii: ",")`.
    @inlinable
    public mutating func writeByte(_ b: UInt8) {
        bytes.append(b)
    }

    /// Appends bytes unchanged, e.g. a precomputed ``escapedKey(_:)``.
    @inlinable
    public mutating func writeRaw(_ raw: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    /// Appends bytes unchanged, e.g. a precomputed ``escapedKey(_:)``.
    @inlinable
    public mutating func writeRaw(_ raw: [UInt8]) {
        bytes.append(contentsOf: raw)
    }

    /// Appends an ASCII literal without allocating.
    private mutating func writeASCII(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends `null`.
    public mutating func writeNull() {
        writeASCII("null")
    }

    /// Appends `true` or `false`.
    public mutating func writeBool(_ value: Bool) {
        writeASCII(value ? "true" : "false")
    }

    /// Appends an integer in decimal, without allocating.
    @inlinable
    public mutating func writeInteger<T: FixedWidthInteger>(_ value: T) {
        if T.bitWidth <= 64 {
            if T.isSigned {
                let wide = Int64(truncatingIfNeeded: value)
                writeDecimal(wide.magnitude, negative: wide < 0)
            } else {
                writeDecimal(UInt64(truncatingIfNeeded: value), negative: false)
            }
        } else {
            writeWideDecimal(value)
        }
    }

    /// Appends a minus sign if `negative`, then the digits of `magnitude`.
    @usableFromInline
    mutating func writeDecimal(_ magnitude: UInt64, negative: Bool) {
        if negative { bytes.append(UInt8(ascii: "-")) }
        if magnitude < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        // Digits are produced backwards into stack memory, then appended in one go.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var i = digits.count
            var rest = magnitude
            repeat {
                let (quotient, remainder) = rest.quotientAndRemainder(dividingBy: 10)
                i -= 1
                digits[i] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder)
                rest = quotient
            } while rest != 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    /// Appends an integer wider than 64 bits, such as `Int128`, in decimal (the slow path).
    @usableFromInline
    mutating func writeWideDecimal<T: FixedWidthInteger>(_ value: T) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // log10(2) < 1/3, so bitWidth / 3 + 1 digits are always enough.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: T.bitWidth / 3 + 1) { digits in
            var i = digits.count
            var rest = value.magnitude
            repeat {
                let (quotient, remainder) = rest.quotientAndRemainder(dividingBy: 10)
                i -= 1
                digits[i] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder)
                rest = quotient
            } while rest != 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    /// Appends the shortest text that reads back as exactly `value`.
    ///
    /// Integral values are written without a fraction (`1`, `-0`, `1e+16`), like `JSONEncoder`
    /// and JavaScript do; other values as Swift prints them (`0.1`, `1e-05`), which is valid JSON.
    ///
    /// - Throws: ``JSONError/Reason/invalidValue(_:)`` for infinity and NaN, which JSON cannot
    ///   represent.
    public mutating func writeDouble(_ value: Double) throws {
        guard value.isFinite else {
            throw JSONError(.invalidValue("cannot encode non-finite number \(value) as JSON"))
        }
        writeFiniteDouble(value)
    }

    /// ``writeDouble(_:)`` for a value known to be finite.
    mutating func writeFiniteDouble(_ value: Double) {
        var text = value.description
        text.withUTF8 { text in
            let dropsZero = text.count >= 2 && text[text.count - 2] == UInt8(ascii: ".") && text[text.count - 1] == UInt8(ascii: "0")
            bytes.append(contentsOf: dropsZero ? UnsafeBufferPointer(rebasing: text.dropLast(2)) : text)
        }
    }

    /// Appends a quoted string, escaping `"`, `\` and control characters (`\n`, `\r`, `\t`, `\b`,
    /// `\f`, others as `\u00XX`). Everything else, including `/` and non-ASCII, is copied as is.
    public mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { writeString(utf8: $0) }
    }

    /// Appends the UTF-8 bytes of a string, quoted and escaped.
    mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        let raw = UnsafeRawBufferPointer(utf8)
        var runStart = 0  // the start of bytes not yet copied
        var i = 0
        while true {
            // Skip eight bytes at a time while nothing needs escaping.
            while utf8.count - i >= 8 {
                let mask = JSONParser.bytesToEscape(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
                if mask != 0 {
                    i += mask.trailingZeroBitCount >> 3
                    break
                }
                i += 8
            }
            guard i < utf8.count else { break }
            let b = utf8[i]
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                writeEscape(b)
                runStart = i + 1
            }
            i += 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscape(_ b: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(b)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            let hex: StaticString = "0123456789abcdef"
            writeASCII("u00")
            hex.withUTF8Buffer { hex in
                bytes.append(hex[Int(b >> 4)])
                bytes.append(hex[Int(b & 0xF)])
            }
        }
    }

    /// The bytes of `"key":` for an object key: quoted, escaped and followed by a colon. Compute
    /// them once and write them with `writeRaw(_:)`.
    public static func escapedKey(_ key: String) -> [UInt8] {
        var writer = JSONWriter(capacity: key.utf8.count + 3)
        writer.writeString(key)
        writer.writeByte(UInt8(ascii: ":"))
        return writer.bytes
    }
}
