import Foundation
import ModelSyncCore
import ModelSyncJSON

/// A named key-value store on disk, like a `UserDefaults` suite: models, arrays of models and
/// plain values (strings, numbers, `Bool`, `Data`, `Date`, …) stored as JSON, one file per key.
///
/// ```swift
/// let settings = try StorageSuite(name: "settings")           // in the per-user default directory
/// try settings.save("dark", forKey: "theme")
/// let theme = try settings.fetch(String.self, forKey: "theme") // nil when missing
/// try settings.save(post)                                      // under the key "Post.1"
/// let again = try settings.fetch(Post.self, id: 1)
/// try settings.update(Int.self, forKey: "launches", default: 0) { $0 += 1 }
/// ```
///
/// Suites are isolated: each is a directory of its own under the root directory, named after
/// the suite. A key is stored in `<encoded key>.json`, where the encoding keeps lowercase ASCII
/// letters, digits, `-`, `_` and inner dots and writes every other byte as `%XX`, so any key
/// that passes the checks maps to a distinct file name, on case-insensitive file systems too.
/// Keys and suite names must not be empty, `.` or `..`, contain `/` or NUL, or encode to more
/// than 250 bytes: such names throw ``StorageError`` with ``StorageError/Kind/invalidKey(_:)``
/// or ``StorageError/Kind/invalidSuiteName(_:)``.
///
/// Every write replaces its file atomically (temporary file, `fsync`, `rename`, `fsync` of the
/// directory): a crash leaves the old value or the new one, never a mix. Writes to a suite are
/// serialized in the process, across every `StorageSuite` value opened on the same directory,
/// so a read-modify-write through ``update(_:forKey:_:)`` never loses a concurrent update.
/// Reads take no lock: they always see a complete file. A file that is not JSON, or not the
/// requested type, throws a ``StorageError`` naming the suite and key and is left as it is.
public struct StorageSuite: Sendable {
    /// The suite's name.
    public let name: String
    /// The suite's own directory, holding one file per key.
    public let directory: URL
    /// Encodes the values written (by default, dates as seconds since 1970, which keeps them
    /// exact; models that declare their own date strategy keep theirs).
    public let encoder: JSONModelEncoder
    /// Decodes the values read.
    public let decoder: JSONModelDecoder

    /// The directory's path, as given to the system calls.
    private let path: String
    /// The lock that serializes this suite's writes in the process. A plain `NSLock`: a
    /// `Locked<Void>` guards a zero-sized value, whose inout access ThreadSanitizer saw racing
    /// (a zero-sized field has no storage of its own to guard).
    private let writes: NSLock

    /// The encoder suites use unless given another: ISO 8601 would drop fractions of seconds.
    public static let defaultEncoder = JSONModelEncoder(options: JSONEncodingOptions(dateStrategy: .secondsSince1970))
    /// The decoder suites use unless given another, matching ``defaultEncoder``.
    public static let defaultDecoder = JSONModelDecoder(options: JSONDecodingOptions(dateStrategy: .secondsSince1970))

    /// Opens (and creates, if needed) the suite `name` in `root`, or in
    /// ``defaultDirectory(application:environment:)`` when `root` is nil.
    public init(
        name: String,
        in root: URL? = nil,
        encoder: JSONModelEncoder = StorageSuite.defaultEncoder,
        decoder: JSONModelDecoder = StorageSuite.defaultDecoder
    ) throws {
        let directoryName: String
        switch FileName.encode(name) {
        case .encoded(let encoded): directoryName = encoded
        case .rejected(let problem):
            throw StorageError(.invalidSuiteName(problem), suite: name, message: "the suite name \(problem)")
        }
        let root = try root ?? Self.defaultDirectory()
        let directory = root.appendingPathComponent(directoryName, isDirectory: true).standardizedFileURL
        do {
            try AtomicFile.createDirectory(directory.path)
        } catch let failure as SystemCallFailure {
            throw StorageError(.fileSystem(errno: failure.errno), suite: name, message: failure.reason)
        }
        // The lock belongs to the directory, whichever path reached it.
        let path = directory.resolvingSymlinksInPath().path
        self.name = name
        self.directory = directory
        self.path = path
        self.encoder = encoder
        self.decoder = decoder
        self.writes = Self.locks.withLock { locks in
            if let lock = locks[ExactText(path)] { return lock }
            let lock = NSLock()
            locks[ExactText(path)] = lock
            return lock
        }
    }

