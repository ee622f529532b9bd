import Foundation
import ModelSyncCore
import Testing

@Suite("HTTP dates")
struct HTTPDateTests {
    /// What `HTTPDate` formatted with before it was written by hand.
    private static func reference(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    @Test("formats as DateFormatter does, across leap years, centuries, the epoch and the Julian calendar")
    func formatsAsDateFormatter() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        var dates: [Date] = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -1), Date(timeIntervalSince1970: 0.999),
            Date(timeIntervalSince1970: -0.5), Date(timeIntervalSince1970: 951_782_400), // 2000-02-29
            Date(timeIntervalSince1970: -2_203_891_200), // 1900-03-01
            Date(timeIntervalSince1970: 4_107_542_399), // 2100-02-28 23:59:59
            Date(timeIntervalSince1970: 253_402_300_799), // 9999-12-31 23:59:59
            Date(timeIntervalSince1970: -11_676_096_000), // 1600-01-01, the first one written by hand
            Date(timeIntervalSince1970: -11_676_096_001),
        ]
        // Any second from 1600 to 9999, and a few centuries before (where DateFormatter's
        // calendar is the Julian one).
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: -20_000_000_000...253_402_300_799, using: &generator)))) }
        for date in dates {
            #expect(HTTPDate.format(date) == Self.reference(date), "\(date.timeIntervalSince1970)")
        }
    }

    @Test("dates beyond year 9999 and before year 1 still format and parse back")
    func formatsOutOfRange() {
        for interval in [253_402_300_800.0, 1e13, -62_135_596_800, -62_135_596_801, -1e13] {
            let date = Date(timeIntervalSince1970: interval)
            #expect(HTTPDate.format(date) == Self.reference(date))
        }
    }

    @Test("parses what it formats")
    func roundTrips() {
        let date = Date(timeIntervalSince1970: 1_764_410_000)
        #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
    }
}
