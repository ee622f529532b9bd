/// A change of one property: its name, JSON key, and the values before and after.
///
/// A ``Draft`` reports one for every change it makes (through its ``Draft/observeChanges()`` stream and
/// ``Draft/onChange(_:)`` handlers) and lists the differences from its baseline as
/// ``Draft/changes``.
public struct FieldChange: Sendable, CustomStringConvertible {
    /// The Swift property name.
    public let field: String
    /// The property's JSON key.
    public let jsonKey: String
    /// The value before the change.
    public let oldValue: any Sendable
    /// The value after the change.
    public let newValue: any Sendable

    /// Creates a change.
    public init(field: String, jsonKey: String, oldValue: any Sendable, newValue: any Sendable) {
        self.field = field
        self.jsonKey = jsonKey
        self.oldValue = oldValue
        self.newValue = newValue
    }

    /// `title: "Hello" → "Hello again"`.
    public var description: String {
        "\(field): \(describeFieldValue(oldValue)) → \(describeFieldValue(newValue))"
    }
}
