import Foundation

/// The reliability suite's stress mode, on when the environment has `MODELSYNC_STRESS=1`
/// (see docs/RELIABILITY.md). The default `swift test` stays fast; heavy runs read this.
enum StressMode {
    /// Whether `MODELSYNC_STRESS=1` is set.
    static let isOn = ProcessInfo.processInfo.environment["MODELSYNC_STRESS"] == "1"

    /// `normal` in a default run, `stress` in stress mode.
    static func count(_ normal: Int, stress: Int) -> Int { isOn ? stress : normal }
}
