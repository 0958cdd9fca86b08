package import StrataDomain
package import StrataData
import EventStore
import Foundation

/// ``ItemRepository`` over the LMDB tables: `--where` filters on indexed fields are index
/// lookups, now or as of a seq (the index keeps its history); other filters, search and sort
/// scan the source's items.
package struct LMDBItemRepository: ItemRepository {
    let tables: ItemTables
    let sources: any SourceRepository
    let log: any EventLogRepository

    package init(tables: ItemTables, sources: any SourceRepository, log: any EventLogRepository) {
        self.tables = tables
        self.sources = sources
        self.log = log
    }

    package func items(_ query: ItemQuery) async throws -> ItemPage {
        guard query.limit.map({ $0 >= 0 }) ?? true, query.offset >= 0 else {
            throw RepositoryError(
                .invalidQuery, "a page's limit and offset cannot be negative (limit \(query.limit.map(String.init) ?? "none"), offset \(query.offset))")
        }
        let source = try await sources.source(named: query.source)
        let seq = try await seq(of: query.at, source: source.name)
        if query.isPlainPage {
            // Natural id order, nothing to match: one page and a counter, never the whole source.
            let limit = query.limit ?? .max
            let total = try await storage { try await tables.count(source: source.name, asOf: seq) }
            let entities =
                limit == 0
                ? []
                : try await storage {
                    try await tables.page(
                        source: source.name, asOf: seq, after: query.after, offset: query.after == nil ? query.offset : 0,
                        limit: limit, includeRemoved: query.includeRemoved)
                }
            return ItemPage(items: entities.map { Item(entity: $0, source: source) }, total: total, seq: seq)
        }
        if !query.includeRemoved, query.filters.count == 1, query.search == nil, query.sort == nil, let f = query.filters.first,
            let (total, entities) = try await storage({
                try await tables.page(
                    source: source.name, path: f.path, equals: f.value, asOf: seq, after: query.after,
                    offset: query.after == nil ? query.offset : 0, limit: query.limit ?? .max)
            })
        {
            // One indexed field and nothing else to match or order by: the index's keys in natural
            // order give the page and the total; only the page's items are read.
            return ItemPage(items: entities.map { Item(entity: $0, source: source) }, total: total, seq: seq, usedIndex: true)
        }
        if !query.includeRemoved, query.filters.isEmpty, (query.search ?? "").isEmpty, seq == nil, let sort = query.sort,
            let entities = try await storage({
                try await tables.sortedPage(
                    source: source.name, path: sort.path, descending: sort.descending, after: query.after,
                    offset: query.after == nil ? query.offset : 0, limit: query.limit ?? .max)
            })
        {
            // Sorted by an indexed field, now: the sorted index gives the page, a counter the total.
            // Items whose field reaches into an array have no place in that order: the page and
            // the first items of the source are checked for one.
            let sample = try await storage { try await tables.page(source: source.name, asOf: nil, limit: 50, includeRemoved: false) }
            try Self.refuseArraySort(sort, entities + sample, source: source)
            let total = try await storage { try await tables.count(source: source.name, asOf: nil) }
            return ItemPage(items: entities.map { Item(entity: $0, source: source) }, total: total, seq: seq, usedIndex: true)
        }
        var usedIndex = false
        var entities: [ItemEntity]?
        if !query.includeRemoved {
            // The first filter an index can answer narrows the read; the rest are checked below.
            for f in query.filters where entities == nil {
                entities = try await storage { try await tables.items(source: source.name, path: f.path, equals: f.value, asOf: seq) }
            }
            usedIndex = entities != nil
        }
        let all: [ItemEntity]
        if let entities {
            all = entities
        } else {
            all = try await storage { try await tables.items(source: source.name, asOf: seq, includeRemoved: query.includeRemoved) }
        }
        var items = all.map { Item(entity: $0, source: source) }.filter { item in
            query.filters.allSatisfy { f in item.matches(f) }
        }
        if let text = query.search?.lowercased(), !text.isEmpty {
            items = items.filter { $0.searchText.contains(text) }
        }
        if let sort = query.sort {
            try Self.refuseArraySort(sort, items)
            items = items.sorted(by: sort)
        } else {
            items.sort { Item.idPrecedes($0.id, $1.id) }
        }
        let total = items.count
        if let after = query.after, let at = items.firstIndex(where: { $0.id == after }) { items.removeFirst(at + 1) }
        let page = items.dropFirst(query.after == nil ? query.offset : 0).prefix(query.limit ?? .max)
        return ItemPage(items: Array(page), total: total, seq: seq, usedIndex: usedIndex)
    }

    /// Throws when the sort's path reaches into an array in one of `items`: it has several
    /// values there, so no single place in the order.
    static func refuseArraySort(_ sort: ItemSort, _ items: [Item]) throws {
        guard let many = items.first(where: { $0.pathReachesArray(sort.path) }) else { return }
        throw RepositoryError(
            .invalidQuery,
            "\(sort.path) reaches into an array in item \(many.id), so it has several values and cannot order items; sort by one element, with its position in the path (e.g. labels.0.name)"
        )
    }

    static func refuseArraySort(_ sort: ItemSort, _ entities: [ItemEntity], source: Source) throws {
        try refuseArraySort(sort, entities.map { Item(entity: $0, source: source) })
    }

    package func item(source name: String, id: String, at point: PointInTime) async throws -> Item? {
        let source = try await sources.source(named: name)
        let seq = try await seq(of: point, source: name)
        let observedBy: Timestamp? = if case .date(let d) = point { Timestamp(d) } else { nil }
        return try await storage { try await tables.item(source: name, id: id, asOf: seq, observedBy: observedBy) }.map { Item(entity: $0, source: source) }
    }

    package func history(source: String, id: String, upTo point: PointInTime) async throws -> [ItemVersion] {
        // A date bounds the history by when versions were observed; a seq by where they are in the log.
        let (seq, observedBy): (UInt64, Timestamp?) =
            switch point {
            case .now: (.max, nil)
            case .seq(let n): (n, nil)
            case .date(let d): (.max, Timestamp(d))
            }
        let versions = try await storage { try await tables.history(source: source, id: id, upTo: seq, observedBy: observedBy) }.map(ItemVersion.init(entity:))
        // Before the retention horizon nothing is kept: versions folded from what was kept
        // there (a page a later 304 still names) would be a partial story.
        guard let horizon = try await storage({ try await tables.retentionHorizon(source: source) }) else { return versions }
        if case .seq(let n) = point, n < horizon { throw Self.beforeHorizon(n, horizon, source) }
        return versions.filter { $0.seq >= horizon }
    }

    package static func beforeHorizon(_ seq: UInt64, _ horizon: UInt64, _ source: String) -> RepositoryError {
        RepositoryError(
            .notFound, "seq \(seq) is before the retention horizon (seq \(horizon)) of \(source): nothing before it is kept",
            next: .changeRetention(source: source, from: horizon))
    }

    package func diff(source name: String, from: PointInTime, to: PointInTime) async throws -> CollectionDiff {
        let source = try await sources.source(named: name)
        let head = try await log.resolve(.now)
        let a = try await seq(of: from, source: name) ?? head, b = try await seq(of: to, source: name) ?? head
        let entities = a <= b ? try await storage { try await tables.diff(source: name, from: a, to: b) } : []
        let items = entities.map { ItemDiff(entity: $0, source: source) }.sorted { Item.idPrecedes($0.id, $1.id) }
        return CollectionDiff(source: name, fromSeq: a, toSeq: b, items: items)
    }

    package func imageData(_ image: ItemImage) async throws -> [UInt8]? {
        try await storage { try await tables.body(sha256: image.sha256) }
    }

    /// nil for now; the resolved seq otherwise. A date is read as observed: the seq that holds
    /// the source as its API was seen at that date (``ItemTables/seq(source:observedAt:)``),
    /// whatever order its snapshots reached the log in; a seq is a position in the log.
    private func seq(of point: PointInTime, source: String) async throws -> UInt64? {
        let seq: UInt64? =
            switch point {
            case .now: nil
            case .seq: try await log.resolve(point)
            case .date(let d): try await storage { try await tables.seq(source: source, observedAt: Timestamp(d)) }
            }
        if let seq, let horizon = try await storage({ try await tables.retentionHorizon(source: source) }), seq < horizon {
            throw Self.beforeHorizon(seq, horizon, source)
        }
        return seq
    }
}

