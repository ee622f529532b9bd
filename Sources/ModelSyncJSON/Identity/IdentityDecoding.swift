import ModelSyncCore

// Decoding through an identity map (`JSONDecodingOptions.identityMap`): the merge-aware path
// that `JSONModel.decodeObject` takes when a map is set. Decoding without a map never comes
// here.

extension JSONModel {
    /// Decodes the object at `node` merged into the map's canonical value of the same key, and
    /// makes the result canonical. The canonical value stands in for every key the payload
    /// lacks (see `JSONObjectDecoder.absent`), so `null` still clears and present keys win.
    /// Inlinable, like the plain path, so that the model's module specializes it (the value is
    /// then moved, not copied through its type's witnesses).
    @inlinable
    static func decodeIdentified(
        _ node: Int, _ context: UnsafeMutablePointer<JSONDecodingContext>, _ layout: JSONLayout, into map: IdentityMap
    ) throws -> Self {
        // Nested models merge into their own canonical values; restore ours for the fields after.
        var outerBase: (any Model)?
        defer { _ = context.pointee.exchangeMergeBase(outerBase) }
        var key: PrimaryKey?
        var value = try withUnsafeTemporaryAllocation(of: Int32.self, capacity: layout.slotCount) { slots in
            var decoder = JSONObjectDecoder(context: context, layout: layout, slots: slots, object: node)
            key = decoder.payloadKey()
            outerBase = context.pointee.exchangeMergeBase(key.flatMap { map.anyValue(Self.self, key: $0) })
            return try Self(json: &decoder)
        }
        try finishDecoding(&value, node, context)
        // The payload's key is the value's, unless a hook may have changed it.
        if let key, !jsonHooks.contains(.didDecode) {
            map.store(value, key: key)
            return value
        }
        return map.store(value)
    }
}

extension JSONDecodingContext {
    /// The key component that the scalar at `node` states for a key field of type `type`; nil
    /// for anything but a string or a number.
    mutating func keyComponent(_ node: Int, as type: FieldType) -> PrimaryKey.Component? {
        switch tape.nodes[node].kind {
        case .number:
            if case .integer = type.nonOptional, let integer = try? Int64.decodeJSON(node, &self) { return .integer(integer) }
            guard case .number(let number) = try? value(node) else { return nil }
            return PrimaryKey.Component(text: number.text, as: type)
        case .string:
            return (try? tape.string(node)).map { PrimaryKey.Component(text: $0, as: type) }
        default:
            return nil
        }
    }
}
