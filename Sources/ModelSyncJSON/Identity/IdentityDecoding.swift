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

/// One object's merge: the key its payload states, whether its type has a key at all, and the
/// merge base of the object around it.
@usableFromInline
struct MergeScope {
    @usableFromInline let key: PrimaryKey?
    /// False for a model without key fields (a nested value such as a plan): the map never holds
    /// one, so decoding skips storing it.
    @usableFromInline let isKeyed: Bool
    let outerBase: MergeBase?
}

/// The canonical value that an object's payload merges into: the map's value of `type` and
/// `key`, looked up the first time a key is missing from the payload. A payload with every key
/// (the usual case) never looks it up: its merge costs the map one store.
struct MergeBase {
    let type: any Model.Type
    let key: PrimaryKey
    /// Nil until looked up; then the map's value, or none when the map has no such value.
    var value: (any Model)??
}

extension JSONObjectDecoder {
    /// Makes the map's canonical value for the payload's key the merge base of this object.
    @usableFromInline
    func beginMerge(into map: IdentityMap, as type: any Model.Type) -> MergeScope {
        let isKeyed = !layout.primaryKeyFields.isEmpty
        let key = isKeyed ? payloadKey() : nil
        let outer = context.pointee.exchangeMergeBase(key.map { MergeBase(type: type, key: $0, value: nil) })
        return MergeScope(key: key, isKeyed: isKeyed, outerBase: outer)
    }
}

extension JSONDecodingContext {
    /// The canonical value the object being decoded merges into, looked up in the map when first
    /// asked for (decoding holds the map's merge lock, so no other decode changes it meanwhile;
    /// a nested payload of the same type and key, decoded before, has already been merged).
    mutating func mergeBaseValue() -> (any Model)? {
        guard var base = mergeBase, let map = identityMap else { return nil }
        if let value = base.value { return value }
        let value = map.anyValue(base.type, key: base.key)
        base.value = .some(value)
        mergeBase = base
        return value
    }

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
