import Foundation
import LMDB

/// What an event says about keyed documents.
public enum DocumentOperation: Sendable, Hashable {
    /// The document under `key` is now `document`.
    case put(collection: String, key: String, document: JSONValue)
    /// The document under `key` is now the JSON text `json`: canonicalized straight from the text
    /// (the tree is only built when the collection has indexes). Malformed text throws.
    case putJSON(collection: String, key: String, json: [UInt8])
    /// The document under `key` is gone.
    case remove(collection: String, key: String)
    /// The complete set of documents in `collection`: absent keys are removed.
    case snapshot(collection: String, documents: [(key: String, document: JSONValue)])
    /// Removes every present document of `collection` not seen (put) at or after seq `since`:
    /// the end of a complete pass over a paged collection.
    case sweep(collection: String, since: UInt64)
    /// Keeps an exact-match index on these dotted paths of `collection`'s present documents
    /// (replacing any earlier set; an empty list drops the index).
    case index(collection: String, paths: [String])

    public static func == (a: DocumentOperation, b: DocumentOperation) -> Bool {
        switch (a, b) {
        case let (.put(c1, k1, d1), .put(c2, k2, d2)): return c1 == c2 && k1 == k2 && d1 == d2
        case let (.putJSON(c1, k1, j1), .putJSON(c2, k2, j2)): return c1 == c2 && k1 == k2 && j1 == j2
        case let (.remove(c1, k1), .remove(c2, k2)): return c1 == c2 && k1 == k2
        case let (.snapshot(c1, d1), .snapshot(c2, d2)):
            return c1 == c2 && d1.count == d2.count && zip(d1, d2).allSatisfy { $0.key == $1.key && $0.document == $1.document }
        case let (.sweep(c1, s1), .sweep(c2, s2)): return c1 == c2 && s1 == s2
        case let (.index(c1, p1), .index(c2, p2)): return c1 == c2 && p1 == p2
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case let .put(c, k, _): h.combine(0); h.combine(c); h.combine(k)
        case let .remove(c, k): h.combine(1); h.combine(c); h.combine(k)
        case let .snapshot(c, d): h.combine(2); h.combine(c); h.combine(d.count)
        case let .sweep(c, s): h.combine(3); h.combine(c); h.combine(s)
        case let .index(c, p): h.combine(4); h.combine(c); h.combine(p)
        case let .putJSON(c, k, _): h.combine(5); h.combine(c); h.combine(k)
        }
    }
}

/// The built-in, domain-agnostic document events that ``KeyedDocumentProjection`` understands
/// out of the box. Metadata `collection` names the collection; `key` the document.
public enum DocumentEvents {
    /// Payload: the document (JSON). Metadata: `collection`, `key`.
    public static let recorded = "DocumentRecorded"
    /// No payload. Metadata: `collection`, `key`.
    public static let removed = "DocumentRemoved"
    /// Payload: a JSON object mapping every key of the collection to its document.
    /// Metadata: `collection`.
    public static let snapshotRecorded = "SnapshotRecorded"

    /// The types ``operations(_:_:)`` reads.
    public static let types: Set<String> = [recorded, removed, snapshotRecorded]

    /// The collection and key of a ``recorded`` event.
    static func recordedKey(_ event: RecordedEvent) throws -> (collection: String, key: String) {
        guard let collection = event[metadata: "collection"] else { throw DocumentError("metadata 'collection' is missing") }
        guard let key = event[metadata: "key"] else { throw DocumentError("metadata 'key' is missing") }
        return (collection, key)
    }

    /// The body of a ``recorded`` event (its document).
    static func recordedBody(_ event: RecordedEvent, _ context: ProjectionContext) throws -> [UInt8] {
        guard let body = try context.payload(of: event) else { throw DocumentError("the event has no payload") }
        return body
    }

    /// Reads the operations of a built-in document event; nil for other events.
    public static func operations(_ event: RecordedEvent, _ context: ProjectionContext) throws -> [DocumentOperation]? {
        switch event.type {
        case recorded, removed, snapshotRecorded: break
        default: return nil
        }
        if event.type == recorded {
            let (collection, key) = try recordedKey(event)
            return [.putJSON(collection: collection, key: key, json: try recordedBody(event, context))]
        }
        guard let collection = event[metadata: "collection"] else { throw DocumentError("metadata 'collection' is missing") }
        switch event.type {
        case removed:
            guard let key = event[metadata: "key"] else { throw DocumentError("metadata 'key' is missing") }
            return [.remove(collection: collection, key: key)]
        default:
            guard let body = try context.payload(of: event) else { throw DocumentError("the event has no payload") }
            guard case .object(let map) = try JSONValue(parsing: body) else {
                throw DocumentError("a snapshot payload must be a JSON object of key → document")
            }
            return [.snapshot(collection: collection, documents: JSONValue.sortedMembers(map).map { ($0.key, $0.value) })]
        }
    }
}

/// A failure to interpret an event as document operations (the event gets quarantined).
public struct DocumentError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// How a version came to be.
public enum ChangeKind: String, Sendable, Codable, CaseIterable {
    case added, changed, removed, reappeared

    /// The kind's byte in a `history` record (above any length of a name, which earlier records
    /// held instead).
    var code: UInt8 {
        switch self {
        case .added: 0x80
        case .changed: 0x81
        case .removed: 0x82
        case .reappeared: 0x83
        }
    }

    init?(code: UInt8) {
        switch code {
        case 0x80: self = .added
        case 0x81: self = .changed
        case 0x82: self = .removed
        case 0x83: self = .reappeared
        default: return nil
        }
    }
}

/// One version of a document, as stored in the history table.
public struct DocumentVersion: Sendable, Hashable {
    public var collection: String
    public var key: String
    /// 1 for the first version, +1 for every change, removal or reappearance.
    public var version: Int
    /// The event that produced this version.
    public var seq: UInt64
    public var recordedAt: Timestamp
    public var kind: ChangeKind
    /// The document at this version; for a removal, the last document before it.
    public var document: JSONValue
    /// Field-level changes from the previous version (empty for `added` and `removed`).
    public var changes: [PatchOperation]

    public var isRemoved: Bool { kind == .removed }
}

/// The state of a document at some point: its latest version there plus when it was first seen.
public struct DocumentState: Sendable, Hashable {
    public var collection: String
    public var key: String
    public var version: Int
    public var firstSeq: UInt64
    /// The seq of the version in force.
    public var changedSeq: UInt64
    /// The last event that saw the document (current state only; nil for as-of reads).
    public var lastSeenSeq: UInt64?
    public var removed: Bool
    public var document: JSONValue
}

/// A reusable projection for "keyed documents with history": current state, version, first and
/// last seen seq, removed flag, and every version with field-level changes (RFC 6902 with old
/// values), keyed by (collection, key, seq) so as-of reads are one cursor seek.
///
/// Tables:
/// - `current`: `collection 0x00 key` → state record: version, first/changed/last-seen seq,
///   removed flag and a 16-byte digest of the canonical document (not the document: it lives
///   once, in `history`, so a change writes it once and an unchanged put touches a few bytes)
/// - `history`: `collection 0x00 key 0x00 seq(u64be)` → version record (the document at that
///   version; field-level changes are derived from the previous version when read)
/// - `indexes`: `collection` → the indexed paths (canonical JSON array)
/// - `index`: `collection 0x00 path 0x00 value 0x00 key` → empty, for present documents only
/// - `order`: `collection 0x00 naturalKey(key)` → empty, for every key the collection ever had
///   (removed ones too, so as-of reads page through it): keys in the order people read ids,
///   numbers by value before text (``naturalKey(_:)``), so the first page of a collection is a
///   cursor walk of one page, never a scan
/// - `counts`: `collection 0x00 seq(u64be)` → varint number of present documents and varint
///   number of keys ever seen after that event, written by every event that changed either; the
///   counts now or as of a seq are one seek (a page walk stops once it has met them all)
///
/// Operations come from `extract` (by default the built-in ``DocumentEvents``); other events are
/// ignored.
public struct KeyedDocumentProjection: Projection {
    public typealias Extractor = @Sendable (RecordedEvent, ProjectionContext) throws -> [DocumentOperation]?

