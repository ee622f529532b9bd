import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A system call that failed, with its `errno`. Callers turn it into their own typed error
/// (`StorageError`, `IdentityMapError`…) naming what they were writing.
package struct SystemCallFailure: Error, CustomStringConvertible {
    /// The call and its argument, e.g. `open(/path/to/file)`.
    package var call: String
    package var errno: Int32

    package init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    package var reason: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    package var description: String { reason }
}

/// Whole-file reads and crash-safe replacement through the POSIX calls (FileManager cannot
/// `fsync`, and `Data.write(options: .atomic)` has crashed on Linux when called from several
/// threads at once). Used by key-value storage, the identity map's file and the bundled server.
package enum AtomicFile {
    /// The prefix of temporary files. Key-value storage never names a stored file with a leading
    /// dot, so a temporary file left by a crash can never be mistaken for a value.
    package static let temporaryPrefix = ".tmp-"

    /// The whole content of the file at `path`, or nil when there is no such file.
    package static func contents(of path: String) throws -> [UInt8]? {
        let descriptor: Int32
        do {
            descriptor = try retryingOnInterrupt("open(\(path))") { open(path, O_RDONLY | O_CLOEXEC) }
        } catch let failure as SystemCallFailure where failure.errno == ENOENT {
            return nil
        }
        defer { close(descriptor) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try retryingOnInterrupt("read(\(path))") {
                chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            }
            guard count > 0 else { return content }
            content.append(contentsOf: chunk[0..<count])
        }
    }

    /// Replaces the file `name` in `directory` with `bytes` so that, whatever happens, the file
    /// holds either its old content or the new one: the bytes go to a new temporary file in the
    /// same directory, which is flushed to disk, renamed over the file (an atomic step), and the
    /// directory is flushed so that the rename itself survives a power loss.
    /// `mode`, when given, is set on the new file (before it replaces the old one) instead of 0600.
    package static func replace(
        _ name: String, in directory: String, with bytes: [UInt8], temporaryName: String, mode: mode_t? = nil
    ) throws {
        let temporary = try writeTemporary(bytes, in: directory, temporaryName: temporaryName, mode: mode)
        try moveTemporary(temporary, over: name, in: directory)
        try syncDirectory(directory)
    }

    /// Replaces several files of one `directory` (see ``replace(_:in:with:temporaryName:mode:)``)
    /// with one flush of the directory for all of them: every new content is written and flushed
    /// to a temporary file first, then each is renamed over its file, then the directory is
    /// flushed. Each file holds its old content or its new one whatever happens; after a crash
    /// the files may be a mix of both, but once this returns all are replaced durably.
    /// A failure before the renames replaces nothing.
    package static func replaceAll(
        _ files: [(name: String, bytes: [UInt8])], in directory: String, temporaryNames: () -> String
    ) throws {
        var temporaries: [String] = []
        temporaries.reserveCapacity(files.count)
        do {
            for file in files {
                temporaries.append(try writeTemporary(file.bytes, in: directory, temporaryName: temporaryNames(), mode: nil))
            }
        } catch {
            for temporary in temporaries { unlink(temporary) }
            throw error
        }
        for (index, file) in files.enumerated() {
            do {
                try moveTemporary(temporaries[index], over: file.name, in: directory)
            } catch {
                for temporary in temporaries[(index + 1)...] { unlink(temporary) }
                // The renames made so far are kept: make them durable before reporting.
                try? syncDirectory(directory)
                throw error
            }
        }
        try syncDirectory(directory)
    }

    /// Writes `bytes` to a new temporary file in `directory` and flushes it; returns its path.
    private static func writeTemporary(_ bytes: [UInt8], in directory: String, temporaryName: String, mode: mode_t?) throws -> String {
        let temporary = "\(directory)/\(temporaryName)"
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        let descriptor = try retryingOnInterrupt("open(\(temporary))") { open(temporary, flags, 0o600) }
        do {
            defer { close(descriptor) }
            if let mode { try check("fchmod(\(temporary))", fchmod(descriptor, mode)) }
            try writeAll(bytes, to: descriptor, path: temporary)
            try check("fsync(\(temporary))", fsync(descriptor))
        } catch {
            unlink(temporary)
            throw error
        }
        return temporary
    }

    /// Renames the temporary file over `name`; removes the temporary file when that fails.
    private static func moveTemporary(_ temporary: String, over name: String, in directory: String) throws {
        let path = "\(directory)/\(name)"
        if rename(temporary, path) != 0 {
            let failure = SystemCallFailure(call: "rename(\(temporary), \(path))", errno: errno)
            unlink(temporary)
            throw failure
        }
    }

    /// Replaces the file at `file` with `bytes` (see ``replace(_:in:with:temporaryName:)``).
    package static func replace(_ file: URL, with bytes: [UInt8], mode: mode_t? = nil) throws {
        let name = file.lastPathComponent
        try replace(
            name, in: file.deletingLastPathComponent().path, with: bytes,
            temporaryName: "\(temporaryPrefix)\(name)-\(UUID().uuidString)", mode: mode)
    }

    /// Removes the file `name` in `directory`; false when there was none.
    package static func remove(_ name: String, in directory: String) throws -> Bool {
        let path = "\(directory)/\(name)"
        if unlink(path) != 0 {
            if errno == ENOENT { return false }
            throw SystemCallFailure(call: "unlink(\(path))", errno: errno)
        }
        try syncDirectory(directory)
        return true
    }

    /// Flushes the directory's entries (created, renamed and removed names) to disk.
    package static func syncDirectory(_ directory: String) throws {
        let descriptor = try retryingOnInterrupt("open(\(directory))") { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(descriptor) }
        // Some file systems cannot sync a directory (EINVAL); the rename is still atomic there,
        // as it is for SQLite, which ignores the same failure.
        if fsync(descriptor) != 0, errno != EINVAL {
            throw SystemCallFailure(call: "fsync(\(directory))", errno: errno)
        }
    }

    /// Creates the directory at `path` (mode 0700) and any missing parent; flushes the parent
    /// of each directory created so that the new entry survives a power loss.
    package static func createDirectory(_ path: String) throws {
        if try makeDirectory(path) { return }
        let parent = parent(of: path)
        let missing = SystemCallFailure(call: "mkdir(\(path))", errno: ENOENT)
        guard parent != path else { throw missing }
        try createDirectory(parent)
        guard try makeDirectory(path) else { throw missing }
    }

    /// `mkdir` that accepts an existing directory. Returns false when a parent is missing.
    private static func makeDirectory(_ path: String) throws -> Bool {
        if mkdir(path, 0o700) == 0 {
            try syncDirectory(parent(of: path))
            return true
        }
        if errno == EEXIST { return true }
        if errno == ENOENT { return false }
        throw SystemCallFailure(call: "mkdir(\(path))", errno: errno)
    }

    /// The names in the directory at `path`, without `.` and `..`.
    package static func fileNames(in path: String) throws -> [String] {
        guard let directory = opendir(path) else { throw SystemCallFailure(call: "opendir(\(path))", errno: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The directory holding `path` (`/` for top-level paths, `.` for a bare name).
    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws {
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                // A short write is legal (e.g. a full disk reports ENOSPC on the next call).
                offset += try retryingOnInterrupt("write(\(path))") { write(descriptor, base + offset, buffer.count - offset) }
            }
        }
    }

    private static func check(_ call: String, _ result: Int32) throws {
        if result != 0 { throw SystemCallFailure(call: call, errno: errno) }
    }

    /// Runs `body` again while it fails with `EINTR`; throws any other failure.
    private static func retryingOnInterrupt<T: BinaryInteger>(_ call: @autoclosure () -> String, _ body: () -> T) throws -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            if errno != EINTR { throw SystemCallFailure(call: call(), errno: errno) }
        }
    }
}
