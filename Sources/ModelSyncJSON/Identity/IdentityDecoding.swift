import ModelSyncCore

// Decoding through an identity map (`JSONDecodingOptions.identityMap`): the pieces of the
// merge-aware branch of `JSONModel.decodeObject`, taken when a map is set. Decoding without a
// map never comes here.

extension JSONModel {
    /// Makes `value`, just decoded (and merged) through `map`, the canonical value of its key:
    /// `key` is the one its payload stated, which is the value's unless a `didDecode` hook may
    /// have changed it.
    @inlinable
    static func storeDecoded(_ value: Self, key: PrimaryKey?, in map: IdentityMap) {
        if let key, !jsonHooks.contains(.didDecode) {
            map.store(value, key: key)
        } else {
            map.store(value)
        }
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
