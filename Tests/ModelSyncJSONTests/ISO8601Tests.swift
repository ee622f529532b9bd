import Foundation
import Testing
@testable import ModelSyncJSON
import ModelSyncTestingCore

/// 2026-11-21T16:34:17Z.
private let reference = Date(timeIntervalSince1970: 1_795_278_857)

/// Whether `date` is within a microsecond of `expected`.
private func isClose(_ date: Date?, _ expected: Date) -> Bool {
    guard let date else { return false }
    return abs(date.timeIntervalSince(expected)) < 1e-6
}

@Suite("ISO 8601")
struct ISO8601Tests {
    @Test func offsetsNameTheSameInstant() throws {
        let local = try #require(ISO8601.parse("2026-11-21T10:34:17.201265-06:00"))
        let utc = try #require(ISO8601.parse("2026-11-21T16:34:17.201265Z"))
        #expect(isClose(local, utc))
        #expect(isClose(utc, reference.addingTimeInterval(0.201265)))
    }

    @Test(arguments: [
        ("2026-11-21T16:34:17Z", 0.0), ("2026-11-21T16:34:17z", 0), ("2026-11-21t16:34:17Z", 0), ("2026-11-21 16:34:17Z", 0),
        ("2026-11-21T16:34:17", 0), ("2026-11-21T16:34:17+00:00", 0), ("2026-11-21T16:34:17-00:00", 0),
        ("2026-11-21T22:04:17+05:30", 0), ("2026-11-21T22:04:17+0530", 0), ("2026-11-21T21:34:17+05", 0),
        ("2026-11-21T04:34:17-12:00", 0), ("2026-11-22T05:34:17+13:00", 0), ("2026-11-21T00:00:00-16:34", -17),
        ("2026-11-21T16:34:17.2Z", 0.2), ("2026-11-21T16:34:17.20Z", 0.2), ("2026-11-21T16:34:17.201Z", 0.201),
        ("2026-11-21T16:34:17.000001Z", 0.000001), ("2026-11-21T16:34:17.123456789Z", 0.123456789),
        ("2026-11-21T16:34:17.1234567891234Z", 0.123456789), ("2026-11-21T16:34:17.999999999+00:00", 0.999999999),
        ("2026-11-21T16:34:60Z", 42), ("2026-11-21", -59_657),
    ])
    func acceptedForms(text: String, secondsAfterReference: Double) throws {
        #expect(isClose(ISO8601.parse(text), reference.addingTimeInterval(secondsAfterReference)), "\(text)")
    }

    @Test func calendarEdges() {
        #expect(isClose(ISO8601.parse("1970-01-01T00:00:00Z"), Date(timeIntervalSince1970: 0)))
        #expect(isClose(ISO8601.parse("1969-12-31T23:59:59Z"), Date(timeIntervalSince1970: -1)))
        #expect(isClose(ISO8601.parse("2024-02-29T12:00:00Z"), Date(timeIntervalSince1970: 1_709_208_000)))
        #expect(isClose(ISO8601.parse("2000-02-29"), Date(timeIntervalSince1970: 951_868_800 - 86_400)))
        #expect(isClose(ISO8601.parse("1900-03-01"), Date(timeIntervalSince1970: -2_203_891_200)))
        #expect(isClose(ISO8601.parse("0001-01-01T00:00:00Z"), Date(timeIntervalSince1970: -62_135_596_800)))
        #expect(isClose(ISO8601.parse("9999-12-31T23:59:59Z"), Date(timeIntervalSince1970: 253_402_300_799)))
        #expect(isClose(ISO8601.parse("2001-01-01T00:00:00Z"), Date(timeIntervalSinceReferenceDate: 0)))
    }

    @Test(arguments: [
        "", "2026", "2026-11", "2026-11-21T", "2026-11-21T16:34", "2026-11-21T16:34Z", "2026-11-21T16:34:17.",
        "2026-11-21T16:34:17.Z", "2026-13-01", "2026-00-10", "2026-11-00", "2026-11-31", "2026-12-32", "2026-02-29",
        "1900-02-29", "2026-11-21T24:00:00Z", "2026-11-21T23:60:00Z", "2026-11-21T23:59:61Z", "2026-11-21T16:34:17+24:00",
        "2026-11-21T16:34:17+05:60", "2026-11-21T16:34:17+05:", "2026-11-21T16:34:17+5", "2026-11-21T16:34:17+05:3",
        "2026-11-21T16:34:17+053", "2026-11-21T16:34:17 Z", "2026-11-21T16:34:17ZZ", "2026-11-21T16:34:17Zx",
        "2026-1-21", "26-11-21", "2026/11/21", "2026-11-21X16:34:17Z", "2026-11-21T16:34:17.12a", "+2026-11-21",
        " 2026-11-21", "2026-11-21 ", "2026-11-21T16:34:17GMT", "2026-11-21T1:34:17Z", "２０２６-11-21",
    ])
    func rejectedForms(text: String) {
        #expect(ISO8601.parse(text) == nil)
    }

