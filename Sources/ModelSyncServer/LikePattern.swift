/// The regular expression of a `_like` filter, matched in time linear in the text.
///
/// `NSRegularExpression` backtracks: `(a+)+$` over thirty `a`s and a `!` ran for tens of seconds.
/// A pattern here is parsed to a tree, bounded, and compiled to a program that a Pike VM runs
/// (every thread of a Thompson NFA advanced together, one step per character of the text), so
/// that a match costs at most the text's length times the program's size, whatever the pattern.
///
/// The language (docs/PROTOCOL.md, "Filters"): literals; `.` (any character but a newline);
/// classes `[abc]`, `[a-z]`, `[^…]`; `\d`, `\w`, `\s` (ASCII digits, word characters and white
/// space) and their negations `\D`, `\W`, `\S`; `\n`, `\t`, `\r`, `\f`, `\uXXXX`, and a backslash
/// before any other character that is not a letter or a digit for that character; anchors `^`
/// and `$` (the start and the end of the text); groups `( )` and `(?: )`; alternation `|`;
/// `*`, `+`, `?` (a lazy `*?` matches as `*` does: a filter asks only whether there is a match)
/// and `{m}`, `{m,}`, `{m,n}` up to ``maximumRepetition``. The pattern is searched for anywhere
/// in the text unless anchored, case-insensitively (each character and its simple case
/// mappings), over Unicode scalars: `.` is one scalar, however a text composes them.
///
/// Anything else is refused with a ``Refusal`` naming it: backreferences, lookaround, atomic
/// groups, possessive quantifiers, inline flags, named groups, word boundaries, Unicode
/// properties, and patterns beyond ``maximumLength`` or ``maximumProgramSize``.
package struct LikePattern: Sendable {
    /// The longest pattern accepted, in Unicode scalars.
    package static let maximumLength = 1_000
    /// The largest count of a bounded repetition `{m,n}`.
    package static let maximumRepetition = 100
    /// The most instructions a pattern compiles to (bounded repetitions copy their operand).
    package static let maximumProgramSize = 4_000
    /// The deepest nesting of groups.
    package static let maximumNesting = 32

    /// The pattern as written.
    package let source: String
    /// The parsed pattern (what ``postgresPattern`` is written from).
    let tree: Node
    let program: [Instruction]
    let sets: [ScalarSet]

    /// Parses, bounds and compiles `pattern`.
    ///
    /// - Throws: a ``Refusal`` naming what is not accepted, and where.
    package init(_ pattern: String) throws(Refusal) {
        let scalars = Array(pattern.unicodeScalars)
        guard scalars.count <= Self.maximumLength else {
            throw Refusal(message: "the pattern is longer than \(Self.maximumLength) characters", offset: nil)
        }
        if let nul = scalars.firstIndex(of: "\0") { throw Refusal(message: "the pattern holds a NUL character", offset: nul) }
        var parser = Parser(scalars: scalars)
        let tree = try parser.parse()
        guard Self.size(of: tree) <= Self.maximumProgramSize else {
            throw Refusal(message: "the pattern is too large once its repetitions are expanded (at most \(Self.maximumProgramSize) steps)", offset: nil)
        }
        var compiler = Compiler()
        compiler.emit(tree)
        compiler.program.append(.match)
        (source, self.tree, program, sets) = (pattern, tree, compiler.program, compiler.sets)
    }

    /// A pattern refused: what is wrong, and where (a 0-based offset in Unicode scalars).
    package struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        package var message: String
        package var offset: Int?

        package var description: String {
            offset.map { "\(message) (at character \($0 + 1))" } ?? message
        }
    }

    // MARK: The tree

    /// A parsed pattern.
    indirect enum Node: Sendable, Equatable {
        case empty
        case scalar(UInt32)
        /// `.`: any scalar but a newline.
        case any
        case set(ScalarSet)
        case start
        case end
        case sequence([Node])
        case alternatives([Node])
        /// `operand{minimum,maximum}`; maximum nil: unbounded.
        case repetition(Node, minimum: Int, maximum: Int?)
    }

    /// A class: ranges of scalars, possibly negated.
    struct ScalarSet: Sendable, Equatable {
        var ranges: [ClosedRange<UInt32>]
        var negated: Bool

        /// Whether `scalar` is in the ranges, taken as written (before negation and case).
        func containsExactly(_ scalar: UInt32) -> Bool {
            ranges.contains { $0.contains(scalar) }
        }

        /// Whether the class matches `scalar`, ignoring case.
        func matches(_ scalar: UInt32) -> Bool {
            let found = containsExactly(scalar) || containsExactly(CaseFolding.lower(scalar)) || containsExactly(CaseFolding.upper(scalar))
            return found != negated
        }
    }

    /// The instructions a pattern compiles to.
    enum Instruction: Sendable, Equatable {
        /// One scalar, lowercased.
        case scalar(UInt32)
        case any
        /// A class, by its index in ``LikePattern/sets``.
        case set(Int)
        /// Goes on at both (the first is not preferred: a filter asks only whether there is a match).
        case split(Int, Int)
        case jump(Int)
        case assertStart
        case assertEnd
        case match
    }

    /// How many instructions `node` compiles to, saturating (a nested repetition can multiply
    /// past any bound before it is refused).
    static func size(of node: Node) -> Int {
        let ceiling = maximumProgramSize + 1
        switch node {
        case .empty: return 0
        case .scalar, .any, .set, .start, .end: return 1
        case .sequence(let nodes): return min(ceiling, nodes.reduce(0) { min(ceiling, $0 + size(of: $1)) })
        case .alternatives(let nodes): return min(ceiling, nodes.reduce(0) { min(ceiling, $0 + size(of: $1) + 2) })
        case .repetition(let operand, let minimum, let maximum):
            let one = size(of: operand)
            let copies = maximum.map { $0 } ?? (minimum + 1)
            let (product, overflow) = copies.multipliedReportingOverflow(by: one + 2)
            return overflow ? ceiling : min(ceiling, product)
        }
    }
}
