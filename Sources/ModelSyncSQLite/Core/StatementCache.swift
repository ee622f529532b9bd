import ModelSyncCore

/// A connection's prepared statements, keyed by the UTF-8 bytes of their SQL (two texts Swift
/// calls equal, such as `'café'` precomposed and decomposed, are different statements), and
/// bounded: beyond `capacity`, the least recently used one is finalized.
struct StatementCache {
    /// A reference, so that the entry found last can be marked used without a lookup.
    private final class Entry {
        let statement: SQLStatement
        var lastUse: UInt64
        init(statement: SQLStatement, lastUse: UInt64) { (self.statement, self.lastUse) = (statement, lastUse) }
    }

    private var entries: [ExactText: Entry] = [:]
    private var clock: UInt64 = 0
    /// The entry found last: a loop running one statement compares its bytes instead of
    /// hashing them.
    private var last: Entry?
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { entries.count }

    subscript(sql: String) -> SQLStatement? {
        mutating get {
            clock &+= 1
            if let last, last.statement.sql.isIdentical(to: sql) {
                last.lastUse = clock
                return last.statement
            }
            guard let entry = entries[ExactText(sql)] else { return nil }
            entry.lastUse = clock
            last = entry
            return entry.statement
        }
    }

    /// Adds `statement`, evicting the least recently used one when full. An evicted statement
    /// still in use (a cursor's) lives until its user lets it go.
    mutating func insert(_ statement: SQLStatement) {
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            entries.removeValue(forKey: oldest.key)
            if last === oldest.value { last = nil }
        }
        clock &+= 1
        entries[ExactText(statement.sql)] = Entry(statement: statement, lastUse: clock)
    }

    mutating func removeAll() {
        entries.removeAll()
        last = nil
    }
}
