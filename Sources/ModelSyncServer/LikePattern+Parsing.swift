// The parser of ``LikePattern``: text to tree, refusing what the language leaves out.

extension LikePattern {
    struct Parser {
        let scalars: [Unicode.Scalar]
        var position = 0
        var depth = 0

        init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

        private var next: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }

        private func peek(_ offset: Int) -> Unicode.Scalar? {
            position + offset < scalars.count ? scalars[position + offset] : nil
        }

        private func refuse(_ message: String, at offset: Int? = nil) -> Refusal {
            Refusal(message: message, offset: offset ?? position)
        }

        mutating func parse() throws(Refusal) -> Node {
            let node = try alternatives()
            if next == ")" { throw refuse("a ) closes no group") }
            return node
        }

        private mutating func alternatives() throws(Refusal) -> Node {
            var branches = [try sequence()]
            while next == "|" {
                position += 1
                branches.append(try sequence())
            }
            return branches.count == 1 ? branches[0] : .alternatives(branches)
        }

        private mutating func sequence() throws(Refusal) -> Node {
            var nodes: [Node] = []
            while let scalar = next, scalar != "|", scalar != ")" {
                let atomStart = position
                let atom = try self.atom()
                nodes.append(try quantified(atom, at: atomStart))
            }
            switch nodes.count {
            case 0: return .empty
            case 1: return nodes[0]
            default: return .sequence(nodes)
            }
        }

        /// `atom` with the quantifier that follows it, if any.
        private mutating func quantified(_ atom: Node, at atomStart: Int) throws(Refusal) -> Node {
            guard let bounds = try quantifier() else { return atom }
            if atom == .start || atom == .end { throw refuse("an anchor (^ or $) cannot be repeated", at: atomStart) }
            // `*?` and kin: the same matches for a filter.
            if next == "?" { position += 1 } else if next == "+" { throw refuse("possessive quantifiers (*+, ++, ?+) are not supported") }
            if let scalar = next, "*+?".unicodeScalars.contains(scalar) || (scalar == "{" && isRepetitionCount(at: position)) {
                throw refuse("a quantifier cannot follow another; group the repeated part first")
            }
            return .repetition(atom, minimum: bounds.minimum, maximum: bounds.maximum)
        }

        private mutating func quantifier() throws(Refusal) -> (minimum: Int, maximum: Int?)? {
            switch next {
            case "*"?: position += 1; return (0, nil)
            case "+"?: position += 1; return (1, nil)
            case "?"?: position += 1; return (0, 1)
            case "{"?: return try repetitionCount()
            default: return nil
            }
        }

        /// Whether a `{` at `offset` starts a count `{m}`, `{m,}` or `{m,n}`.
        private func isRepetitionCount(at offset: Int) -> Bool {
            var index = offset + 1
            var digits = 0
            while index < scalars.count, scalars[index].properties.numericType == .decimal, scalars[index].isASCII { index += 1; digits += 1 }
            return digits > 0 && index < scalars.count && (scalars[index] == "}" || scalars[index] == ",")
        }

        private mutating func repetitionCount() throws(Refusal) -> (minimum: Int, maximum: Int?) {
            let start = position
            position += 1
            let minimum = try number()
            guard let minimum else { throw refuse("a { must start a repetition {m}, {m,} or {m,n}; write \\{ for the character", at: start) }
            var maximum: Int? = minimum
            if next == "," {
                position += 1
                maximum = try number()
            }
            guard next == "}" else { throw refuse("a repetition {m,n} is not closed", at: start) }
            position += 1
            if let maximum, maximum < minimum { throw refuse("a repetition's maximum is below its minimum", at: start) }
            if max(minimum, maximum ?? 0) > LikePattern.maximumRepetition {
                throw refuse("a repetition may count to \(LikePattern.maximumRepetition) at most", at: start)
            }
            return (minimum, maximum)
        }

        /// Decimal digits (at most four, which is past any count accepted), if any.
        private mutating func number() throws(Refusal) -> Int? {
            var value: Int?
            var digits = 0
            while let scalar = next, scalar.isASCII, let digit = Int(String(scalar)), (0...9).contains(digit) {
                digits += 1
                if digits > 4 { throw refuse("a repetition may count to \(LikePattern.maximumRepetition) at most") }
                value = (value ?? 0) * 10 + digit
                position += 1
            }
            return value
        }

        private mutating func atom() throws(Refusal) -> Node {
            let start = position
            guard let scalar = next else { throw refuse("the pattern ends early") }
            position += 1
            switch scalar {
            case "(": return try group(at: start)
            case "[": return .set(try set(at: start))
            case ".": return .any
            case "^": return .start
            case "$": return .end
            case "\\": return try escape().node
            case "*", "+", "?": throw refuse("\(scalar) has nothing to repeat", at: start)
            case "{": throw refuse(isRepetitionCount(at: start) ? "{ has nothing to repeat" : "a { must start a repetition {m}, {m,} or {m,n}; write \\{ for the character", at: start)
            default: return .scalar(scalar.value)
            }
        }

