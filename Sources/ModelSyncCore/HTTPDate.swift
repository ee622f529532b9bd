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

    /// The date in IMF-fixdate form.
    package static func format(_ date: Date) -> String {
        formatter.withLock { $0.string(from: date) }
    }

    /// Parses an IMF-fixdate; nil for anything else.
    package static func parse(_ text: String) -> Date? {
        formatter.withLock { $0.date(from: text) }
    }
}
