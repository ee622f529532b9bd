import Foundation
import ModelSyncCore

/// Input that JSON can be decoded from: bytes, `Data`, a `String`, a parsed ``JSONValue`` or an
/// already parsed ``JSONDocument``.
public protocol JSONSource {
    /// Parses the input (or reuses it when it is already parsed).
    func jsonDocument(maxDepth: Int) throws -> JSONDocument
}

extension Array: JSONSource where Element == UInt8 {
    public func jsonDocument(maxDepth: Int) throws -> JSONDocument { try JSONDocument(bytes: self, maxDepth: maxDepth) }
}

extension Data: JSONSource {
    public func jsonDocument(maxDepth: Int) throws -> JSONDocument { try JSONDocument(bytes: [UInt8](self), maxDepth: maxDepth) }
}

extension String: JSONSource {
    public func jsonDocument(maxDepth: Int) throws -> JSONDocument { try JSONDocument(bytes: Array(utf8), maxDepth: maxDepth) }
}

extension JSONValue: JSONSource {
    public func jsonDocument(maxDepth: Int) throws -> JSONDocument { try JSONDocument(bytes: jsonBytes(), maxDepth: maxDepth) }
}

extension JSONDocument: JSONSource {
    public func jsonDocument(maxDepth: Int) throws -> JSONDocument { self }
}

/// Decodes models (or any ``JSONDecodable``) from JSON.
///
/// ```swift
/// let decoder = JSONModelDecoder()                       // lenient
/// let post = try decoder.decode(Post.self, from: data)
/// let posts = try decoder.decode([Post].self, from: data, at: "data.items")   // envelope
/// let (users, report) = try decoder.decodeWithReport([User].self, from: data)
/// ```
/// Errors are ``JSONError`` values with the path of the offending value.
public struct JSONModelDecoder: Sendable {
    /// The options used by every call.
    public var options: JSONDecodingOptions

    /// Creates a decoder.
    public init(options: JSONDecodingOptions = JSONDecodingOptions()) {
        self.options = options
    }

    /// Creates a decoder with the given mode and otherwise default options.
    public init(mode: JSONDecodingMode) {
        self.options = JSONDecodingOptions(mode: mode)
    }

    /// Decodes a `T` from `source`, optionally from below an envelope key path such as `data`
    /// or `meta.items`.
    public func decode<T: JSONDecodable>(_ type: T.Type, from source: some JSONSource, at root: JSONPath = JSONPath()) throws -> T {
        try decodeWithReport(type, from: source, at: root).value
    }

    /// Decodes a `T` and returns the report of every lenient step taken.
    public func decodeWithReport<T: JSONDecodable>(
        _ type: T.Type, from source: some JSONSource, at root: JSONPath = JSONPath()
    ) throws -> (value: T, report: DecodeReport) {
        guard let map = options.identityMap else { return try decode(type, source, at: root) }
        return try map.withMergeLock { try decode(type, source, at: root) }
    }

    /// Decodes the values at `nodes` of `document` (nil where a node is nil), with one decoding
    /// for them all: a feed page's records, where they are, without walking the page per record.
    package func decode<T: JSONDecodable>(_ type: T.Type, at nodes: [JSONDocument.Node?], in document: JSONDocument) throws -> [T?] {
        func decodeAll() throws -> [T?] {
            try document.withTape { tape -> [T?] in
                var context = JSONDecodingContext(tape: tape, options: options)
                do {
                    var values: [T?] = []
                    values.reserveCapacity(nodes.count)
                    for node in nodes {
                        guard let node else {
                            values.append(nil)
                            continue
                        }
                        values.append(try T.decodeJSON(node.index, &context))
                    }
                    return values
                } catch var error as JSONError {
                    context.locate(&error)
                    throw error
                } catch {
                    throw JSONError(wrapping: error)
                }
            }
        }
        guard let map = options.identityMap else { return try decodeAll() }
        return try map.withMergeLock(decodeAll)
    }

    private func decode<T: JSONDecodable>(
        _ type: T.Type, _ source: some JSONSource, at root: JSONPath
    ) throws -> (value: T, report: DecodeReport) {
        // A root array is read element by element: no tape for the whole document.
        if root.components.isEmpty, let decoded = try decodeElements(type, from: source) { return decoded }
        return try decode(type, source.jsonDocument(maxDepth: options.maxDepth), at: root)
    }

    private func decode<T: JSONDecodable>(
        _ type: T.Type, _ document: JSONDocument, at root: JSONPath
    ) throws -> (value: T, report: DecodeReport) {
        try document.withTape { tape in
            var context = JSONDecodingContext(tape: tape, options: options)
            do {
                guard let start = tape.locate(root.components, from: 0) else {
                    throw JSONError(.missingKey(root.description), path: root)
                }
                let value = try T.decodeJSON(start, &context)
                return (value, context.resolvedReport())
            } catch var error as JSONError {
                context.locate(&error)
                throw error
            } catch {
                // A custom JSONDecodable threw its own error.
                throw JSONError(wrapping: error)
            }
        }
    }
}

/// Encodes models (or any ``JSONEncodable``) as JSON: fields in declaration order, dictionary
/// keys sorted, so the same value always gives the same bytes.
public struct JSONModelEncoder: Sendable {
    /// The options used by every call.
    public var options: JSONEncodingOptions

    /// Creates an encoder.
    public init(options: JSONEncodingOptions = JSONEncodingOptions()) {
        self.options = options
    }

    /// Encodes `value` to UTF-8 bytes, optionally inside an envelope (`data` gives
    /// `{"data": …}`).
    public func encode(_ value: some JSONEncodable, at root: JSONPath = JSONPath()) throws -> [UInt8] {
        var context = JSONEncodingContext(options: options)
        let keys = root.components.compactMap { component -> String? in
            if case .key(let key) = component { return key }
            return nil
        }
        for key in keys {
            context.writer.writeByte(UInt8(ascii: "{"))
            context.writer.writeRaw(JSONWriter.escapedKey(key))
        }
        try value.encodeJSON(to: &context)
        for _ in keys { context.writer.writeByte(UInt8(ascii: "}")) }
        return options.prettyPrinted ? JSONWriter.prettyPrinted(context.writer.bytes) : context.writer.bytes
    }

    /// Encodes `value` to `Data`.
    public func encodeToData(_ value: some JSONEncodable, at root: JSONPath = JSONPath()) throws -> Data {
        Data(try encode(value, at: root))
    }

    /// Encodes `value` to a `String`.
    public func encodeToString(_ value: some JSONEncodable, at root: JSONPath = JSONPath()) throws -> String {
        String(decoding: try encode(value, at: root), as: UTF8.self)
    }

    /// Encodes `value` to a ``JSONValue`` tree.
    public func encodeToValue(_ value: some JSONEncodable) throws -> JSONValue {
        try JSONValue(parsing: encode(value))
    }
}
