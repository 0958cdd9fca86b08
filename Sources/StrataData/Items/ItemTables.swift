public import EventStore
import LMDB

/// Reads the data layer's tables (`items`, `details`, `images`, `sources`) into entities, each
/// call in one read snapshot, now or as of a seq. Never blocks its caller: reads run on the
/// store's reader executor.
public struct ItemTables: Sendable {
    public let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// A source's items (with their stored images), ordered by id bytes.
    public func items(source: String, asOf seq: UInt64? = nil, includeRemoved: Bool = false) async throws -> [ItemEntity] {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: seq)
            return try rows.items.states(collection: source, asOf: seq, includeRemoved: includeRemoved).map(rows.row)
        }
    }

    /// One page of a source's items in natural id order (numbers by value, then text), now or as
    /// of a seq, after the id `after` or after `offset` items: reads the page, not the source.
    public func page(
        source: String, asOf seq: UInt64? = nil, after: String? = nil, offset: Int = 0, limit: Int,
        includeRemoved: Bool = false
    ) async throws -> [ItemEntity] {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: seq)
            return try rows.items.page(collection: source, asOf: seq, after: after, offset: offset, limit: limit, includeRemoved: includeRemoved).map(rows.row)
        }
    }

    /// How many items a source has now or as of a seq (one seek).
    public func count(source: String, asOf seq: UInt64? = nil) async throws -> Int {
        try await store.documents(projection: "items") { try $0.count(collection: source, asOf: seq) }
    }

    /// The items present now or as of a seq whose indexed `path` equals `value`; nil when the
    /// path is not indexed (or, as of a seq, the index was defined after it), so the caller must
    /// scan. As of a seq the index's history gives the keys that had the value then.
    public func items(source: String, path: String, equals value: String, asOf seq: UInt64? = nil) async throws -> [ItemEntity]? {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: seq)
            return try rows.keys(path: path, equals: value)?.compactMap(rows.present)
        }
    }

    /// A page of the items whose indexed `path` equals `value`, in natural id order (numbers by
    /// value, then text), and how many there are, in one snapshot. Now: the value's counter and
    /// the page's index entries and items are read (``DocumentReader/keyPage``). As of a seq: the
    /// index history's keys of the value are read (no document), and only the page's items are.
    /// Starts after `after` when given, else at `offset`. nil when the path is not indexed (or, as
    /// of a seq, the index was defined after it), so the caller must scan.
    public func page(
        source: String, path: String, equals value: String, asOf seq: UInt64? = nil, after: String? = nil, offset: Int = 0,
        limit: Int
    ) async throws -> (total: Int, items: [ItemEntity])? {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: seq)
            if seq == nil {
                guard let page = try rows.items.keyPage(collection: source, path: path, equals: value, after: after, offset: offset, limit: limit)
                else { return nil }
                return (page.total, try page.keys.compactMap { try rows.present($0) })
            }
            guard let keys = try rows.keys(path: path, equals: value) else { return nil }
            let page = KeyedDocumentProjection.naturalPage(of: keys, after: after, offset: offset, limit: limit)
            return (keys.count, try page.compactMap { try rows.present($0) })
        }
    }

    /// A page of the source's present items ordered by the indexed `path` (numbers by value,
    /// then text by its bytes, equal values by id; items without a value there last), now: the
    /// sorted index's entries are walked and only the page's items are read. nil when `path` is
    /// not indexed or `after` is not a present item, so the caller must scan.
    public func sortedPage(
        source: String, path: String, descending: Bool, after: String? = nil, offset: Int = 0,
        limit: Int
    ) async throws -> [ItemEntity]? {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: nil)
            guard
                let keys = try rows.items.sortedKeys(
                    collection: source, path: path, descending: descending, after: after,
                    offset: offset, limit: limit)
            else { return nil }
            return try keys.compactMap { try rows.present($0) }
        }
    }

    /// The present items whose number at the indexed `path` lies between `lower` and `upper`
    /// (inclusive; nil: unbounded), now, from the sorted index, with the items that have no number
    /// there to check (a path may reach one inside an array); nil when the path is not indexed or
    /// the store keeps no sorted index (encrypted), so the caller must scan.
    public func items(source: String, path: String, between lower: Double?, and upper: Double?) async throws -> [ItemEntity]? {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: nil)
            guard let keys = try rows.items.keysInRange(collection: source, path: path, lower: lower, upper: upper) else { return nil }
            return try (keys.inRange + keys.unsorted).compactMap(rows.present)
        }
    }

    /// How many present items hold each value at the indexed `path` (an array: each element), and
    /// how many hold none, now, from the value index's counters: only one item per value and the
    /// items with no scalar there are read. nil when the path is not indexed or the store is
    /// encrypted, so the caller must scan.
    public func facet(source: String, path: String) async throws -> (values: [(value: JSONValue, count: Int)], none: Int)? {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: nil)
            guard let counts = try rows.items.valueCounts(collection: source, path: path),
                let unsorted = try rows.items.unsortedKeys(collection: source, path: path)
            else { return nil }
            var values: [(value: JSONValue, count: Int)] = []
            for c in counts {
                // The value as the items hold it (the index keeps its text: 5 and "5" alike).
                let held = try rows.items.state(collection: source, key: c.example)?.document.values(atPath: path) ?? []
                let value = held.first { KeyedDocumentProjection.indexText($0) == c.text } ?? .string(c.text)
                values.append((value, c.count))
            }
            var none = 0
            for key in unsorted where try rows.items.state(collection: source, key: key)?.document.values(atPath: path).isEmpty ?? false { none += 1 }
            return (values, none)
        }
    }

    /// The present items whose number at the indexed `path` is within the bounds, and how many
    /// there are, a page in natural id order; nil when no sorted index serves the path. The
    /// items with no scalar there (a path may reach numbers inside an array) are read and kept
    /// when `holds` says so; the others are answered by the index's keys alone.
    public func page(
        source: String, path: String, lower: Double?, lowerInclusive: Bool, upper: Double?, upperInclusive: Bool, after: String? = nil, offset: Int = 0,
        limit: Int, holds: @escaping @Sendable (JSONValue) -> Bool
    ) async throws -> (total: Int, items: [ItemEntity])? {
        try await store.read { [store] txn in
            let rows = try Rows(txn, store, source: source, asOf: nil)
            guard
                let keys = try rows.items.keysInRange(
                    collection: source, path: path, lower: lower, upper: upper, lowerInclusive: lowerInclusive, upperInclusive: upperInclusive)
            else { return nil }
            var matching = keys.inRange
            for key in keys.unsorted where try rows.items.state(collection: source, key: key).map({ holds($0.document) }) ?? false { matching.append(key) }
            let page = KeyedDocumentProjection.naturalPage(of: matching, after: after, offset: offset, limit: limit)
            return (matching.count, try page.compactMap { try rows.present($0) })
        }
    }

    /// The paths indexed for a source's items.
    public func indexedPaths(source: String) async throws -> [String] {
        try await store.documents(projection: "items") { try $0.indexedPaths(collection: source) }
    }

    /// One item with its detail and image, now or as of a seq; nil if it never existed by then.
    /// With `observedBy` (a date read), the detail and image are the newest observed by then.
    public func item(source: String, id: String, asOf seq: UInt64? = nil, observedBy time: Timestamp? = nil) async throws -> ItemEntity? {
        try await store.read { [store] txn in
            let items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            let details = DocumentReader(transaction: txn, tables: try store.tables(of: "details"))
            let images = DocumentReader(transaction: txn, tables: try store.tables(of: "images"))
            guard let s = try items.state(collection: source, key: id, asOf: seq) else { return nil }
            func observed(_ reader: DocumentReader) throws -> JSONValue? {
                guard let time else { return try reader.state(collection: source, key: id, asOf: seq)?.document }
                return try reader.history(collection: source, key: id, upTo: seq ?? .max, derivingChanges: false)
                    .last { $0.recordedAt <= time && !$0.isRemoved }?.document
            }
            var e = ItemEntity(
                s, detail: try observed(details), image: try observed(images).flatMap { ImageEntity($0) },
                pending: try PendingReader(transaction: txn, tables: items.tables).mark(source: source, key: id, asOf: seq))
            if try ObservationTimeline.Reader(transaction: txn, tables: try store.tables(of: "timeline")).isBackfilled(stream: source) {
                e.version = try Self.observedVersion(items, source: source, key: id, upTo: seq)
            }
            return e
        }
    }

    /// The number of an item's current list version in observed order, as ``history(source:id:upTo:observedBy:)``
    /// numbers it: for a source whose log order is not its observed order (a backfill), where
    /// the projection's count (log order, restatements included) would differ.
    static func observedVersion(_ items: DocumentReader, source: String, key: String, upTo seq: UInt64?) throws -> Int {
        try StoredDocuments(
            StoredDocumentTexts(try items.storedHistory(collection: source, key: key, upTo: seq ?? .max), collection: source, key: key, reader: items)
        ).observed().count
    }

    /// The seq that holds a source as observed at `time` (``ObservationTimeline``): 0 when
    /// nothing of it had been observed by then.
    /// The first seq `source` keeps everything from, if its retention dropped anything.
    public func retentionHorizon(source: String) async throws -> UInt64? {
        try await SourceRetention(store: store).horizon(source: source)
    }

    public func seq(source: String, observedAt time: Timestamp) async throws -> UInt64 {
        try await store.timeline { try $0.seq(stream: source, observedAt: time) }
    }

    /// Every version of an item's list entry and detail, in the order they were observed
    /// (`recordedAt`, then seq), up to a seq or up to a time observed; each labelled with its
    /// origin, its event's type and run, and whether it was backfilled.
    ///
    /// Backfills are placed by their date, not where they reached the log, and the restatement of
    /// a newest observation after a backfill shows as no version: kinds and field changes are
    /// worked out again in observed order, per origin, and versions numbered per origin.
    ///
    /// With `detailing`, only the versions whose seqs it picks (given every version's) have
    /// their document and changes; the others are placed, numbered and labelled but not read
    /// (``ItemVersionEntity/isDetailed`` false). Parsing and comparing documents is most of
    /// what a long history costs, and a page shows a few of its versions.
    public func history(
        source: String, id: String, upTo seq: UInt64 = .max, observedBy time: Timestamp? = nil,
        detailing: (@Sendable ([UInt64]) -> Set<UInt64>)? = nil
    ) async throws -> [ItemVersionEntity] {
        // Placed, numbered and read in one transaction: a version's document is decoded only
        // when it is shown or compared.
        var out: [ItemVersionEntity] = try await store.read { [store] txn in
            let items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            let details = DocumentReader(transaction: txn, tables: try store.tables(of: "details"))
            let restores = try txn.stat(items.tables["restored"]).entries > 0
            var out: [ItemVersionEntity] = []
            // Per version in `out`: its origin's documents, the one it shows, and the one its
            // changes are from (nil: none).
            var reads: [(documents: StoredDocuments, shows: Int, from: Int?)] = []
            for (origin, reader) in [(ItemVersionEntity.Origin.list, items), (.detail, details)] {
                let documents = StoredDocuments(
                    StoredDocumentTexts(try reader.storedHistory(collection: source, key: id, upTo: seq), collection: source, key: id, reader: reader))
                // The last document seen present, in observed order: what a removal removed.
                var lastPresent: Int?
                for (n, (i, kind, previous)) in try documents.observed(by: time).enumerated() {
                    let v = documents.versions[i]
                    var entity = ItemVersionEntity(
                        version: n + 1, seq: v.seq, recordedAt: v.recordedAt, kind: kind, changes: [], document: .null, origin: origin)
                    entity.isDetailed = false
                    if restores, origin == .list, kind == .changed { entity.restored = try RedactionRestore.reason(source: source, id: id, seq: v.seq, items) }
                    let from: Int? =
                        switch kind {
                        case .reappeared: lastPresent ?? previous!
                        case .changed: previous!
                        default: nil
                        }
                    out.append(entity)
                    reads.append((documents, kind == .removed ? (lastPresent ?? previous!) : i, from))
                    if kind != .removed { lastPresent = i }
                }
            }
            let chosen = detailing?(out.map(\.seq))
            for k in out.indices where chosen?.contains(out[k].seq) ?? true {
                let r = reads[k]
                out[k].document = try r.documents.document(r.shows)
                if let from = r.from { out[k].changes = try r.documents.document(from).diff(to: out[k].document) }
                out[k].isDetailed = true
            }
            return out
        }
        // The versions' events, in one snapshot (not one read each): their runs, types and
        // whether they were written here or backfilled.
        let events: [UInt64: RecordedEvent] = try await store.snapshot { [seqs = Set(out.map(\.seq))] snap in
            var found: [UInt64: RecordedEvent] = [:]
            for seq in seqs { found[seq] = try snap.event(seq: seq) }
            return found
        }
        var writeOf: [Int: UInt64] = [:]  // index in `out` → the seq of the local write it shows
        for i in out.indices {
            guard let event = events[out[i].seq] else { continue }
            out[i].run = event[metadata: "run"]
            out[i].eventType = event.type
            out[i].backfilled = event[metadata: "backfill"] == "true"
            if WriteEvents.writes.contains(event.type) || WriteEvents.outcomes.contains(event.type) {
                out[i].origin = .local
                out[i].user = event[metadata: "user"]
                writeOf[i] = WriteEvents.writes.contains(event.type) ? event.seq : event[metadata: "write"].flatMap(UInt64.init)
            }
        }
        // The writes behind local versions, as the outbox has them now: one read.
        if !writeOf.isEmpty {
            let writes = try await OutboxTables(store: store).writes(seqs: Array(Set(writeOf.values)))
            for (i, seq) in writeOf {
                out[i].write = writes[seq]
                if out[i].user == nil { out[i].user = writes[seq]?.user }
            }
        }
        return out.sorted { ($0.recordedAt, $0.seq) < ($1.recordedAt, $1.seq) }
    }

    /// Items added, removed, changed or back between two seqs.
    /// Items whose detail changed between the points count as changed, with the detail's field
    /// changes under paths `detail:/…` (a detail downloaded for the first time is no change).
    public func diff(source: String, from: UInt64, to: UInt64) async throws -> [ItemDiffEntity] {
        try await store.read { [store] txn in
            let items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            let details = DocumentReader(transaction: txn, tables: try store.tables(of: "details"))
            var out = try items.diff(collection: source, from: from, to: to).map {
                ItemDiffEntity(id: $0.key, kind: $0.kind, before: $0.before, after: $0.after, changes: $0.changes)
            }
            // Values stored again redacted anew are no change of the API's data.
            var restoredIDs = Set<String>()
            for i in out.indices where out[i].kind == .changed {
                guard try RedactionRestore.any(source: source, id: out[i].id, after: from, upTo: to, items) else { continue }
                restoredIDs.insert(out[i].id)
                out[i].changes.removeAll(where: RedactionRestore.isRestore)
            }
            out.removeAll { $0.kind == .changed && $0.changes.isEmpty }
            var index = Dictionary(uniqueKeysWithValues: out.enumerated().map { ($1.id, $0) })
            for d in try details.diff(collection: source, from: from, to: to) where d.kind == .changed || d.kind == .reappeared {
                let kept = restoredIDs.contains(d.key) ? d.changes.filter { !RedactionRestore.isRestore($0) } : d.changes
                if kept.isEmpty && !d.changes.isEmpty { continue }
                let changes = kept.map { c in
                    var c = c; c.path = "detail:" + c.path; return c
                }
                if let i = index[d.key] {
                    out[i].changes += changes
                } else if let item = try items.state(collection: source, key: d.key, asOf: to), !item.removed {
                    index[d.key] = out.count
                    out.append(ItemDiffEntity(id: d.key, kind: .changed, before: item.document, after: item.document, changes: changes))
                }
            }
            return out
        }
    }

    /// The bytes of a stored body (an image) by SHA-256.
    public func body(sha256: String) async throws -> [UInt8]? {
        try await store.body(sha256: sha256)
    }

    /// Every defined source with its latest runs.
    public func sources() async throws -> [SourceEntity] {
        var out: [SourceEntity] = []
        for definition in try await SourceCatalog(store: store).all() { out.append(try await entity(definition)) }
        return out
    }

    /// One source with its latest runs, or nil.
    public func source(named name: String) async throws -> SourceEntity? {
        guard let definition = try await SourceCatalog(store: store).get(name) else { return nil }
        return try await entity(definition)
    }

    private func entity(_ definition: SourceDefinition) async throws -> SourceEntity {
        // The newest completed pass: a FetchCompleted, or a ListNotModified (all pages 304).
        let completed = try await store.newestEvent(inStream: definition.name, ofTypes: [DataEvents.listNotModified, DataEvents.fetchCompleted])
        // The newest list failure that ended its run (no retry left) — a detail or image failure
        // belongs to a run whose list completed. Only failures after the last completed pass
        // count, so they are read through the (short) type index from there, never by walking
        // the source's whole stream.
        let failures = Array(
            try await store.events(EventQuery(type: DataEvents.fetchFailed, fromSeq: (completed?.seq ?? 0) + 1, descending: true))
                .lazy.filter { $0.stream == definition.name }.prefix(64))
        let listFailure = failures.first { ($0[metadata: "stage"] == "list" || $0[metadata: "stage"] == "import") && $0[metadata: "willRetry"] != "true" }
        let success = completed.map { e in
            FetchRunEntity(
                run: e[metadata: "run"] ?? "", seq: e.seq, recordedAt: e.recordedAt, completed: true,
                complete: e.type == DataEvents.listNotModified || e[metadata: "complete"] == "true", pages: Int(e[metadata: "pages"] ?? "") ?? 0,
                failures: failures.count { $0[metadata: "run"] == e[metadata: "run"] && $0[metadata: "willRetry"] != "true" },
                maxAge: e[metadata: "maxAge"].flatMap { Int($0) })
        }
        var last = success
        if let f = listFailure, f.seq > (completed?.seq ?? 0) {
            // What a person needs: the status when there was one, else the failure's message.
            let error =
                f[metadata: "status"].map { "HTTP \($0)" + (f[metadata: "status"] == "401" || f[metadata: "status"] == "403" ? " (credentials refused)" : "") }
                ?? f[metadata: "message"] ?? f[metadata: "error"] ?? "the fetch failed"
            last = FetchRunEntity(run: f[metadata: "run"] ?? "", seq: f.seq, recordedAt: f.recordedAt, completed: false, error: error)
        }
        return SourceEntity(definition: definition, lastRun: last, lastSuccess: success)
    }
}