    @Test func formatting() {
        let date = reference.addingTimeInterval(0.201265)
        #expect(ISO8601.format(date) == "2026-11-21T16:34:17Z")
        #expect(ISO8601.format(date, fractionalDigits: 1) == "2026-11-21T16:34:17.2Z")
        #expect(ISO8601.format(date, fractionalDigits: 3) == "2026-11-21T16:34:17.201Z")
        #expect(ISO8601.format(date, fractionalDigits: 6) == "2026-11-21T16:34:17.201265Z")
        #expect(ISO8601.format(date, fractionalDigits: -4) == "2026-11-21T16:34:17Z")
        #expect(ISO8601.format(date, fractionalDigits: 12).count == "2026-11-21T16:34:17.201265000Z".count)
        #expect(ISO8601.format(Date(timeIntervalSince1970: 0), fractionalDigits: 3) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601.format(Date(timeIntervalSince1970: -0.25), fractionalDigits: 2) == "1969-12-31T23:59:59.75Z")
        #expect(ISO8601.format(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(ISO8601.format(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
        // Rounding to the nearest unit carries into the seconds and beyond.
        #expect(ISO8601.format(Date(timeIntervalSince1970: 1_798_761_599.9999996), fractionalDigits: 6) == "2027-01-01T00:00:00.000000Z")
        #expect(ISO8601.format(reference.addingTimeInterval(0.6)) == "2026-11-21T16:34:18Z")
    }

    @Test func formattingClampsWhatItCannotWrite() {
        #expect(ISO8601.format(.distantFuture) == "4001-01-01T00:00:00Z")
        #expect(ISO8601.format(Date(timeIntervalSince1970: 1e15)) == "9999-12-31T23:59:59Z")
        #expect(ISO8601.format(Date(timeIntervalSince1970: -1e15)) == "0000-01-01T00:00:00Z")
        #expect(ISO8601.format(Date(timeIntervalSinceReferenceDate: .infinity)) == "9999-12-31T23:59:59Z")
        #expect(ISO8601.format(Date(timeIntervalSinceReferenceDate: -.infinity), fractionalDigits: 9) == "0000-01-01T00:00:00.000000000Z")
        #expect(ISO8601.format(Date(timeIntervalSinceReferenceDate: .nan)) == "2001-01-01T00:00:00Z")
    }

    @Test func roundTripsToTheMicrosecond() throws {
        var random = SeededGenerator(seed: 4)
        for _ in 0..<2000 {
            // 1900 to 2100: far from 2001 a Date's Double cannot hold microseconds.
            let seconds = Double.random(in: -2_208_988_800...4_102_444_800, using: &random)
            let date = Date(timeIntervalSince1970: seconds.rounded(.down) + Double(Int.random(in: 0..<1_000_000, using: &random)) / 1e6)
            let text = ISO8601.format(date, fractionalDigits: 6)
            let parsed = try #require(ISO8601.parse(text))
            #expect(isClose(parsed, date), "\(text)")
            #expect(ISO8601.format(parsed, fractionalDigits: 6) == text)
        }
    }

    @Test func civilDaysRoundTrip() {
        for days in stride(from: -800_000, through: 3_000_000, by: 97) {
            let (year, month, day) = ISO8601.civil(fromDays: days)
            #expect(ISO8601.daysFromCivil(year: year, month: month, day: day) == days)
        }
        #expect(ISO8601.civil(fromDays: 0) == (1970, 1, 1))
        #expect(ISO8601.civil(fromDays: -1) == (1969, 12, 31))
        #expect(ISO8601.civil(fromDays: 11_016) == (2000, 2, 29))
    }

    @Test func writerFastPath() {
        var writer = JSONWriter()
        writer.writeISO8601(reference.addingTimeInterval(0.5), fractionalDigits: 3)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #""2026-11-21T16:34:17.500Z""#)
    }
}
