// Field values seen as `Any` (through a schema's key paths): nil, equality and text.

/// Any optional, so that a value seen as `Any` can be asked whether it holds nil.
private protocol AnyOptional {
    var wrappedAny: Any? { get }
}

extension Optional: AnyOptional {
    fileprivate var wrappedAny: Any? { map { $0 } }
}

/// The value with every level of optional removed, or nil when one of them holds nil.
package func unwrapped(_ value: Any) -> Any? {
    guard let optional = value as? any AnyOptional else { return value }
    return optional.wrappedAny.flatMap(unwrapped)
}

/// Whether `type` is an optional type (`Int?`, `String??`).
package func isOptionalType(_ type: Any.Type) -> Bool {
    type is any AnyOptional.Type
}

/// Whether two field values are equal, when their type is `Equatable`; nil when it is not.
package func fieldValuesEqual(_ lhs: Any, _ rhs: Any) -> Bool? {
    guard let lhs = lhs as? any Equatable else { return nil }
    return lhs.isEqual(to: rhs)
}

extension Equatable {
    fileprivate func isEqual(to other: Any) -> Bool {
        (other as? Self).map { $0 == self } ?? false
    }
}

/// A field value as text for messages and transcripts: strings quoted, nil as `nil`.
func describeFieldValue(_ value: Any) -> String {
    guard let present = unwrapped(value) else { return "nil" }
    return present is any StringProtocol ? "\"\(present)\"" : "\(present)"
}