extension ItemTables {
    /// List rows read in one snapshot: an item's state with its stored image and pending mark (no
    /// detail), now or as of a seq.
    private struct Rows {
        let items: DocumentReader
        let images: DocumentReader
        let marks: PendingReader
        let source: String
        let seq: UInt64?
        /// Whether versions must be counted in observed order (``observedVersion``).
        let backfilled: Bool

        init(_ txn: Transaction, _ store: EventStore, source: String, asOf seq: UInt64?) throws {
            items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            images = DocumentReader(transaction: txn, tables: try store.tables(of: "images"))
            marks = PendingReader(transaction: txn, tables: items.tables)
            self.source = source
            self.seq = seq
            backfilled = try ObservationTimeline.Reader(transaction: txn, tables: try store.tables(of: "timeline")).isBackfilled(stream: source)
        }

        func row(_ s: DocumentState) throws -> ItemEntity {
            var e = ItemEntity(
                s, detail: nil, image: try images.state(collection: source, key: s.key, asOf: seq).flatMap { ImageEntity($0.document) },
                pending: try marks.mark(source: source, key: s.key, asOf: seq))
            if backfilled { e.version = try ItemTables.observedVersion(items, source: source, key: s.key, upTo: seq) }
            return e
        }

        /// The row of `key` when the item is present.
        func present(_ key: String) throws -> ItemEntity? {
            guard let s = try items.state(collection: source, key: key, asOf: seq), !s.removed else { return nil }
            return try row(s)
        }

