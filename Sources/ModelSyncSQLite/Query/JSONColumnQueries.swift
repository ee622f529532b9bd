// Conditions on what a column stores as JSON text (arrays, nested models). A key path into a
// nested model is a column too (`\.address.city == "Lyon"` reads `json_extract`; see
// `KeyPathIndex`); arrays get the operators below.

extension SQLExpression {
    /// Whether the array, stored as JSON text, holds `element`:
    /// `Post.where { $0.tags.contains("swift") }`. Elements compare as SQLite reads them from
    /// the JSON (text, integers, reals; `true` and `false` as 1 and 0).
    public func contains<Element: SQLColumnEncodable>(_ element: Element) -> SQLCondition<Root> where Value == [Element] {
        SQLCondition(node: .jsonArrayContains(plainNode("an array query"), element: .bound(element)))
    }

    /// The number of elements of the array stored as JSON text: `$0.tags.elementCount() >= 2`.
    public func elementCount<Element>() -> SQLExpression<Root, Int> where Value == [Element] {
        SQLExpression<Root, Int>(node: .function("json_array_length", [plainNode("an array query")], distinct: false))
    }
}