    /// One write lock per suite directory in the process (a handful of suites: never pruned),
    /// by the path's bytes: paths "é" and "e\u{301}" are two directories.
    private static let locks = Locked<[ExactText: NSLock]>([:])

    // MARK: - Any value, by key

    /// Stores `value` (a model, an array, a plain value) under `key`, replacing what was there.
    public func save(_ value: some JSONEncodable, forKey key: String) throws {
        let file = try fileName(for: key)
        let bytes = try encode(value, key: key)
        try writes.withLock { try write(bytes, to: file, key: key) }
    }

    /// The value stored under `key`, or nil when there is none.
    public func fetch<T: JSONDecodable>(_ type: T.Type, forKey key: String) throws -> T? {
        try read(type, from: fileName(for: key), key: key)
    }

    /// Removes the value stored under `key`; false when there was none.
    @discardableResult
    public func delete(forKey key: String) throws -> Bool {
        let file = try fileName(for: key)
        return try writes.withLock { try remove(file, key: key) }
    }

    /// Reads the value under `key` (nil when missing), lets `body` change it, and stores the
    /// result (or removes the key when `body` leaves nil), with the suite's writes locked
    /// throughout: concurrent updates of one key all take effect, one after the other. When
    /// `body` throws, nothing is stored. Returns the value stored.
    ///
    /// `body` runs with the lock held, so it must not write to the same suite (that would wait
    /// for itself); reading is fine.
    @discardableResult
    public func update<T: JSONCodable>(_ type: T.Type, forKey key: String, _ body: (inout T?) throws -> Void) throws -> T? {
        let file = try fileName(for: key)
        return try writes.withLock {
            var value = try read(type, from: file, key: key)
            try body(&value)
            if let value {
                try write(encode(value, key: key), to: file, key: key)
            } else {
                _ = try remove(file, key: key)
            }
            return value
        }
    }

    /// ``update(_:forKey:_:)`` for a key that starts from `initial` when missing:
    /// `try suite.update(Int.self, forKey: "launches", default: 0) { $0 += 1 }`.
    @discardableResult
    public func update<T: JSONCodable>(_ type: T.Type, forKey key: String, default initial: T, _ body: (inout T) throws -> Void) throws -> T {
        var result = initial
        try update(type, forKey: key) { (value: inout T?) in
            result = value ?? initial
            try body(&result)
            value = result
        }
        return result
    }

    /// Every key stored in the suite, sorted. Files that no key maps to (a temporary file left
    /// by a crash, anything else put in the directory) are not listed.
    public func keys() throws -> [String] {
        try fileNames().compactMap(Self.key(ofFile:)).sorted()
    }

    /// Removes every key of the suite, and any temporary file left by an interrupted write.
    public func removeAll() throws {
        try writes.withLock {
            for file in try fileNames() where Self.key(ofFile: file) != nil || file.hasPrefix(AtomicFile.temporaryPrefix) {
                _ = try systemCall(key: nil) { try AtomicFile.remove(file, in: path) }
            }
        }
    }

    /// Stores each value under its key, replacing what was there, with one flush of the
    /// directory for the whole batch instead of one per value: each file still goes through
    /// its own flushed temporary file and atomic rename, so every key holds its old value or
    /// its new one whatever happens, and all hold the new ones once this returns. A crash
    /// during the call may leave some keys new and others old (the batch is not one
    /// transaction). Nothing is written when a value cannot be encoded or a key is invalid.
    /// A key given twice stores its last value.
    ///
    /// Pairs rather than a dictionary: keys that `String` calls equal but whose bytes differ
    /// (`"é"` precomposed and decomposed) are two keys here, and a dictionary would merge them.
    public func save<V: JSONEncodable>(_ entries: [(key: String, value: V)]) throws {
        let files = try entries.map { entry in (name: try fileName(for: entry.key), bytes: try encode(entry.value, key: entry.key)) }
        try writeAll(files)
    }

