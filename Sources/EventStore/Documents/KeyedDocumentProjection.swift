import Foundation
import LMDB

/// A reusable projection for "keyed documents with history": current state, version, first and
/// last seen seq, removed flag, and every version with field-level changes (RFC 6902 with old
/// values), keyed by (collection, key, seq) so as-of reads are one cursor seek.
///
/// Tables:
/// - `current`: `collection 0x00 naturalKey(key)` → state record: version, first/changed/last-seen
///   seq, removed flag and a 16-byte digest of the canonical document (not the document: it lives
///   once, in `history`, so a change writes it once and an unchanged put touches a few bytes).
///   Every key the collection ever had keeps its record (removed ones too, so as-of reads page
///   through it), in the order people read ids, numbers by value before text
///   (``naturalKey(_:)``): the first page of a collection is a cursor walk of one page, never a
///   scan
/// - `history`: `collection 0x00 key 0x00 seq(u64be)` → version record (the document at that
///   version; field-level changes are derived from the previous version when read)
/// - `indexes`: `collection` → the indexed paths (canonical JSON array)
/// - `index`: `collection 0x00 path 0x00 value 0x00 key` → empty, for present documents only
/// - `counts`: ``CountBlocks`` of `collection 0x00`: the number of present documents and the
///   number of keys ever seen after each event that changed either; the counts now or as of a
///   seq are one seek and a walk of a block (a page walk stops once it has met them all)
///
/// - `changed` (when ``keepsChangeOrder``): `collection 0x00 seq(u64be)` → the keys the event
///   wrote a version of (`u8 kind, varint n, n bytes` each), rows of consecutive events in
///   blocks (``changeBlockMark``): a span's changes walked in log order
///
/// Operations come from `extract` (by default the built-in ``DocumentEvents``); other events are
/// ignored.
public struct KeyedDocumentProjection: Projection {
    public typealias Extractor = @Sendable (RecordedEvent, ProjectionContext) throws -> [DocumentOperation]?

    public let name: String
    public let version: Int
    public var tables: [String] {
        ["current", "history", "history-packed", "index", "indexes", "counts", "index-history", "sorted"] + (keepsChangeOrder ? ["changed"] : [])
            + extraTables
    }
    /// `order` held the natural keys until `current` was keyed by them (items 29).
    public var retiredTables: [String] { ["order"] }
    /// A key's open `history` row grows by a version at a time, to 32 versions: as a value of
    /// its own past half a page it took overflow pages, half of the last one unused (0.11 MB of
    /// the `pages` history's 0.43 MB of `history`). Rows start with 0x00 (an offset), 0x01 (an
    /// open row stored solid), 0xFE or 0xFF (pointers), never with the chunks' mark. So do the
    /// blocks of `changed` (up to 8 KiB of rows, compressed: 51 of the `items` workload's 61
    /// took an overflow page), which start with a kind (0x80 or more), 0x01 or 0x02.
    public var chunkedTables: Set<String> { keepsChangeOrder ? ["history", "changed"] : ["history"] }
    /// Whether `changed` records, per event, the keys it wrote a version of
    /// (``DocumentReader/changedKeys(collection:after:upTo:_:)``).
    public let keepsChangeOrder: Bool
    /// Tables of the extractor's own (it reads and writes them through the context).
    public let extraTables: [String]
    public let eventTypes: Set<String>?
    public let documentTypes: Set<String>
    let extract: Extractor
    /// `extract` is ``DocumentEvents/operations(_:_:)``: a recorded event's one put is applied
    /// without building its list of operations (it runs for every ingested document).
    let builtIn: Bool

    /// The built-in ``DocumentEvents``.
    public init(name: String = "documents", version: Int = 21) {
        self.init(
            name: name, version: version, eventTypes: DocumentEvents.types, documentTypes: [DocumentEvents.recorded],
            extract: DocumentEvents.operations, builtIn: true)
    }

    /// Operations from `extract`. `eventTypes` must name every type `extract` returns operations
    /// for (nil, the default: every type); the store does not hand it other events.
    /// `documentTypes`: the types whose payload `extract` puts whole (`putJSON` of the payload),
    /// so their canonical form can be worked out ahead (an optimization only).
    /// `extraTables`: tables the extractor keeps state in besides the documents'.
    public init(
        name: String = "documents", version: Int = 8, eventTypes: Set<String>? = nil, documentTypes: Set<String> = [],
        extraTables: [String] = [], keepsChangeOrder: Bool = false, extract: @escaping Extractor
    ) {
        self.init(
            name: name, version: version, eventTypes: eventTypes, documentTypes: documentTypes, extract: extract, builtIn: false,
            extraTables: extraTables, keepsChangeOrder: keepsChangeOrder)
    }

