import Foundation

/// Writing a file so that a crash leaves either the old file or the new one, never half of one.
package enum AtomicFile {
    /// Writes `bytes` to a temporary file next to `file` and renames it over `file`.
    ///
    /// Not `Data.write(options: .atomic)`: on Linux its temporary-file helper has crashed when
    /// called from several threads at once.
    package static func write(_ bytes: [UInt8], to file: URL) throws {
        let temporary = file.deletingLastPathComponent()
            .appendingPathComponent(".\(file.lastPathComponent).\(UUID().uuidString).tmp")
        do {
            try Data(bytes).write(to: temporary)
            guard rename(temporary.path, file.path) == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}
