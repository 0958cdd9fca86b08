public import LMDB

/// Reads of a ``KeyedDocumentProjection``'s tables inside a read transaction. Every as-of read is
/// a cursor seek on the history table, not a replay.
public struct DocumentReader {
    public let transaction: Transaction
    public let tables: TableSet

    public init(transaction: Transaction, tables: TableSet) {
        self.transaction = transaction
        self.tables = tables
    }

    /// The document's state now (`asOf` nil) or as of a seq: the last version at or before it.
    public func state(collection: String, key: String, asOf seq: UInt64? = nil) throws -> DocumentState? {
        if let seq { return try stateAsOf(collection: collection, key: key, seq: seq) }
        guard let raw = try transaction.get(tables["current"], key: KeyedDocumentProjection.currentKey(collection, key, tables)) else { return nil }
        let r = try raw.withUnsafeBytes { try KeyedDocumentProjection.CurrentRecord($0) }
        let document = try KeyedDocumentProjection.document(collection, key, at: r.changedSeq, transaction, tables)
        return DocumentState(
            collection: collection, key: key, version: r.version, firstSeq: r.firstSeq, changedSeq: r.changedSeq,
            lastSeenSeq: r.lastSeenSeq, removed: r.removed, document: try JSONValue(parsing: document))
    }

    /// The document's current bookkeeping without parsing it: one `mdb_get`, a few varints.
    public func summary(collection: String, key: String) throws -> DocumentSummary? {
        guard let raw = try transaction.get(tables["current"], key: KeyedDocumentProjection.currentKey(collection, key, tables)) else { return nil }
        return try raw.withUnsafeBytes { try DocumentSummary(record: $0) }
    }

