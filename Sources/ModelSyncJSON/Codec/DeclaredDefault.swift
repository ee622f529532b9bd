/// The initializer of a `@Model` property, evaluated in the scope where the property is declared.
///
/// `@Model` adds one as a static member of the model for each property with an initializer, and
/// the generated codec calls it instead of copying the expression into its extension: an
/// extension of a nested type `NS.Student` does not see `NS`'s other members, so a copied
/// `Point(x: 0, y: 0)` would not find a sibling `NS.Point`. Each call evaluates the expression
/// anew, as Swift does for `var createdAt = Date()`.
public struct DeclaredDefault<Value>: Sendable {
    private let make: @Sendable () -> Value

    /// Creates the default of the property at `keyPath`, whose type is the expression's type.
    public init<Root>(for keyPath: KeyPath<Root, Value>, _ make: @escaping @Sendable () -> Value) {
        self.make = make
    }

    /// Evaluates the initializer.
    public func callAsFunction() -> Value { make() }
}