    // MARK: - Models, by type and primary key

    /// Stores `model` under its default key (``key(for:)``, e.g. `Post.1`) and returns the key.
    @discardableResult
    public func save<M: JSONModel>(_ model: M) throws -> String {
        let key = try key(for: model)
        try save(model, forKey: key)
        return key
    }

    /// Stores each model under its own default key; returns the keys in order. The batch
    /// costs one flush of the directory (see the `save(_:)` of key-value pairs).
    @discardableResult
    public func save<M: JSONModel>(_ models: [M]) throws -> [String] {
        let entries = try models.map { model in
            let key = try key(for: model)
            return (key: key, file: try fileName(for: key), bytes: try encode(model, key: key))
        }
        try writeAll(entries.map { ($0.file, $0.bytes) })
        return entries.map(\.key)
    }

    /// The model of type `M` stored under the default key for `id` (a ``/ModelSyncCore/PrimaryKey`` for a
    /// composite key), or nil when there is none.
    public func fetch<M: JSONModel & KeyedModel>(_ type: M.Type, id: M.ModelID) throws -> M? {
        try fetch(type, forKey: key(for: type, id: id))
    }

    /// Removes the model stored under `model`'s default key; false when there was none.
    @discardableResult
    public func delete<M: JSONModel>(_ model: M) throws -> Bool {
        try delete(forKey: key(for: model))
    }

    /// Removes the model of type `M` stored under the default key for `id`; false when there
    /// was none.
    @discardableResult
    public func delete<M: JSONModel & KeyedModel>(_ type: M.Type, id: M.ModelID) throws -> Bool {
        try delete(forKey: key(for: type, id: id))
    }

    /// The default key of a model: its type's name and its primary-key values, `Post.1`
    /// (composite keys: `Membership.3,7`). Throws when the model has no primary key or its key
    /// is nil.
    public func key<M: Model>(for model: M) throws -> String {
        let values = try M.schema.primaryKey.map { name -> Any in
            guard let keyPath = M.schema.field(named: name)?.keyPath, let value = model[keyPath: keyPath as AnyKeyPath] else {
                throw StorageError(.missingPrimaryKey, suite: self.name, message: "the primary key '\(name)' of \(M.schema.name) cannot be read")
            }
            return value
        }
        return try defaultKey(of: M.self, values: values)
    }

    /// The default key of the model of type `M` whose primary key is `id`.
    public func key<M: KeyedModel>(for type: M.Type, id: M.ModelID) throws -> String {
        // A composite key's parts are its components.
        let values = (id as? PrimaryKey)?.components.map(\.value) ?? [id]
        return try defaultKey(of: type, values: values)
    }

    private func defaultKey<M: Model>(of type: M.Type, values id: [Any]) throws -> String {
        let schema = M.schema
        try claimDefaultName(of: type)
        guard !schema.primaryKey.isEmpty else {
            throw StorageError(.missingPrimaryKey, suite: name, message: "\(schema.name) has no primary key; mark one with @PrimaryKey or pass a key")
        }
        guard id.count == schema.primaryKey.count else {
            throw StorageError(
                .missingPrimaryKey, suite: name,
                message: "\(schema.name) has a \(schema.primaryKey.count)-field primary key; got \(id.count) values")
        }
        let texts = try zip(schema.primaryKey, id).map { field, value in
            guard let present = unwrapped(value) else {
                throw StorageError(.missingPrimaryKey, suite: name, message: "the primary key '\(field)' of \(schema.name) is nil")
            }
            return "\(present)"
        }
        // The parts of a composite key are joined by commas; a comma (and so the escape
        // character) inside a part is escaped, so that ("a,b", "c") and ("a", "b,c") differ.
        let parts = texts.count == 1 ? texts : texts.map {
            $0.replacingASCII(UInt8(ascii: "%"), with: "%25").replacingASCII(UInt8(ascii: ","), with: "%2C")
        }
        return "\(schema.name).\(parts.joined(separator: ","))"
    }