    public let name: String
    public let version: Int
    public var tables: [String] { ["current", "history", "history-packed", "index", "indexes", "order", "counts", "index-history", "sorted"] + extraTables }
    /// Tables of the extractor's own (it reads and writes them through the context).
    public let extraTables: [String]
    public let eventTypes: Set<String>?
    public let documentTypes: Set<String>
    private let extract: Extractor
    /// `extract` is ``DocumentEvents/operations(_:_:)``: a recorded event's one put is applied
    /// without building its list of operations (it runs for every ingested document).
    private let builtIn: Bool

    /// The built-in ``DocumentEvents``.
    public init(name: String = "documents", version: Int = 11) {
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
        extraTables: [String] = [], extract: @escaping Extractor
    ) {
        self.init(
            name: name, version: version, eventTypes: eventTypes, documentTypes: documentTypes, extract: extract, builtIn: false,
            extraTables: extraTables)
    }

    private init(
        name: String, version: Int, eventTypes: Set<String>?, documentTypes: Set<String>, extract: @escaping Extractor, builtIn: Bool,
        extraTables: [String] = []
    ) {
        self.extraTables = extraTables
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
        // Only the built-in extractor is known not to read the tables itself: other projections
        // write their rows through at once (``HeldRows``).
        context.memo.holdsRows = builtIn
        try applyOperations(event, context)
        try Self.flushIndexCounts(context)
    }

