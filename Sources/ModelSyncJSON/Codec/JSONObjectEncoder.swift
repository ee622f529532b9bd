import ModelSyncCore

/// Writes the fields of one model as a JSON object. Generated `encode(json:)` code calls it with
/// field indices (positions in the model's schema); you do not use it directly.
public struct JSONObjectEncoder {
    private let context: UnsafeMutablePointer<JSONEncodingContext>
    private let layout: JSONLayout
    private var needsComma = false
    /// Fields with dotted keys, encoded aside and written as nested objects at the end.
    private var nested: [(key: ArraySlice<JSONPath.Component>, bytes: [UInt8])] = []

    init(context: UnsafeMutablePointer<JSONEncodingContext>, layout: JSONLayout) {
        self.context = context
        self.layout = layout
    }

    /// Writes field `field`.
    public mutating func encode<T: JSONEncodable>(_ value: T, _ field: Int) throws {
        if value.isJSONNull, context.pointee.options.nilEncoding == .omit { return }
        do {
            if layout.isNested(field) {
                var detached = context.pointee.detached()
                try value.encodeJSON(to: &detached)
                nested.append((layout.fieldKeyPath[field][...], detached.writer.bytes))
                return
            }
            if needsComma { context.pointee.writer.writeByte(UInt8(ascii: ",")) }
            needsComma = true
            context.pointee.writer.writeRaw(layout.encodedKey(field))
            try value.encodeJSON(to: &context.pointee)
        } catch var error as JSONError {
            error.path = JSONPath(layout.fieldKeyPath[field] + error.path.components)
            throw error
        }
    }

    /// Writes a property listed in `encodeExcluding:`: only the storage format has it.
    public mutating func encodeStored<T: JSONEncodable>(_ value: T, _ field: Int) throws {
        guard context.pointee.isStorage else { return }
        try encode(value, field)
    }

    /// Writes a transformed property listed in `encodeExcluding:`.
    public mutating func encodeStored<X: JSONTransformer>(_ value: X.Value, _ field: Int, using transformer: X) throws {
        guard context.pointee.isStorage else { return }
        try encode(value, field, using: transformer)
    }

    /// Writes an optional transformed property listed in `encodeExcluding:`.
    public mutating func encodeStored<X: JSONTransformer>(_ value: X.Value?, _ field: Int, using transformer: X) throws {
        guard context.pointee.isStorage else { return }
        try encode(value, field, using: transformer)
    }

    /// Writes field `field` through a transformer.
    public mutating func encode<X: JSONTransformer>(_ value: X.Value, _ field: Int, using transformer: X) throws {
        if context.pointee.isStorage, let stored = value as? any JSONEncodable {
            // The storage format holds the property's own value, not the transformer's form.
            return try encode(stored, field)
        }
        let representation: X.JSONRepresentation
        do {
            representation = try transformer.encode(value)
        } catch {
            var wrapped = JSONError(wrapping: error)
            wrapped.path = JSONPath(layout.fieldKeyPath[field])
            throw wrapped
        }
        try encode(representation, field)
    }

    /// Writes an optional field through a transformer of its wrapped type.
    public mutating func encode<X: JSONTransformer>(_ value: X.Value?, _ field: Int, using transformer: X) throws {
        guard let value else { return try encode(X.JSONRepresentation?.none, field) }
        try encode(value, field, using: transformer)
    }

    /// Writes the fields with dotted keys as nested objects, grouped by their first keys.
    mutating func finish() throws {
        guard !nested.isEmpty else { return }
        writeGroup(nested, needsComma: needsComma)
    }

    private func writeGroup(_ entries: [(key: ArraySlice<JSONPath.Component>, bytes: [UInt8])], needsComma: Bool) {
        var order: [String] = []
        var groups: [String: [(key: ArraySlice<JSONPath.Component>, bytes: [UInt8])]] = [:]
        for entry in entries {
            guard case .key(let head)? = entry.key.first else { continue }
            if groups[head] == nil { order.append(head) }
            groups[head, default: []].append((entry.key.dropFirst(), entry.bytes))
        }
        var comma = needsComma
        for head in order {
            guard let members = groups[head] else { continue }
            if comma { context.pointee.writer.writeByte(UInt8(ascii: ",")) }
            comma = true
            context.pointee.writer.writeRaw(JSONWriter.escapedKey(head))
            if let leaf = members.first(where: { $0.key.isEmpty }) {
                context.pointee.writer.writeRaw(leaf.bytes)
            } else {
                context.pointee.writer.writeByte(UInt8(ascii: "{"))
                writeGroup(members, needsComma: false)
                context.pointee.writer.writeByte(UInt8(ascii: "}"))
            }
        }
    }
}
