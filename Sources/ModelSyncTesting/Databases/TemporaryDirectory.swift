import Foundation
import ModelSyncCore

/// A new, empty directory under the system's temporary directory, removed with everything in
/// it when the value is deallocated (or by ``remove()``).
///
/// Keep the value alive for as long as its files are used.
public final class TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates the directory, named `prefix-<UUID>`.
    ///
    /// - Throws: the file system's error when it cannot be created.
    public init(prefix: String = "modelsync-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// Removes the directory and its contents now (deallocation does it otherwise).
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    /// Removes the directory when the process exits, for directories held by values that are
    /// never deallocated (a `static let` shared by a test suite).
    public func removeAtExit() {
        ExitCleanup.add(url)
    }

    deinit { remove() }
}

/// Directories removed when the process exits normally.
private enum ExitCleanup {
    /// Nil until the first directory is added, which installs the `atexit` handler.
    static let directories = Locked<Set<URL>?>(nil)

    static func add(_ url: URL) {
        directories.withLock { directories in
            if directories == nil { atexit { ExitCleanup.removeAll() } }
            directories = (directories ?? []).union([url])
        }
    }

    static func removeAll() {
        for url in directories.current ?? [] { try? FileManager.default.removeItem(at: url) }
    }
}
