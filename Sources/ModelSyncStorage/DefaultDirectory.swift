import Foundation

extension StorageSuite {
    /// The per-user directory where suites live unless told otherwise:
    /// `Application Support/<application>/storage` on Apple platforms;
    /// `$XDG_DATA_HOME/<application>/storage` elsewhere, or `~/.local/share/<application>/storage`
    /// when `XDG_DATA_HOME` is unset or not an absolute path (as the XDG specification says).
    ///
    /// `application` defaults to the main bundle's identifier, or the process name. It becomes
    /// one directory name as it is (not encoded), checked like a suite name.
    public static func defaultDirectory(
        application: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> URL {
        let application = application ?? Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        if let problem = FileName.problem(with: application) {
            throw StorageError(.invalidSuiteName(problem), suite: application, message: "the application name \(problem)")
        }
        return dataDirectory(environment: environment)
            .appendingPathComponent(application, isDirectory: true)
            .appendingPathComponent("storage", isDirectory: true)
    }

    /// The platform's directory for an application's own data.
    private static func dataDirectory(environment: [String: String]) -> URL {
        #if canImport(Darwin)
        if let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first {
            return support
        }
        return URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true).appendingPathComponent("Library/Application Support", isDirectory: true)
        #else
        if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            return URL(fileURLWithPath: dataHome, isDirectory: true)
        }
        let home = URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory(), isDirectory: true)
        return home.appendingPathComponent(".local/share", isDirectory: true)
        #endif
    }
}
