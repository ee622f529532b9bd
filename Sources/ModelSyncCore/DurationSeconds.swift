import Foundation

extension Duration {
    /// The duration in seconds, as a `TimeInterval` (for `Date` arithmetic and caps).
    package var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