    /// Throws ``StorageError/Kind/defaultKeyClash(name:types:)`` when another model type of
    /// the same name has used default keys in this suite's directory in this process: its
    /// `User.1` and this type's `User.1` are one file. Default keys of types whose names do
    /// not clash stay as they always were, so values already stored are still found.
    private func claimDefaultName<M: Model>(of type: M.Type) throws {
        let me = (id: ObjectIdentifier(type), name: String(reflecting: type))
        let clash = Self.defaultNameOwners.withLock { owners -> String? in
            let key = DefaultNameKey(directory: ExactText(path), name: ExactText(M.schema.name))
            if let owner = owners[key] { return owner.id == me.id ? nil : owner.name }
            owners[key] = me
            return nil
        }
        guard let other = clash else { return }
        throw StorageError(
            .defaultKeyClash(name: M.schema.name, types: [other, me.name]), suite: name,
            message: "\(other) and \(me.name) would share the default keys '\(M.schema.name).…'; pass explicit keys for one of them")
    }

    private struct DefaultNameKey: Hashable, Sendable {
        let directory: ExactText
        let name: ExactText
    }

    /// The model type that first used each default key name, per suite directory.
    private static let defaultNameOwners = Locked<[DefaultNameKey: (id: ObjectIdentifier, name: String)]>([:])

    // MARK: - Files

    /// The file name of `key`, or the error rejecting it.
    private func fileName(for key: String) throws -> String {
        switch FileName.encode(key) {
        case .encoded(let encoded): return encoded + Self.fileExtension
        case .rejected(let problem): throw StorageError(.invalidKey(problem), suite: name, key: key, message: "the key \(problem)")
        }
    }

    private static let fileExtension = ".json"

    /// The key stored in the file `file`, or nil when the file holds none.
    private static func key(ofFile file: String) -> String? {
        guard file.hasSuffix(fileExtension) else { return nil }
        return FileName.decode(String(file.dropLast(fileExtension.count)))
    }

    private func fileNames() throws -> [String] {
        try systemCall(key: nil) { try AtomicFile.fileNames(in: path) }
    }

    private func read<T: JSONDecodable>(_ type: T.Type, from file: String, key: String) throws -> T? {
        guard let bytes = try systemCall(key: key, { try AtomicFile.contents(of: "\(path)/\(file)") }) else { return nil }
        let document: JSONDocument
        do {
            document = try JSONDocument(bytes: bytes, maxDepth: decoder.options.maxDepth)
        } catch {
            throw StorageError(.corrupt, suite: name, key: key, message: "\(path)/\(file) is not valid JSON (damaged or truncated): \(error)")
        }
        do {
            return try decoder.decode(type, from: document)
        } catch {
            throw StorageError(.typeMismatch, suite: name, key: key, message: "the stored value is not a \(T.self): \(error)")
        }
    }

    private func encode(_ value: some JSONEncodable, key: String) throws -> [UInt8] {
        do {
            return try encoder.encode(value)
        } catch {
            throw StorageError(.encodingFailed, suite: name, key: key, message: "the value cannot be encoded: \(error)")
        }
    }

    /// Replaces `file` with `bytes`; callers hold the write lock.
    private func write(_ bytes: [UInt8], to file: String, key: String) throws {
        try systemCall(key: key) {
            try AtomicFile.replace(file, in: path, with: bytes, temporaryName: AtomicFile.temporaryPrefix + UUID().uuidString)
        }
    }

    /// Replaces several files with one flush of the directory, under the write lock.
    private func writeAll(_ files: [(name: String, bytes: [UInt8])]) throws {
        guard !files.isEmpty else { return }
        try writes.withLock {
            try systemCall(key: nil) {
                try AtomicFile.replaceAll(files, in: path) { AtomicFile.temporaryPrefix + UUID().uuidString }
            }
        }
    }

    /// Removes `file`; callers hold the write lock.
    private func remove(_ file: String, key: String) throws -> Bool {
        try systemCall(key: key) { try AtomicFile.remove(file, in: path) }
    }

    /// Runs file-system work, turning a failed system call into a ``StorageError``.
    private func systemCall<T>(key: String?, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as SystemCallFailure {
            throw StorageError(.fileSystem(errno: failure.errno), suite: name, key: key, message: failure.reason)
        }
    }
}
