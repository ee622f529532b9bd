/// The identity map's values, not thread-safe (the map keeps it behind its lock).
///
/// Each model type's values sit in a ``ValueColumn`` of that type, with no `any Model` box per
/// value, so that storing over a value overwrites it in place and a lookup returns it without a
/// cast. One index of slots, linked in use order across every type, keeps lookups, insertions,
/// removals and the eviction of the least recently used value O(1).
struct IdentityStore {
    /// A model type and a key.
    struct Key: Hashable {
        let type: ObjectIdentifier
        let id: PrimaryKey
    }

    private struct Slot {
        var key: Key
        /// The value's column (an index in `columns`) and its row there.
        var column: Int
        var row: Int
        var older: Int
        var newer: Int
    }

    /// The most values kept.
    let capacity: Int
    private var index: [Key: Int] = [:]
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var newest = -1
    private var oldest = -1
    private var columnIndex: [ObjectIdentifier: Int] = [:]
    private var columns: [any AnyValueColumn] = []

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { index.count }

    /// Whether a value is held under `key` (its use order unchanged).
    func contains(_ key: Key) -> Bool { index[key] != nil }

    /// The value of type `M` with key `id`, which becomes the most recently used.
    mutating func value<M: Model>(_ type: M.Type, for id: PrimaryKey) -> M? {
        // `type` is `M` but for a class model asked for by a subclass: then its column holds
        // another type, and the value is cast.
        guard type == M.self else { return anyValue(type, for: id) as? M }
        guard let slot = index[Key(type: ObjectIdentifier(type), id: id)] else { return nil }
        touch(slot)
        return column(slots[slot].column, of: M.self).value(at: slots[slot].row)
    }

    /// The value of type `type` with key `id`, boxed, which becomes the most recently used.
    mutating func anyValue(_ type: any Model.Type, for id: PrimaryKey) -> (any Model)? {
        guard let slot = index[Key(type: ObjectIdentifier(type), id: id)] else { return nil }
        touch(slot)
        return columns[slots[slot].column].anyValue(at: slots[slot].row)
    }

    /// Stores `value` under `id` as the most recently used value. When it replaces a value, that
    /// value is moved into `replaced` (uninitialised until then) and the result is true, so that
    /// the caller decides where it is destroyed. Not an `M?`: in code not specialised for `M`,
    /// an optional of it costs a metadata lookup on every store.
    mutating func set<M: Model>(_ value: M, for id: PrimaryKey, replacedInto replaced: UnsafeMutableBufferPointer<M>) -> Bool {
        let key = Key(type: ObjectIdentifier(M.self), id: id)
        // One probe for a hit and an insertion alike: a new key gets the next free slot, which
        // no key holds, so meeting it means the key was absent.
        let free = freeSlots.last ?? slots.count
        let slot = Self.read(&index[key, default: free])
        if slot != free {
            touch(slot)
            column(slots[slot].column, of: M.self).exchange(value, at: slots[slot].row, movingOldInto: replaced)
            return true
        }
        let (columnNumber, column) = self.column(of: M.self)
        let entry = Slot(key: key, column: columnNumber, row: column.insert(value), older: newest, newer: -1)
        if free == slots.count {
            slots.append(entry)
        } else {
            freeSlots.removeLast()
            slots[slot] = entry
        }
        link(slot)
        // Evicted after the insertion, so that the index is probed once; the new value is the
        // newest, so never the one evicted.
        if index.count > capacity, let (column, row) = removeSlot(for: slots[oldest].key) {
            columns[column].discard(at: row)
        }
        return false
    }

    /// Removes the value of type `M` with key `id` and returns it.
    mutating func removeValue<M: Model>(_ type: M.Type, for id: PrimaryKey) -> M? {
        guard let (column, row) = removeSlot(for: Key(type: ObjectIdentifier(type), id: id)) else { return nil }
        guard type == M.self else { return columns[column].remove(at: row) as? M }
        return self.column(column, of: M.self).take(at: row)
    }

