import Foundation
import ModelSyncServer
import ModelSyncTesting
import PostgresNIO
import ServerTestSupport
import Testing

/// The `_like` matcher: the language it accepts, what it refuses and why, patterns that make a
/// backtracking engine run for minutes, and agreement with `NSRegularExpression` and with
/// PostgreSQL's `~*` (through the translation) where all are defined.
@Suite struct LikePatternTests {
    static let matching: [(pattern: String, text: String, matches: Bool)] = [
        ("alpha", "the ALPHA one", true),
        ("^al", "alpha", true),
        ("^ph", "alpha", false),
        ("ha$", "alpha", true),
        ("^$", "", true),
        ("a.c", "abc", true),
        ("a.c", "a\nc", false),
        ("[a-c]+x", "CCBx", true),
        ("[^a-c]", "abc", false),
        ("[^a-c]", "abcd", true),
        (#"\d{3}-\d{4}"#, "call 555-1234", true),
        (#"^\w+$"#, "snake_case1", true),
        (#"^\w+$"#, "two words", false),
        (#"\s"#, "two words", true),
        (#"^\S+$"#, "two words", false),
        (#"\D"#, "123", false),
        (#"[\d_]+"#, "_1_", true),
        (#"a\.b"#, "a.b", true),
        (#"a\.b"#, "axb", false),
        (#"\u00e9t\u00c9"#, "ÉTé", true),
        ("(ab|cd)+e", "xcdabe", true),
        ("(ab|cd)+e", "xcdab", false),
        ("colou?r", "color", true),
        ("a{2,3}b", "aab", true),
        ("^a{2,3}b", "ab", false),
        ("^a{2}$", "aa", true),
        ("^a{2,}$", "aaaa", true),
        ("^(?:x|y)*$", "xyyx", true),
        ("a*?b", "aaab", true),
        ("(|a)b", "b", true),
        ("()", "anything", true),
        ("ß", "STRASSE ß", true),
        ("é", "É", true),
        ("😀+", "x😀😀", true),
        ("^.$", "😀", true),
        ("[😀-😂]", "😁", true),
        ("}", "a}", true),
        ("]", "a]", true),
    ]

    @Test func matchesTheAcceptedLanguage() throws {
        for (pattern, text, expected) in Self.matching {
            #expect(try LikePattern(pattern).matches(text) == expected, "\(pattern) over \(text)")
        }
    }

    static let refused: [(pattern: String, mentioning: String)] = [
        (#"(a)\1"#, "backreferences"),
        (#"(?<n>a)\k<n>"#, "named groups"),
        ("a(?=b)", "lookahead"),
        ("a(?!b)", "lookahead"),
        ("(?<=a)b", "lookbehind"),
        ("(?<!a)b", "lookbehind"),
        ("(?>a+)b", "atomic"),
        ("a++", "possessive"),
        ("a*+", "possessive"),
        ("(?i)a", "inline options"),
        (#"\bword"#, "word boundaries"),
        (#"\p{L}"#, "Unicode property"),
        (#"\Aa"#, "use ^ and $"),
        (#"\q"#, "unknown escape"),
        (#"a\"#, "lone \\"),
        ("*a", "nothing to repeat"),
        ("a**", "cannot follow another"),
        ("a{2}{3}", "cannot follow another"),
        ("^*", "anchor"),
        ("a{3,2}", "below its minimum"),
        ("a{101}", "to 100 at most"),
        ("a{1,1000}", "to 100 at most"),
        ("a{x}", "write \\{"),
        ("[", "not closed"),
        ("[]", "empty class"),
        ("[z-a]", "backwards"),
        (#"[\d-z]"#, "between two characters"),
        ("[[:alpha:]]", "nested classes"),
        ("[a&&b]", "&&"),
        ("(a", "not closed"),
        ("a)", "closes no group"),
        ("a\u{0}b", "NUL"),
        (#"\u12"#, "four hexadecimal digits"),
        (String(repeating: "a", count: LikePattern.maximumLength + 1), "longer than"),
        ("(a{100}){100}", "too large"),
        ("((((a{100}){100}){100}){100}){100}", "too large"),
        (String(repeating: "(", count: LikePattern.maximumNesting + 1) + "a" + String(repeating: ")", count: LikePattern.maximumNesting + 1), "nest deeper"),
    ]

    @Test func refusesWhatItDoesNotSupportByName() {
        for (pattern, mentioning) in Self.refused {
            let error = #expect(throws: LikePattern.Refusal.self, "\(pattern)") { try LikePattern(pattern) }
            #expect(error.map { "\($0)".contains(mentioning) } == true, "\(pattern): \(error.map { "\($0)" } ?? "accepted")")
        }
    }

    /// The limits leave room for what a filter needs.
    @Test func normalPatternsStayWithinTheBounds() throws {
        _ = try LikePattern(String(repeating: "a", count: LikePattern.maximumLength))
        _ = try LikePattern("a{100}")
        _ = try LikePattern("(ab|cd){1,100}")
        _ = try LikePattern(String(repeating: "(", count: LikePattern.maximumNesting) + "a" + String(repeating: ")", count: LikePattern.maximumNesting))
        #expect(try LikePattern("^(\\w+\\s?){1,20}$").matches("several words one after another"))
    }

    /// Patterns that make a backtracking engine take exponential time answer here at once
    /// (each is at most the text's length times the program's size).
    @Test func backtrackingPatternsAnswerInLinearTime() throws {
        let texts = [String(repeating: "a", count: 28) + "!", String(repeating: "a", count: 5_000) + "!"]
        let hostile = ["(a+)+$", "(a|a)+$", "(a*)*b", "(a|aa)+$", "(.*a){20}$", "^(a+)+b", "(x+x+)+y", "((a+)+)+$", "(a?){30}a{30}$"]
        for pattern in hostile {
            let compiled = try LikePattern(pattern)
            for text in texts { #expect(!compiled.matches(text), "\(pattern)") }
        }
        #expect(try LikePattern("(a+)+!$").matches(texts[1]))
        #expect(try LikePattern("(a?){30}a{30}").matches(String(repeating: "a", count: 30)))
    }

    // MARK: Agreement with other engines

    /// A pattern and texts drawn from `seed`: the subset both this matcher and ICU define the
    /// same way (ASCII texts without line breaks, where `$`, `.`, `\w` and `\s` agree).
    struct Sample {
        var pattern: String
        var texts: [String]
    }

    static func samples(count: Int, seed: UInt64) -> [Sample] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            let pattern = randomPattern(&random, depth: 0)
            let texts = (0..<12).map { _ in
                String((0..<Int(random.next() % 9)).map { _ in Array("abAB1 _-c")[Int(random.next() % 9)] })
            }
            return Sample(pattern: pattern, texts: texts)
        }
    }

    /// No lazy quantifiers: they match as the greedy ones for a filter, and ICU answers some
    /// nested ones wrongly (`.((A*?)*?B)*` finds no match in `_`).
    static func randomPattern(_ random: inout SeededGenerator, depth: Int) -> String {
        let pieces = 1 + Int(random.next() % 4)
        var pattern = ""
        for _ in 0..<pieces {
            var atom: String
            switch random.next() % 14 {
            case 0: atom = "."
            case 1: atom = ["[ab]", "[^a]", "[a-c]", "[^A-B1]", "[-a]", "[\\d_]"][Int(random.next() % 6)]
            case 2: atom = [#"\d"#, #"\w"#, #"\s"#, #"\W"#, #"\D"#, #"\S"#][Int(random.next() % 6)]
            case 3 where depth < 2:
                let branches = 1 + Int(random.next() % 3)
                atom = "(" + (0..<branches).map { _ in randomPattern(&random, depth: depth + 1) }.joined(separator: "|") + ")"
            case 4: atom = random.next() % 2 == 0 ? "^" : "$"
            case 5: atom = #"\-"#
            default: atom = String(Array("abAB1 c")[Int(random.next() % 7)])
            }
            if atom != "^" && atom != "$" {
                switch random.next() % 9 {
                case 0: atom += "*"
                case 1: atom += "+"
                case 2: atom += "?"
                case 3: atom += ["{2}", "{1,2}", "{0,3}", "{2,}"][Int(random.next() % 4)]
                default: break
                }
            }
            pattern += atom
        }
        return pattern
    }

    @Test func agreesWithNSRegularExpression() throws {
        var compared = 0
        for sample in Self.samples(count: 3_000, seed: 48) {
            // Where both define the pattern (this matcher refuses a repeated group of an anchor alone).
            guard let reference = try? NSRegularExpression(pattern: sample.pattern, options: [.caseInsensitive]),
                  let pattern = try? LikePattern(sample.pattern)
            else { continue }
            for text in sample.texts {
                let expected = reference.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                #expect(pattern.matches(text) == expected, "\(sample.pattern) over \"\(text)\"")
                compared += 1
            }
        }
        #expect(compared > 30_000)
    }

    /// The translation for PostgreSQL accepts what the matcher accepts: every sample, asked of
    /// PostgreSQL's `~*` in one statement.
    @Test func postgreSQLAgreesThroughTheTranslation() async throws {
        let database = try TestPostgres.database()
        var texts: [String] = []
        var patterns: [String] = []
        var expected: [Bool] = []
        // ASCII only: PostgreSQL folds the case of other letters as the database's locale says.
        let extra = Self.matching.filter { ($0.pattern + $0.text).unicodeScalars.allSatisfy(\.isASCII) && !$0.text.contains("\n") }
            .map { Sample(pattern: $0.pattern, texts: [$0.text]) }
        for sample in Self.samples(count: 1_500, seed: 4_848) + extra {
            guard let pattern = try? LikePattern(sample.pattern) else { continue }
            for text in sample.texts {
                texts.append(text)
                patterns.append(pattern.postgresPattern)
                expected.append(pattern.matches(text))
            }
        }
        let answers = try await TestPostgres.withConnection(to: database, label: "like") { connection in
            var answers: [Bool] = []
            let query: PostgresQuery = "SELECT t ~* p FROM unnest(\(texts)::text[], \(patterns)::text[]) WITH ORDINALITY AS x(t, p, n) ORDER BY n"
            for try await answer in try await connection.query(query, logger: TestPostgresLog.logger("like")).decode(Bool.self) { answers.append(answer) }
            return answers
        }
        try #require(answers.count == expected.count)
        for index in expected.indices where answers[index] != expected[index] {
            Issue.record("\(patterns[index]) over \"\(texts[index])\": PostgreSQL \(answers[index]), the matcher \(expected[index])")
        }
    }

    @Test func theTranslationIsWrittenFromTheTree() throws {
        #expect(try LikePattern("^a.b$").postgresPattern == #"^a[^\u000a]b$"#)
        #expect(try LikePattern("(a|b)+").postgresPattern == #"(?:(?:a|b))+"#)
        #expect(try LikePattern(#"[^\d]x{2,3}"#).postgresPattern == #"[^\u0030-\u0039](?:x){2,3}"#)
        #expect(try LikePattern(#"\(\\"#).postgresPattern == #"\u0028\u005c"#)
    }
}
