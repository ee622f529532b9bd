import Foundation

/// The project's one stress switch: `MODELSYNC_STRESS=1 swift test` runs the full-size
/// versions of the heavy tests; the default run stays fast.
enum StressMode {
    static let isOn = ProcessInfo.processInfo.environment["MODELSYNC_STRESS"] == "1"
}