    /// Every current document of a collection, by key bytes, without parsing any: for deciding
    /// which few to read in full.
    public func summaries(collection: String) throws -> [(key: String, summary: DocumentSummary)] {
        let prefix = Array(collection.utf8) + [0]
        let c = try transaction.cursor(tables["current"])
        var out: [(String, DocumentSummary)] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            out.append((try currentKey(e.key, after: prefix.count), try DocumentSummary(record: e.value)))
            entry = try c.next()
        }
        // `current` is in natural order: back in key-byte order.
        out.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        return out
    }

    private func stateAsOf(collection: String, key: String, seq: UInt64) throws -> DocumentState? {
        guard let v = try version(collection: collection, key: key, asOf: seq) else { return nil }
        var first: UInt64?
        try KeyedDocumentProjection.HistoryRow.forEachRow(collection, key, transaction, tables) { row in
            first = row.seq
            return false
        }
        guard let firstSeq = first else { return nil }
        return DocumentState(
            collection: collection, key: key, version: v.version, firstSeq: firstSeq, changedSeq: v.seq,
            lastSeenSeq: nil, removed: v.isRemoved, document: v.document)
    }

    /// The version in force at `seq` (one seek), or nil if the document did not exist yet. Its
    /// `changes` are empty (only ``history(collection:key:upTo:)`` derives them).
    public func version(collection: String, key: String, asOf seq: UInt64) throws -> DocumentVersion? {
        guard let row = try KeyedDocumentProjection.HistoryRow.containing(collection, key, seq, transaction, tables) else { return nil }
        return try row.withLast(atMost: seq) { at, record in
            try KeyedDocumentProjection.decodeVersion(collection: collection, key: key, seq: at, record, transaction, tables)
        }
    }

    /// How the version at exactly `seq` came to be, from the history record's header (the
    /// document is not parsed); nil when no version was written at `seq`.
    public func changeKind(collection: String, key: String, at seq: UInt64) throws -> ChangeKind? {
        try KeyedDocumentProjection.withVersionRecord(collection, key, at: seq, transaction, tables) { raw in
            var r = ByteReader(raw)
            return try KeyedDocumentProjection.VersionHeader(reading: &r).kind
        }
    }

    /// The kinds of a document's versions recorded at `since` or later, oldest first: its
    /// history headers only, no document is read.
    public func changeKinds(collection: String, key: String, since: UInt64) throws -> [ChangeKind] {
        var kinds: [ChangeKind] = []
        try KeyedDocumentProjection.HistoryRow.forEachRow(collection, key, transaction, tables) { row in
            try row.forEach { at, record in
                if at >= since {
                    var r = ByteReader(record)
                    kinds.append(try KeyedDocumentProjection.VersionHeader(reading: &r).kind)
                }
                return true
            }
            return true
        }
        return kinds
    }

    /// Every version of a document, oldest first, up to `seq` when given, each with its
    /// field-level changes from the version before (RFC 6902 with old values; empty for `added`
    /// and `removed`; for `reappeared`, from the last state before the removal). With
    /// `derivingChanges` false the changes are left empty (a caller that orders the versions
    /// otherwise works them out itself).
    public func history(collection: String, key: String, upTo seq: UInt64 = .max, derivingChanges: Bool = true) throws -> [DocumentVersion] {
        var out: [DocumentVersion] = []
        let texts = StoredDocumentTexts(try storedHistory(collection: collection, key: key, upTo: seq), collection: collection, key: key, reader: self)
        for i in texts.versions.indices {
            var v = try texts.parsed(i)
            if derivingChanges, v.changes.isEmpty, v.kind == .changed || v.kind == .reappeared, let previous = out.last {
                v.changes = previous.document.diff(to: v.document)
            }
            out.append(v)
        }
        return out
    }

    /// Every version of a document, oldest first, up to `seq` when given, as stored: headers, no
    /// document decoded (``StoredDocumentTexts`` does) or parsed, no change worked out.
    public func storedHistory(collection: String, key: String, upTo seq: UInt64 = .max) throws -> [StoredDocumentVersion] {
        var out: [StoredDocumentVersion] = []
        try KeyedDocumentProjection.HistoryRow.forEachRow(collection, key, transaction, tables) { row in
            if row.seq > seq { return false }
            var done = false
            try row.forEach { at, record in
                if at > seq { done = true; return false }
                out.append(try KeyedDocumentProjection.decodeStoredVersion(seq: at, record))
                return true
            }
            return !done
        }
        return out
    }

    /// The documents of a collection (all collections when nil), ordered by key bytes, now or as
    /// of a seq. Removed documents are left out unless `includeRemoved`.
    public func states(collection: String? = nil, asOf seq: UInt64? = nil, includeRemoved: Bool = false) throws -> [DocumentState] {
        let prefix: [UInt8] = collection.map { Array($0.utf8) + [0] } ?? []
        let c = try transaction.cursor(tables["current"])
        var out: [DocumentState] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            let k = [UInt8](e.key)
            let split = k.firstIndex(of: 0)!
            let coll = String(decoding: k[..<split], as: UTF8.self)
            let key = try currentKey(e.key, after: split + 1)
            if let s = try state(collection: coll, key: key, asOf: seq), includeRemoved || !s.removed { out.append(s) }
            entry = try c.next()
        }
        // `current` is in natural order: back in key-byte order.
        out.sort { a, b in
            a.collection != b.collection
                ? Array(a.collection.utf8).lexicographicallyPrecedes(Array(b.collection.utf8))
                : Array(a.key.utf8).lexicographicallyPrecedes(Array(b.key.utf8))
        }
        return out
    }

    /// How many documents of `collection` are present now (`asOf` nil) or as of a seq: one seek
    /// in the `counts` table, whatever the collection's size.
    public func count(collection: String, asOf seq: UInt64? = nil) throws -> Int {
        try KeyedDocumentProjection.count(collection, asOf: seq ?? .max, transaction, tables)
    }

    /// One page of a collection in natural key order (numbers by value, then text; see
    /// ``KeyedDocumentProjection/naturalKey(_:)``), now or as of a seq: the documents after the
    /// key `after` (or after skipping `offset` present ones), at most `limit`. Reads only the keys
    /// it passes over and the documents it returns: a key is checked by its record's header,
    /// a document parsed only when it is returned. Removed documents are left out unless
    /// `includeRemoved` (then they count for `offset` as well).
    public func page(
        collection: String, asOf seq: UInt64? = nil, after: String? = nil, offset: Int = 0, limit: Int,
        includeRemoved: Bool = false
    ) throws -> [DocumentState] {
        let prefix = Array(collection.utf8) + [0]
        let c = try transaction.cursor(tables["current"])
        if tables.isEncrypted, let e = try c.seek(atLeast: prefix + [1]), e.key.hasPrefix(prefix + [1]) {
            return try pageOrderingTexts(collection: collection, asOf: seq, after: after, offset: offset, limit: limit, includeRemoved: includeRemoved)
        }
        var entry: Cursor.Entry?
        if let after {
            let from = prefix + KeyedDocumentProjection.storedNaturalKey(after, tables)
            entry = try c.seek(atLeast: from)
            if let e = entry, e.key.elementsEqual(from) { entry = try c.next() }
        } else {
            entry = try c.seek(atLeast: prefix)
        }
        var skip = offset
        var out: [DocumentState] = []
        // Every key the walk can return, counted at the point: once it has met them all, the rest
        // of the table holds only keys that did not exist yet, and the walk stops. (From the
        // start of the collection only: a walk from `after` cannot know how many it passed.)
        let counts = try KeyedDocumentProjection.counts(collection, asOf: seq ?? .max, transaction, tables)
        var remaining = after == nil ? (includeRemoved ? counts.ever : counts.present) : Int.max
        while out.count < limit, remaining > 0, let e = entry, e.key.hasPrefix(prefix) {
            let key = try currentKey(e.key, after: prefix.count)
            // Now: the entry's own record says it; as of a point, the key's history.
            let presence = try seq == nil ? DocumentSummary(record: e.value).removed : presence(collection: collection, key: key, asOf: seq)
            if let presence, includeRemoved || !presence {
                remaining -= 1
                if skip > 0 { skip -= 1 } else if let s = try state(collection: collection, key: key, asOf: seq) { out.append(s) }
            }
            entry = try c.next()
        }
        return out
    }

    /// ``page(collection:asOf:after:offset:limit:includeRemoved:)`` in an encrypted store whose
    /// collection has text ids: `order` holds their digests, in no order a reader can use, so
    /// every id of the collection is taken back from `~names` and put in natural order first.
    /// Reads every key of the collection (not their documents).
    private func pageOrderingTexts(
        collection: String, asOf seq: UInt64?, after: String?, offset: Int, limit: Int,
        includeRemoved: Bool
    ) throws -> [DocumentState] {
        let prefix = Array(collection.utf8) + [0]
        let c = try transaction.cursor(tables["current"])
        var keys: [String] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            keys.append(try currentKey(e.key, after: prefix.count))
            entry = try c.next()
        }
        keys = keys.map { (KeyedDocumentProjection.naturalKey($0), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map(\.1)
        var start = 0
        if let after {
            let bound = KeyedDocumentProjection.naturalKey(after)
            start = keys.firstIndex { bound.lexicographicallyPrecedes(KeyedDocumentProjection.naturalKey($0)) } ?? keys.count
        }
        var skip = after == nil ? offset : 0
        var out: [DocumentState] = []
        for key in keys[start...] where out.count < limit {
            guard let presence = try presence(collection: collection, key: key, asOf: seq), includeRemoved || !presence else { continue }
            if skip > 0 { skip -= 1 } else if let s = try state(collection: collection, key: key, asOf: seq) { out.append(s) }
        }
        return out
    }

    /// Whether the document existed at the point (nil: not yet, or never), and if so whether it
    /// was removed there (true) or present (false), from record headers only.
    func presence(collection: String, key: String, asOf seq: UInt64?) throws -> Bool? {
        guard let seq else { return try summary(collection: collection, key: key).map(\.removed) }
        guard let row = try KeyedDocumentProjection.HistoryRow.containing(collection, key, seq, transaction, tables) else { return nil }
        return try row.withLast(atMost: seq) { _, record in
            var r = ByteReader(record)
            return try KeyedDocumentProjection.VersionHeader(reading: &r).kind == .removed
        }
    }

    /// What changed in a collection between two points: documents added, removed, changed (with
    /// field-level operations from the state at `from` to the state at `to`) or back again.
    /// Documents equal at both points are left out. A key whose last change is at or before
    /// `from` is passed over on its state record alone; the others take one seek pair.
    public func diff(collection: String, from: UInt64, to: UInt64) throws -> [DocumentDiff] {
        let prefix = Array(collection.utf8) + [0]
        let c = try transaction.cursor(tables["current"])
        var out: [DocumentDiff] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            if from <= to, try DocumentSummary(record: e.value).changedSeq <= from {
                entry = try c.next()
                continue
            }
            let key = try currentKey(e.key, after: prefix.count)
            let a = try version(collection: collection, key: key, asOf: from)
            let b = try version(collection: collection, key: key, asOf: to)
            let before = a.flatMap { $0.isRemoved ? nil : $0.document }
            let after = b.flatMap { $0.isRemoved ? nil : $0.document }
            switch (before, after) {
            case (nil, let new?):
                out.append(
                    DocumentDiff(
                        key: key, kind: a == nil ? .added : .reappeared, before: nil, after: new,
                        changes: a.map { $0.document.diff(to: new) } ?? []))
            case (let old?, nil):
                out.append(DocumentDiff(key: key, kind: .removed, before: old, after: nil, changes: []))
            case (let old?, let new?) where old != new:
                out.append(DocumentDiff(key: key, kind: .changed, before: old, after: new, changes: old.diff(to: new)))
            default:
                break
            }
            entry = try c.next()
        }
        out.sort { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        return out
    }

    /// The key of a `current` entry whose collection prefix is `count` bytes.
    private func currentKey(_ raw: UnsafeRawBufferPointer, after count: Int) throws -> String {
        try KeyedDocumentProjection.key(fromNatural: UnsafeRawBufferPointer(rebasing: raw[count...]), tables, transaction)
    }

    /// The paths indexed for `collection` (see ``DocumentOperation/index(collection:paths:)``).
    public func indexedPaths(collection: String) throws -> [String] {
        guard let raw = try transaction.get(tables["indexes"], key: Array(collection.utf8)),
            case .array(let list) = try JSONValue(parsing: raw)
        else { return [] }
        return list.compactMap { if case .string(let s) = $0 { s } else { nil } }
    }

    /// The keys of the present documents whose value at `path` is `value` (a string as it is,
    /// other scalars as JSON text), in natural id order (in an encrypted store: numbers by value,
    /// then texts by digest); nil when the path is not indexed or the value cannot be indexed, so
    /// the caller must scan.
    public func keys(collection: String, path: String, equals value: String) throws -> [String]? {
        guard try indexedPaths(collection: collection).contains(path),
            KeyedDocumentProjection.indexText(.string(value)) != nil
        else { return nil }
        let prefix = KeyedDocumentProjection.indexPrefix(collection, path, value, tables)
        let c = try transaction.cursor(tables["index"])
        var out: [String] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            // The bare prefix is the value's counter, not an entry.
            if e.key.count > prefix.count {
                out.append(try KeyedDocumentProjection.key(fromNatural: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]), tables, transaction))
            }
            entry = try c.next()
        }
        return out
    }

    /// A page of the present documents whose value at `path` is `value`, in natural id order,
    /// after the key `after` or past `offset` keys, and how many there are: the value's counter
    /// and the page's entries are read, nothing else. nil when the path is not indexed or the
    /// value cannot be, so the caller must scan. In an encrypted store, whose entries follow the
    /// ids' digests, every key of the value is read and ordered.
    public func keyPage(
        collection: String, path: String, equals value: String, after: String? = nil, offset: Int = 0,
        limit: Int
    ) throws -> (total: Int, keys: [String])? {
        guard !tables.isEncrypted else {
            guard let keys = try keys(collection: collection, path: path, equals: value) else { return nil }
            return (keys.count, KeyedDocumentProjection.naturalPage(of: keys, after: after, offset: offset, limit: limit))
        }
        guard try indexedPaths(collection: collection).contains(path),
            KeyedDocumentProjection.indexText(.string(value)) != nil
        else { return nil }
        let prefix = KeyedDocumentProjection.indexPrefix(collection, path, value, tables)
        let total = try KeyedDocumentProjection.indexCount(prefix, transaction, tables)
        guard limit > 0, total > 0 else { return (total, []) }
        let c = try transaction.cursor(tables["index"])
        var entry: Cursor.Entry?
        var skip = 0
        if let after {
            let bound = prefix + KeyedDocumentProjection.naturalKey(after)
            entry = try c.seek(atLeast: bound)
            if let e = entry, e.key.elementsEqual(bound) { entry = try c.next() }
        } else {
            entry = try c.seek(atLeast: prefix)
            skip = max(0, offset)
        }
        var out: [String] = []
        while let e = entry, e.key.hasPrefix(prefix), out.count < limit {
            if e.key.count > prefix.count {
                if skip > 0 {
                    skip -= 1
                } else {
                    out.append(try KeyedDocumentProjection.key(fromNatural: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]), tables, transaction))
                }
            }
            entry = try c.next()
        }
        return (total, out)
    }

    /// The keys of the documents whose value at `path` was `value` as of `seq`, from the index's
    /// history (the keys that ever had the value, checked against their interval); nil when the
    /// path is not indexed, the value cannot be, or the index was defined after `seq`, so the
    /// caller must scan.
    public func keys(collection: String, path: String, equals value: String, asOf seq: UInt64) throws -> [String]? {
        guard try indexedPaths(collection: collection).contains(path),
            KeyedDocumentProjection.indexText(.string(value)) != nil,
            let since = try transaction.get(tables["index-history"], key: Array(collection.utf8) + [0, 0] + Array(path.utf8)),
            since.count == 8, since.withUnsafeBytes({ UInt64(bigEndianBytes: $0) }) <= seq
        else { return nil }
        let prefix = KeyedDocumentProjection.indexPrefix(collection, path, value, tables)
        let c = try transaction.cursor(tables["index-history"])
        var out: [String] = []
        var entry = try c.seek(atLeast: prefix)
        while let e = entry, e.key.hasPrefix(prefix) {
            let n = e.key.count
            let from = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[(n - 8)...]))
            let to = UInt64(bigEndianBytes: e.value)
            if from <= seq && seq < to {
                let key = try KeyedDocumentProjection.key(fromNatural: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(n - 9)]), tables, transaction)
                if out.last != key { out.append(key) }
            }
            entry = try c.next()
        }
        return out
    }

    /// A page of the present documents' keys ordered by the value at the indexed `path`:
    /// numbers by value, then strings, booleans and null by their text's UTF-8 bytes, equal values
    /// by key in natural order; documents without a scalar there come last, by key.
    /// `descending` reverses the order of those with a value (they still come last). Starts after
    /// the key `after` (nil when that key is not present) or past `offset` keys. Reads the index
    /// entries it walks and nothing else; nil when `path` is not indexed.
    public func sortedKeys(
        collection: String, path: String, descending: Bool = false, after: String? = nil,
        offset: Int = 0, limit: Int
    ) throws -> [String]? {
        guard !tables.isEncrypted, let ordinal = try indexedPaths(collection: collection).firstIndex(of: path), ordinal < 256 else { return nil }
        let prefix = Array(collection.utf8) + [0, UInt8(ordinal)]
        let c = try transaction.cursor(tables["sorted"])
        // Two runs: the keys with a value (forward, or backward when descending), then the rest.
        let missing = prefix + [2]
        var start: [UInt8]?
        if let after {
            guard let record = try summary(collection: collection, key: after), !record.removed,
                let doc = try state(collection: collection, key: after)?.document,
                let key = KeyedDocumentProjection.sortedKey(collection, ordinal, doc.value(atPath: path), after, tables)
            else { return nil }
            start = key
        }
        var out: [String] = []
        var skip = after == nil ? offset : 0
        func take(_ key: UnsafeRawBufferPointer) throws -> Bool {
            if skip > 0 { skip -= 1; return out.count < limit }
            out.append(try KeyedDocumentProjection.key(fromSorted: key, prefixCount: prefix.count, tables, transaction))
            return out.count < limit
        }
        guard limit > 0 else { return [] }
        let startsInMissing = start.map { !$0.lexicographicallyPrecedes(missing) } ?? false
        if !startsInMissing {
            if descending {
                var e: Cursor.Entry?
                if let start {
                    e = try c.seek(atLeast: start)
                    if e != nil, e!.key.elementsEqual(start) { e = try c.previous() } else { e = e == nil ? try c.last() : try c.previous() }
                } else {
                    e = try c.seek(atLeast: missing)
                    e = e == nil ? try c.last() : try c.previous()
                }
                while let entry = e, entry.key.hasPrefix(prefix) {
                    if try !take(entry.key) { return out }
                    e = try c.previous()
                }
            } else {
                var e = try c.seek(atLeast: start ?? prefix)
                if let s = start, let entry = e, entry.key.elementsEqual(s) { e = try c.next() }
                while let entry = e, entry.key.hasPrefix(prefix), entry.key.lexicographicallyPrecedes(missing) {
                    if try !take(entry.key) { return out }
                    e = try c.next()
                }
            }
        }
        var e = try c.seek(atLeast: startsInMissing ? start! : missing)
        if startsInMissing, let s = start, let entry = e, entry.key.elementsEqual(s) { e = try c.next() }
        while let entry = e, entry.key.hasPrefix(missing) {
            if try !take(entry.key) { return out }
            e = try c.next()
        }
        return out
    }

    /// The present documents' keys whose number at the indexed `path` lies between `lower` and
    /// `upper` (nil: unbounded; each inclusive unless said), now, in the value's order; then the
    /// keys of the documents with no scalar there (absent, or an array or object: a path may reach
    /// a number inside one), which a caller checks itself. Reads only the index entries it walks.
    /// nil when `path` is not indexed (or the store is encrypted: it keeps no sorted index).
    public func keysInRange(
        collection: String, path: String, lower: Double?, upper: Double?, lowerInclusive: Bool = true, upperInclusive: Bool = true
    ) throws -> (inRange: [String], unsorted: [String])? {
        guard !tables.isEncrypted, let ordinal = try indexedPaths(collection: collection).firstIndex(of: path), ordinal < 256 else { return nil }
        let prefix = Array(collection.utf8) + [0, UInt8(ordinal)]
        let numbers = prefix + [0]
        let c = try transaction.cursor(tables["sorted"])
        var inRange: [String] = []
        var e = try c.seek(atLeast: numbers + (lower.map { KeyedDocumentProjection.orderedBits($0).bigEndianBytes } ?? []))
        let bottom = lower.map { KeyedDocumentProjection.orderedBits($0) }
        let top = upper.map { KeyedDocumentProjection.orderedBits($0) }
        while let entry = e, entry.key.hasPrefix(numbers), entry.key.count >= numbers.count + 8 {
            let bits = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: entry.key[numbers.count..<(numbers.count + 8)]))
            if let top, bits > top || (bits == top && !upperInclusive) { break }
            if bits != bottom || lowerInclusive {
                inRange.append(try KeyedDocumentProjection.key(fromSorted: entry.key, prefixCount: prefix.count, tables, transaction))
            }
            e = try c.next()
        }
        return (inRange, try unsortedKeys(prefix))
    }

    /// The present documents whose value at the indexed `path` is no scalar (absent, an array or
    /// an object), from the sorted index; nil when it keeps none for `path`.
    public func unsortedKeys(collection: String, path: String) throws -> [String]? {
        guard !tables.isEncrypted, let ordinal = try indexedPaths(collection: collection).firstIndex(of: path), ordinal < 256 else { return nil }
        return try unsortedKeys(Array(collection.utf8) + [0, UInt8(ordinal)])
    }

    private func unsortedKeys(_ prefix: [UInt8]) throws -> [String] {
        let c = try transaction.cursor(tables["sorted"])
        var unsorted: [String] = []
        let missing = prefix + [2]
        var e = try c.seek(atLeast: missing)
        while let entry = e, entry.key.hasPrefix(missing) {
            unsorted.append(try KeyedDocumentProjection.key(fromSorted: entry.key, prefixCount: prefix.count, tables, transaction))
            e = try c.next()
        }
        return unsorted
    }

    /// Each value the present documents hold at the indexed `path` (an array: each element), with
    /// how many documents hold it and one of them, now, from the value index's counters: a facet
    /// without reading the documents. nil when `path` is not indexed or the store is encrypted
    /// (its index keys are digests of the values).
    public func valueCounts(collection: String, path: String) throws -> [(text: String, count: Int, example: String)]? {
        guard !tables.isEncrypted, try indexedPaths(collection: collection).contains(path) else { return nil }
        let base = Array(collection.utf8) + [0] + Array(path.utf8) + [0]
        let c = try transaction.cursor(tables["index"])
        var out: [(text: String, count: Int, example: String)] = []
        var e = try c.seek(atLeast: base)
        while let entry = e, entry.key.hasPrefix(base) {
            let key = [UInt8](entry.key)
            // A value's counter sits at its prefix (`… value 0x00`), before its members.
            guard key.last == 0, entry.value.count == 8 else {
                e = try c.next()
                continue
            }
            let count = Int(UInt64(bigEndianBytes: entry.value))
            let first = try c.next()
            if count > 0, let member = first, member.key.hasPrefix(key), member.key.count > key.count {
                let example = try KeyedDocumentProjection.key(fromNatural: UnsafeRawBufferPointer(rebasing: member.key[key.count...]), tables, transaction)
                out.append((String(decoding: key[base.count..<(key.count - 1)], as: UTF8.self), count, example))
            }
            // Past this value's members: the next key that does not start with its prefix.
            e = try c.seek(atLeast: Array(key.dropLast()) + [1])
        }
        return out
    }

    /// The names of the collections that have documents.
    public func collections() throws -> [String] {
        let c = try transaction.cursor(tables["current"])
        var out: [String] = []
        var entry = try c.first()
        while let e = entry {
            let k = [UInt8](e.key)
            let split = k.firstIndex(of: 0)!
            out.append(String(decoding: k[..<split], as: UTF8.self))
            // Skip to the next collection: the first key after `collection 0x00 ...` is `collection 0x01`.
            entry = try c.seek(atLeast: Array(k[..<split]) + [1])
        }
        return out
    }
}

