import Foundation
import LMDB

// Field indexes (`index`, `indexes`, `index-history`) and the sorted index (`sorted`).

extension KeyedDocumentProjection {
    /// The collection's indexed paths; read once per context (``defineIndex`` keeps the memo).
    func indexedPaths(_ collection: String, _ ctx: ProjectionContext) throws -> [String] {
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

    func defineIndex(_ collection: String, paths: [String], _ seq: UInt64, _ ctx: ProjectionContext) throws {
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
                let key = try Self.key(fromNatural: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]), ctx.tables, txn)
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
    func updateIndex(
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
    public static func indexText(_ value: JSONValue?) -> String? {
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
}
