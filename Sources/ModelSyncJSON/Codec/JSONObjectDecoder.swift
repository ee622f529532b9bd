import ModelSyncCore

/// Reads the fields of one JSON object into a model. Generated `init(json:)` code calls it with
/// field indices (positions in the model's schema); you do not use it directly.
///
/// It exists only during the generated initializer: it points into the decoding run's state.
/// The entry points are `@inlinable` so that they are specialized for each property type in
/// the module that declares the model: the fast path (key present, value of the right kind)
/// then costs no generic dispatch; the rare paths (missing keys, `null`, defaults) stay here.
public struct JSONObjectDecoder {
    @usableFromInline let context: UnsafeMutablePointer<JSONDecodingContext>
    let layout: JSONLayout
    let slots: UnsafeMutableBufferPointer<Int32>
    let object: Int

    /// Matches the members of `object` to the layout's keys, filling `slots`.
    @usableFromInline
    init(
        context: UnsafeMutablePointer<JSONDecodingContext>,
        layout: JSONLayout,
        slots: UnsafeMutableBufferPointer<Int32>,
        object: Int
    ) {
        self.context = context
        self.layout = layout
        self.slots = slots
        self.object = object
        layout.fillSlots(slots, object: object, tape: context.pointee.tape)
    }

    /// Decodes field `field` (its type is the property's, inferred from the assignment).
    @inlinable
    public func decode<T: JSONDecodable>(_ field: Int) throws -> T {
        let node = valueNode(of: field)
        if node >= 0, T.isJSONNullable || !isNull(node) {
            return try T.decodeJSON(node, &context.pointee)
        }
        return try absent(field, node: node, as: T.self, declaredDefault: { nil })
    }

    /// Decodes field `field`, taking `defaultValue` when the key is missing (or `null` for a
    /// non-optional type).
    @inlinable
    public func decode<T: JSONDecodable>(_ field: Int, default defaultValue: @autoclosure () -> T) throws -> T {
        let node = valueNode(of: field)
        if node >= 0, T.isJSONNullable || !isNull(node) {
            return try T.decodeJSON(node, &context.pointee)
        }
        return try absent(field, node: node, as: T.self, declaredDefault: { defaultValue() })
    }

    /// Decodes field `field` through a transformer.
    @inlinable
    public func decode<X: JSONTransformer>(_ field: Int, using transformer: X) throws -> X.Value {
        let node = valueNode(of: field)
        if node >= 0, !isNull(node) { return try transform(node, transformer) }
        return try absentTransformed(field, node: node, transformer, declaredDefault: { nil })
    }

    /// Decodes field `field` through a transformer, with a declared default.
    @inlinable
    public func decode<X: JSONTransformer>(
        _ field: Int, using transformer: X, default defaultValue: @autoclosure () -> X.Value
    ) throws -> X.Value {
        let node = valueNode(of: field)
        if node >= 0, !isNull(node) { return try transform(node, transformer) }
        return try absentTransformed(field, node: node, transformer, declaredDefault: { defaultValue() })
    }

    /// Decodes an optional field through a transformer of its wrapped type (`null` and a missing
    /// key give nil).
    @inlinable
    public func decode<X: JSONTransformer>(_ field: Int, using transformer: X) throws -> X.Value? {
        let node = valueNode(of: field)
        if node >= 0 { return isNull(node) ? nil : try transform(node, transformer) }
        return try absent(field, node: node, as: X.Value?.self, declaredDefault: { nil }, zero: .some(nil), isNullable: true)
    }

    /// Decodes an optional field through a transformer, with a declared default.
    @inlinable
    public func decode<X: JSONTransformer>(
        _ field: Int, using transformer: X, default defaultValue: @autoclosure () -> X.Value?
    ) throws -> X.Value? {
        let node = valueNode(of: field)
        if node >= 0 { return isNull(node) ? nil : try transform(node, transformer) }
        return try absent(field, node: node, as: X.Value?.self, declaredDefault: { defaultValue() }, zero: .some(nil), isNullable: true)
    }

    // MARK: - Properties excluded from the wire

    /// A property listed in `decodeExcluding:`: the wire never reads it (it keeps
    /// `defaultValue`), the storage format does.
    @inlinable
    public func decodeStored<T: JSONDecodable>(_ field: Int, default defaultValue: @autoclosure () -> T) throws -> T {
        guard context.pointee.isStorage else { return defaultValue() }
        return try decode(field, default: defaultValue())
    }

    /// A transformed property listed in `decodeExcluding:`.
    @inlinable
    public func decodeStored<X: JSONTransformer>(
        _ field: Int, using transformer: X, default defaultValue: @autoclosure () -> X.Value
    ) throws -> X.Value {
        guard context.pointee.isStorage else { return defaultValue() }
        return try decode(field, using: transformer, default: defaultValue())
    }

    /// An optional transformed property listed in `decodeExcluding:`.
    @inlinable
    public func decodeStored<X: JSONTransformer>(
        _ field: Int, using transformer: X, default defaultValue: @autoclosure () -> X.Value?
    ) throws -> X.Value? {
        guard context.pointee.isStorage else { return defaultValue() }
        return try decode(field, using: transformer, default: defaultValue())
    }