/// A document's current bookkeeping: its version, when it was first seen, changed and last seen,
/// and whether it is removed.
public struct DocumentSummary: Sendable, Hashable {
    public var version: Int
    public var firstSeq: UInt64
    public var changedSeq: UInt64
    public var lastSeenSeq: UInt64
    public var removed: Bool

    init(record raw: UnsafeRawBufferPointer) throws {
        var r = ByteReader(raw)
        try self.init(reading: &r)
    }

    /// Reads the header of a `current` record (everything before the document).
    init(reading r: inout ByteReader) throws {
        version = Int(try r.varint())
        firstSeq = try r.varint()
        changedSeq = try r.varint()
        lastSeenSeq = try r.varint()
        removed = try r.u8() != 0
    }
}

/// One document's difference between two points of the log.
public struct DocumentDiff: Sendable, Hashable {
    public var key: String
    /// `added` (absent before), `removed` (absent after), `changed`, or `reappeared` (removed
    /// before, present after; `changes` are from its last state before removal).
    public var kind: ChangeKind
    public var before: JSONValue?
    public var after: JSONValue?
    public var changes: [PatchOperation]
}

extension EventStore {
    /// Runs `body` with a ``DocumentReader`` over projection `projection` in one read snapshot.
    public func documents<T: Sendable>(projection: String = "documents", _ body: @escaping @Sendable (DocumentReader) throws -> T) async throws -> T {
        let tables = try self.tables(of: projection)
        return try await read { txn in try body(DocumentReader(transaction: txn, tables: tables)) }
    }
}
