/// Reaching a model's optional conformances (`Validatable`, `TimestampedModel`,
/// `SoftDeletableModel`) on write paths without boxing the model.
///
/// `self as? any P` copies the whole value into an existential box on every call, which cost
/// more than binding the row on an insert. Checking the metatype (`Self.self as? any P.Type`)
/// needs no copy; the opened type is `Self`, so the value can be read and written through
/// its own memory as that type.
extension Model {
    /// Calls `body` with this model as `type`, which must be `Self` opened from a conformance
    /// check of `Self.self`.
    @inlinable
    package func viewed<Opened, Result>(as type: Opened.Type, _ body: (Opened) throws -> Result) rethrows -> Result {
        assert(type == Self.self, "\(type) is not \(Self.self)")
        return try withUnsafePointer(to: self) { pointer in
            try pointer.withMemoryRebound(to: Opened.self, capacity: 1) { try body($0.pointee) }
        }
    }

    /// Lets `body` change this model as `type`, which must be `Self` opened from a conformance
    /// check of `Self.self`.
    @inlinable
    package mutating func modify<Opened>(as type: Opened.Type, _ body: (inout Opened) throws -> Void) rethrows {
        assert(type == Self.self, "\(type) is not \(Self.self)")
        try withUnsafeMutablePointer(to: &self) { pointer in
            try pointer.withMemoryRebound(to: Opened.self, capacity: 1) { try body(&$0.pointee) }
        }
    }
}
