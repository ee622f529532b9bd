import Foundation
import Logging
import ModelSyncCore
import ModelSyncJSON
import ModelSyncProtocol

/// The database: one JSON object whose arrays are collections and whose objects are singular
/// resources, optionally saved back to a file after every write.
///
/// A write works on a copy; the copy replaces the data only once it is saved, so a failed save
/// (or a rejected request) leaves both the file and the served data as they were.
package actor JSONFileBackend {
    /// The served data (bookkeeping taken out).
    package private(set) var root: JSONObject
    /// Versions, tombstones, idempotency keys: saved with the data, never served.
    package private(set) var book: Bookkeeping
    /// When the data last changed (second precision, for `Last-Modified`).
    package private(set) var lastModified: Date
    private let file: URL?
    /// How long deletions stay in the change feed.
    package let feedLimits: FeedLimits
    /// Called by a list read just before it filters, outside the actor (tests hold a read there
    /// to show that other requests go on meanwhile).
    package nonisolated let listProbe: (@Sendable () -> Void)?
    /// Where list reads run: their filters are the caller's to choose.
    package nonisolated let costlyReads = CostlyReads()
    /// The data the store started with, for `reset()`.
    private let initial: (root: JSONObject, book: Bookkeeping)
    /// The open change streams (`/_changes/stream`).
    private var subscribers: [Int: AsyncStream<SyncChange>.Continuation] = [:]
    private var nextSubscriber = 0
    private var closed = false

    /// A store over `root` as loaded (with or without a bookkeeping member). Records without a
    /// version get one, the same at every start (in the data's order), so the file is left as
    /// it is until the next write saves them.
    package init(root: JSONObject, file: URL?, feedLimits: FeedLimits, listProbe: (@Sendable () -> Void)? = nil) {
        var root = root
        let book = Bookkeeping.extract(from: &root)
        self.root = root
        self.book = book
        self.initial = (root, book)
        self.file = file
        self.feedLimits = feedLimits
        self.listProbe = listProbe
        self.lastModified = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    }

    /// The data with every write applied, saved or not; nil when that is the current data.
    private var newest: (root: JSONObject, book: Bookkeeping, generation: Int)?
    /// Counts the writes applied, so that a save knows whether it holds the newest.
    private var generation = 0
    /// The writers whose answers wait for a save that has not started yet.
    private var waiting: [CheckedContinuation<Void, any Error>] = []
    /// Saves while writers wait.
    private var saver: Task<Void, Never>?
    /// Where saves run: a file write and its fsync block a thread, never one of Swift's.
    private let saveQueue = DispatchQueue(label: "modelsync.server.json-store.save")

    /// Applies `change` to a copy of the data and the bookkeeping (with every earlier write, saved
    /// or not), saves it, and only then makes it current and tells the change streams.
    ///
    /// Writes that arrive while a save runs are saved together by the next one: one file
    /// written and synced for the group. Should a save fail, every write in it (and every write
    /// applied on top of it since) fails, and the data stays as the last save left it.
    ///
    /// `changed` tells whether the change did anything (a batch whose operations all failed did
    /// not): when it did not, nothing is saved.
    package func write<T: Sendable>(
        _ change: @Sendable (inout JSONObject, inout Bookkeeping) throws -> T, changed: (T) -> Bool = { _ in true }
    ) async throws -> T {
        var copy = newest?.root ?? root
        var bookCopy = newest?.book ?? book
        let result = try change(&copy, &bookCopy)
        if changed(result) {
            guard file != nil else {
                commit(copy, bookCopy)
                return result
            }
            generation += 1
            newest = (copy, bookCopy, generation)
        } else if newest == nil {
            return result
        }
        // An answer that changed nothing waits too when it was read from unsaved writes.
        try await withCheckedThrowingContinuation { continuation in
            waiting.append(continuation)
            if saver == nil { saver = Task { await saveWhileWaited() } }
        }
        return result
    }

    /// Saves the newest data while writers wait for it, one group of writers per save.
    private func saveWhileWaited() async {
        while !waiting.isEmpty, let file {
            let writers = waiting
            waiting = []
            guard let (copy, bookCopy, saved) = newest else {
                for writer in writers { writer.resume() }
                continue
            }
            do {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    saveQueue.async { continuation.resume(with: Result { try Self.save(copy, bookCopy, to: file) }) }
                }
                commit(copy, bookCopy)
                if newest?.generation == saved { newest = nil }
                for writer in writers { writer.resume() }
            } catch {
                // The writes applied since build on the failed ones: they fail too.
                let failed = writers + waiting
                (newest, waiting) = (nil, [])
                for writer in failed { writer.resume(throwing: error) }
            }
        }
        saver = nil
    }

    /// Makes saved data current and tells the change streams.
    private func commit(_ copy: JSONObject, _ bookCopy: Bookkeeping) {
        let before = book.sequence
        root = copy
        book = bookCopy
        if !subscribers.isEmpty && book.sequence > before {
            // Open visibility: no lookups, nothing to throw.
            for change in (try? book.changes(after: before, in: nil, limit: Int.max - 1).changes) ?? [] {
                for subscriber in subscribers.values { subscriber.yield(change) }
            }
        }
        // `Last-Modified` has second precision: a write within the same second as the last one
        // (or as a read that saw it) must still move it forward, or `If-Modified-Since` would get
        // a 304 for data that changed.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        lastModified = max(now, lastModified.addingTimeInterval(1))
    }

    /// Waits for the saves under way: the server is shutting down.
    package func finishSaving() async {
        await saver?.value
    }

    /// Puts back the data the store started with (saving it to the file, like any write).
    package func reset() async throws {
        let initial = initial
        try await write { root, book in (root, book) = (initial.root, initial.book) }
        // The sequence went back: every stream ends, and its client, reconnecting with a cursor
        // past the data, is told to read everything again (410).
        for subscriber in subscribers.values { subscriber.finish() }
        subscribers.removeAll()
    }

    /// A stream of every change committed from now on; it ends when the server shuts down.
    /// Every collection's: the changes are at hand, the stream filters them.
    package func subscribe(to collections: Set<String>?) -> (id: Int, changes: AsyncStream<SyncChange>) {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncChange.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = nextSubscriber
        nextSubscriber += 1
        if closed { continuation.finish() } else { subscribers[id] = continuation }
        return (id, stream)
    }

    package func unsubscribe(_ id: Int) {
        subscribers.removeValue(forKey: id)?.finish()
    }

    /// Ends every change stream, and any opened later: the server is shutting down.
    package func closeSubscriptions() {
        closed = true
        for subscriber in subscribers.values { subscriber.finish() }
        subscribers.removeAll()
    }

    /// The deepest nesting a database file may have (the parser's limit).
    package static let maxDepth = 512
    /// The deepest request body accepted: a create's answer kept for its idempotency key sits
    /// four levels down (`_modelsync.idempotency.<key>.response`), and must still load.
    package static let maxBodyDepth = maxDepth - 4

    /// Reads a database file: a JSON object.
    package static func load(_ file: URL) throws -> JSONObject {
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

    /// Writes `root` with its bookkeeping next to `file` and renames it over `file`, so that a
    /// crash leaves either the old file or the new one, never half of one.
    package static func save(_ root: JSONObject, _ book: Bookkeeping, to file: URL) throws {
        var document = root
        document[Bookkeeping.member] = book.saved
        var bytes = JSONWriter.prettyPrinted(JSONValue.object(document).jsonBytes())
        bytes.append(UInt8(ascii: "\n"))
        // Keep the file's permissions (the temporary file is created 0600).
        var status = stat()
        let mode = stat(file.path, &status) == 0 ? status.st_mode & 0o7777 : nil
        try AtomicFile.replace(file, with: bytes, mode: mode)
    }

    /// Writes an exported document (bookkeeping included) to `file` atomically, as a JSON-file
    /// server saves it: `export` from PostgreSQL or SQLite.
    package static func writeDocument(_ document: JSONValue, to file: URL) throws {
        var bytes = JSONWriter.prettyPrinted(document.jsonBytes())
        bytes.append(UInt8(ascii: "\n"))
        try AtomicFile.replace(file, with: bytes, mode: nil)
    }

    /// Removes temporary files that a crash during ``save(_:to:)`` left next to `file`.
    package static func removeStaleTemporaryFiles(of file: URL, logger: Logger) {
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
