package import Foundation

/// A point of the log to read at: now, an event's seq, or a moment (the last event at or before it).
package enum PointInTime: Sendable, Hashable {
    case now
    case seq(UInt64)
    case date(Date)
}

/// An exact-match filter on a field: `make=Toyota`.
package struct FieldFilter: Sendable, Hashable {
    package var path: String
    package var value: String
    package init(path: String, value: String) { self.path = path; self.value = value }
}

/// Ordering by a field's value; numbers compare as numbers.
package struct ItemSort: Sendable, Hashable {
    package var path: String
    package var descending: Bool
    package init(path: String, descending: Bool = false) { self.path = path; self.descending = descending }
}

/// Which items of a source to read, and how.
package struct ItemQuery: Sendable, Hashable {
    package var source: String
    package var filters: [FieldFilter]
    /// Case-insensitive text searched in the id, title, subtitle and fields.
    package var search: String?
    package var sort: ItemSort?
    package var limit: Int?
    package var offset: Int
    /// Start after this id (in the query's order) instead of at `offset`: how a screen loads
    /// "more" without counting what it skipped.
    package var after: String?
    package var at: PointInTime
    /// Also return items removed at that point (marked `isRemoved`), where they stood.
    package var includeRemoved: Bool

    package init(
        source: String, filters: [FieldFilter] = [], search: String? = nil, sort: ItemSort? = nil, limit: Int? = nil,
        offset: Int = 0, after: String? = nil, at: PointInTime = .now, includeRemoved: Bool = false
    ) {
        self.source = source; self.filters = filters; self.search = search; self.sort = sort; self.limit = limit
        self.offset = offset; self.after = after; self.at = at; self.includeRemoved = includeRemoved
    }

    /// Whether the query reads items in natural id order with nothing to match: a page read,
    /// whatever the source's size.
    package var isPlainPage: Bool {
        filters.isEmpty && (search ?? "").isEmpty && sort == nil
    }
}

/// One page of a query's items.
package struct ItemPage: Sendable, Hashable {
    package var items: [Item]
    /// How many items matched before limit and offset.
    package var total: Int
    /// The seq read at (nil: now).
    package var seq: UInt64?
    /// Whether an index answered the filters instead of a scan.
    package var usedIndex: Bool

    package init(items: [Item], total: Int, seq: UInt64? = nil, usedIndex: Bool = false) {
        self.items = items; self.total = total; self.seq = seq; self.usedIndex = usedIndex
    }
}
