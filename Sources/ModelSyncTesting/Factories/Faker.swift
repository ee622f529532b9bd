import Foundation

/// Realistic fake values (names, e-mail addresses, words, sentences) drawn from a
/// ``/ModelSyncTestingCore/SeededGenerator``: the same seed gives the same values, so a test that uses them can be
/// reproduced.
///
/// ```swift
/// var faker = Faker(seed: 7)
/// let name = faker.name()        // e.g. "Grace Lovelace"
/// let email = faker.email()      // e.g. "grace.lovelace@example.org"
/// ```
///
/// E-mail addresses use the reserved `example.*` domains, so they never reach anybody.
public struct Faker: Sendable {
    /// The generator the values come from.
    public var generator: SeededGenerator

    /// Creates a faker whose values are fixed by `seed`.
    public init(seed: UInt64 = 0) {
        generator = SeededGenerator(seed: seed)
    }

    /// An integer in `range`.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &generator)
    }

    /// A floating-point number in `range`.
    public mutating func double(in range: ClosedRange<Double>) -> Double {
        Double.random(in: range, using: &generator)
    }

    /// `true` or `false`, evenly.
    public mutating func bool() -> Bool {
        Bool.random(using: &generator)
    }

    /// One of `values`, or nil when it is empty.
    public mutating func element<T>(of values: [T]) -> T? {
        values.randomElement(using: &generator)
    }

    /// A first name.
    public mutating func firstName() -> String { pick(Self.firstNames) }

    /// A last name.
    public mutating func lastName() -> String { pick(Self.lastNames) }

    /// A first and a last name.
    public mutating func name() -> String { "\(firstName()) \(lastName())" }

    /// A user name such as `ada_turing42`.
    public mutating func userName() -> String {
        "\(firstName().lowercased())_\(lastName().lowercased())\(int(in: 1...99))"
    }

    /// An e-mail address at a reserved `example` domain. Not unique: use a factory sequence
    /// where uniqueness matters.
    public mutating func email() -> String {
        "\(firstName().lowercased()).\(lastName().lowercased())@\(pick(Self.domains))"
    }

    /// A lower-case word.
    public mutating func word() -> String { pick(Self.words) }

    /// `count` words separated by spaces.
    public mutating func words(_ count: Int) -> String {
        (0..<max(0, count)).map { _ in word() }.joined(separator: " ")
    }

    /// A capitalised sentence of 4 to 10 words (or `words`), ending with a period.
    public mutating func sentence(words count: Int? = nil) -> String {
        let text = words(count ?? int(in: 4...10))
        return text.prefix(1).uppercased() + text.dropFirst() + "."
    }

    /// 2 to 5 sentences (or `sentences`).
    public mutating func paragraph(sentences count: Int? = nil) -> String {
        (0..<max(0, count ?? int(in: 2...5))).map { _ in sentence() }.joined(separator: " ")
    }

    /// A UUID made from the generator (version 4 layout), reproducible unlike `UUID()`.
    public mutating func uuid() -> UUID {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// A date between `start` and `end` (whole seconds).
    public mutating func date(between start: Date, and end: Date) -> Date {
        let low = min(start, end).timeIntervalSince1970.rounded(.up)
        let high = max(start, end).timeIntervalSince1970.rounded(.down)
        guard low < high else { return min(start, end) }
        return Date(timeIntervalSince1970: Double(Int64.random(in: Int64(low)...Int64(high), using: &generator)))
    }

    /// One of the built-in lists, which are never empty.
    private mutating func pick(_ values: [String]) -> String {
        element(of: values) ?? ""
    }

    static let firstNames = [
        "Ada", "Alan", "Barbara", "Claude", "Dennis", "Donald", "Edsger", "Frances", "Grace", "Guido",
        "Hedy", "John", "Katherine", "Ken", "Leslie", "Linus", "Margaret", "Niklaus", "Radia", "Tim",
    ]
    static let lastNames = [
        "Allen", "Backus", "Berners-Lee", "Dijkstra", "Hamilton", "Hopper", "Johnson", "Kay", "Knuth",
        "Lamarr", "Lamport", "Liskov", "Lovelace", "Perlman", "Ritchie", "Shannon", "Thompson", "Turing", "Wirth",
    ]
    static let domains = ["example.com", "example.org", "example.net"]
    static let words = [
        "array", "batch", "cache", "column", "commit", "cursor", "delta", "draft", "field", "graph", "index",
        "join", "key", "layer", "merge", "model", "node", "offset", "page", "query", "record", "row", "schema",
        "server", "signal", "stream", "sync", "table", "token", "value", "vector", "view", "write",
    ]
}
