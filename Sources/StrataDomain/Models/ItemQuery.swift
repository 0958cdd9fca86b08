package import Foundation
package import StrataJSON

/// A point of the log to read at: now, an event's seq, or a moment (the last event at or before it).
package enum PointInTime: Sendable, Hashable {
    case now
    case seq(UInt64)
    case date(Date)
}

/// An exact-match filter on a field: `make=Toyota` (the value compared as text, as the first
/// `--where` did).
package struct FieldFilter: Sendable, Hashable {
    package var path: String
    package var value: String
    package init(path: String, value: String) { self.path = path; self.value = value }

    /// `PATH=VALUE` written the first way: a plain dotted path, `=` with no space before it, and a
    /// value that is not quoted and holds no operator or `and`/`or`/`in` word (`model=Yaris Cross`
    /// is one; `price < 10000`, `make = "Kia"` and `make=Kia and price<5` are expressions).
    package init?(legacy text: String) {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else { return nil }
        let path = text[..<eq], value = text[text.index(after: eq)...]
        guard path.allSatisfy({ $0.isLetter || $0.isNumber || "_-$.".contains($0) }), SourceSpec.isPath(String(path)),
            value.first.map({ !"=\"' ".contains($0) }) ?? true,
            !value.contains(where: { "<>!~()".contains($0) })
        else { return nil }
        let words = value.lowercased().split(separator: " ")
        guard !words.contains(where: { ["and", "or", "in", "not", "contains"].contains($0) }) || words.count == 1 else { return nil }
        self.init(path: String(path), value: String(value))
    }
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
    /// Conditions every item must meet (``ItemExpression``), besides `filters`.
    package var expressions: [ItemExpression] = []

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
        isUnfiltered && sort == nil
    }

    /// Whether every item present matches: no filter, expression or search.
    package var isUnfiltered: Bool {
        filters.isEmpty && expressions.isEmpty && (search ?? "").isEmpty
    }
}

/// How many items have a combination of values at the paths counted by (`count --by`).
package struct ItemCount: Sendable, Hashable {
    /// The value at each path, in the order the paths were given; nil where an item has none.
    package var values: [JSONValue?]
    package var count: Int

    package init(values: [JSONValue?], count: Int) { self.values = values; self.count = count }
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
