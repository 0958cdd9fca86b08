/// A small, seedable, deterministic random number generator (SplitMix64), for synthetic data in
/// tests, benchmarks and the `_append-loop` testing aid. Not for anything secret.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (the remainder, so a seed names the same run it always did).
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// True `percent` times in a hundred.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

    /// One of `xs` (not empty).
    public mutating func pick<T>(_ xs: [T]) -> T { xs[below(xs.count)] }
}