        /// The keys whose indexed `path` equals `value`: the index now, its history as of a seq;
        /// nil when the caller must scan.
        func keys(path: String, equals value: String) throws -> [String]? {
            if let seq { return try items.keys(collection: source, path: path, equals: value, asOf: seq) }
            return try items.keys(collection: source, path: path, equals: value)
        }
    }
}

/// How versions are told apart in observed order: one rule for ``ItemTables/history(source:id:upTo:observedBy:)``
/// and for the version an item shows, so both number alike.
enum ListVersionCount {
    /// The kind of a version (`removed` or not) after the one before it in observed order
    /// (`afterRemoved`: whether that one was a removal; nil when there is none), or nil when it
    /// is none: the same document again (`same`, asked only then), a removal of something absent.
    static func kind(removed: Bool, afterRemoved previous: Bool?, same: () throws -> Bool) rethrows -> ChangeKind? {
        switch (previous, removed) {
        case (nil, true): nil
        case (nil, false): .added
        case (let p?, true): p ? nil : .removed
        case (let p?, false): p ? .reappeared : (try same() ? nil : .changed)
        }
    }
}

/// A history's stored versions, each document decoded and parsed the first time it is asked
/// for. Valid only inside the transaction it reads in.
final class StoredDocuments {
    let texts: StoredDocumentTexts
    private var parsed: [Int: JSONValue] = [:]
    /// In log order the projection stored no version that left its document as it was, so two
    /// neighbours never hold the same one: none is read to find out.
    private let inLogOrder: Bool