    init(
        name: String, version: Int, eventTypes: Set<String>?, documentTypes: Set<String>, extract: @escaping Extractor, builtIn: Bool,
        extraTables: [String] = [], keepsChangeOrder: Bool = false
    ) {
        self.extraTables = extraTables
        self.keepsChangeOrder = keepsChangeOrder
        self.name = name
        self.version = version
        self.eventTypes = eventTypes
        self.documentTypes = documentTypes
        self.extract = extract
        self.builtIn = builtIn
    }

    public func apply(_ event: RecordedEvent, in context: ProjectionContext) throws {
        // The index counters move once per event and value (a snapshot of 200,000 items moves
        // each make's counter once, not 10,000 times); what a failed event left is dropped here.
        if !context.memo.indexCounts.isEmpty { context.memo.indexCounts.removeAll(keepingCapacity: true) }
        if !context.memo.changeOrder.isEmpty { context.memo.changeOrder.removeAll(keepingCapacity: true) }
        // Only the built-in extractor is known not to read the tables itself: other projections
        // write their rows through at once (``HeldRows``).
        context.memo.holdsRows = builtIn
        try applyOperations(event, context)
        try Self.flushIndexCounts(context)
        if keepsChangeOrder { try Self.flushChangeOrder(event.seq, context) }
    }

    /// Writes the rows the fold held back (``DocumentFold/held``) once the context's events are
    /// applied, before anything else reads the tables or the transaction commits.
    public func finish(_ context: ProjectionContext) throws {
        try Self.flushHeldRows(context)
    }

    func applyOperations(_ event: RecordedEvent, _ context: ProjectionContext) throws {
        if builtIn, event.type == DocumentEvents.recorded {
            let (collection, key) = try DocumentEvents.recordedKey(event)
            // The payload's canonical form worked out ahead: the body itself is not copied out,
            // nor compared with itself (the version is the whole payload).
            if let prepared = context.payloads.preparedPayload(of: event) {
                try Self.validate(collection, key)
                return try put(collection, key, canonical: prepared.canonical, digest: prepared.digest, nil, event, context, whole: true)
            }
            return try putJSON(collection, key, try DocumentEvents.recordedBody(event, context), event, context)
        }
        guard let ops = try extract(event, context) else { return }
        for op in ops {
            switch op {
            case let .put(collection, key, document):
                try Self.validate(collection, key)
                try put(collection, key, canonical: document.canonicalBytes, document, event, context)
            case let .putJSON(collection, key, json):
                try putJSON(collection, key, json, event, context)
            case let .putCanonical(collection, key, canonical, digest):
                try Self.validate(collection, key)
                try put(collection, key, canonical: canonical, digest: digest, nil, event, context, whole: try context.isPayload(canonical, of: event))
            case let .putSlice(collection, key, canonical, digest, range):
                try Self.validate(collection, key)
                try put(collection, key, canonical: canonical, digest: digest, nil, event, context, slice: try slice(range, of: event, context))
            case let .remove(collection, key):
                try Self.validate(collection, key)
                try remove(collection, key, event, context)
            case let .seen(collection, key):
                try Self.validate(collection, key)
                try markSeen(collection, key, event, context)
            case let .snapshot(collection, documents):
                try Self.validate(collection, "x")
                var seen = Set<String>()
                for (key, doc) in documents {
                    try Self.validate(collection, key)
                    guard seen.insert(key).inserted else { throw DocumentError("duplicate key '\(key.prefix(64))' in a snapshot of \(collection)") }
                    try put(collection, key, canonical: doc.canonicalBytes, doc, event, context)
                }
                // Everything else in the collection that is not already removed is now removed.
                try removeAll(in: collection, event, context) { key, _ in !seen.contains(key) }
            case let .sweep(collection, since):
                try Self.validate(collection, "x")
                try removeAll(in: collection, event, context) { _, record in record.lastSeenSeq < since }
            case let .index(collection, paths):
                try Self.validate(collection, "x")
                try defineIndex(collection, paths: paths, event.seq, context)
            }
        }
    }

