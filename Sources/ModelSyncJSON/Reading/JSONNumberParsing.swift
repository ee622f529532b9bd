/// Number conversion for JSON number text, shared by the tape and by lenient coercion of strings.
enum JSONNumberParsing {
    /// The value of `bytes` if it is exactly a JSON number without fraction or exponent that fits
    /// `Int64` (`"49"`, `"-0"`); nil for anything else (`"1.0"`, `" 49"`, `"+1"`, `"01"`).
    static func parseInt64(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let flags = validate(bytes), flags & JSONNode.isFloat == 0 else { return nil }
        return int64(integer: bytes)
    }

    /// The value of `bytes` if it is exactly a JSON number (`"49"`, `"-1.5e3"`); nil for anything
    /// else (`"NaN"`, `".5"`, `"1."`, `" 1"`). Huge values give ±infinity.
    static func parseDouble(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard validate(bytes) != nil else { return nil }
        return double(bytes)
    }

    /// The flags of `bytes` if the whole buffer is one JSON number.
    private static func validate(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt8? {
        let scan = JSONParser.scanNumber(bytes, from: 0)
        return scan.error == nil && scan.end == bytes.count ? scan.flags : nil
    }

    /// The value of a valid JSON integer (no fraction or exponent), nil if it does not fit.
    @inline(__always)
    static func int64(integer bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = bytes[0] == UInt8(ascii: "-")
        guard let magnitude = magnitude(bytes, from: negative ? 1 : 0) else { return nil }
        if negative {
            return magnitude <= UInt64(Int64.max) + 1 ? Int64(bitPattern: 0 &- magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// The value of a valid JSON integer (no fraction or exponent), nil if it does not fit. `-0`
    /// is 0; other negative numbers are nil.
    @inline(__always)
    static func uint64(integer bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        let negative = bytes[0] == UInt8(ascii: "-")
        guard let magnitude = magnitude(bytes, from: negative ? 1 : 0) else { return nil }
        return negative && magnitude != 0 ? nil : magnitude
    }

    /// The digits from `start` to the end as a UInt64, nil on overflow.
    @inline(__always)
    private static func magnitude(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> UInt64? {
        var value: UInt64 = 0
        var i = start
        // Nineteen digits always fit; only a twentieth can overflow (JSON has no leading zeros).
        let safeEnd = min(bytes.count, start + 19)
        while i < safeEnd {
            value = value &* 10 &+ UInt64(bytes[i] &- UInt8(ascii: "0"))
            i += 1
        }
        while i < bytes.count {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(UInt64(bytes[i] &- UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            value = sum
            i += 1
        }
        return value
    }

    /// The correctly rounded value of a valid JSON number; ±infinity when out of range.
    ///
    /// Up to 19 significant digits are collected into an integer. When that integer and the power
    /// of ten are both exact doubles, one IEEE multiplication or division is correctly rounded
    /// (Clinger's fast path); everything else goes to the standard library's parser.
    static func double(_ bytes: UnsafeBufferPointer<UInt8>) -> Double {
        let count = bytes.count
        var i = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var mantissa: UInt64 = 0
        var digits = 0  // significant digits in `mantissa`
        var exponent = 0  // the value is mantissa * 10^exponent
        var truncated = false  // nonzero digits beyond the 19th were dropped
        while i < count, JSONParser.isDigit(bytes[i]) {
            let digit = UInt64(bytes[i] &- UInt8(ascii: "0"))
            if digits < 19 {
                mantissa = mantissa &* 10 &+ digit
                if mantissa != 0 { digits += 1 }
            } else {
                exponent += 1
                truncated = truncated || digit != 0
            }
            i += 1
        }
        if i < count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            while i < count, JSONParser.isDigit(bytes[i]) {
                let digit = UInt64(bytes[i] &- UInt8(ascii: "0"))
                if digits < 19 {
                    mantissa = mantissa &* 10 &+ digit
                    exponent -= 1
                    if mantissa != 0 { digits += 1 }
                } else {
                    truncated = truncated || digit != 0
                }
                i += 1
            }
        }
        if i < count {  // the exponent: [eE][+-]?digits
            i += 1
            let negativeExponent = bytes[i] == UInt8(ascii: "-")
            if bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
            var value = 0
            while i < count {
                // Saturate: anything this large is infinity or zero anyway.
                if value < 1_000_000 { value = value * 10 + Int(bytes[i] &- UInt8(ascii: "0")) }
                i += 1
            }
            exponent += negativeExponent ? -value : value
        }
        if mantissa == 0 { return negative ? -0.0 : 0.0 }
        if !truncated && mantissa <= 1 << 53 {
            var result: Double?
            if exponent >= 0 && exponent <= 22 {
                result = Double(mantissa) * powersOfTen[exponent]
            } else if exponent < 0 && exponent >= -22 {
                result = Double(mantissa) / powersOfTen[-exponent]
            } else if exponent > 22 && exponent <= 22 + 15 {
                // 123e30 is 123000000e22: move zeros into the mantissa while it stays exact.
                let (scaled, overflow) = mantissa.multipliedReportingOverflow(by: UInt64(powersOfTen[exponent - 22]))
                if !overflow && scaled <= 1 << 53 { result = Double(scaled) * 1e22 }
            }
            if let result { return negative ? -result : result }
        }
        return Double(String(decoding: bytes, as: UTF8.self)) ?? .nan
    }

    /// 10^0 through 10^22, the powers of ten that doubles hold exactly.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]
}