        private mutating func group(at start: Int) throws(Refusal) -> Node {
            if next == "?" {
                switch peek(1) {
                case ":"?: position += 2
                case "="?, "!"?: throw refuse("lookahead (?= and (?! is not supported", at: start)
                case "<"? where peek(2) == "=" || peek(2) == "!": throw refuse("lookbehind (?<= and (?<! is not supported", at: start)
                case "<"?, "P"?, "'"?: throw refuse("named groups are not supported; use ( ) or (?: )", at: start)
                case ">"?: throw refuse("atomic groups (?> are not supported", at: start)
                case "#"?: throw refuse("comments (?# are not supported", at: start)
                default: throw refuse("inline options and other (? groups are not supported; matching always ignores case", at: start)
                }
            }
            depth += 1
            if depth > LikePattern.maximumNesting { throw refuse("groups nest deeper than \(LikePattern.maximumNesting)", at: start) }
            let inner = try alternatives()
            guard next == ")" else { throw refuse("a ( is not closed", at: start) }
            position += 1
            depth -= 1
            return inner
        }

        /// After a `\`: a scalar or a class.
        private mutating func escape() throws(Refusal) -> (node: Node, scalar: UInt32?) {
            let start = position - 1
            guard let scalar = next else { throw refuse("the pattern ends with a lone \\", at: start) }
            position += 1
            func literal(_ value: UInt32) -> (Node, UInt32?) { (.scalar(value), value) }
            switch scalar {
            case "d", "D", "w", "W", "s", "S":
                let ranges: [ClosedRange<UInt32>] = switch scalar {
                case "d", "D": ScalarSet.digits
                case "w", "W": ScalarSet.wordCharacters
                default: ScalarSet.whiteSpace
                }
                let negated = scalar.properties.isUppercase
                return (.set(ScalarSet(ranges: negated ? ScalarSet.complement(ranges) : ranges, negated: false)), nil)
            case "n": return literal(0x0A)
            case "t": return literal(0x09)
            case "r": return literal(0x0D)
            case "f": return literal(0x0C)
            case "u":
                var value: UInt32 = 0
                for _ in 0..<4 {
                    guard let digit = next.flatMap({ $0.isASCII ? UInt32(String($0), radix: 16) : nil }) else {
                        throw refuse("\\u takes exactly four hexadecimal digits", at: start)
                    }
                    value = value * 16 + digit
                    position += 1
                }
                guard Unicode.Scalar(value) != nil, value != 0 else { throw refuse("\\u names no character", at: start) }
                return literal(value)
            case "1", "2", "3", "4", "5", "6", "7", "8", "9", "k":
                throw refuse("backreferences are not supported", at: start)
            case "b", "B", "y", "Y", "m", "M", "<", ">":
                throw refuse("word boundaries are not supported", at: start)
            case "A", "z", "Z", "G":
                throw refuse("\\\(scalar) is not supported; use ^ and $", at: start)
            case "p", "P":
                throw refuse("Unicode property classes (\\p, \\P) are not supported", at: start)
            case "Q", "E":
                throw refuse("quoting with \\Q…\\E is not supported; escape each character", at: start)
            default:
                if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                    throw refuse("unknown escape \\\(scalar)", at: start)
                }
                return literal(scalar.value)
            }
        }

        /// After a `[`: the class up to its `]`.
        private mutating func set(at start: Int) throws(Refusal) -> ScalarSet {
            var negated = false
            if next == "^" {
                negated = true
                position += 1
            }
            var ranges: [ClosedRange<UInt32>] = []
            var first = true
            while true {
                guard let scalar = next else { throw refuse("a [ is not closed", at: start) }
                if scalar == "]" {
                    if first { throw refuse("an empty class [] matches nothing; write \\] for the character", at: position) }
                    position += 1
                    break
                }
                first = false
                if scalar == "[" { throw refuse("a [ inside a class must be escaped (\\[); nested classes are not supported") }
                if (scalar == "&" || scalar == "-" && !ranges.isEmpty) && peek(1) == scalar && peek(2) != "]" {
                    throw refuse("\(scalar)\(scalar) in a class is not supported; escape the character")
                }
                let itemStart = position
                let low = try setItem()
                guard next == "-", let after = peek(1), after != "]" else {
                    ranges += low.ranges
                    continue
                }
                // A range: both ends single characters.
                position += 1
                let high = try setItem()
                guard let from = low.scalar, let to = high.scalar else {
                    throw refuse("a range in a class must run between two characters", at: itemStart)
                }
                guard from <= to else { throw refuse("a range in a class runs backwards", at: itemStart) }
                ranges.append(from...to)
            }
            return ScalarSet(ranges: ranges, negated: negated)
        }

        /// One member of a class: a character (as its ranges, and its value) or an escape.
        private mutating func setItem() throws(Refusal) -> (ranges: [ClosedRange<UInt32>], scalar: UInt32?) {
            guard let scalar = next else { throw refuse("a [ is not closed") }
            position += 1
            guard scalar == "\\" else { return ([scalar.value...scalar.value], scalar.value) }
            let (node, value) = try escape()
            if let value { return ([value...value], value) }
            if case .set(let set) = node { return (set.ranges, nil) }
            return ([], nil)
        }
    }
}

extension LikePattern.ScalarSet {
    static let digits: [ClosedRange<UInt32>] = [0x30...0x39]
    static let wordCharacters: [ClosedRange<UInt32>] = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
    static let whiteSpace: [ClosedRange<UInt32>] = [0x09...0x0D, 0x20...0x20]

    /// Every scalar not in `ranges` (sorted, disjoint).
    static func complement(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound > next { result.append(next...(range.lowerBound - 1)) }
            next = max(next, range.upperBound + 1)
        }
        if next <= 0x10FFFF { result.append(next...0x10FFFF) }
        return result
    }
}
