/// A column of an existing table, as `PRAGMA table_info` describes it.
public struct ColumnInfo: Sendable, Equatable {
    /// The column name.
    public var name: String
    /// The declared type (`INTEGER`, `TEXT`, …).
    public var type: String
    /// Whether the column is `NOT NULL`.
    public var isNotNull: Bool
    /// The `DEFAULT` expression as written, if any.
    public var defaultSQL: String?
    /// 1-based position in the primary key, 0 when not part of it.
    public var primaryKeyPosition: Int
}
