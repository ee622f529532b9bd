import ModelSyncCore

/// Reads the fields of one JSON object into a model. Generated `init(json:)` code calls it with
/// field indices (positions in the model's schema); you do not use it directly.
///
/// It exists only during the generated initializer: it points into the decoding run's state.
public struct JSONObjectDecoder {
    private let context: UnsafeMutablePointer<JSONDecodingContext>
    private let layout: JSONLayout
    private let slots: UnsafeMutableBufferPointer<Int32>
    private let object: Int

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
    }

    /// Decodes field `field` (its type is the property's, inferred from the assignment).
    public func decode<T: JSONDecodable>(_ field: Int) throws -> T {
        try decode(field, as: T.self, declaredDefault: { nil })
    }

    /// Decodes field `field` as `T`, taking `defaultValue` when the key is missing (or `null`
    /// for a non-optional type).
    public func decode<T: JSONDecodable>(_ field: Int, default defaultValue: @autoclosure () -> T) throws -> T {
        try decode(field, as: T.self, declaredDefault: { defaultValue() })
    }

    /// Decodes field `field` through a transformer.
    public func decode<X: JSONTransformer>(_ field: Int, using transformer: X) throws -> X.Value {
        try transformed(field, transformer, declaredDefault: { nil })
    }

    /// Decodes field `field` through a transformer, with a declared default.
    public func decode<X: JSONTransformer>(
        _ field: Int, using transformer: X, default defaultValue: @autoclosure () -> X.Value
    ) throws -> X.Value {
        try transformed(field, transformer, declaredDefault: { defaultValue() })
    }

    /// Decodes an optional field through a transformer of its wrapped type (`null` and a missing
    /// key give nil).
    public func decode<X: JSONTransformer>(_ field: Int, using transformer: X) throws -> X.Value? {
        try optionalTransformed(field, transformer, declaredDefault: { nil })
    }

    /// Decodes an optional field through a transformer, with a declared default.
    public func decode<X: JSONTransformer>(
        _ field: Int, using transformer: X, default defaultValue: @autoclosure () -> X.Value?
    ) throws -> X.Value? {
        try optionalTransformed(field, transformer, declaredDefault: { defaultValue() })
    }

    // MARK: - Implementation

    /// The value node of a field, following a dotted key into nested objects; nil when absent.
    @inline(__always)
    private func node(of field: Int) -> Int? {
        let slot = Int(slots[layout.fieldHead[field]])
        guard slot >= 0 else { return nil }
        let rest = layout.fieldRest[field]
        return rest.isEmpty ? slot : context.pointee.tape.locate(rest, from: slot)
    }

    private func decode<T: JSONDecodable>(_ field: Int, as type: T.Type, declaredDefault: () -> T?) throws -> T {
        guard let node = node(of: field) else {
            return try absent(field, null: nil, zero: T.isJSONNullable || context.pointee.isLenient ? T.jsonZeroValue : nil,
                              isNullable: T.isJSONNullable, declaredDefault: declaredDefault)
        }
        if !T.isJSONNullable, context.pointee.tape.nodes[node].kind == .null {
            return try absent(field, null: node, zero: context.pointee.isLenient ? T.jsonZeroValue : nil,
                              isNullable: false, declaredDefault: declaredDefault)
        }
        return try T.decodeJSON(node, &context.pointee)
    }

    private func transformed<X: JSONTransformer>(_ field: Int, _ transformer: X, declaredDefault: () -> X.Value?) throws -> X.Value {
        guard let node = node(of: field), context.pointee.tape.nodes[node].kind != .null else {
            // The zero of a transformed field is its representation's zero, transformed
            // (0 ms → 1970-01-01); no zero when the transformer rejects it.
            let zero = context.pointee.isLenient ? X.JSONRepresentation.jsonZeroValue.flatMap { try? transformer.decode($0) } : nil
            return try absent(field, null: node(of: field), zero: zero, isNullable: false, declaredDefault: declaredDefault)
        }
        return try transform(node, transformer)
    }

    private func optionalTransformed<X: JSONTransformer>(_ field: Int, _ transformer: X, declaredDefault: () -> X.Value??) throws -> X.Value? {
        guard let node = node(of: field) else {
            return try absent(field, null: nil, zero: .some(nil), isNullable: true, declaredDefault: declaredDefault)
        }
        if context.pointee.tape.nodes[node].kind == .null { return nil }
        return try transform(node, transformer)
    }

    private func transform<X: JSONTransformer>(_ node: Int, _ transformer: X) throws -> X.Value {
        let representation = try X.JSONRepresentation.decodeJSON(node, &context.pointee)
        do {
            return try transformer.decode(representation)
        } catch {
            throw context.pointee.wrap(error, at: node)
        }
    }

    /// A missing key (`null` is nil) or a `null` for a non-optional type (`null` is its node):
    /// the declared default, else nil for optionals, else the zero value in lenient mode, else
    /// an error. Every default and zero is recorded in the report.
    private func absent<T>(_ field: Int, null: Int?, zero: T?, isNullable: Bool, declaredDefault: () -> T?) throws -> T {
        let isMissing = null == nil
        let key = layout.fieldKeyPath[field]
        if let value = declaredDefault() {
            record(isMissing ? .defaultForMissingKey : .defaultForNull, null: null, key: key)
            return value
        }
        if isNullable, let zero { return zero }
        if let zero {
            record(isMissing ? .zeroForMissingKey : .zeroForNull, null: null, key: key)
            return zero
        }
        if let null {
            throw context.pointee.mismatch(null, expected: String(describing: T.self))
        }
        var error = context.pointee.error(.missingKey(layout.schema.fields[field].jsonKey), at: object)
        error.path = JSONPath(key)
        throw error
    }

    private func record(_ kind: DecodeReport.Kind, null: Int?, key: [JSONPath.Component]) {
        if let null {
            context.pointee.entries.append((null, [], kind))
        } else {
            context.pointee.entries.append((object, key, kind))
        }
    }
}