    var versions: [StoredDocumentVersion] { texts.versions }

    init(_ texts: StoredDocumentTexts) {
        self.texts = texts
        inLogOrder = zip(texts.versions, texts.versions.dropFirst()).allSatisfy { $0.recordedAt <= $1.recordedAt }
    }

    /// The versions that count, in observed order (`recordedAt`, then seq), those observed by
    /// `time` when given: each with its kind and the one before it that counted (nil for the
    /// first). The restatement of a document, a removal of one absent, counts as none.
    func observed(by time: Timestamp? = nil) throws -> [(index: Int, kind: ChangeKind, previous: Int?)] {
        let stored = versions
        var out: [(index: Int, kind: ChangeKind, previous: Int?)] = []
        var previous: Int?
        for i in stored.indices.filter({ time == nil || stored[$0].recordedAt <= time! })
            .sorted(by: { (stored[$0].recordedAt, stored[$0].seq) < (stored[$1].recordedAt, stored[$1].seq) })
        {
            let kind = try ListVersionCount.kind(removed: stored[i].isRemoved, afterRemoved: previous.map { stored[$0].isRemoved }) {
                try same(previous!, i)
            }
            guard let kind else { continue }
            out.append((i, kind, previous))
            previous = i
        }
        return out
    }

    func document(_ i: Int) throws -> JSONValue {
        if let d = parsed[i] { return d }
        let d = try JSONValue(parsing: texts.text(i))
        parsed[i] = d
        return d
    }

    /// Whether versions `i` and `j` (`j` next after `i` in observed order) hold the same document:
    /// the same text is; another text may be (a payload kept in its own key order), so both are
    /// parsed then.
    func same(_ i: Int, _ j: Int) throws -> Bool {
        if inLogOrder, j == i + 1 { return false }
        if try texts.text(i) == texts.text(j) { return true }
        return try document(i) == document(j)
    }
}
