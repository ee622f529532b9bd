/// A dictionary that remembers the order in which its entries were last used and drops the
/// least recently used one when it grows past its capacity. Lookups, insertions and removals
/// are O(1): entries sit in an array of slots linked in use order.
struct LRUDictionary<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        /// Nil once the slot is free, so that a removed value is released at once.
        var value: Value?
        var older: Int
        var newer: Int
    }

    /// The most entries kept.
    let capacity: Int
    private var index: [Key: Int] = [:]
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var newest = -1
    private var oldest = -1

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { index.count }

    /// The value for `key`, which becomes the most recently used.
    mutating func value(for key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        touch(slot)
        return slots[slot].value
    }

    /// Stores `value` as the most recently used entry; returns the value it replaced, if any.
    @discardableResult
    mutating func set(_ value: Value, for key: Key) -> Value? {
        if let slot = index[key] {
            touch(slot)
            // Swapped rather than copied, so that the old value is moved out, not retained.
            var replaced: Value? = value
            swap(&replaced, &slots[slot].value)
            return replaced
        }
        if index.count >= capacity, oldest >= 0 {
            removeValue(for: slots[oldest].key)
        }
        let slot: Int
        let entry = Slot(key: key, value: value, older: newest, newer: -1)
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = entry
        } else {
            slot = slots.count
            slots.append(entry)
        }
        link(slot)
        index[key] = slot
        return nil
    }

    /// Removes the entry for `key` and returns its value.
    @discardableResult
    mutating func removeValue(for key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        unlink(slot)
        freeSlots.append(slot)
        defer { slots[slot].value = nil }
        return slots[slot].value
    }

    mutating func removeAll() {
        self = LRUDictionary(capacity: capacity)
    }

    /// The entries from the least to the most recently used.
    var entries: [(key: Key, value: Value)] {
        var result: [(key: Key, value: Value)] = []
        result.reserveCapacity(count)
        var slot = oldest
        while slot >= 0 {
            if let value = slots[slot].value { result.append((slots[slot].key, value)) }
            slot = slots[slot].newer
        }
        return result
    }

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
