import Foundation

/// A test of one value with the message shown when it fails: the building block of a field rule
/// (`Validate(\.title, .required(), .length(...80))`).
///
/// The built-in checks come as static members: `required(_:)`, `nonEmpty(_:)`,
/// `length(_:_:)`, `range(_:_:)`, `pattern(_:_:)`, `email(_:)`, `url(schemes:_:)`,
/// `oneOf(_:_:)` and `custom(_:_:)` (most in two forms: for a value and for an optional). Every check but `required` and `nonEmpty` passes an
/// optional that holds nil: absence is `required`'s business.
public struct Check<Value>: Sendable {
    /// The message of a failure.
    public let message: String
    private let test: @Sendable (Value) -> Bool

    /// Creates a check that passes when `test` returns true.
    public init(_ message: String, _ test: @escaping @Sendable (Value) -> Bool) {
        self.message = message
        self.test = test
    }

    /// Whether `value` passes.
    public func passes(_ value: Value) -> Bool { test(value) }

    /// A check of a value that may be nil: nil passes, anything else must pass `check`.
    public static func ifPresent<Wrapped>(_ check: Check<Wrapped>) -> Check where Value == Wrapped? {
        Check(check.message) { value in value.map(check.passes) ?? true }
    }
}

// MARK: Any value

extension Check {
    /// Fails for nil, an empty collection and a string of only whitespace (looking through
    /// optionals); any other value passes.
    public static func required(_ message: String = "is required") -> Check {
        Check(message) { !isBlank($0, ignoringWhitespace: true) }
    }

    /// Fails for nil and for an empty string or collection (looking through optionals); unlike
    /// ``required(_:)``, whitespace counts as content.
    public static func nonEmpty(_ message: String = "must not be empty") -> Check {
        Check(message) { !isBlank($0, ignoringWhitespace: false) }
    }

    /// Passes when `test` returns true.
    public static func custom(_ message: String, _ test: @escaping @Sendable (Value) -> Bool) -> Check {
        Check(message, test)
    }
}

/// Whether a value is nil, an empty collection, or (when `ignoringWhitespace`) a string of only
/// whitespace; optionals are looked through.
private func isBlank(_ value: Any, ignoringWhitespace: Bool) -> Bool {
    guard let present = unwrapped(value) else { return true }
    if ignoringWhitespace, let text = present as? any StringProtocol {
        return text.allSatisfy { $0.isWhitespace }
    }
    return (present as? any Collection)?.isEmpty ?? false
}

// MARK: Collections and strings

extension Check where Value: Collection & Sendable {
    /// Passes when the number of elements (characters, for strings) is in `range`
    /// (`3...80`, `...80`, `3...`).
    public static func length<R: RangeExpression & Sendable>(_ range: R, _ message: String? = nil) -> Check where R.Bound == Int {
        Check(message ?? "length must be \(describe(range))") { range.contains($0.count) }
    }
}

// MARK: Comparable values

extension Check where Value: Comparable & Sendable {
    /// Passes when the value is in `range` (`1...5`, `0...`, `..<100`).
    public static func range<R: RangeExpression & Sendable>(_ range: R, _ message: String? = nil) -> Check where R.Bound == Value {
        Check(message ?? "must be \(describe(range))") { range.contains($0) }
    }
}

// MARK: Equatable values

extension Check where Value: Equatable & Sendable {
    /// Passes when the value is one of `allowed`.
    public static func oneOf(_ allowed: [Value], _ message: String? = nil) -> Check {
        Check(message ?? "must be one of \(allowed.map { "\($0)" }.joined(separator: ", "))") { allowed.contains($0) }
    }
}

// MARK: Text

extension Check where Value: StringProtocol & Sendable {
    /// Passes when the whole value matches the regular expression `pattern`
    /// (`NSRegularExpression` syntax, compiled once, here). An invalid pattern fails every value,
    /// and the message says so.
    public static func pattern(_ pattern: String, _ message: String? = nil) -> Check {
        guard let regex = try? NSRegularExpression(pattern: "^(?:\(pattern))$") else {
            return Check("invalid pattern \(pattern)") { _ in false }
        }
        return Check(message ?? "must match \(pattern)") { value in
            let text = String(value)
            return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
    }

    /// Passes for an email address: one `@`, no spaces, and a dot in the domain.
    public static func email(_ message: String = "must be an email address") -> Check {
        pattern(#"[^\s@]+@[^\s@.]+(\.[^\s@.]+)+"#, message)
    }

    /// Passes for an absolute URL with a host and one of `schemes`.
    public static func url(schemes: Set<String> = ["http", "https"], _ message: String = "must be a URL") -> Check {
        Check(message) { value in
            guard let url = URL(string: String(value)), let scheme = url.scheme?.lowercased(),
                  let host = url.host, !host.isEmpty
            else { return false }
            return schemes.contains(scheme)
        }
    }
}

// MARK: Optional values

/// The built-in checks for optional values: nil passes (``Check/required(_:)`` is the check that
/// rejects it), anything else must pass the check of the wrapped type.
extension Check {
    /// ``length(_:_:)`` for an optional collection; nil passes.
    public static func length<Wrapped: Collection & Sendable, R: RangeExpression & Sendable>(
        _ range: R, _ message: String? = nil
    ) -> Check where Value == Wrapped?, R.Bound == Int {
        .ifPresent(Check<Wrapped>.length(range, message))
    }

    /// ``range(_:_:)`` for an optional value; nil passes.
    public static func range<Wrapped: Comparable & Sendable, R: RangeExpression & Sendable>(
        _ range: R, _ message: String? = nil
    ) -> Check where Value == Wrapped?, R.Bound == Wrapped {
        .ifPresent(Check<Wrapped>.range(range, message))
    }

    /// ``oneOf(_:_:)`` for an optional value; nil passes.
    public static func oneOf<Wrapped: Equatable & Sendable>(_ allowed: [Wrapped], _ message: String? = nil) -> Check
    where Value == Wrapped? {
        .ifPresent(Check<Wrapped>.oneOf(allowed, message))
    }

    /// ``pattern(_:_:)`` for optional text; nil passes.
    public static func pattern<Wrapped: StringProtocol & Sendable>(_ pattern: String, _ message: String? = nil) -> Check where Value == Wrapped? {
        .ifPresent(Check<Wrapped>.pattern(pattern, message))
    }

    /// ``email(_:)`` for optional text; nil passes.
    public static func email<Wrapped: StringProtocol & Sendable>(_ message: String = "must be an email address") -> Check where Value == Wrapped? {
        .ifPresent(Check<Wrapped>.email(message))
    }

    /// ``url(schemes:_:)`` for optional text; nil passes.
    public static func url<Wrapped: StringProtocol & Sendable>(
        schemes: Set<String> = ["http", "https"], _ message: String = "must be a URL"
    ) -> Check where Value == Wrapped? {
        .ifPresent(Check<Wrapped>.url(schemes: schemes, message))
    }
}

/// Words for a range in a default message: "between 3 and 80", "at least 1", "at most 80".
private func describe<R: RangeExpression>(_ range: R) -> String {
    switch range {
    case let range as ClosedRange<R.Bound>: "between \(range.lowerBound) and \(range.upperBound)"
    case let range as Range<R.Bound>: "at least \(range.lowerBound) and less than \(range.upperBound)"
    case let range as PartialRangeFrom<R.Bound>: "at least \(range.lowerBound)"
    case let range as PartialRangeThrough<R.Bound>: "at most \(range.upperBound)"
    case let range as PartialRangeUpTo<R.Bound>: "less than \(range.upperBound)"
    default: "in \(range)"
    }
}
