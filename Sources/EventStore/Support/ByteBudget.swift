/// Values kept under their keys up to a budget of bytes (each value's count given), the oldest
/// let go first once the budget is passed; the newest is always kept. For caches of decoded or
/// worked-out values whose reuse is mostly soon after they were made.
struct ByteBudget<Key: Hashable, Value> {
    let budget: Int
    private var values: [Key: (value: Value, bytes: Int)] = [:]
    private var order: [Key] = []
    private var first = 0
    private var bytes = 0

    init(budget: Int) { self.budget = budget }

    subscript(key: Key) -> Value? { values[key]?.value }

    /// How many values are kept.
    var count: Int { values.count }

    /// Keeps `value` under `key` (replacing what it held), then lets the oldest go while the
    /// values pass the budget.
    mutating func keep(_ value: Value, for key: Key, bytes count: Int) {
        if let replaced = values.updateValue((value, count), forKey: key) { bytes -= replaced.bytes } else { order.append(key) }
        bytes += count
        while bytes > budget, first < order.count - 1 {
            if let gone = values.removeValue(forKey: order[first]) { bytes -= gone.bytes }
            first += 1
        }
        // The keys let go, dropped now and then rather than one at a time.
        if first > 4096 {
            order.removeFirst(first)
            first = 0
        }
    }
}
