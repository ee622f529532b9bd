import ModelSyncCore

/// A model with a generated JSON codec. `@Model` writes the conformance; the requirements are
/// public only because generated code in your module implements them.
public protocol JSONModel: Model, JSONCodable {
    /// The JSON keys and settings of the model, computed once per type.
    static var jsonLayout: JSONLayout { get }
    /// The hooks the model implements, so decoding and encoding pay for none they do not use.
    static var jsonHooks: JSONHooks { get }
    /// Reads every decoded field from `decoder` (generated).
    init(json decoder: inout JSONObjectDecoder) throws
    /// Writes every encoded field to `encoder` (generated).
    func encode(json encoder: inout JSONObjectEncoder) throws
    /// Reshapes the raw JSON object before decoding (a hook; rename keys, unwrap, fill in).
    static func willDecode(_ json: inout JSONValue) throws
    /// Runs after decoding (a hook; derive fields or reject the value by throwing).
    mutating func didDecode() throws
    /// Reshapes the encoded JSON object (a hook; add computed keys, remove internal ones).
    func didEncode(_ json: inout JSONValue) throws
}

/// The hooks a model implements; `@Model` detects them by name.
public struct JSONHooks: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `static func willDecode(_ json: inout JSONValue) throws`
    public static let willDecode = JSONHooks(rawValue: 1)
    /// `mutating func didDecode() throws`
    public static let didDecode = JSONHooks(rawValue: 2)
    /// `func didEncode(_ json: inout JSONValue) throws`
    public static let didEncode = JSONHooks(rawValue: 4)
}

extension JSONModel {
    public static var jsonHooks: JSONHooks { [] }
    public static func willDecode(_ json: inout JSONValue) throws {}
    public mutating func didDecode() throws {}
    public func didEncode(_ json: inout JSONValue) throws {}

    /// A model's zero value is what lenient decoding makes of `{}`: every field at its default
    /// or zero. Nil when some field has neither.
    public static var jsonZeroValue: Self? {
        try? JSONModelDecoder(options: JSONDecodingOptions(mode: .lenient)).decode(Self.self, from: "{}")
    }

    // Decoding is `@inlinable` so that it is specialized for each model in the module that
    // declares it: the per-object work then involves no generic metadata lookups.
    @inlinable
    public static func decodeJSON(_ node: Int, _ context: inout JSONDecodingContext) throws -> Self {
        // The storage format is the model's own shape: the wire's reshaping hook does not apply.
        if jsonHooks.contains(.willDecode), !context.isStorage { return try decodeReshaped(node, &context) }
        return try withUnsafeMutablePointer(to: &context) { try decodeObject(node, $0) }
    }

    /// Decoding with a `willDecode` hook: the hook edits a mutable tree, and the edited tree is
    /// decoded as a document of its own, located at `node` so that paths in errors and reports
    /// still read from the root.
    @usableFromInline
    static func decodeReshaped(_ node: Int, _ context: inout JSONDecodingContext) throws -> Self {
        guard context.isObject(node) else {
            throw context.mismatch(node, expected: "object (\(schema.name))")
        }
        var raw = try context.value(node)
        do {
            try willDecode(&raw)
        } catch {
            throw context.wrap(error, at: node)
        }
        let document = try JSONDocument(bytes: raw.jsonBytes(), maxDepth: context.options.maxDepth)
        return try context.decodeDetached(document, at: node) { detached in
            try withUnsafeMutablePointer(to: &detached) { try decodeObject(0, $0) }
        }
    }

    @inlinable
    static func decodeObject(_ node: Int, _ context: UnsafeMutablePointer<JSONDecodingContext>) throws -> Self {
        guard context.pointee.isObject(node) else {
            throw context.pointee.mismatch(node, expected: "object (\(schema.name))")
        }
        let layout = context.pointee.layout(for: Self.self)
        let outerDates = context.pointee.enter(layout)
        defer { context.pointee.leave(restoring: outerDates) }
        if let map = context.pointee.identityMap {
            // Merge-aware decoding (Identity/IdentityDecoding.swift): the map's canonical value of
            // the payload's key stands in for every key the payload lacks (see
            // `JSONObjectDecoder.absent`), so `null` still clears and present keys win; the
            // result becomes canonical.
            var key: PrimaryKey?
            var isKeyed = true
            var value = try withUnsafeTemporaryAllocation(of: Int32.self, capacity: layout.slotCount) { slots in
                var decoder = JSONObjectDecoder(context: context, layout: layout, slots: slots, object: node)
                let merge = decoder.beginMerge(into: map, as: Self.self)
                // Nested models merge into their own canonical values; ours is restored after.
                defer { context.pointee.endMerge(merge) }
                key = merge.key
                isKeyed = merge.isKeyed
                return try Self(json: &decoder)
            }
            try finishDecoding(&value, node, context)
            if isKeyed { storeDecoded(value, key: key, in: map) }
            return value
        }

        var value = try withUnsafeTemporaryAllocation(of: Int32.self, capacity: layout.slotCount) { slots in
            var decoder = JSONObjectDecoder(context: context, layout: layout, slots: slots, object: node)
            return try Self(json: &decoder)
        }
        try finishDecoding(&value, node, context)
        return value
    }

    /// Runs the `didDecode` hook, when the model has one.
    @inlinable
    static func finishDecoding(_ value: inout Self, _ node: Int, _ context: UnsafeMutablePointer<JSONDecodingContext>) throws {
        if jsonHooks.contains(.didDecode) {
            do {
                try value.didDecode()
            } catch {
                throw context.pointee.wrap(error, at: node)
            }
        }
    }

    public func encodeJSON(to context: inout JSONEncodingContext) throws {
        guard Self.jsonHooks.contains(.didEncode), !context.isStorage else { return try encodeObject(&context) }
        var detached = context.detached()
        try encodeObject(&detached)
        var object = try JSONValue(parsing: detached.writer.bytes)
        do {
            try didEncode(&object)
        } catch let error as JSONError {
            throw error
        } catch {
            throw JSONError(wrapping: error)
        }
        object.write(to: &context.writer)
    }

    func encodeObject(_ context: inout JSONEncodingContext) throws {
        let layout = context.layout(for: Self.self)
        let outerDates = context.dateStrategy
        if let dates = layout.dateStrategy { context.dateStrategy = dates }
        defer { context.dateStrategy = outerDates }

        context.writer.writeByte(UInt8(ascii: "{"))
        try withUnsafeMutablePointer(to: &context) { pointer in
            var encoder = JSONObjectEncoder(context: pointer, layout: layout)
            try encode(json: &encoder)
            try encoder.finish()
        }
        context.writer.writeByte(UInt8(ascii: "}"))
    }
}

extension JSONDecodingContext {
    /// An error from user code (a hook or a transformer) as a ``JSONError`` located at `node`.
    @usableFromInline
    func wrap(_ error: any Error, at node: Int) -> JSONError {
        if var located = error as? JSONError {
            if located.node == nil && located.path.isEmpty { located.node = node }
            return located
        }
        var wrapped = self.error(.userError(String(describing: error)), at: node)
        wrapped.underlying = error
        return wrapped
    }
}
