package import StrataJSON
package import StrataDomain
package import StrataData
import EventStore
import Foundation
import Synchronization

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
        // `--where PATH=VALUE`, or an expression that is exactly `path = "text"`.
        let equality: FieldFilter? =
            query.expressions.isEmpty
            ? (query.filters.count == 1 ? query.filters.first : nil)
            : (query.filters.isEmpty && query.expressions.count == 1
                ? query.expressions[0].exactTextEquality.map { FieldFilter(path: $0.path, value: $0.value) } : nil)
        if !query.includeRemoved, (query.search ?? "").isEmpty, query.sort == nil,
            let f = equality,
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
        if !query.includeRemoved, query.filters.isEmpty, query.expressions.count == 1, (query.search ?? "").isEmpty, query.sort == nil, seq == nil,
            case .range(let path, let lower, let upper)? = query.expressions[0].exactRange
        {
            // Number bounds on one indexed field and nothing else: the sorted index's keys give the
            // total and the page; only the page's items (and those with no number there) are read.
            let e = query.expressions[0]
            if let (total, entities) = try await storage({
                try await tables.page(
                    source: source.name, path: path, lower: lower?.value, lowerInclusive: lower?.inclusive ?? true, upper: upper?.value,
                    upperInclusive: upper?.inclusive ?? true, after: query.after, offset: query.after == nil ? query.offset : 0, limit: query.limit ?? .max,
                    holds: { e.matches($0) })
            }) {
                return ItemPage(items: entities.map { Item(entity: $0, source: source) }, total: total, seq: seq, usedIndex: true)
            }
        }
        if !query.includeRemoved, query.isUnfiltered, seq == nil,
            let sort = query.sort,
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
        let (matched, usedIndex) = try await matching(query, source: source, seq: seq)
        var items = matched
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

    /// The items that meet the query's filters and expressions (search, sort and page aside):
    /// the first filter or expression constraint an index can answer narrows the read (an
    /// equality or `in` through the value index, now or as of a seq; a number range through the
    /// sorted index, now), and everything is checked on what it gives.
    func matching(_ query: ItemQuery, source: Source, seq: UInt64?) async throws -> (items: [Item], usedIndex: Bool) {
        var entities: [ItemEntity]?
        if !query.includeRemoved {
            for f in query.filters where entities == nil {
                entities = try await storage { try await tables.items(source: source.name, path: f.path, equals: f.value, asOf: seq) }
            }
            for c in query.expressions.flatMap(\.indexConstraints) where entities == nil {
                entities = try await candidates(c, source: source.name, seq: seq)
            }
        }
        let all: [ItemEntity]
        if let entities {
            all = entities
        } else {
            all = try await storage { try await tables.items(source: source.name, asOf: seq, includeRemoved: query.includeRemoved) }
        }
        let items = all.map { Item(entity: $0, source: source) }.filter { item in
            guard query.filters.allSatisfy({ item.matches($0) }) else { return false }
            if query.expressions.isEmpty { return true }
            let document = item.merged
            return query.expressions.allSatisfy { $0.matches(document) }
        }
        return (items, entities != nil)
    }

    /// What an index gives for one constraint; nil when none can answer it.
    private func candidates(_ c: ItemExpression.IndexConstraint, source: String, seq: UInt64?) async throws -> [ItemEntity]? {
        switch c {
        case .equals(let path, let values):
            var out: [ItemEntity] = []
            var seen = Set<String>()
            for v in values {
                guard let found = try await storage({ try await tables.items(source: source, path: path, equals: v.filterText, asOf: seq) }) else { return nil }
                for e in found where seen.insert(e.id).inserted { out.append(e) }
            }
            return out
        case .range(let path, let lower, let upper):
            // The sorted index holds the present only: a range as of a seq is a scan.
            guard seq == nil else { return nil }
            return try await storage { try await tables.items(source: source, path: path, between: lower?.value, and: upper?.value) }
        }
    }

    package func count(_ query: ItemQuery, by paths: [String]) async throws -> (counts: [ItemCount], usedIndex: Bool) {
        let source = try await sources.source(named: query.source)
        let seq = try await seq(of: query.at, source: source.name)
        if query.isUnfiltered, seq == nil, !query.includeRemoved, paths.count == 1,
            let facet = try await storage({ try await tables.facet(source: source.name, path: paths[0]) })
        {
            // A facet of an indexed field: the value index's counters, no item read.
            var counts = facet.values.map { ItemCount(values: [$0.value], count: $0.count) }
            if facet.none > 0 { counts.append(ItemCount(values: [nil], count: facet.none)) }
            return (Self.ordered(counts), true)
        }
        if paths.isEmpty, query.isUnfiltered, !query.includeRemoved {
            // How many there are, now or then: the counter, one seek, no item read.
            return ([ItemCount(values: [], count: try await storage { try await tables.count(source: source.name, asOf: seq) })], false)
        }
        var (items, usedIndex) = try await matching(query, source: source, seq: seq)
        if let text = query.search?.lowercased(), !text.isEmpty { items = items.filter { $0.searchText.contains(text) } }
        guard !paths.isEmpty else { return ([ItemCount(values: [], count: items.count)], usedIndex) }
        var counts: [[JSONValue?]: Int] = [:]
        for item in items {
            // Each combination of the values the paths reach (an array: each element).
            var combos: [[JSONValue?]] = [[]]
            for path in paths {
                let values = item.values(atPath: path)
                let choices: [JSONValue?] = values.isEmpty ? [nil] : Array(Set(values)).map { $0 }
                combos = combos.flatMap { c in choices.map { c + [$0] } }
            }
            for c in combos { counts[c, default: 0] += 1 }
        }
        return (Self.ordered(counts.map { ItemCount(values: $0.key, count: $0.value) }), usedIndex)
    }

    /// Most first; equal counts by their values' JSON text.
    static func ordered(_ counts: [ItemCount]) -> [ItemCount] {
        counts.sorted { a, b in
            if a.count != b.count { return a.count > b.count }
            return a.values.map { $0?.canonicalString ?? "" }.lexicographicallyPrecedes(b.values.map { $0?.canonicalString ?? "" })
        }
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
        try await history(source: source, id: id, upTo: point, detailing: nil).map(ItemVersion.init(entity:))
    }

    package func history(source: String, id: String, upTo point: PointInTime, page: HistoryPage) async throws -> ItemHistoryPage {
        let entities = try await history(source: source, id: id, upTo: point) { page.chosen(among: $0) }
        var marks: [ItemVersion.Mark] = []
        var versions: [Int: ItemVersion] = [:]
        for (i, e) in entities.enumerated() {
            let v = ItemVersion(entity: e)
            marks.append(ItemVersion.Mark(v))
            if e.isDetailed { versions[i] = v }
        }
        return ItemHistoryPage(marks: marks, versions: versions, page: page)
    }

    /// The versions up to `point` from the source's retention horizon on, those `detailing`
    /// picks (given the kept versions' seqs) in full (all when nil).
    private func history(
        source: String, id: String, upTo point: PointInTime, detailing: (@Sendable ([UInt64]) -> Set<UInt64>)?
    ) async throws -> [ItemVersionEntity] {
        // A date bounds the history by when versions were observed; a seq by where they are in the log.
        let (seq, observedBy): (UInt64, Timestamp?) =
            switch point {
            case .now: (.max, nil)
            case .seq(let n): (n, nil)
            case .date(let d): (.max, Timestamp(d))
            }
        // Before the retention horizon nothing is kept: versions folded from what was kept
        // there (a page a later 304 still names) would be a partial story.
        let horizon = try await storage { try await tables.retentionHorizon(source: source) } ?? 0
        if case .seq(let n) = point, n < horizon { throw Self.beforeHorizon(n, horizon, source) }
        let kept = detailing.map { pick in { @Sendable (seqs: [UInt64]) in pick(seqs.filter { $0 >= horizon }) } }
        return try await storage { try await tables.history(source: source, id: id, upTo: seq, observedBy: observedBy, detailing: kept) }
            .filter { $0.seq >= horizon }
    }

    package func changes(
        source name: String, after: UInt64, upTo: UInt64, kinds: Set<StrataDomain.ChangeKind>,
        matching: @escaping @Sendable (JSONValue?, JSONValue?) -> Bool
    ) -> AsyncThrowingStream<[ItemChange], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [ItemChange].self)
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.set() }
        Task {
            do {
                try await storage { try await walkChanges(source: name, after: after, upTo: upTo, kinds: kinds, matching: matching, stop: stop, continuation) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }

    /// ``changes(source:after:upTo:kinds:)``'s walk: the log's order from the items' change
    /// order, or, for a backfilled source, each item's history put in observed order.
    private func walkChanges(
        source name: String, after: UInt64, upTo: UInt64, kinds: Set<StrataDomain.ChangeKind>,
        matching: @escaping @Sendable (JSONValue?, JSONValue?) -> Bool, stop: StopFlag,
        _ continuation: AsyncThrowingStream<[ItemChange], any Error>.Continuation
    ) async throws {
        let source = try await sources.source(named: name)
        var after = after
        if let horizon = try await tables.retentionHorizon(source: name) {
            if upTo < horizon { throw Self.beforeHorizon(upTo, horizon, name) }
            after = max(after, horizon - 1)
        }
        let stored = Set(kinds.map(StoredChangeKind.init))
        let walked = try await tables.changes(source: name, after: after, upTo: upTo, kinds: stored, keeping: matching) { batch in
            guard !stop.isSet else { return false }
            continuation.yield(batch.map { ItemChange(entity: $0, source: source) })
            return !stop.isSet
        }
        guard !walked else { return }
        // Backfilled: every item's versions, in the order they were observed.
        var out: [ItemChange] = []
        for item in try await items(ItemQuery(source: name, at: .seq(upTo), includeRemoved: true)).items {
            guard !stop.isSet else { return }
            // The last document present, of the list entry and of the detail apart.
            var previous: [Bool: JSONValue] = [:]
            for v in try await history(source: name, id: item.id, upTo: .seq(upTo)) {
                let now: JSONValue? = v.kind == .removed ? nil : v.document
                defer { previous[v.origin == .detail] = now ?? previous[v.origin == .detail] }
                guard v.seq > after, kinds.contains(v.kind), v.restored == nil else { continue }
                // Added or back after a removal: absent just before.
                let before = v.kind == .added || v.kind == .reappeared ? nil : (v.kind == .removed ? v.document : previous[v.origin == .detail])
                guard matching(now, before) else { continue }
                out.append(
                    ItemChange(
                        item: item.id, title: source.title(of: now ?? before, id: item.id), seq: v.seq,
                        observedAt: v.recordedAt, kind: v.kind, changes: v.changes, after: now, before: before))
            }
        }
        out.sort { ($0.observedAt, $0.seq) != ($1.observedAt, $1.seq) ? ($0.observedAt, $0.seq) < ($1.observedAt, $1.seq) : Item.idPrecedes($0.item, $1.item) }
        var i = 0
        while i < out.count, !stop.isSet {
            continuation.yield(Array(out[i..<min(i + 512, out.count)]))
            i += 512
        }
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

/// Set once the reader of a stream stops: the walk feeding it stops too.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
