/// An error from reading, decoding or encoding JSON.
///
/// Every error says *where* (``path``, plus the byte ``offset`` with ``line`` and ``column`` for
/// syntax errors) and *what* was expected and found (``reason``). ModelSync never crashes on bad
/// input and never returns a partially decoded model: it throws this error instead.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Equatable {
        /// The bytes are not JSON, e.g. `unexpected character '}'` or `unterminated string`.
        case syntax(String)
        /// A string holds bytes that are not valid UTF-8.
        case invalidUTF8
        /// Arrays and objects nest deeper than the configured limit.
        case tooDeep(limit: Int)
        /// The value has the wrong shape, e.g. `expected: "Int"`, `found: "string \"abc\""`.
        case typeMismatch(expected: String, found: String)
        /// A required key is absent.
        case missingKey(String)
        /// A number does not fit the target type, e.g. `1e400` for `Double` or `300` for `UInt8`.
        case numberOutOfRange(String, type: String)
        /// The value has the right shape but cannot be used, e.g. a malformed date or UUID.
        case invalidValue(String)
        /// An error thrown by user code (a hook or a custom transformer), with its description.
        /// The error itself is ``JSONError/underlying``.
        case userError(String)
    }

    /// What went wrong.
    public var reason: Reason
    /// Where in the document it went wrong, e.g. `posts[3].user.id`. Empty for the root.
    public var path: JSONPath
    /// The byte offset of a syntax or encoding error in the input, when known.
    public var offset: Int?
    /// The 1-based line of ``offset``, when known.
    public var line: Int?
    /// The 1-based column (in bytes) of ``offset``, when known.
    public var column: Int?

    /// The error thrown by user code (a hook, a transformer, a custom date strategy or a custom
    /// `JSONDecodable`) when ``reason`` is ``Reason/userError(_:)``, so callers can match it:
    /// `if let mine = error.underlying as? MyError { ... }`. Not part of `==`.
    public var underlying: (any Error & Sendable)?

    /// The tape node the error refers to, before its path has been resolved (internal bookkeeping:
    /// paths are computed only when an error escapes, so the fast path pays nothing for them).
    var node: Int?

    /// Creates an error.
    public init(_ reason: Reason, path: JSONPath = JSONPath(), offset: Int? = nil, line: Int? = nil, column: Int? = nil) {
        self.reason = reason
        self.path = path
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// Wraps an error thrown by user code, keeping it as ``underlying``; a ``JSONError`` is
    /// returned unchanged.
    public init(wrapping error: any Error & Sendable, path: JSONPath = JSONPath()) {
        if let json = error as? JSONError {
            self = json
            return
        }
        self.init(.userError(String(describing: error)), path: path)
        underlying = error
    }

    public static func == (lhs: JSONError, rhs: JSONError) -> Bool {
        lhs.reason == rhs.reason && lhs.path == rhs.path && lhs.offset == rhs.offset
    }

    public var description: String {
        var text = ""
        switch reason {
        case .syntax(let message): text = "malformed JSON: \(message)"
        case .invalidUTF8: text = "invalid UTF-8 in string"
        case .tooDeep(let limit): text = "nesting deeper than \(limit) levels"
        case .typeMismatch(let expected, let found): text = "expected \(expected), found \(found)"
        case .missingKey(let key): text = "missing key \"\(key)\""
        case .numberOutOfRange(let number, let type): text = "number \(number) does not fit \(type)"
        case .invalidValue(let message): text = message
        case .userError(let message): text = message
        }
        if let line, let column {
            text += " (line \(line), column \(column))"
        } else if let offset {
            text += " (byte \(offset))"
        }
        return path.isEmpty ? text : "at \(path): \(text)"
    }
}
