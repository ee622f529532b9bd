import Foundation

/// HTTP dates (`Sun, 06 Nov 1994 08:49:37 GMT`), as in `Last-Modified` and `If-Modified-Since`.
package enum HTTPDate {
    private static let formatter = Locked<DateFormatter>({
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }())

    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date in IMF-fixdate form.
    ///
    /// Written by hand for the years 1600–9999 (the server sends one with every read, and
    /// `DateFormatter` took about 3% of a read's time); other years through `DateFormatter`,
    /// which counts days before October 1582 in the Julian calendar.
    package static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        // 1600-01-01 and 10000-01-01 00:00:00 GMT.
        guard interval >= -11_676_096_000, interval < 253_402_300_800 else { return formatter.withLock { $0.string(from: date) } }
        let seconds = Int(interval.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        // 1970-01-01 was a Thursday.
        let weekday = ((days % 7) + 7) % 7
        var text = ""
        text.reserveCapacity(29)
        text += weekdays[weekday]
        text += ", "
        appendDigits(day, 2, to: &text)
        text += " "
        text += months[month - 1]
        text += " "
        appendDigits(year, 4, to: &text)
        text += " "
        appendDigits(time / 3_600, 2, to: &text)
        text += ":"
        appendDigits(time / 60 % 60, 2, to: &text)
        text += ":"
        appendDigits(time % 60, 2, to: &text)
        text += " GMT"
        return text
    }

    private static func appendDigits(_ value: Int, _ width: Int, to text: inout String) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            text.unicodeScalars.append(Unicode.Scalar(UInt8(48 + rest / divisor)))
            rest %= divisor
            divisor /= 10
        }
    }

    /// Parses an IMF-fixdate; nil for anything else.
    package static func parse(_ text: String) -> Date? {
        formatter.withLock { $0.date(from: text) }
    }
}
