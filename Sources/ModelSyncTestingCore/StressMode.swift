import Foundation

/// The reliability suite's switches (docs/RELIABILITY.md), shared by this package's test
/// targets. `package` access: they serve ModelSync's own tests, not the library's users.
package enum StressMode {
    /// Whether `MODELSYNC_STRESS=1` is set: heavy tests run at full size.
    package static let isOn = ProcessInfo.processInfo.environment["MODELSYNC_STRESS"] == "1"

    /// `normal` in a default run, `stress` in stress mode.
    package static func count(_ normal: Int, stress: Int) -> Int { isOn ? stress : normal }

    /// Whether a test whose component is missing must fail instead of showing as skipped
    /// (`CI=true`): a CI run can never pass without it.
    package static let componentsRequired = ProcessInfo.processInfo.environment["CI"] == "true"

    /// An executable of this package (`modelsync-server`, `modelsync-stress-child`) built beside
    /// the test bundle, or nil when the build did not make it (a filtered build).
    package static func builtExecutable(named name: String) -> URL? {
        var directories: [URL] = []
        if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
        // On macOS the tests run inside `ModelSyncPackageTests.xctest/Contents/MacOS`.
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let argument = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: argument).deletingLastPathComponent())
        }
        return directories.lazy.map { $0.appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
