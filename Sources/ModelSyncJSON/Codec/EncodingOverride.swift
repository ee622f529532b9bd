import ModelSyncCore

/// One property of `M` encoded another way for one call, leaving the model and its other
/// encodings alone (patchwork's per-call transformers).
///
/// ```swift
/// let youth = JSONEncodingOverride<Member>.field(\.age) { $0 <= 20 ? "Youth" : "Adult" }
/// let bytes = try JSONModelEncoder().encode(member, overriding: [youth])   // "age":"Youth"
/// try JSONModelEncoder().encode(member)                                   // "age":20, as before
/// ```
///
/// The value replaces what the model would write at the property's key (after the model's
/// `didEncode` hook, under the call's key strategy); a property the model excludes from encoding
/// stays out. Only the model's own properties can be overridden, not those of nested models.
public struct JSONEncodingOverride<M: JSONModel>: Sendable {
    /// The Swift name of the property, nil when the key path names no stored field of `M`.
    package let fieldName: String?
    /// The key path as written, for the error when it names no field.
    private let keyPath: AnyKeyPath & Sendable
    /// The property's value of a model in its per-call form.
    private let value: @Sendable (M, JSONModelEncoder) throws -> JSONValue

    private init(keyPath: AnyKeyPath & Sendable, value: @escaping @Sendable (M, JSONModelEncoder) throws -> JSONValue) {
        self.fieldName = M.schema.field(for: keyPath)?.name
        self.keyPath = keyPath
        self.value = value
    }

    /// Encodes the property at `keyPath` as what `encode` returns for its value (encoded with
    /// the call's options: dates by its date strategy, nil as `null` or left out).
    /// (`R` is `SendableMetatype`: the encoding runs later, in whatever task encodes, and needs
    /// `R`'s conformance there; every ordinary type's metatype is sendable.)
    public static func field<V, R: JSONEncodable & SendableMetatype>(
        _ keyPath: KeyPath<M, V> & Sendable, _ encode: @escaping @Sendable (V) throws -> R
    ) -> Self {
        Self(keyPath: keyPath) { model, encoder in try encoder.encodeToValue(encode(model[keyPath: keyPath])) }
    }

    /// Encodes the property at `keyPath` through `transformer` instead of its own encoding.
    public static func field<X: JSONTransformer>(_ keyPath: KeyPath<M, X.Value> & Sendable, using transformer: X) -> Self
    where X.JSONRepresentation: SendableMetatype {
        field(keyPath) { try transformer.encode($0) }
    }

    /// Encodes the optional property at `keyPath` through a transformer of its wrapped type; nil
    /// stays nil.
    public static func field<X: JSONTransformer>(_ keyPath: KeyPath<M, X.Value?> & Sendable, using transformer: X) -> Self
    where X.JSONRepresentation: SendableMetatype {
        field(keyPath) { try $0.map(transformer.encode) }
    }

    /// The property's per-call JSON for `model`; errors are reported at `path`.
    func encodedValue(of model: M, by encoder: JSONModelEncoder, at path: JSONPath) throws -> JSONValue {
        do {
            return try value(model, encoder)
        } catch {
            var wrapped = JSONError(wrapping: error)
            wrapped.path = path
            throw wrapped
        }
    }

    /// The error for a key path that names no stored field.
    var unknownField: JSONError {
        JSONError(.invalidValue("\(M.schema.name) has no stored field at \(keyPath)"))
    }
}

extension JSONModelEncoder {
    /// Encodes `model` to a ``JSONValue`` tree with `overrides` applied (see
    /// ``JSONEncodingOverride``); no overrides is the plain ``encodeToValue(_:)``.
    ///
    /// - Throws: ``JSONError`` when an override names no stored field of `M`, when an override
    ///   throws (at the property's path), or when a value cannot be encoded.
    public func encodeToValue<M: JSONModel>(_ model: M, overriding overrides: [JSONEncodingOverride<M>]) throws -> JSONValue {
        var value = try encodeToValue(model)
        guard !overrides.isEmpty else { return value }
        let layout = layout(for: M.self)
        for override in overrides {
            guard let name = override.fieldName else { throw override.unknownField }
            guard let path = Self.fieldPath(of: name, in: layout) else { continue }
            let replacement = try override.encodedValue(of: model, by: self, at: path)
            if replacement.isNull && options.nilEncoding == .omit {
                value[path] = nil
            } else {
                value[path] = replacement
            }
        }
        return value
    }

    /// Encodes `model` to UTF-8 bytes with `overrides` applied, optionally inside an envelope;
    /// see ``encodeToValue(_:overriding:)``. No overrides is the plain ``encode(_:at:)``, at no
    /// extra cost.
    public func encode<M: JSONModel>(_ model: M, overriding overrides: [JSONEncodingOverride<M>], at root: JSONPath = JSONPath()) throws -> [UInt8] {
        guard !overrides.isEmpty else { return try encode(model, at: root) }
        return bytes(of: try encodeToValue(model, overriding: overrides), at: root)
    }

    /// Where the property `name` of `M` sits in this encoder's output (its key under the call's
    /// key strategy, nested for dotted keys); nil when `M` has no such field or does not encode it.
    package func fieldPath<M: JSONModel>(of name: String, in type: M.Type) -> JSONPath? {
        Self.fieldPath(of: name, in: layout(for: M.self))
    }

    /// `M`'s layout under this encoder's key strategy and profile.
    func layout<M: JSONModel>(for type: M.Type) -> JSONLayout {
        var layouts = LayoutCache(strategy: options.keyStrategy, profile: options.profile)
        return layouts.layout(for: M.self)
    }

    /// Where the field `name` sits in output written with `layout`; nil when there is no such
    /// field or it is not encoded.
    static func fieldPath(of name: String, in layout: JSONLayout) -> JSONPath? {
        guard let index = layout.schema.fields.firstIndex(where: { $0.name == name }), layout.schema.fields[index].encodes else { return nil }
        return JSONPath(layout.fieldKeyPath[index])
    }

    /// `value` as UTF-8 bytes inside the envelope `root`, pretty-printed when the options say so.
    func bytes(of value: JSONValue, at root: JSONPath) -> [UInt8] {
        var document = JSONValue.null
        document[root] = value
        let bytes = document.jsonBytes()
        return options.prettyPrinted ? JSONWriter.prettyPrinted(bytes) : bytes
    }
}
