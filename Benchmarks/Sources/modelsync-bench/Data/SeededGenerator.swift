/// A small deterministic pseudo-random generator (SplitMix64), so that every run on every
/// machine benchmarks exactly the same data.
///
/// Its helpers use their own arithmetic rather than the standard library's
/// `random(in:using:)`, whose algorithm is not promised to stay the same across releases.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    /// Creates a generator; the same seed always gives the same sequence.
    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `range` (the tiny modulo bias does not matter here).
    mutating func int(in range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound) + 1
        return range.lowerBound + Int(next() % width)
    }

    /// A number in `0 ..< 1`.
    mutating func unit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// True with the given probability.
    mutating func chance(_ probability: Double) -> Bool {
        unit() < probability
    }

    /// One element of a non-empty array.
    mutating func pick<T>(_ elements: [T]) -> T {
        elements[int(in: 0 ... elements.count - 1)]
    }
}
