// ``LikePattern`` written out for PostgreSQL's `~*`.

extension LikePattern {
    /// The pattern as a PostgreSQL advanced regular expression for `~*` that accepts the same
    /// texts: written from the parsed tree (never from the text as sent), every character but
    /// ASCII letters and digits as a `\u`/`\U` escape, `.` as "not a newline", the classes as
    /// ranges of scalars.
    package var postgresPattern: String {
        Self.postgres(tree)
    }

    private static func postgres(_ node: Node) -> String {
        switch node {
        case .empty: return "(?:)"
        case .scalar(let value): return postgresCharacter(value)
        case .any: return "[^\\u000a]"
        case .set(let set):
            // PostgreSQL's text holds no NUL: a range from 0 starts at 1.
            let ranges = set.ranges.compactMap { range -> ClosedRange<UInt32>? in
                range.upperBound == 0 ? nil : max(range.lowerBound, 1)...range.upperBound
            }
            // Nothing left: a negated class matches every character (`.` does, in PostgreSQL's default
            // mode), a class matches none.
            guard !ranges.isEmpty else { return set.negated ? "." : "[^\\u0001-\\U0010ffff]" }
            let members = ranges.map { range in
                range.lowerBound == range.upperBound
                    ? postgresEscape(range.lowerBound) : postgresEscape(range.lowerBound) + "-" + postgresEscape(range.upperBound)
            }
            return "[" + (set.negated ? "^" : "") + members.joined() + "]"
        case .start: return "^"
        case .end: return "$"
        case .sequence(let nodes): return nodes.map(postgres).joined()
        case .alternatives(let branches): return "(?:" + branches.map(postgres).joined(separator: "|") + ")"
        case .repetition(let operand, let minimum, let maximum):
            let quantifier = switch (minimum, maximum) {
            case (0, nil): "*"
            case (1, nil): "+"
            case (0, 1?): "?"
            case (let minimum, nil): "{\(minimum),}"
            case (let minimum, let maximum?) where minimum == maximum: "{\(minimum)}"
            case (let minimum, let maximum?): "{\(minimum),\(maximum)}"
            }
            return "(?:" + postgres(operand) + ")" + quantifier
        }
    }

    private static func postgresCharacter(_ value: UInt32) -> String {
        if let scalar = Unicode.Scalar(value), scalar.isASCII, scalar.properties.isAlphabetic || (0x30...0x39).contains(value) {
            return String(Character(scalar))
        }
        return postgresEscape(value)
    }

    private static func postgresEscape(_ value: UInt32) -> String {
        let hex = String(value, radix: 16)
        return value <= 0xFFFF
            ? "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            : "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}
