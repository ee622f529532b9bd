import CSQLite
import Logging

/// Logs every statement a connection runs, at `.trace` level, through
/// ``DatabaseConfiguration/logger``: the SQL with its bound arguments written in
/// (`sqlite3_expanded_sql`, long text and blob literals shortened) as the message, and the
/// time SQLite spent on it in the metadata.
///
/// SQLite measures the statement itself (`SQLITE_TRACE_PROFILE`, in nanoseconds) and calls
/// back once it has finished; the callback checks the logger's level before anything else, so
/// a logger above `.trace` costs one level check per statement.
final class StatementTracer {
    let logger: Logger
    /// Literals longer than this many characters are cut in the logged SQL.
    let literalLimit: Int

    init(logger: Logger, literalLimit: Int) {
        self.logger = logger
        self.literalLimit = literalLimit
    }

    /// Installs the tracer on `handle`; the connection keeps the tracer as long as the handle.
    func install(on handle: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_trace_v2(handle, UInt32(SQLITE_TRACE_PROFILE), { _, context, statement, nanoseconds in
            guard let context, let statement, let nanoseconds else { return 0 }
            let tracer = Unmanaged<StatementTracer>.fromOpaque(context).takeUnretainedValue()
            tracer.statementFinished(OpaquePointer(statement), nanoseconds: nanoseconds.load(as: Int64.self))
            return 0
        }, context)
    }

    private func statementFinished(_ statement: OpaquePointer, nanoseconds: Int64) {
        guard logger.logLevel <= .trace else { return }
        let sql: String
        if let expanded = sqlite3_expanded_sql(statement) {
            sql = shortenLiterals(String(cString: expanded), limit: literalLimit)
            sqlite3_free(expanded)
        } else {
            // Expanding fails only when out of memory or beyond SQLITE_LIMIT_LENGTH.
            sql = sqlite3_sql(statement).map { String(cString: $0) } ?? ""
        }
        logger.trace(
            "\(sql)",
            metadata: [
                "sqlite.duration_ns": "\(nanoseconds)",
                "sqlite.duration": "\(formattedDuration(nanoseconds))",
            ])
    }
}

/// `1.234 ms` / `56.7 µs`: the duration as a person reads it (the metadata also carries the
/// nanoseconds).
func formattedDuration(_ nanoseconds: Int64) -> String {
    if nanoseconds >= 1_000_000 { return "\(Double(nanoseconds / 1000) / 1000) ms" }
    return "\(Double(nanoseconds / 100) / 10) µs"
}

/// `sql` with every quoted literal (`'…'`, `x'…'`) longer than `limit` characters cut to its
/// first `limit` characters followed by `…(N bytes)'` (N: the literal's length in bytes): a statement that binds a megabyte blob
/// logs a line, not a megabyte. Double-quoted identifiers are copied as they are.
func shortenLiterals(_ sql: String, limit: Int) -> String {
    let quote = UInt8(ascii: "'")
    let doubleQuote = UInt8(ascii: "\"")
    let bytes = Array(sql.utf8)
    // Nothing to shorten when the whole text is short: the usual case costs one comparison.
    guard bytes.count > limit else { return sql }
    var output: [UInt8] = []
    output.reserveCapacity(min(bytes.count, 4096))
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        guard byte == quote || byte == doubleQuote else {
            output.append(byte)
            index += 1
            continue
        }
        // Find the closing quote; a doubled quote is an escaped one.
        var end = index + 1
        while end < bytes.count {
            if bytes[end] == byte {
                if end + 1 < bytes.count, bytes[end + 1] == byte {
                    end += 2
                    continue
                }
                break
            }
            end += 1
        }
        let contentCount = min(end, bytes.count) - index - 1
        if byte == quote, contentCount > limit {
            // Cut at a character boundary: never inside a UTF-8 sequence.
            var cut = index + 1 + limit
            while cut > index + 1, bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
            output += bytes[index..<cut]
            output += Array("…(\(contentCount) bytes)'".utf8)
        } else {
            output += bytes[index..<min(end + 1, bytes.count)]
        }
        index = end + 1
    }
    return String(decoding: output, as: UTF8.self)
}
