import Foundation

/// Fast ISO 8601 / RFC 3339 timestamps, without `DateFormatter`.
///
/// Parsing accepts `YYYY-MM-DDTHH:MM:SS` with:
/// - `T`, `t` or a space between date and time;
/// - an optional fraction of any length after a `.` (digits beyond nanoseconds are ignored);
/// - an optional zone: `Z`, `z`, `±HH:MM`, `±HHMM` or `±HH`. **Without a zone the time is UTC.**
///
/// A date alone, `YYYY-MM-DD`, is midnight UTC. Years are four digits. Fields must be in range
/// (no month 13, February 30 or hour 24), except that a leap second `:60` is accepted and read
/// as `:59`.
///
/// Formatting always writes UTC with a `Z`, e.g. `2026-11-21T16:34:17Z` or
/// `2026-11-21T16:34:17.201Z`.
public enum ISO8601 {
    /// The date `text` stands for, or nil if it is not a timestamp of the forms above.
    ///
    /// ```swift
    /// ISO8601.parse("2026-11-21T10:34:17.201265-06:00")  // 2026-11-21 16:34:17.201265 UTC
    /// ```
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    /// The date the UTF-8 `bytes` stand for, or nil.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        // A cursor struct rather than nested functions capturing `var i`: captured variables
        // cost a dynamic exclusivity check on every access, and dates are on the hot path.
        var c = Cursor(bytes: bytes)
        guard let year = c.number(4), c.skip("-"), let month = c.number(2), c.skip("-"), let day = c.number(2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        var seconds = daysFromCivil(year: year, month: month, day: day) * 86_400
        guard c.i < c.bytes.count else { return date(unixSeconds: seconds, nanoseconds: 0) }

        guard c.skip("T") || c.skip("t") || c.skip(" "),
              let hour = c.number(2), c.skip(":"), let minute = c.number(2), c.skip(":"), let second = c.number(2),
              hour < 24, minute < 60, second <= 60
        else { return nil }
        seconds += hour * 3600 + minute * 60 + min(second, 59)

        var nanoseconds = 0
        if c.skip(".") {
            let start = c.i
            while c.i < c.bytes.count, JSONParser.isDigit(c.bytes[c.i]) {
                if c.i - start < 9 { nanoseconds = nanoseconds * 10 + Int(c.bytes[c.i] - UInt8(ascii: "0")) }
                c.i += 1
            }
            guard c.i > start else { return nil }
            for _ in min(c.i - start, 9)..<9 { nanoseconds *= 10 }
        }

        if c.skip("Z") || c.skip("z") {
            // UTC
        } else if c.i < c.bytes.count, c.bytes[c.i] == UInt8(ascii: "+") || c.bytes[c.i] == UInt8(ascii: "-") {
            let sign = c.bytes[c.i] == UInt8(ascii: "-") ? -1 : 1
            c.i += 1
            guard let hours = c.number(2), hours < 24 else { return nil }
            var minutes = 0
            if c.skip(":") {
                guard let value = c.number(2) else { return nil }
                minutes = value
            } else if c.i < c.bytes.count {
                guard let value = c.number(2) else { return nil }
                minutes = value
            }
            guard minutes < 60 else { return nil }
            // Local time minus its offset is UTC.
            seconds -= sign * (hours * 3600 + minutes * 60)
        }
        guard c.i == c.bytes.count else { return nil }
        return date(unixSeconds: seconds, nanoseconds: nanoseconds)
    }

    /// Reads an ISO 8601 text from the front.
    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        /// Reads exactly `count` digits.
        mutating func number(_ count: Int) -> Int? {
            guard bytes.count - i >= count else { return nil }
            var value = 0
            for k in i..<i + count {
                let digit = bytes[k] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            i += count
            return value
        }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard i < bytes.count, bytes[i] == UInt8(ascii: character) else { return false }
            i += 1
            return true
        }
    }

    private static func date(unixSeconds: Int, nanoseconds: Int) -> Date {
        // Counting from 2001 directly keeps all the precision a Date has.
        Date(timeIntervalSinceReferenceDate: Double(unixSeconds - unixTimeOf2001) + Double(nanoseconds) / 1e9)
    }

    /// Seconds from 1970-01-01 to 2001-01-01, Date's reference date.
    private static let unixTimeOf2001 = 978_307_200

    /// `date` in UTC, e.g. `2026-11-21T16:34:17Z`, with `fractionalDigits` (0 to 9, clamped)
    /// digits of fractional seconds, rounded to nearest. Dates outside the years 0000 to 9999 are
    /// clamped to that range.
    public static func format(_ date: Date, fractionalDigits: Int = 0) -> String {
        String(unsafeUninitializedCapacity: maxLength) { write(date, fractionalDigits: fractionalDigits, into: $0) }
    }

    /// The longest text ``format(_:fractionalDigits:)`` produces.
    static let maxLength = 30

    /// Writes the text of ``format(_:fractionalDigits:)`` into `output` (at least ``maxLength``
    /// bytes) and returns its length.
    static func write(_ date: Date, fractionalDigits: Int, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let digits = min(max(fractionalDigits, 0), 9)
        // 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z, relative to 2001.
        let earliest = Double(-62_167_219_200 - unixTimeOf2001)
        let latest = Double(253_402_300_799 - unixTimeOf2001)
        let time = date.timeIntervalSinceReferenceDate
        let clamped = time.isNaN ? 0 : min(max(time, earliest), latest)

        var whole = clamped.rounded(.down)
        var scale = 1
        for _ in 0..<digits { scale *= 10 }
        var fraction = Int(((clamped - whole) * Double(scale)).rounded())
        if fraction == scale {
            whole += 1
            fraction = 0
        }
        let unix = Int(whole) + unixTimeOf2001
        let days = unix >= 0 ? unix / 86_400 : (unix - 86_399) / 86_400
        let secondOfDay = unix - days * 86_400
        let (year, month, day) = civil(fromDays: days)

        var o = 0
        func put(_ value: Int, width: Int) {
            var value = value
            for k in stride(from: o + width - 1, through: o, by: -1) {
                output[k] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            o += width
        }
        func put(_ character: Unicode.Scalar) {
            output[o] = UInt8(ascii: character)
            o += 1
        }
        put(year, width: 4)
        put("-")
        put(month, width: 2)
        put("-")
        put(day, width: 2)
        put("T")
        put(secondOfDay / 3600, width: 2)
        put(":")
        put(secondOfDay / 60 % 60, width: 2)
        put(":")
        put(secondOfDay % 60, width: 2)
        if digits > 0 {
            put(".")
            put(fraction, width: digits)
        }
        put("Z")
        return o
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, after Howard Hinnant's algorithms)

    private static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the given date.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        // Count years from March so that the leap day is the last day of the year.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 is March
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension JSONWriter {
    /// Appends `date` as a quoted ISO 8601 string in UTC, e.g. `"2026-11-21T16:34:17.201Z"`; see
    /// ``ISO8601/format(_:fractionalDigits:)``.
    public mutating func writeISO8601(_ date: Date, fractionalDigits: Int) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ISO8601.maxLength) { buffer in
            let length = ISO8601.write(date, fractionalDigits: fractionalDigits, into: buffer)
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<length]))
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
