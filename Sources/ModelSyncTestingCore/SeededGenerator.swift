/// A random number generator that always produces the same numbers from the same seed
/// (SplitMix64), so a randomized test can be run again exactly.
///
/// ```swift
/// var random = SeededGenerator(seed: 42)
/// let n = Int.random(in: 1...6, using: &random)   // the same on every run
/// ```
///
/// Not for cryptography: the sequence is predictable by design.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    /// The state; the next number is derived from it. Print it to replay from this point.
    public private(set) var state: UInt64

    /// Creates a generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
