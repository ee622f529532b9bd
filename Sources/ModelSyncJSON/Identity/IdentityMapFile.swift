import Foundation
import ModelSyncCore

// Saving an identity map to a file and loading it back. The file is JSON:
// {"version":1,"entries":[{"type":"App.User","value":{…}}, …]}, entries from the least to the
// most recently used, each value in its model's own JSON encoding.

extension IdentityMap {
    /// The file format version that ``save(to:)`` writes and ``load(from:models:)`` reads.
    static let fileVersion = 1
    /// Dates as seconds since 1970 (fractions kept): ISO 8601 would round them to the second, and
    /// a reloaded value would then write a rounded date through to the database.
    static let fileEncoding = JSONEncodingOptions(dateStrategy: .secondsSince1970)
    static let fileDecoding = JSONDecodingOptions(dateStrategy: .secondsSince1970)

    /// Writes every value to `url` atomically (a temporary file renamed over the old one), so a
    /// crash never leaves a half-written file.
    ///
    /// - Throws: ``/ModelSyncCore/IdentityMapError`` (`.unwritableFile`), or a `JSONError` when a value cannot
    ///   be encoded.
    public func save(to url: URL) throws {
        var context = JSONEncodingContext(options: Self.fileEncoding)
        context.writer.writeRaw(Array(#"{"version":\#(Self.fileVersion),"entries":["#.utf8))
        var first = true
        for value in values {
            guard let model = value as? any JSONModel else { continue }
            if !first { context.writer.writeByte(UInt8(ascii: ",")) }
            first = false
            context.writer.writeRaw(Array(#"{"type":"#.utf8))
            context.writer.writeString(String(reflecting: type(of: model)))
            context.writer.writeRaw(Array(#","value":"#.utf8))
            try model.encodeJSON(to: &context)
            context.writer.writeByte(UInt8(ascii: "}"))
        }
        context.writer.writeRaw(Array("]}".utf8))
        do {
            try AtomicFile.replace(url, with: context.writer.bytes)
        } catch {
            throw IdentityMapError(.unwritableFile, path: url.path, reason: String(describing: error))
        }
    }

    /// Replaces the map's contents with the values saved at `url`, and returns how many were
    /// loaded. `models` lists the types to load (entries of other types are skipped). A missing
    /// file loads nothing (a first launch).
    ///
    /// - Throws: ``/ModelSyncCore/IdentityMapError``: `.corruptFile` for a truncated or corrupt file,
    ///   `.unreadableFile` when it cannot be read. The map is then empty: a cache that cannot
    ///   be trusted is dropped whole.
    @discardableResult
    public func load(from url: URL, models: [any JSONModel.Type]) throws -> Int {
        removeAll()
        guard FileManager.default.fileExists(atPath: url.path) else { return 0 }
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: url))
        } catch {
            throw IdentityMapError(.unreadableFile, path: url.path, reason: String(describing: error))
        }
        let types = Dictionary(models.map { (String(reflecting: $0), $0) }, uniquingKeysWith: { first, _ in first })
        let loaded: [any Model]
        do {
            loaded = try Self.decodeFile(JSONDocument(bytes: bytes), types: types)
        } catch {
            throw IdentityMapError(.corruptFile, path: url.path, reason: String(describing: error))
        }
        for value in loaded { storeOpened(value) }
        return loaded.count
    }

    private static func decodeFile(_ document: JSONDocument, types: [String: any JSONModel.Type]) throws -> [any Model] {
        try document.withTape { tape in
            var context = JSONDecodingContext(tape: tape, options: fileDecoding)
            guard tape.nodes[0].kind == .object,
                let version = tape.member(of: 0, named: "version"), (try? Int.decodeJSON(version, &context)) == fileVersion,
                let entries = tape.member(of: 0, named: "entries"), tape.nodes[entries].kind == .array
            else {
                throw JSONError(.userError("not an identity map file of version \(fileVersion)"))
            }
            var values: [any Model] = []
            var entry = entries + 1
            for _ in 0..<Int(tape.nodes[entries].length) {
                defer { entry = Int(tape.nodes[entry].end) }
                guard tape.nodes[entry].kind == .object, let name = tape.member(of: entry, named: "type"),
                    let value = tape.member(of: entry, named: "value")
                else {
                    throw context.error(.userError("an entry needs a type and a value"), at: entry)
                }
                guard let type = types[try tape.string(name)] else { continue }
                values.append(try decodeValue(type, value, &context))
            }
            return values
        }
    }

    private static func decodeValue<M: JSONModel>(_ type: M.Type, _ node: Int, _ context: inout JSONDecodingContext) throws -> any Model {
        try M.decodeJSON(node, &context)
    }
}

extension IdentityMap {
    /// Stores a value whose type is known only at run time (`any Model` is opened into `M`).
    fileprivate func storeOpened<M: Model>(_ value: M) {
        store(value)
    }
}
