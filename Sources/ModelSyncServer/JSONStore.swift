import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON

/// The database: one JSON object whose arrays are collections and whose objects are singular
/// resources, optionally saved back to a file after every write.
///
/// A write works on a copy; the copy replaces the data only once it is saved, so a failed save
/// (or a rejected request) leaves both the file and the served data as they were.
actor JSONStore {
    private(set) var root: JSONObject
    /// When the data last changed (second precision, for `Last-Modified`).
    private(set) var lastModified: Date
    private let file: URL?
    /// The data the store started with, for `reset()`.
    private let initial: JSONObject

    init(root: JSONObject, file: URL?) {
        self.root = root
        self.initial = root
        self.file = file
        self.lastModified = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    }

    /// Applies `change` to a copy of the data, saves it, and only then makes it current.
    func write<T: Sendable>(_ change: @Sendable (inout JSONObject) throws -> T) throws -> T {
        var copy = root
        let result = try change(&copy)
        if let file { try Self.save(copy, to: file) }
        root = copy
        // `Last-Modified` has second precision: a write within the same second as the last one
        // (or as a read that saw it) must still move it forward, or `If-Modified-Since` would get
        // a 304 for data that changed.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        lastModified = max(now, lastModified.addingTimeInterval(1))
        return result
    }

    /// Puts back the data the store started with (saving it to the file, like any write).
    func reset() throws {
        let initial = initial
        try write { $0 = initial }
    }

    /// The data and when it last changed, read together so they agree.
    func snapshot() -> (root: JSONObject, lastModified: Date) {
        (root, lastModified)
    }

    /// The deepest nesting a database file may have (the parser's limit).
    static let maxDepth = 512
    /// The deepest request body accepted: a stored item sits inside its collection inside the
    /// document, two levels deeper than it was sent, and must still load.
    static let maxBodyDepth = maxDepth - 2

    /// Reads a database file: a JSON object.
    static func load(_ file: URL) throws -> JSONObject {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: file))
        } catch {
            throw ServerError.unreadableFile(path: file.path, reason: error.localizedDescription)
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes, maxDepth: maxDepth)
        } catch {
            throw ServerError.unreadableFile(path: file.path, reason: String(describing: error))
        }
        guard let object = value.objectValue else { throw ServerError.notAnObject }
        return object
    }

    /// Writes `root` next to `file` and renames it over `file`, so that a crash leaves either
    /// the old file or the new one, never half of one.
    static func save(_ root: JSONObject, to file: URL) throws {
        var bytes = JSONWriter.prettyPrinted(JSONValue.object(root).jsonBytes())
        bytes.append(UInt8(ascii: "\n"))
        // Keep the file's permissions (the temporary file is created 0600).
        var status = stat()
        let mode = stat(file.path, &status) == 0 ? status.st_mode & 0o7777 : nil
        try AtomicFile.replace(file, with: bytes, mode: mode)
    }

    /// Removes temporary files that a crash during ``save(_:to:)`` left next to `file`.
    static func removeStaleTemporaryFiles(of file: URL, logger: Logger) {
        let directory = file.deletingLastPathComponent().path
        let prefix = AtomicFile.temporaryPrefix + file.lastPathComponent + "-"
        do {
            for name in try AtomicFile.fileNames(in: directory) where name.hasPrefix(prefix) {
                _ = try AtomicFile.remove(name, in: directory)
                logger.notice("removed a temporary file left by an interrupted write", metadata: ["file": "\(name)"])
            }
        } catch {
            logger.warning("could not remove stale temporary files", metadata: ["error": "\(error)"])
        }
    }
}
