/// A JSON number, kept as its exact text so that big integers and long decimals survive a round
/// trip unchanged.
///
/// Two numbers are equal when they have the same mathematical value, whatever their spelling:
/// `1`, `1.0`, `1e0` and `10e-1` are equal, and so are `0` and `-0`. The comparison is exact
/// (decimal, not through `Double`), so `12345678901234567890` and `12345678901234567891` differ.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number as JSON text, e.g. `-12.5e3`. Always valid JSON number syntax.
    public let text: String

    /// Creates a number from an integer.
    public init<T: BinaryInteger>(_ value: T) {
        text = String(value)
    }

    /// Creates a number from an integer literal.
    public init(integerLiteral value: Int) {
        self.init(value)
    }

    /// Creates a number with the shortest text that reads back as `value` (`0.1`, `1`, `1e-05`);
    /// nil for infinity and NaN, which JSON cannot represent.
    public init?(exactly value: Double) {
        guard value.isFinite else { return nil }
        var writer = JSONWriter(capacity: 32)
        writer.writeFiniteDouble(value)
        text = String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Creates a number from JSON number text such as `"-0.5e10"`; nil unless `text` follows the
    /// JSON grammar exactly (no `+1`, `01`, `.5`, `1.`, `NaN` or surrounding spaces).
    public init?(text: String) {
        var text = text
        let isValid = text.withUTF8 { utf8 in
            let scan = JSONParser.scanNumber(utf8, from: 0)
            return scan.error == nil && scan.end == utf8.count
        }
        guard isValid else { return nil }
        self.text = text
    }

    /// Wraps text already validated by the parser.
    init(validatedText text: String) {
        self.text = text
    }

    /// The number as JSON text.
    public var description: String { text }

    /// The value if it is a whole number that fits `Int64`: `7`, `-0`, `1.0`, `1e2`; nil for
    /// `1.5` or `1e19`.
    public var int64Value: Int64? {
        var text = text
        return text.withUTF8 { utf8 -> Int64? in
            if !utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) {
                return JSONNumberParsing.int64(integer: utf8)
            }
            let canonical = Canonical(utf8)
            guard canonical.exponent >= 0, canonical.digits.count + canonical.exponent <= 19 else { return nil }
            // At most 19 digits fit in UInt64 without overflow.
            var magnitude: UInt64 = 0
            for digit in canonical.digits { magnitude = magnitude * 10 + UInt64(digit) }
            for _ in 0..<canonical.exponent { magnitude *= 10 }
            if canonical.negative {
                return magnitude <= UInt64(Int64.max) + 1 ? Int64(bitPattern: 0 &- magnitude) : nil
            }
            return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
        }
    }

    /// The nearest `Double`; ±infinity when out of range (`1e400`).
    public var doubleValue: Double {
        var text = text
        return text.withUTF8 { JSONNumberParsing.double($0) }
    }

    /// Whether both numbers have the same mathematical value.
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.text == rhs.text || lhs.canonical == rhs.canonical
    }

    /// Hashes the mathematical value, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        let canonical = self.canonical
        hasher.combine(canonical.negative)
        hasher.combine(canonical.digits)
        hasher.combine(canonical.exponent)
    }

    private var canonical: Canonical {
        var text = text
        return text.withUTF8 { Canonical($0) }
    }

    /// A canonical form of the value: `digits` × 10^`exponent`, with neither leading nor
    /// trailing zeros in `digits`. Zero has no digits and is never negative.
    private struct Canonical: Equatable {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0

        /// Reads valid JSON number text.
        init(_ utf8: UnsafeBufferPointer<UInt8>) {
            var i = 0
            if utf8[0] == UInt8(ascii: "-") {
                negative = true
                i = 1
            }
            var inFraction = false
            while i < utf8.count {
                let b = utf8[i]
                i += 1
                if b == UInt8(ascii: ".") {
                    inFraction = true
                } else if b | 0x20 == UInt8(ascii: "e") {
                    break
                } else {
                    if inFraction { exponent -= 1 }
                    if b != UInt8(ascii: "0") || !digits.isEmpty { digits.append(b - UInt8(ascii: "0")) }
                }
            }
            if i < utf8.count {  // the exponent
                let negativeExponent = utf8[i] == UInt8(ascii: "-")
                if utf8[i] == UInt8(ascii: "-") || utf8[i] == UInt8(ascii: "+") { i += 1 }
                var value = 0
                // Saturate: exponents beyond ±10^15 are all treated alike.
                while i < utf8.count {
                    value = min(value * 10 + Int(utf8[i] - UInt8(ascii: "0")), 1_000_000_000_000_000)
                    i += 1
                }
                exponent += negativeExponent ? -value : value
            }
            while digits.last == 0 {
                digits.removeLast()
                exponent += 1
            }
            if digits.isEmpty {
                negative = false
                exponent = 0
            }
        }
    }
}
