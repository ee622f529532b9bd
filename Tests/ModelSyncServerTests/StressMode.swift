import Foundation

/// The project's one stress switch: `MODELSYNC_STRESS=1 swift test` runs the heavy versions.
enum StressMode {
    static var isOn: Bool { ProcessInfo.processInfo.environment["MODELSYNC_STRESS"] == "1" }
}