extension JSONValue {
    /// The text a `--where PATH=VALUE` filter compares with: scalars as text, containers as JSON.
    var filterText: String { scalarText ?? canonicalString }
}

extension Item {
    /// Lowercased id, title, subtitle and every scalar of the list entry and the detail, nested
    /// ones included, for `--search`.
    var searchText: String {
        var parts = [id, title] + subtitle
        let add = { (v: JSONValue) in if let t = v.scalarText { parts.append(t) } }
        document.forEachScalar(add)
        detail?.forEachScalar(add)
        return parts.joined(separator: "\u{1F}").lowercased()
    }

    /// Whether `filter` holds: one of the values its path reaches (an array's elements included)
    /// reads as the filter's value, or the value at the path as a whole does (`tags=["a","b"]`).
    func matches(_ filter: FieldFilter) -> Bool {
        if values(atPath: filter.path).contains(where: { $0.filterText == filter.value }) { return true }
        return value(atPath: filter.path).map { $0.filterText == filter.value } ?? false
    }
}

extension [Item] {
    /// Sorted by the value at `order.path`: numbers by value, then strings, booleans and null by
    /// their text's UTF-8 bytes, equal values by id; items without a scalar there (absent, or an
    /// object or array) last, by id. Descending reverses the items with a value (ties included);
    /// the rest stay last. The order of the sorted index (``ItemTables/sortedPage``).
    func sorted(by order: ItemSort) -> [Item] {
        func key(_ v: JSONValue?) -> SortKey {
            switch v {
            case .number(let n)?: return .number(Double(n) ?? 0)
            case let scalar? where scalar.isScalar: return .text([UInt8](scalar.filterText.utf8))
            default: return .none
            }
        }
        func precedes(_ a: (Item, SortKey), _ b: (Item, SortKey)) -> Bool {
            switch (a.1, b.1) {
            case let (.number(x), .number(y)) where x != y: return x < y
            case let (.text(x), .text(y)) where x != y: return x.lexicographicallyPrecedes(y)
            case (.number, .text): return true
            case (.text, .number): return false
            default: return Item.idPrecedes(a.0.id, b.0.id)
            }
        }
        let keyed = map { ($0, key($0.value(atPath: order.path))) }
        var valued = keyed.filter { if case .none = $0.1 { false } else { true } }.sorted(by: precedes)
        if order.descending { valued.reverse() }
        let rest = keyed.filter { if case .none = $0.1 { true } else { false } }.sorted { Item.idPrecedes($0.0.id, $1.0.id) }
        return (valued + rest).map(\.0)
    }
}

/// A value's place in a sort: numbers, then text, then nothing.
private enum SortKey { case number(Double), text([UInt8]), none }

extension JSONValue {
    var isScalar: Bool {
        switch self {
        case .string, .bool, .null, .number: true
        default: false
        }
    }

    var numberValue: Double? { if case .number(let n) = self { Double(n) } else { nil } }
}