    /// Removes the entry for `key` from the index and the use order, and returns where its value
    /// is (still held by its column).
    private mutating func removeSlot(for key: Key) -> (column: Int, row: Int)? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        unlink(slot)
        freeSlots.append(slot)
        return (slots[slot].column, slots[slot].row)
    }

    mutating func removeAll() {
        self = IdentityStore(capacity: capacity)
    }

    /// The values from the least to the most recently used.
    var values: [any Model] {
        var result: [any Model] = []
        result.reserveCapacity(count)
        var slot = oldest
        while slot >= 0 {
            if let value = columns[slots[slot].column].anyValue(at: slots[slot].row) { result.append(value) }
            slot = slots[slot].newer
        }
        return result
    }

    /// Column `number`, which holds `M`'s values.
    private func column<M: Model>(_ number: Int, of type: M.Type) -> ValueColumn<M> {
        // Not `as?`: a column is made for one type and found by that type's identifier (types
        // are never unloaded), and a checked cast would look up `ValueColumn<M>`'s metadata on
        // every store, in code that is not specialized for `M`.
        unsafeDowncast(columns[number], to: ValueColumn<M>.self)
    }

    /// The column of `M`'s values and its number, created on first use.
    private mutating func column<M: Model>(of type: M.Type) -> (Int, ValueColumn<M>) {
        let identifier = ObjectIdentifier(type)
        if let number = columnIndex[identifier] {
            return (number, column(number, of: type))
        }
        let column = ValueColumn<M>()
        columnIndex[identifier] = columns.count
        columns.append(column)
        return (columns.count - 1, column)
    }

    /// The value of an inout access (a dictionary's `subscript(_:default:)` inserts the default
    /// only when accessed inout).
    private static func read(_ value: inout Int) -> Int { value }

    private mutating func touch(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        slots[slot].older = newest
        slots[slot].newer = -1
        link(slot)
    }

    /// Makes `slot` (whose `older` is the current newest) the newest.
    private mutating func link(_ slot: Int) {
        if newest >= 0 { slots[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let (older, newer) = (slots[slot].older, slots[slot].newer)
        if older >= 0 { slots[older].newer = newer } else { oldest = newer }
        if newer >= 0 { slots[newer].older = older } else { newest = older }
    }
}

/// What ``IdentityStore`` asks of a column without knowing its model type.
protocol AnyValueColumn: AnyObject {
    /// The value in `row`, boxed; nil for a free row.
    func anyValue(at row: Int) -> (any Model)?
    /// Frees `row` and returns its value, boxed; nil when it holds none.
    func remove(at row: Int) -> (any Model)?
    /// Frees `row`, destroying its value.
    func discard(at row: Int)
}

/// The values of one model type, in rows of one buffer (freed rows are reused).
final class ValueColumn<M: Model>: AnyValueColumn {
    private var rows: UnsafeMutablePointer<M>
    /// Whether each row holds a value (the rows up to `occupied.count` were used at least once).
    private var occupied: [Bool] = []
    private var freeRows: [Int] = []
    private var rowCapacity: Int

    init() {
        rowCapacity = 16
        rows = .allocate(capacity: rowCapacity)
    }

    deinit {
        for row in occupied.indices where occupied[row] {
            (rows + row).deinitialize(count: 1)
        }
        rows.deallocate()
    }

    func value(at row: Int) -> M? {
        occupied[row] ? rows[row] : nil
    }

    func anyValue(at row: Int) -> (any Model)? {
        value(at: row)
    }

    /// Puts `value` in a free row and returns the row.
    func insert(_ value: M) -> Int {
        if let row = freeRows.popLast() {
            (rows + row).initialize(to: value)
            occupied[row] = true
            return row
        }
        let row = occupied.count
        if row == rowCapacity {
            let grown = UnsafeMutablePointer<M>.allocate(capacity: rowCapacity * 2)
            // Row by row: free rows hold no value to move.
            for row in occupied.indices where occupied[row] {
                (grown + row).moveInitialize(from: rows + row, count: 1)
            }
            rows.deallocate()
            rows = grown
            rowCapacity *= 2
        }
        (rows + row).initialize(to: value)
        occupied.append(true)
        return row
    }

    /// Overwrites the value in `row` (which holds one) with `value`, moving the old one into the
    /// first element of `old` (uninitialised until then).
    func exchange(_ value: M, at row: Int, movingOldInto old: UnsafeMutableBufferPointer<M>) {
        old.initializeElement(at: 0, to: (rows + row).move())
        (rows + row).initialize(to: value)
    }

    /// Frees `row` and returns its value; nil when it holds none.
    func take(at row: Int) -> M? {
        guard occupied[row] else { return nil }
        occupied[row] = false
        freeRows.append(row)
        return (rows + row).move()
    }

    func remove(at row: Int) -> (any Model)? {
        take(at: row)
    }

    func discard(at row: Int) {
        _ = take(at: row)
    }
}