    func putJSON(_ collection: String, _ key: String, _ json: [UInt8], _ event: RecordedEvent, _ context: ProjectionContext) throws {
        try Self.validate(collection, key)
        // A version of the event's whole payload keeps the payload's stored form.
        let whole = try context.isPayload(json, of: event)
        if let prepared = context.payloads.preparedDocument(of: event, json: json) {
            try put(collection, key, canonical: prepared.canonical, digest: prepared.digest, nil, event, context, whole: whole)
        } else {
            try put(collection, key, canonical: try JSONValue.canonicalize(json), nil, event, context, whole: whole)
        }
    }

    /// The slice of the event's body at `range` (in its form) a version may be kept as once it is
    /// not its key's last (``PayloadSlice``), when the body is large enough to be worth it.
    func slice(_ range: Range<Int>, of event: RecordedEvent, _ context: ProjectionContext) throws -> PayloadSlice? {
        guard let payload = event.payload, payload.size >= PayloadSlice.minimumBody, range.upperBound <= payload.size,
            let row = try context.payloads.bodyRow(of: event, in: context.transaction)
        else { return nil }
        return PayloadSlice(row: row, range: range)
    }

    /// Removes the present documents of `collection` for which `condition` holds.
    func removeAll(
        in collection: String, _ event: RecordedEvent, _ context: ProjectionContext,
        where condition: (String, CurrentRecord) -> Bool
    ) throws {
        let prefix = Array(collection.utf8) + [0]
        let c = try context.transaction.cursor(context.tables["current"])
        var gone: [String] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            let key = try Self.key(fromNatural: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]), context.tables, context.transaction)
            let record = try CurrentRecord(e.value)
            if !record.removed, condition(key, record) { gone.append(key) }
            entry = try c.next()
        }
        for key in gone { try remove(collection, key, event, context) }
    }

    static func validate(_ collection: String, _ key: String) throws {
        guard !collection.isEmpty, !key.isEmpty, !collection.utf8.contains(0), !key.utf8.contains(0),
            collection.utf8.count + key.utf8.count <= 480
        else {
            throw DocumentError("collection and key must be non-empty, NUL-free and at most 480 bytes together")
        }
    }

    /// Puts a document given by its canonical bytes (and its tree when the caller has it).
    /// `whole`: the document is the event's whole payload, so its version keeps the payload's
    /// stored form from the log instead of the canonical bytes.
    func put(
        _ collection: String, _ key: String, canonical: [UInt8], digest: [UInt8]? = nil, _ doc: JSONValue?,
        _ event: RecordedEvent, _ ctx: ProjectionContext, whole: Bool = false, slice: PayloadSlice? = nil
    ) throws {
        let txn = ctx.transaction
        let current = ctx.tables["current"]
        let digest = Digest16(digest ?? Self.digest(canonical))
        // One cursor reads the key's record and writes it back in place (`.current`), or puts a
        // new key next to where the seek left it: one search of `current` instead of two.
        let cursor = try ctx.memo.currentCursor ?? txn.cursor(current)
        ctx.memo.currentCursor = cursor
        // An encrypted store's keys hold the key's digest: worked out once for both.
        let keyDigest = ctx.tables.isEncrypted ? ctx.tables.text(key) : nil
        try Self.currentKey(collection, key, ctx.tables, digest: keyDigest).withUnsafeBytes { ck in
            try Self.withKeys(collection, key, event.seq, ctx.tables, digest: keyDigest) { _, hk in
                var record: CurrentRecord
                var kind: ChangeKind?
                var previousSeq: UInt64?
                let found = try cursor.seek(exactly: ck)
                if let existing = found {
                    record = try CurrentRecord(existing)
                    previousSeq = record.changedSeq
                    if record.removed {
                        kind = .reappeared
                    } else if record.digest != digest {
                        kind = .changed
                    }
                    record.lastSeenSeq = event.seq
                } else {
                    kind = .added
                    record = CurrentRecord(version: 0, firstSeq: event.seq, changedSeq: event.seq, lastSeenSeq: event.seq, removed: false, digest: digest)
                    // The id behind its digest, in an encrypted store (its keys hold digests).
                    if ctx.tables.isEncrypted { _ = try ctx.tables.text(key, remembering: txn) }
                }
                if kind == .added || kind == .reappeared { try adjustCount(collection, by: 1, added: kind == .added, event.seq, ctx) }
                // A key that comes back gets its history's rows back in `history`, where its
                // new row goes.
                if kind == .reappeared { try Self.restorePointer(&record, collection, key, digest: keyDigest, ctx) }
                if let kind {
                    let paths = try indexedPaths(collection, ctx)
                    if !paths.isEmpty {
                        let old =
                            kind == .changed ? try JSONValue(parsing: Self.document(collection, key, at: record.changedSeq, txn, ctx.tables, ctx.memo)) : nil
                        try updateIndex(collection, key, paths: paths, old: old, new: try doc ?? JSONValue(parsing: canonical), event.seq, ctx)
                    }
                    record.version += 1
                    record.changedSeq = event.seq
                    record.removed = false
                    record.digest = digest
                    // The stored form is copied as the log holds it (compressed, sealed): no second
                    // compression. The append and the fold usually have it at hand; else it is read.
                    // Else the version is a delta against its key's last keyframe, or a new keyframe.
                    var document = DocumentSource.inline(canonical)
                    if whole, let stored = try ctx.payloads.storedForm(of: event, in: txn) {
                        document = .encoded(stored)
                    } else {
                        // A removal closed the key's row (``remove(_:_:_:_:)``): a document that
                        // comes back starts a row of its own.
                        document = try Self.deltaOrKeyframe(
                            canonical, collection, key, previous: kind == .reappeared ? nil : previousSeq, txn, ctx.tables, ctx.memo)
                    }
                    try writeHistory(
                        hk, kind: kind, document: document, record: record, event: event, ctx: ctx,
                        rest: slice.map { $0.blob(seq: event.seq, size: canonical.count) })
                }
                // Only other tables were written since the seek: the cursor is still on the key's
                // entry, or where the new key goes.
                try record.withEncoded { try cursor.put(key: ck, value: $0, flags: found != nil ? .current : []) }
            }
        }
    }

    func markSeen(_ collection: String, _ key: String, _ event: RecordedEvent, _ ctx: ProjectionContext) throws {
        let cursor = try ctx.memo.currentCursor ?? ctx.transaction.cursor(ctx.tables["current"])
        ctx.memo.currentCursor = cursor
        try Self.currentKey(collection, key, ctx.tables).withUnsafeBytes { ck in
            guard let existing = try cursor.seek(exactly: ck) else { return }
            var record = try CurrentRecord(existing)
            guard !record.removed, record.lastSeenSeq != event.seq else { return }
            record.lastSeenSeq = event.seq
            try record.withEncoded { try cursor.put(key: ck, value: $0, flags: .current) }
        }
    }

    func remove(_ collection: String, _ key: String, _ event: RecordedEvent, _ ctx: ProjectionContext) throws {
        let keyDigest = ctx.tables.isEncrypted ? ctx.tables.text(key) : nil
        try Self.currentKey(collection, key, ctx.tables, digest: keyDigest).withUnsafeBytes { ck in
            try Self.withKeys(collection, key, event.seq, ctx.tables, digest: keyDigest) { _, hk in
                guard let existing = try ctx.transaction.get(ctx.tables["current"], key: ck) else { return }
                var record = try CurrentRecord(existing)
                guard !record.removed else { return }
                let last = try Self.storedDocument(collection, key, at: record.changedSeq, ctx.transaction, ctx.tables, ctx.memo)
                let paths = try indexedPaths(collection, ctx)
                if !paths.isEmpty {
                    let old = try JSONValue(parsing: last.text(collection, key, ctx.transaction, ctx.tables, ctx.memo))
                    try updateIndex(collection, key, paths: paths, old: old, new: nil, event.seq, ctx)
                }
                try adjustCount(collection, by: -1, event.seq, ctx)
                // The removal repeats the last document, stored as a delta against the row's
                // keyframe (a few bytes), and closes the row: a removed document's row is packed now
                // (solid) instead of staying open in `history` until the key comes back, which most
                // never do (a list of incidents or outages: every item goes in the end).
                let text = try last.text(collection, key, ctx.transaction, ctx.tables, ctx.memo)
                let previous = record.changedSeq
                record.version += 1
                record.removed = true
                record.changedSeq = event.seq
                record.lastSeenSeq = event.seq
                let document = try Self.deltaOrKeyframe(text, collection, key, previous: previous, ctx.transaction, ctx.tables, ctx.memo)
                // The removal repeats the last version's slice too, when it has one: the row
                // closes now and keeps both as slices.
                let slice = try Self.slice(ofVersion: collection, key, at: previous, ctx.transaction, ctx.tables, ctx.memo)
                try writeHistory(
                    hk, kind: .removed, document: document, record: record, event: event, ctx: ctx,
                    rest: slice.map { $0.blob(seq: event.seq, size: text.count) })
                record.packed = try Self.closeRow(hk, firstSeq: record.firstSeq, ctx)
                _ = try record.withEncoded { try ctx.transaction.put(ctx.tables["current"], key: ck, value: $0) }
            }
        }
    }
}
