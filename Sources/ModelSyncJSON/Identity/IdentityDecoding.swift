import ModelSyncCore

// Decoding through an identity map (`JSONDecodingOptions.identityMap`): the merge-aware path
// that `JSONModel.decodeObject` takes when a map is set. Decoding without a map never comes
// here.

extension JSONModel {
    /// Decodes the object at `node` merged into the map's canonical value of the same key, and
    /// makes the result canonical. The canonical value stands in for every key the payload
    /// lacks (see `JSONObjectDecoder.absent`), so `null` still clears and present keys win.
    /// Inlinable, like the plain path, so that the model's module can specialize it.
    @inlinable
    static func decodeIdentified(
        _ node: Int, _ context: UnsafeMutablePointer<JSONDecodingContext>, _ layout: JSONLayout, into map: IdentityMap
    ) throws -> Self {
        let (decoded, merge) = try withUnsafeTemporaryAllocation(of: Int32.self, capacity: layout.slotCount) { slots in
            var decoder = JSONObjectDecoder(context: context, layout: layout, slots: slots, object: node)
            let merge = decoder.beginMerge(into: map, as: Self.self)
            do {
                return (try Self(json: &decoder), merge)
            } catch {
                context.pointee.endMerge(merge)
                throw error
            }
        }
        // Nested models merged into their own canonical values; ours is restored for the caller.
        context.pointee.endMerge(merge)
        var value = decoded
        try finishDecoding(&value, node, context)
        // The payload's key is the value's, unless a hook may have changed it.
        if let key = merge.key, !jsonHooks.contains(.didDecode) {
            map.store(value, key: key)
            return value
        }
        return map.store(value)
    }
}

/// One object's merge: the key its payload states, and the merge base of the object around it.
@usableFromInline
struct MergeScope {
    @usableFromInline let key: PrimaryKey?
    let outerBase: (any Model)?
}

extension JSONObjectDecoder {
    /// Makes the map's canonical value for the payload's key the merge base of this object.
    @usableFromInline
    func beginMerge(into map: IdentityMap, as type: any Model.Type) -> MergeScope {
        let key = payloadKey()
        let outer = context.pointee.exchangeMergeBase(key.flatMap { map.anyValue(type, key: $0) })
        return MergeScope(key: key, outerBase: outer)
    }
}

extension JSONDecodingContext {
    /// Restores the merge base of the object around the one `scope` began.
    @usableFromInline
    mutating func endMerge(_ scope: MergeScope) {
        mergeBase = scope.outerBase
    }

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