    private func applyOperations(_ event: RecordedEvent, _ context: ProjectionContext) throws {
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
            case let .remove(collection, key):
                try Self.validate(collection, key)
                try remove(collection, key, event, context)
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

    private func putJSON(_ collection: String, _ key: String, _ json: [UInt8], _ event: RecordedEvent, _ context: ProjectionContext) throws {
        try Self.validate(collection, key)
        // A version of the event's whole payload keeps the payload's stored form.
        let whole = try context.isPayload(json, of: event)
        if let prepared = context.payloads.preparedDocument(of: event, json: json) {
            try put(collection, key, canonical: prepared.canonical, digest: prepared.digest, nil, event, context, whole: whole)
        } else {
            try put(collection, key, canonical: try JSONValue.canonicalize(json), nil, event, context, whole: whole)
        }
    }

    /// Removes the present documents of `collection` for which `condition` holds.
    private func removeAll(
        in collection: String, _ event: RecordedEvent, _ context: ProjectionContext,
        where condition: (String, CurrentRecord) -> Bool
    ) throws {
        let prefix = Array(collection.utf8) + [0]
        let c = try context.transaction.cursor(context.tables["current"])
        var gone: [String] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            let key = try context.tables.reveal(UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]), in: context.transaction)
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
    private func put(
        _ collection: String, _ key: String, canonical: [UInt8], digest: [UInt8]? = nil, _ doc: JSONValue?,
        _ event: RecordedEvent, _ ctx: ProjectionContext, whole: Bool = false
    ) throws {
        let txn = ctx.transaction
        let current = ctx.tables["current"]
        let digest = Digest16(digest ?? Self.digest(canonical))
        // One cursor reads the key's record and writes it back in place (`.current`), or puts a
        // new key next to where the seek left it: one search of `current` instead of two.
        let cursor = try ctx.memo.currentCursor ?? txn.cursor(current)
        ctx.memo.currentCursor = cursor
        try Self.withKeys(collection, key, event.seq, ctx.tables) { ck, hk in
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
                _ = try Self.withNaturalKey(collection, key, ctx.tables, remembering: txn) { try txn.put(ctx.tables["order"], key: $0, value: []) }
            }
            if kind == .added || kind == .reappeared { try adjustCount(collection, by: 1, added: kind == .added, event.seq, ctx) }
            if let kind {
                let paths = try indexedPaths(collection, ctx)
                if !paths.isEmpty {
                    let old = kind == .changed ? try JSONValue(parsing: Self.document(collection, key, at: record.changedSeq, txn, ctx.tables, ctx.memo)) : nil
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
                    document = try Self.deltaOrKeyframe(canonical, collection, key, previous: previousSeq, txn, ctx.tables, ctx.memo)
                }
                try writeHistory(hk, kind: kind, document: document, record: record, event: event, ctx: ctx)
            }
            // Only other tables were written since the seek: the cursor is still on the key's
            // entry, or where the new key goes.
            try record.withEncoded { try cursor.put(key: ck, value: $0, flags: found != nil ? .current : []) }
        }
    }

    private func remove(_ collection: String, _ key: String, _ event: RecordedEvent, _ ctx: ProjectionContext) throws {
        try Self.withKeys(collection, key, event.seq, ctx.tables) { ck, hk in
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
            record.version += 1
            record.removed = true
            record.changedSeq = event.seq
            record.lastSeenSeq = event.seq
            try writeHistory(hk, kind: .removed, document: last, record: record, event: event, ctx: ctx)
            _ = try record.withEncoded { try ctx.transaction.put(ctx.tables["current"], key: ck, value: $0) }
        }
    }

    /// Writes a version. Its field-level changes are not stored: they follow from the previous
    /// version's document, and ``DocumentReader/history(collection:key:upTo:)`` computes them,
    /// which keeps a diff (and a parse of the old document) off the ingest path.
    ///
    /// A delta joins its keyframe's row of `history` (``HistoryRow``): the row grows by one entry
    /// instead of the table by one key. Any other version starts a row of its own.
    private func writeHistory(
        _ hk: UnsafeRawBufferPointer, kind: ChangeKind, document: DocumentSource,
        record: CurrentRecord, event: RecordedEvent, ctx: ProjectionContext
    ) throws {
        // The header (at most 10 + 8 + 11 + 1 + 10 bytes) is built on the stack; the document is
        // copied once, straight into the page.
        let inline: [UInt8]
        var group = event.seq
        switch document {
        case .inline(let bytes), .encoded(let bytes): inline = bytes
        case .delta(let keyframe, _, _, _): inline = document.deltaTail; group = keyframe
        }
        let history = ctx.tables["history"]
        let txn = ctx.transaction
        try withUnsafeTemporaryAllocation(byteCount: 48 + 20, alignment: 1) { header in
            var n = 0
            func emit(_ b: UInt8) { header[n] = b; n += 1 }
            ByteWriter.varint(UInt64(record.version), emit)
            withUnsafeBytes(of: UInt64(bitPattern: event.recordedAt.microseconds).bigEndian) { for b in $0 { emit(b) } }
            emit(kind.code)
            switch document {
            case .inline: ByteWriter.varint(UInt64(inline.count), emit)
            case .encoded: emit(0); ByteWriter.varint(UInt64(inline.count), emit)
            case .delta: emit(0); emit(0)
            }
            // After the document: the changes, computed on read (stores written before kept them
            // here; still read), so an empty blob.
            let recordCount = n + inline.count + 1
            // The entry's own head: its seq after the row's, and the record's length.
            let recordStart = n
            ByteWriter.varint(event.seq - group, emit)
            ByteWriter.varint(UInt64(recordCount), emit)
            let entryHead = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(header)[recordStart..<n])
            let recordHead = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(header)[..<recordStart])
            func fill(_ out: UnsafeMutableRawBufferPointer) {
                out.copyMemory(from: entryHead)
                UnsafeMutableRawBufferPointer(rebasing: out[entryHead.count...]).copyMemory(from: recordHead)
                inline.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[(entryHead.count + recordHead.count)...]).copyMemory(from: $0) }
                out[out.count - 1] = 0
            }
            let entryCount = entryHead.count + recordCount
            guard group != event.seq else {
                if ctx.memo.holdsRows { return try Self.holdNewRow(hk, seq: event.seq, count: entryCount, fill: fill, ctx) }
                let c = try Self.packPreviousRow(before: hk, ctx)
                try c.put(key: hk, count: entryCount, fill: fill)
                return
            }
            let held = ctx.memo.held
            if ctx.memo.holdsRows, !held.isEmpty, let open = held.row(UnsafeRawBufferPointer(rebasing: hk[..<(hk.count - 8)])) {
                // The delta joins its keyframe's row where the fold holds it.
                if open.seq == group {
                    let at = open.bytes.count
                    open.bytes.append(contentsOf: repeatElement(0, count: entryCount))
                    open.bytes.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[at...])) }
                    held.bytes += entryCount
                    return
                }
                try Self.writeHeldRow(open, txn, ctx.tables, ctx.memo)
            }
            try withUnsafeTemporaryAllocation(byteCount: hk.count, alignment: 1) { rowKey in
                rowKey.copyMemory(from: hk)
                rowKey.storeBytes(of: group.bigEndian, toByteOffset: hk.count - 8, as: UInt64.self)
                let key = UnsafeRawBufferPointer(rowKey)
                guard let existing = try txn.get(history, key: key), existing.first != HistoryRow.packedMark else {
                    throw EventStoreError.corrupted("the keyframe row at seq \(group) is missing from history; run `strata verify`")
                }
                // Copied first: the put may move the page the old value is on.
                let old = [UInt8](existing)
                try txn.putReserved(history, key: key, count: old.count + entryCount) { out in
                    old.withUnsafeBytes { out.copyMemory(from: $0) }
                    fill(UnsafeMutableRawBufferPointer(rebasing: out[old.count...]))
                }
            }
        }
    }

    /// Moves the key's newest row before the one `hk` starts (it is closed: no version is added
    /// to it again) into `history-packed` (as a solid row when that is smaller:
    /// ``HistoryRow/solid(_:seq:)``), under the next number there, written with
    /// `MDB_APPEND`: rows of every key, in the order they closed, in pages filled to the end
    /// (a row growing in the middle of `history` splits its page in two halves, and the half left
    /// behind is never written again). `history` keeps a pointer: ``HistoryRow/packedMark`` and
    /// the number.
    ///
    /// Returns the context's `history` cursor, left next to where the row `hk` starts goes.
    private static func packPreviousRow(before hk: UnsafeRawBufferPointer, _ ctx: ProjectionContext) throws -> Cursor {
        let txn = ctx.transaction, memo = ctx.memo
        let c = try memo.historyCursor ?? txn.cursor(ctx.tables["history"])
        memo.historyCursor = c
        let prefixCount = hk.count - 8
        guard let e = try c.seek(atMost: hk), e.key.count == hk.count, e.value.first != HistoryRow.packedMark,
            memcmp(e.key.baseAddress!, hk.baseAddress!, prefixCount) == 0
        else { return c }
        // Copied: the puts below may move the page the row is on.
        let row = [UInt8](e.value)
        let rowSeq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefixCount...]))
        let number = try packRow(row, seq: rowSeq, ctx)
        try withUnsafeTemporaryAllocation(byteCount: hk.count + 9, alignment: 1) { buffer in
            // The row's key (hk with the row's seq), then the pointer: the mark and the number.
            let rowKey = UnsafeMutableRawBufferPointer(rebasing: buffer[..<hk.count])
            rowKey.copyMemory(from: hk)
            rowKey.storeBytes(of: rowSeq.bigEndian, toByteOffset: prefixCount, as: UInt64.self)
            let pointer = UnsafeMutableRawBufferPointer(rebasing: buffer[hk.count...])
            HistoryRow.writePointer(to: number, into: pointer)
            try c.put(key: UnsafeRawBufferPointer(rowKey), value: UnsafeRawBufferPointer(pointer), flags: .current)
        }
        return c
    }

    /// Appends a closed row (of the version at `seq` and the deltas after it) to
    /// `history-packed`, solid when that is smaller, and returns its number there.
    private static func packRow(_ row: [UInt8], seq: UInt64, _ ctx: ProjectionContext) throws -> UInt64 {
        let memo = ctx.memo
        let packed = try memo.packedCursor ?? ctx.transaction.cursor(ctx.tables["history-packed"])
        memo.packedCursor = packed
        let number = try memo.nextPacked ?? (packed.last().map { UInt64(bigEndianBytes: $0.key) } ?? 0) + 1
        memo.nextPacked = number + 1
        let stored = HistoryRow.solid(row, seq: seq, number: number, ctx.transaction, ctx.tables) ?? row
        try stored.withUnsafeBytes { value in
            try withUnsafeBytes(of: number.bigEndian) { try packed.put(key: $0, value: value, flags: .append) }
        }
        return number
    }

    // MARK: Rows a fold holds

    /// Starts the key's new row (`hk`, of `count` bytes that `fill` writes) where the fold holds
    /// it, closing the key's row before: packed from where the fold holds it, or else from
    /// `history` (``packPreviousRow(before:_:)``).
    private static func holdNewRow(
        _ hk: UnsafeRawBufferPointer, seq: UInt64, count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void,
        _ ctx: ProjectionContext
    ) throws {
        let held = ctx.memo.held
        let key = UnsafeRawBufferPointer(rebasing: hk[..<(hk.count - 8)])
        if let open = held.row(key) {
            open.closed.append((open.seq, try packRow(open.bytes, seq: open.seq, ctx)))
            held.bytes += count - open.bytes.count + 16
            open.seq = seq
            // The packed row's bytes are written: their buffer takes the new row.
            open.bytes.removeAll(keepingCapacity: true)
            open.bytes.append(contentsOf: repeatElement(0, count: count))
            open.bytes.withUnsafeMutableBytes { fill($0) }
        } else {
            _ = try packPreviousRow(before: hk, ctx)
            let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, n in
                fill(UnsafeMutableRawBufferPointer(buffer))
                n = count
            }
            held.insert(HeldRows.Row(key: [UInt8](key), seq: seq, bytes: bytes))
        }
        if held.bytes > HeldRows.limit { try flushHeldRows(ctx) }
    }

    /// Writes every row the fold holds to `history`, in key order: for each key, the pointers of
    /// the rows it closed (packed already) and its open row.
    static func flushHeldRows(_ ctx: ProjectionContext) throws {
        let held = ctx.memo.held
        guard !held.isEmpty else { return }
        for row in held.takeSorted() { try write(row, ctx.transaction, ctx.tables, ctx.memo) }
    }

    /// Writes one key's held rows to `history` and stops holding them.
    static func writeHeldRow(_ row: HeldRows.Row, _ txn: Transaction, _ tables: TableSet, _ memo: ProjectionMemo) throws {
        memo.held.remove(row)
        try write(row, txn, tables, memo)
    }

    /// Writes the pointers of a key's closed rows, then its open row.
    private static func write(_ row: HeldRows.Row, _ txn: Transaction, _ tables: TableSet, _ memo: ProjectionMemo) throws {
        let c = try memo.historyCursor ?? txn.cursor(tables["history"])
        memo.historyCursor = c
        let prefix = row.key
        try withUnsafeTemporaryAllocation(byteCount: prefix.count + 8 + 9, alignment: 1) { buffer in
            prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[..<prefix.count]).copyMemory(from: $0) }
            let key = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<(prefix.count + 8)])
            let pointer = UnsafeMutableRawBufferPointer(rebasing: buffer[(prefix.count + 8)...])
            for (seq, number) in row.closed {
                buffer.storeBytes(of: seq.bigEndian, toByteOffset: prefix.count, as: UInt64.self)
                HistoryRow.writePointer(to: number, into: pointer)
                try c.put(key: key, value: UnsafeRawBufferPointer(pointer), flags: [])
            }
            buffer.storeBytes(of: row.seq.bigEndian, toByteOffset: prefix.count, as: UInt64.self)
            try row.bytes.withUnsafeBytes { try c.put(key: key, value: $0, flags: []) }
        }
    }

    // MARK: Order and counts

    /// Adds `delta` to the collection's present count (and one to its count of keys ever seen
    /// when `added`), as of `seq`: one row per changing event.
    private func adjustCount(_ collection: String, by delta: Int, added: Bool = false, _ seq: UInt64, _ ctx: ProjectionContext) throws {
        // Read from the table every time, not remembered: a nested transaction that aborts
        // (an event quarantined) takes its count rows with it.
        // One cursor per context, as for `current`: no cursor opened and freed per event.
        let cursor = try ctx.memo.countsCursor ?? ctx.transaction.cursor(ctx.tables["counts"])
        ctx.memo.countsCursor = cursor
        var key = Array(collection.utf8) + [0]
        let before = try Self.counts(prefix: key, asOf: .max, cursor)
        key += seq.bigEndianBytes
        var value: [UInt8] = []
        ByteWriter.varint(UInt64(max(0, before.present + delta))) { value.append($0) }
        ByteWriter.varint(UInt64(before.ever + (added ? 1 : 0))) { value.append($0) }
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { try cursor.put(key: k, value: $0, flags: []) } }
    }

    /// The number of present documents of `collection` after the last event at or before `seq`.
    static func count(_ collection: String, asOf seq: UInt64, _ txn: Transaction, _ tables: TableSet) throws -> Int {
        try counts(collection, asOf: seq, txn, tables).present
    }

    /// Present documents, and keys ever seen (present or removed), after the last event at or
    /// before `seq`.
    static func counts(_ collection: String, asOf seq: UInt64, _ txn: Transaction, _ tables: TableSet) throws -> (present: Int, ever: Int) {
        try counts(prefix: Array(collection.utf8) + [0], asOf: seq, try txn.cursor(tables["counts"]))
    }

    /// The same through `c`, a cursor over `counts`; `prefix` is the collection's name and a NUL.
    private static func counts(prefix: [UInt8], asOf seq: UInt64, _ c: Cursor) throws -> (present: Int, ever: Int) {
        guard let e = try c.seek(atMost: prefix + seq.bigEndianBytes), e.key.hasPrefix(prefix), e.key.count == prefix.count + 8 else { return (0, 0) }
        var r = ByteReader(e.value)
        return (Int(try r.varint()), Int(try r.varint()))
    }

    /// The sort key that puts keys in the order people read ids: keys that are whole numbers
    /// (`UInt64(key)`) by value, then the rest by their UTF-8 bytes; equal numbers ("7", "07") by
    /// bytes. `0x00 value(u64be) key` or `0x01 key`, so the key is always recoverable.
    public static func naturalKey(_ key: String) -> [UInt8] {
        if let n = UInt64(key) { return [0] + n.bigEndianBytes + Array(key.utf8) }
        return [1] + Array(key.utf8)
    }

    /// The key a ``sortedKey(_:_:_:_:)`` was made for (`prefixCount`: the bytes of its
    /// collection and ordinal).
    static func key(fromSorted raw: UnsafeRawBufferPointer, prefixCount: Int, _ tables: TableSet, _ txn: Transaction) throws -> String {
        var at = prefixCount
        switch raw[at] {
        case 0: at += 9
        case 1:
            at += 1
            while at < raw.count, raw[at] != 0 { at += 1 }
            at += 1
        default: at += 1
        }
        return try key(fromNatural: UnsafeRawBufferPointer(rebasing: raw[min(at, raw.count)...]), tables, txn)
    }

    /// The key a ``naturalKey(_:)`` (or, stored, ``storedNaturalKey(_:_:)``) was made from.
    static func key(fromNatural raw: UnsafeRawBufferPointer, _ tables: TableSet, _ txn: Transaction) throws -> String {
        let skip = raw.first == 0 ? 9 : 1
        return try tables.reveal(UnsafeRawBufferPointer(rebasing: raw[min(skip, raw.count)...]), in: txn)
    }

    /// ``naturalKey(_:)`` as a table stores it: in an encrypted store the id after the prefix is
    /// its digest (``TableSet/text(_:)``), so numbers keep their order and texts follow their
    /// digests' order.
    static func storedNaturalKey(_ key: String, _ tables: TableSet) -> [UInt8] {
        guard tables.isEncrypted else { return naturalKey(key) }
        if let n = UInt64(key) { return [0] + n.bigEndianBytes + tables.text(key) }
        return [1] + tables.text(key)
    }

    /// `collection 0x00` and the stored natural key; `remembering`: the write that makes it,
    /// which records the id behind its digest.
    static func withNaturalKey<T>(
        _ collection: String, _ key: String, _ tables: TableSet, remembering txn: Transaction,
        _ body: ([UInt8]) throws -> T
    ) throws -> T {
        if tables.isEncrypted { _ = try tables.text(key, remembering: txn) }
        return try body(Array(collection.utf8) + [0] + storedNaturalKey(key, tables))
    }

    // MARK: Indexes

    /// The collection's indexed paths; read once per context (``defineIndex`` keeps the memo).
    private func indexedPaths(_ collection: String, _ ctx: ProjectionContext) throws -> [String] {
        if let known = ctx.memo.indexedPaths[collection] { return known }
        var paths: [String] = []
        if let raw = try ctx.transaction.get(ctx.tables["indexes"], key: Array(collection.utf8)),
            case .array(let list) = try JSONValue(parsing: raw)
        {
            paths = list.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        ctx.memo.indexedPaths[collection] = paths
        return paths
    }

    private func defineIndex(_ collection: String, paths: [String], _ seq: UInt64, _ ctx: ProjectionContext) throws {
        // It reads the documents of every present key from `history`.
        try Self.flushHeldRows(ctx)
        let paths = Array(Set(paths)).sorted()
        let before = try indexedPaths(collection, ctx)
        guard before != paths else { return }
        ctx.memo.indexedPaths[collection] = paths
        // The counters' pending moves first: the rows below, counters too, are dropped and made again.
        try Self.flushIndexCounts(ctx)
        let txn = ctx.transaction
        // Drop the collection's entries, then index every present document on the new paths.
        let prefix = Array(collection.utf8) + [0]
        let c = try txn.cursor(ctx.tables["index"])
        var stale: [[UInt8]] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) { stale.append([UInt8](e.key)); entry = try c.next() }
        for k in stale { try txn.delete(ctx.tables["index"], key: k) }
        stale = []
        let sc = try txn.cursor(ctx.tables["sorted"])
        entry = try sc.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) { stale.append([UInt8](e.key)); entry = try sc.next() }
        for k in stale { try txn.delete(ctx.tables["sorted"], key: k) }
        // The index's history starts again here: as-of reads before `seq` scan instead.
        stale = []
        let h = try txn.cursor(ctx.tables["index-history"])
        entry = try h.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) { stale.append([UInt8](e.key)); entry = try h.next() }
        for k in stale { try txn.delete(ctx.tables["index-history"], key: k) }
        for path in paths { try txn.put(ctx.tables["index-history"], key: prefix + [0] + Array(path.utf8), value: seq.bigEndianBytes) }
        if paths.isEmpty {
            try txn.delete(ctx.tables["indexes"], key: Array(collection.utf8))
            return
        }
        try txn.put(ctx.tables["indexes"], key: Array(collection.utf8), value: JSONValue.array(paths.map { .string($0) }).canonicalBytes)
        let docs = try txn.cursor(ctx.tables["current"])
        var present: [(String, JSONValue)] = []
        entry = try docs.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            let record = try CurrentRecord(e.value)
            if !record.removed {
                let key = try ctx.tables.reveal(UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]), in: txn)
                present.append((key, try JSONValue(parsing: Self.document(collection, key, at: record.changedSeq, txn, ctx.tables))))
            }
            entry = try docs.next()
        }
        for (key, doc) in present { try updateIndex(collection, key, paths: paths, old: nil, new: doc, seq, ctx) }
    }

    /// Moves `key` between index entries, and keeps each entry's history: in `index-history`,
    /// `entry 0x00 from(u64be)` → `to(u64be)` (`UInt64.max` while the value holds), the seqs
    /// `from ..< to` at which the document had the value, so a filtered read as of any seq
    /// since the index was defined reads the keys that ever had the value, not the collection.
    private func updateIndex(
        _ collection: String, _ key: String, paths: [String], old: JSONValue?, new: JSONValue?, _ seq: UInt64,
        _ ctx: ProjectionContext
    ) throws {
        let txn = ctx.transaction
        let history = ctx.tables["index-history"]
        for (ordinal, path) in paths.enumerated() {
            // The sorted index: every present document, under its value's sort key.
            let sortedBefore = old.flatMap { Self.sortedKey(collection, ordinal, $0.value(atPath: path), key, ctx.tables) }
            let sortedAfter = new.flatMap { Self.sortedKey(collection, ordinal, $0.value(atPath: path), key, ctx.tables) }
            if sortedBefore != sortedAfter {
                if let sortedBefore { try txn.delete(ctx.tables["sorted"], key: sortedBefore) }
                if let sortedAfter { try txn.put(ctx.tables["sorted"], key: sortedAfter, value: []) }
            }
            // A path through arrays has an entry per distinct value (`labels.name`: one per label).
            let beforeEntries = old.map { Self.indexEntries(collection, path, $0, key, ctx.tables) } ?? []
            let afterEntries = new.map { Self.indexEntries(collection, path, $0, key, ctx.tables) } ?? []
            guard beforeEntries.map(\.key) != afterEntries.map(\.key) else { continue }
            let afterKeys = Set(afterEntries.map(\.key)), beforeKeys = Set(beforeEntries.map(\.key))
            for entry in beforeEntries where !afterKeys.contains(entry.key) {
                ctx.memo.indexCounts[entry.prefix, default: 0] -= 1
                try txn.delete(ctx.tables["index"], key: entry.key)
                let c = try txn.cursor(history)
                if let open = try c.seek(atMost: entry.key + [0] + UInt64.max.bigEndianBytes), open.key.count == entry.key.count + 9,
                    open.key.hasPrefix(entry.key + [0])
                {
                    let k = [UInt8](open.key)
                    try txn.put(history, key: k, value: seq.bigEndianBytes)
                }
            }
            for entry in afterEntries where !beforeKeys.contains(entry.key) {
                ctx.memo.indexCounts[entry.prefix, default: 0] += 1
                try txn.put(ctx.tables["index"], key: entry.key, value: [])
                if entry.key.count + 9 <= 511 { try txn.put(history, key: entry.key + [0] + seq.bigEndianBytes, value: UInt64.max.bigEndianBytes) }
            }
        }
    }

    /// The `index` entries of `key` for the values `path` reaches in `document`
    /// (``JSONValue/values(atPath:)``), one per distinct indexable value, in document order.
    static func indexEntries(
        _ collection: String, _ path: String, _ document: JSONValue, _ key: String,
        _ tables: TableSet
    ) -> [(prefix: [UInt8], key: [UInt8])] {
        let found = document.values(atPath: path)
        if found.count == 1 { return indexEntry(collection, path, found[0], key, tables).map { [$0] } ?? [] }
        var seen = Set<String>(), out: [(prefix: [UInt8], key: [UInt8])] = []
        for value in found {
            guard let text = indexText(value), seen.insert(text).inserted, let entry = indexEntry(collection, path, value, key, tables) else { continue }
            out.append(entry)
        }
        return out
    }

    /// The index text of a value: strings as they are, other scalars as JSON text; containers,
    /// absent values and values too long or holding NUL are not indexed.
    static func indexText(_ value: JSONValue?) -> String? {
        let text: String
        switch value {
        case .string(let s)?: text = s
        case .number(let n)?: text = n
        case .bool(let b)?: text = b ? "true" : "false"
        case .null?: text = "null"
        default: return nil
        }
        return text.utf8.count <= 192 && !text.utf8.contains(0) ? text : nil
    }

    /// `collection 0x00 path 0x00 value 0x00`; the value is its digest in an encrypted store.
    static func indexPrefix(_ collection: String, _ path: String, _ text: String, _ tables: TableSet) -> [UInt8] {
        Array(collection.utf8) + [0] + Array(path.utf8) + [0] + tables.text(text) + [0]
    }

    /// The `index` entry of `key` whose value at `path` is `value`: the value's prefix
    /// (``indexPrefix(_:_:_:_:)``), then the key as ``storedNaturalKey(_:_:)``, so a value's keys
    /// lie in natural id order (in an encrypted store: numbers by value, texts by digest). nil when
    /// the value is not indexed or the entry would pass LMDB's 511 bytes.
    static func indexEntry(
        _ collection: String, _ path: String, _ value: JSONValue?, _ key: String,
        _ tables: TableSet
    ) -> (prefix: [UInt8], key: [UInt8])? {
        guard let text = indexText(value) else { return nil }
        let prefix = indexPrefix(collection, path, text, tables)
        let k = prefix + storedNaturalKey(key, tables)
        return k.count <= 511 ? (prefix, k) : nil
    }

    /// Writes the counters' moves gathered since the last flush (``adjustIndexCount``).
    static func flushIndexCounts(_ ctx: ProjectionContext) throws {
        for (prefix, delta) in ctx.memo.indexCounts where delta != 0 {
            try adjustIndexCount(prefix, by: delta, ctx.transaction, ctx.tables)
        }
        ctx.memo.indexCounts.removeAll(keepingCapacity: true)
    }

    /// The value's counter, the `index` row keyed by the bare prefix (it sorts before the value's
    /// entries): how many entries the value has, u64be; no row at zero.
    static func adjustIndexCount(_ prefix: [UInt8], by delta: Int, _ txn: Transaction, _ tables: TableSet) throws {
        let next = max(0, try indexCount(prefix, txn, tables) + delta)
        let table = tables["index"]
        if next == 0 { _ = try txn.delete(table, key: prefix) } else { try txn.put(table, key: prefix, value: UInt64(next).bigEndianBytes) }
    }

    /// The value's counter (``adjustIndexCount``): 0 without a row.
    static func indexCount(_ prefix: [UInt8], _ txn: Transaction, _ tables: TableSet) throws -> Int {
        try txn.get(tables["index"], key: prefix).map { $0.count == 8 ? Int($0.withUnsafeBytes { UInt64(bigEndianBytes: $0) }) : 0 } ?? 0
    }

    /// The page of `keys` in natural id order (``naturalKey(_:)``) after the key `after`, or past
    /// `offset` keys: for keys read whole, which an index does not hold in that order.
    public static func naturalPage(of keys: [String], after: String?, offset: Int, limit: Int) -> [String] {
        let ordered = keys.map { (naturalKey($0), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
        var start = min(max(0, offset), ordered.count)
        if let after {
            let bound = naturalKey(after)
            start = ordered.firstIndex { bound.lexicographicallyPrecedes($0.0) } ?? ordered.count
        }
        // `limit` may be Int.max (no limit): added to `start` it would overflow.
        return ordered[start..<(start + min(ordered.count - start, max(0, limit)))].map(\.1)
    }

    /// The `sorted` key of `key` whose value at the collection's `ordinal`th indexed path is
    /// `value`: `collection 0x00 u8 ordinal`, the value's sort key, then ``naturalKey(_:)``.
    /// The sort key is `0x00 u64be` for a number (its double's bits, order-preserving), `0x01
    /// text 0x00` for a string, boolean or null (`true`, `false`, `null`; cut at a NUL and so the
    /// key stays within LMDB's 511 bytes: values alike up to the cut then follow their ids), and
    /// `0x02` for a value that is absent or a container. nil past 255 indexed paths.
    /// nil in an encrypted store, which keeps no `sorted` table: its keys would be the values.
    static func sortedKey(_ collection: String, _ ordinal: Int, _ value: JSONValue?, _ key: String, _ tables: TableSet) -> [UInt8]? {
        guard ordinal < 256, !tables.isEncrypted else { return nil }
        var k = Array(collection.utf8) + [0, UInt8(ordinal)]
        let natural = naturalKey(key)
        switch value {
        case .number(let text)?:
            k.append(0)
            k += orderedBits(Double(text) ?? 0).bigEndianBytes
        case .string, .bool, .null:
            let text: String =
                switch value! {
                case .string(let s): s
                case .bool(let b): b ? "true" : "false"
                default: "null"
                }
            // Cut at a NUL (the terminator) and to the room the key has.
            let room = max(0, 511 - k.count - 2 - natural.count)
            k.append(1)
            k += text.utf8.prefix { $0 != 0 }.prefix(room)
            k.append(0)
        default:
            k.append(2)
        }
        k += natural
        return k.count <= 511 ? k : nil
    }

    /// A double's bits, flipped so that unsigned order is numeric order.
    static func orderedBits(_ d: Double) -> UInt64 {
        let bits = (d == 0 ? 0.0 : d).bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    // MARK: Keys and records

    /// `collection 0x00 key`, the current key (see ``withKeys(_:_:_:_:)``).
    static func currentKey(_ collection: String, _ key: String, _ tables: TableSet) -> [UInt8] {
        withKeys(collection, key, 0, tables) { current, _ in [UInt8](current) }
    }

    /// `collection 0x00 key 0x00 seq(u64be)`, the history key, built on the stack; `body` gets
    /// the current key (its part before the second 0x00) and the history key. It runs for every
    /// put: no array is allocated. (``validate(_:_:)`` bounds both names.)
    /// In an encrypted store the key part is the key's digest (``TableSet/text(_:)``).
    @inline(__always)
    static func withKeys<T>(
        _ collection: String, _ key: String, _ seq: UInt64, _ tables: TableSet,
        _ body: (_ current: UnsafeRawBufferPointer, _ history: UnsafeRawBufferPointer) throws -> T
    ) rethrows -> T {
        // One stack buffer, filled by a plain function: `body` (the whole of a put) is inlined
        // here instead of becoming a closure whose captures (the event, the context) are copied
        // for every put.
        let digest = tables.isEncrypted ? tables.text(key) : nil
        let keyCount = digest?.count ?? key.utf8.count
        return try withUnsafeTemporaryAllocation(byteCount: collection.utf8.count + keyCount + 10, alignment: 1) { buffer in
            let currentCount = fillKeys(buffer, collection, key, digest, seq)
            let all = UnsafeRawBufferPointer(buffer)
            return try body(UnsafeRawBufferPointer(rebasing: all[..<currentCount]), all)
        }
    }

    /// Writes `collection 0x00 key 0x00 seq(u64be)` (the key's digest for `key` when given) into
    /// `buffer`, which has exactly the room; returns the length of the current key.
    private static func fillKeys(
        _ buffer: UnsafeMutableRawBufferPointer, _ collection: String, _ key: String, _ digest: [UInt8]?,
        _ seq: UInt64
    ) -> Int {
        var n = 0
        func copy(_ bytes: UnsafeRawBufferPointer) {
            UnsafeMutableRawBufferPointer(rebasing: buffer[n...]).copyMemory(from: bytes)
            n += bytes.count
        }
        var collection = collection
        collection.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
        buffer[n] = 0
        n += 1
        if let digest {
            digest.withUnsafeBytes { copy($0) }
        } else {
            var key = key
            key.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
        }
        buffer[n] = 0
        buffer.storeBytes(of: seq.bigEndian, toByteOffset: n + 1, as: UInt64.self)
        return n
    }

    static func historyKey(_ collection: String, _ key: String, _ seq: UInt64, _ tables: TableSet) -> [UInt8] {
        withKeys(collection, key, seq, tables) { [UInt8]($1) }
    }

    /// The digest kept in `current` to tell a changed document from an unchanged one: the first
    /// 16 bytes of SHA-256 over the canonical bytes.
    static func digest(_ canonical: [UInt8]) -> [UInt8] { Hashing.sha256(canonical, prefix: 16) }

    /// The JSON text of the document of the version at `seq`: its canonical bytes, or the
    /// payload it was (the same document, as its event carried it).
    /// `memo`: a fold's, whose open rows are read where they are held (``HeldRows``).
    static func document(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: ProjectionMemo? = nil
    ) throws -> [UInt8] {
        try storedDocument(collection, key, at: seq, txn, tables, memo).text(collection, key, txn, tables, memo)
    }

    /// The document of the version at `seq` as the version holds it.
    static func storedDocument(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: ProjectionMemo? = nil
    ) throws -> DocumentSource {
        let source = try withVersionRecord(collection, key, at: seq, txn, tables, memo) { raw in
            var r = ByteReader(raw)
            _ = try VersionHeader(reading: &r)
            return try DocumentSource(reading: &r)
        }
        guard let source else {
            throw EventStoreError.corrupted("the version at seq \(seq) of \(collection)/\(key.prefix(64)) is missing from history; run `strata verify`")
        }
        return source
    }

    /// A version's document: canonical bytes (a document an operation built, or one a payload
    /// only contains), or, when it is an event's whole payload, that payload's stored form copied
    /// from the log (``BlobCodec``: usually zstd-compressed, so a version of a JSON document takes
    /// a fraction of its text, at no second compression).
    ///
    /// Stored after the version header as `varint n, n bytes` for canonical bytes (n > 0: no JSON
    /// text is empty), or `varint 0, varint m, m bytes` for a stored payload.
    ///
    /// Since documents 7 (items 10 and the data projections 7) a version that is not a stored
    /// payload is usually a delta: `varint 0, varint 0, varint keyframe seq, varint index, varint
    /// size, varint n, n bytes` of a magicless zstd frame compressed against the document of the
    /// key's version at the keyframe seq (the prefix), `index` (1…) counting the deltas since that
    /// keyframe. Every delta of a group refers to the keyframe itself, not to the version before
    /// it, so a read decodes at most two frames; every ``keyframeInterval`` versions (or when a
    /// delta would not be smaller) the version is a keyframe again: canonical bytes, compressed
    /// (`.encoded`) when that saves a tenth.
    enum DocumentSource {
        case inline([UInt8])
        case encoded([UInt8])
        case delta(keyframe: UInt64, index: Int, size: Int, frame: [UInt8])

        init(reading r: inout ByteReader) throws {
            let n = Int(try r.varint())
            if n > 0 { self = .inline([UInt8](try r.slice(n))); return }
            let m = Int(try r.varint())
            if m > 0 { self = .encoded([UInt8](try r.slice(m))); return }
            let keyframe = try r.varint()
            let index = Int(try r.varint())
            let size = Int(try r.varint())
            guard index >= 1, size <= 1 << 30 else { throw ByteReader.Truncated() }
            self = .delta(keyframe: keyframe, index: index, size: size, frame: try r.blob())
        }

        /// The length of the JSON text a stored document decodes to, read from its sizes alone
        /// (nothing copied or decompressed), leaving `r` after it as ``init(reading:)`` does.
        static func textCount(reading r: inout ByteReader) throws -> Int {
            let n = Int(try r.varint())
            if n > 0 { _ = try r.slice(n); return n }
            let m = Int(try r.varint())
            if m > 0 {
                // A stored form: `u8 codec | varint size | …` (``BlobCodec``).
                let stored = try r.slice(m)
                var header = ByteReader(stored)
                _ = try header.u8()
                return Int(try header.varint())
            }
            _ = try r.varint()
            _ = try r.varint()
            let size = Int(try r.varint())
            _ = try r.slice(try r.count())
            return size
        }

        /// What follows `varint 0, varint 0` in a delta's record.
        var deltaTail: [UInt8] {
            guard case let .delta(keyframe, index, size, frame) = self else { return [] }
            var w = ByteWriter(capacity: frame.count + 24)
            w.varint(keyframe)
            w.varint(index)
            w.varint(size)
            w.blob(frame)
            return w.bytes
        }

        /// The JSON text (for a payload, as the event carried it: the same document, maybe in
        /// another key order). A delta reads its keyframe, the version of `collection`/`key`
        /// at the keyframe's seq, in `txn`.
        func text(_ collection: String, _ key: String, _ txn: Transaction, _ tables: TableSet, _ memo: ProjectionMemo? = nil) throws -> [UInt8] {
            switch self {
            case .inline(let bytes): return bytes
            case .encoded(let bytes): return try bytes.withUnsafeBytes { raw in try ZstdContext.pooled { try BlobCodec.decode(raw, context: $0) } }
            case let .delta(keyframe, _, size, frame):
                let base = try storedDocument(collection, key, at: keyframe, txn, tables, memo)
                if case .delta = base {
                    throw EventStoreError.corrupted("the keyframe at seq \(keyframe) of \(collection)/\(key.prefix(64)) is itself a delta; run `strata verify`")
                }
                let prefix = try base.text(collection, key, txn, tables, memo)
                return try frame.withUnsafeBytes { f in try ZstdContext.pooled { try $0.decompress(f, prefix: prefix, size: size) } }
            }
        }
    }

    /// Versions from one keyframe to the next in `history` (the keyframe and its deltas).
    static let keyframeInterval = 16

    /// How a new version with document `canonical` is stored: a delta against the keyframe of
    /// the version before it (`previous`, the key's last changed seq), or, when there is none,
    /// the group is full or the delta would not be smaller, a keyframe.
    static func deltaOrKeyframe(
        _ canonical: [UInt8], _ collection: String, _ key: String, previous: UInt64?,
        _ txn: Transaction, _ tables: TableSet, _ memo: ProjectionMemo? = nil
    ) throws -> DocumentSource {
        if let previous {
            let last = try storedDocument(collection, key, at: previous, txn, tables, memo)
            var keyframe: (seq: UInt64, index: Int, source: DocumentSource)?
            switch last {
            case let .delta(seq, index, _, _):
                if index + 1 < keyframeInterval { keyframe = (seq, index + 1, try storedDocument(collection, key, at: seq, txn, tables, memo)) }
            default:
                keyframe = (previous, 1, last)
            }
            if let keyframe {
                let prefix = try keyframe.source.text(collection, key, txn, tables, memo)
                if let frame = ZstdContext.pooled({ $0.compress(canonical, prefix: prefix, level: BlobCodec.level) }),
                    frame.count + 8 < canonical.count
                {
                    return .delta(keyframe: keyframe.seq, index: keyframe.index, size: canonical.count, frame: frame)
                }
            }
        }
        let encoded = ZstdContext.pooled { BlobCodec.encode(canonical, context: $0) }
        return encoded.first == BlobCodec.raw ? .inline(canonical) : .encoded(encoded)
    }

    /// Runs `body` with the stored bytes of the version written at exactly `seq` (its record in
    /// its row; valid only inside `body`: a solid row's bytes live as long as the row), or
    /// returns nil when there is none.
    ///
    /// `memo`: a fold's; the key's open row is read where the fold holds it, if it holds one
    /// (``HeldRows``), and written out first when an earlier version is asked for.
    static func withVersionRecord<T>(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: ProjectionMemo? = nil, _ body: (UnsafeRawBufferPointer) throws -> T
    ) throws -> T? {
        func find(_ row: HistoryRow) throws -> T? {
            var result: T?
            try row.forEach { s, record in
                if s == seq { result = try body(record) }
                return s < seq
            }
            return result
        }
        if let memo, !memo.held.isEmpty,
            let open = withKeys(collection, key, 0, tables, { memo.held.row(UnsafeRawBufferPointer(rebasing: $1[..<($1.count - 8)])) })
        {
            if seq >= open.seq { return try open.bytes.withUnsafeBytes { try find(HistoryRow(seq: open.seq, bytes: $0)) } }
            try writeHeldRow(open, txn, tables, memo)
        }
        guard let row = try HistoryRow.containing(collection, key, seq, txn, tables) else { return nil }
        return try find(row)
    }

    /// One row of `history`: a keyframe (or a version stored whole) and the deltas against it,
    /// keyed `collection 0x00 key 0x00 seq(u64be)` by the seq of its first version. The value is
    /// its versions in seq order, each `varint (seq − row seq), varint n, n bytes` of a version
    /// record (header, document, changes). So a version costs its record and two varints, not a
    /// key and a B-tree node of its own; an as-of read is still one seek (the row at or before
    /// the seq) and a walk of at most ``keyframeInterval`` entries.
    struct HistoryRow {
        /// The seq of the row's first version (its key's last 8 bytes).
        let seq: UInt64
        let bytes: UnsafeRawBufferPointer
        /// The decompressed bytes of a solid row, which `bytes` point into (nil: `bytes` point
        /// into the map, valid for the transaction).
        private let owner: OwnedBytes?

        /// The first byte of a row's value in `history` when the row itself was moved to
        /// `history-packed` (followed by its number there, u64be). A row's own first byte is the
        /// varint 0 of its first version's offset.
        static let packedMark: UInt8 = 0xFF

        /// Writes the 9-byte value that stands in `history` for a row packed under `number`.
        static func writePointer(to number: UInt64, into pointer: UnsafeMutableRawBufferPointer) {
            pointer[0] = packedMark
            pointer.storeBytes(of: number.bigEndian, toByteOffset: 1, as: UInt64.self)
        }

        /// The row holding the version in force at `seq` for `collection`/`key`, or nil.
        static func containing(_ collection: String, _ key: String, _ seq: UInt64, _ txn: Transaction, _ tables: TableSet) throws -> HistoryRow? {
            let k = historyKey(collection, key, seq, tables)
            let c = try txn.cursor(tables["history"])
            guard let e = try c.seek(atMost: k), e.key.count == k.count, e.key.prefix(k.count - 8).elementsEqual(k.prefix(k.count - 8)) else { return nil }
            return try HistoryRow(key: e.key, value: e.value, txn, tables)
        }

        /// The row a `history` entry (key and value) stands for, read from `history-packed`
        /// when the value points there.
        init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, _ txn: Transaction, _ tables: TableSet) throws {
            seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: key[(key.count - 8)...]))
            guard value.first == Self.packedMark else { bytes = value; owner = nil; return }
            guard value.count == 9, let row = try txn.get(tables["history-packed"], key: UnsafeRawBufferPointer(rebasing: value[1...])) else {
                throw EventStoreError.corrupted("a packed history row of seq \(seq) is missing; run `strata verify`")
            }
            guard row.first == Self.solidMark || row.first == Self.anchoredMark else { bytes = row; owner = nil; return }
            do {
                let solid = try Self.unpackSolid(row, number: UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: value[1...])), txn, tables)
                owner = solid
                bytes = UnsafeRawBufferPointer(solid.buffer)
            } catch {
                throw EventStoreError.corrupted("the packed history row of seq \(seq) does not decompress; run `strata verify`")
            }
        }

        init(seq: UInt64, bytes: UnsafeRawBufferPointer) {
            self.seq = seq
            self.bytes = bytes
            owner = nil
        }

        /// Visits the versions in seq order while `body` returns true.
        func forEach(_ body: (_ seq: UInt64, _ record: UnsafeRawBufferPointer) throws -> Bool) throws {
            var r = ByteReader(bytes)
            while !r.isAtEnd {
                let at = seq + (try r.varint())
                let n = Int(try r.varint())
                guard try body(at, try r.slice(n)) else { return }
            }
        }

        /// Runs `body` with the last version at or before `seq` (its record is valid only inside
        /// `body`), or returns nil when the row has none.
        func withLast<T>(atMost seq: UInt64, _ body: (_ seq: UInt64, _ record: UnsafeRawBufferPointer) throws -> T) throws -> T? {
            var found: (UInt64, UnsafeRawBufferPointer)?
            try forEach { s, record in
                guard s <= seq else { return false }
                found = (s, record)
                return true
            }
            guard let found else { return nil }
            return try withExtendedLifetime(owner) { try body(found.0, found.1) }
        }
    }

    /// Bytes a solid history row was decompressed into, freed with the last row that uses them.
    final class OwnedBytes {
        let buffer: UnsafeMutableRawBufferPointer

        init(count: Int) { buffer = .allocate(byteCount: max(count, 1), alignment: 8) }

        deinit { buffer.deallocate() }
    }

    /// The head of a `history` record, before the document: version, time, how it came to be.
    struct VersionHeader {
        var version: Int
        var recordedAt: Timestamp
        var kind: ChangeKind

        init(reading r: inout ByteReader) throws {
            version = Int(try r.varint())
            recordedAt = Timestamp(microseconds: try r.i64())
            // One byte since documents 7; the kind's name before.
            let first = try r.u8()
            if let kind = ChangeKind(code: first) {
                self.kind = kind
            } else {
                guard let kind = ChangeKind(rawValue: String(decoding: try r.slice(Int(first)), as: UTF8.self)) else {
                    throw DocumentError("unknown change kind in history")
                }
                self.kind = kind
            }
        }
    }

    struct CurrentRecord {
        var version: Int
        var firstSeq: UInt64
        var changedSeq: UInt64
        var lastSeenSeq: UInt64
        var removed: Bool
        var digest: Digest16

        init(version: Int, firstSeq: UInt64, changedSeq: UInt64, lastSeenSeq: UInt64, removed: Bool, digest: Digest16) {
            self.version = version
            self.firstSeq = firstSeq
            self.changedSeq = changedSeq
            self.lastSeenSeq = lastSeenSeq
            self.removed = removed
            self.digest = digest
        }

        init(_ raw: UnsafeRawBufferPointer) throws {
            var r = ByteReader(raw)
            let header = try DocumentSummary(reading: &r)
            version = header.version
            firstSeq = header.firstSeq
            changedSeq = header.changedSeq
            lastSeenSeq = header.lastSeenSeq
            removed = header.removed
            digest = Digest16(try r.slice(16))
        }

        /// The stored form, built on the stack (it is written on every put): four varints, the
        /// removed flag and the digest.
        func withEncoded<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try withUnsafeTemporaryAllocation(byteCount: 4 * 10 + 1 + 16, alignment: 1) { out in
                var n = 0
                func emit(_ b: UInt8) { out[n] = b; n += 1 }
                ByteWriter.varint(UInt64(version), emit); ByteWriter.varint(firstSeq, emit)
                ByteWriter.varint(changedSeq, emit); ByteWriter.varint(lastSeenSeq, emit)
                emit(removed ? 1 : 0)
                withUnsafeBytes(of: (digest.high.bigEndian, digest.low.bigEndian)) { for b in $0 { emit(b) } }
                return try body(UnsafeRawBufferPointer(rebasing: out[0..<n]))
            }
        }
    }

    /// A document digest (``digest(_:)``), held inline: no array per record read.
    struct Digest16: Equatable {
        var high: UInt64
        var low: UInt64

        init(_ bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count == 16, "a digest is 16 bytes")
            high = UInt64(bigEndianBytes: bytes)
            low = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: bytes[8...]))
        }

        init(_ bytes: [UInt8]) { self = bytes.withUnsafeBytes { Digest16($0) } }
    }

    static func decodeVersion(
        collection: String, key: String, seq: UInt64, _ raw: UnsafeRawBufferPointer,
        _ txn: Transaction, _ tables: TableSet
    ) throws -> DocumentVersion {
        var r = ByteReader(raw)
        let header = try VersionHeader(reading: &r)
        let doc = try JSONValue(parsing: DocumentSource(reading: &r).text(collection, key, txn, tables))
        let changesBytes = try r.blob()
        var changes: [PatchOperation] = []
        if !changesBytes.isEmpty, case .array(let ops) = try JSONValue(parsing: changesBytes) {
            changes = try ops.map { try PatchOperation(json: $0) }
        }
        return DocumentVersion(
            collection: collection, key: key, version: header.version, seq: seq, recordedAt: header.recordedAt,
            kind: header.kind, document: doc, changes: changes)
    }
}
