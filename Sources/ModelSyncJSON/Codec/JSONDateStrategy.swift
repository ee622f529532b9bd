import Foundation
import ModelSyncCore

/// How `Date` values appear in JSON.
public enum JSONDateStrategy: Sendable {
    /// ISO 8601 text. Decoding accepts fractional seconds and any offset
    /// (`2026-11-21T10:34:17.201265-06:00`); encoding writes whole seconds in UTC.
    case iso8601
    /// ISO 8601 text with milliseconds on output (`2026-11-21T16:34:17.201Z`); decoding as
    /// ``iso8601``.
    case iso8601WithFractionalSeconds
    /// A number of seconds since 1970-01-01 UTC.
    case secondsSince1970
    /// A number of milliseconds since 1970-01-01 UTC (JavaScript's `Date.now()`).
    case millisecondsSince1970
    /// Your own conversion, through ``JSONValue``.
    case custom(
        decode: @Sendable (JSONValue) throws -> Date,
        encode: @Sendable (Date) throws -> JSONValue
    )

    func decode(_ node: Int, _ context: inout JSONDecodingContext) throws -> Date {
        switch self {
        case .iso8601, .iso8601WithFractionalSeconds:
            guard context.tape.nodes[node].kind == .string else {
                throw context.mismatch(node, expected: "ISO 8601 date string")
            }
            if let date = try context.withStringBytes(node, { ISO8601.parse($0) }) { return date }
            throw context.error(.invalidValue("\(context.tape.describe(node)) is not an ISO 8601 date"), at: node)
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try Double.decodeJSON(node, &context))
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try Double.decodeJSON(node, &context) / 1000)
        case .custom(let decode, _):
            let value = try context.value(node)
            do {
                return try decode(value)
            } catch {
                throw context.wrap(error, at: node)
            }
        }
    }

    func encode(_ date: Date, _ context: inout JSONEncodingContext) throws {
        switch self {
        case .iso8601:
            context.writer.writeISO8601(date, fractionalDigits: 0)
        case .iso8601WithFractionalSeconds:
            context.writer.writeISO8601(date, fractionalDigits: 3)
        case .secondsSince1970:
            try date.timeIntervalSince1970.encodeJSON(to: &context)
        case .millisecondsSince1970:
            try (date.timeIntervalSince1970 * 1000).rounded().encodeJSON(to: &context)
        case .custom(_, let encode):
            do {
                try encode(date).write(to: &context.writer)
            } catch let error as JSONError {
                throw error
            } catch {
                throw JSONError(wrapping: error)
            }
        }
    }
}