    // MARK: - Implementation

    /// The value node of a field, following a dotted key into nested objects; -1 when absent.
    @usableFromInline
    func valueNode(of field: Int) -> Int {
        let slot = Int(slots[layout.fieldHead[field]])
        guard slot >= 0, layout.hasNestedKeys, layout.isNested(field) else { return slot }
        return context.pointee.tape.locate(layout.fieldRest[field], from: slot) ?? -1
    }

    @usableFromInline
    func isNull(_ node: Int) -> Bool {
        context.pointee.tape.nodes[node].kind == .null
    }

    @usableFromInline
    func transform<X: JSONTransformer>(_ node: Int, _ transformer: X) throws -> X.Value {
        if context.pointee.isStorage, let stored = X.Value.self as? any JSONDecodable.Type {
            // The storage format holds the property's own value, not the transformer's form.
            guard let value = try stored.decodeJSON(node, &context.pointee) as? X.Value else {
                throw context.pointee.mismatch(node, expected: String(describing: X.Value.self))
            }
            return value
        }
        let representation = try X.JSONRepresentation.decodeJSON(node, &context.pointee)
        do {
            return try transformer.decode(representation)
        } catch {
            throw context.pointee.wrap(error, at: node)
        }
    }

    /// A missing transformed field, or a `null` one: the zero of a transformed field is its
    /// representation's zero, transformed (0 ms → 1970-01-01); none when the transformer
    /// rejects it.
    @usableFromInline
    func absentTransformed<X: JSONTransformer>(
        _ field: Int, node: Int, _ transformer: X, declaredDefault: () -> X.Value?
    ) throws -> X.Value {
        let zero = X.JSONRepresentation.jsonZeroValue.flatMap { try? transformer.decode($0) }
        return try absent(field, node: node, as: X.Value.self, declaredDefault: declaredDefault, zero: zero, isNullable: false)
    }

    /// A missing key (`node` is -1), or a `null` for a non-optional type: the declared default,
    /// else nil for optionals, else the zero value in lenient mode, else an error. Every default
    /// and zero is recorded in the report.
    @usableFromInline
    func absent<T: JSONDecodable>(_ field: Int, node: Int, as type: T.Type, declaredDefault: () -> T?) throws -> T {
        try absent(field, node: node, as: type, declaredDefault: declaredDefault, zero: T.jsonZeroValue, isNullable: T.isJSONNullable)
    }

    @usableFromInline
    func absent<T>(
        _ field: Int, node: Int, as type: T.Type, declaredDefault: () -> T?, zero: T?, isNullable: Bool
    ) throws -> T {
        let isMissing = node < 0
        if context.pointee.isStorage {
            // The storage format writes every key, and `null` only for optionals: anything else
            // is another format (see `SQLRowDecoder`), never a reason to fill in defaults.
            guard isMissing else { throw context.pointee.mismatch(node, expected: String(describing: T.self)) }
            var error = context.pointee.error(.missingKey(layout.schema.fields[field].name), at: object)
            error.path = JSONPath(layout.fieldKeyPath[field])
            throw error
        }
        if isMissing, let base = context.pointee.mergeBaseValue(), let keyPath = layout.schema.fields[field].keyPath,
            let kept = base.fieldValue(at: keyPath) as? T
        {
            return kept
        }
        let key = layout.fieldKeyPath[field]
        if let value = declaredDefault() {
            record(isMissing ? .defaultForMissingKey : .defaultForNull, node: node, key: key)
            return value
        }
        // A missing optional is simply nil; that is not worth a report entry.
        if isMissing, isNullable, let zero { return zero }
        if context.pointee.isLenient, let zero {
            record(isMissing ? .zeroForMissingKey : .zeroForNull, node: node, key: key)
            return zero
        }
        if !isMissing {
            throw context.pointee.mismatch(node, expected: String(describing: T.self))
        }
        var error = context.pointee.error(.missingKey(layout.schema.fields[field].jsonKey), at: object)
        error.path = JSONPath(key)
        throw error
    }

    /// The primary key as the payload states it, or nil when a key field is missing or not a
    /// scalar.
    @usableFromInline
    func payloadKey() -> PrimaryKey? {
        let fields = layout.primaryKeyFields
        if fields.count == 1 { return component(of: fields[0]).map { PrimaryKey($0) } }
        var components: [PrimaryKey.Component] = []
        for field in fields {
            guard let component = component(of: field) else { return nil }
            components.append(component)
        }
        return PrimaryKey(components)
    }

    private func component(of field: Int) -> PrimaryKey.Component? {
        let node = valueNode(of: field)
        return node >= 0 ? context.pointee.keyComponent(node, as: layout.schema.fields[field].type) : nil
    }

    private func record(_ kind: DecodeReport.Kind, node: Int, key: [JSONPath.Component]) {
        if node >= 0 {
            context.pointee.entries.append((node, [], kind))
        } else {
            context.pointee.entries.append((object, key, kind))
        }
    }
}
