import Foundation
import LMDB

// The collection's counts as of any seq (`counts`) and the natural order of its keys (`current`).

extension KeyedDocumentProjection {
    /// Adds `delta` to the collection's present count (and one to its count of keys ever seen
    /// when `added`), as of `seq`: one row per changing event.
    func adjustCount(_ collection: String, by delta: Int, added: Bool = false, _ seq: UInt64, _ ctx: ProjectionContext) throws {
        // Read from the table every time, not remembered: a nested transaction that aborts
        // (an event quarantined) takes its count rows with it.
        // One cursor per context, as for `current`: no cursor opened and freed per event.
        let cursor = try ctx.memo.countsCursor ?? ctx.transaction.cursor(ctx.tables["counts"])
        ctx.memo.countsCursor = cursor
        try CountBlocks.update(Array(collection.utf8) + [0], seq: seq, width: 2, cursor) { old in
            let present = Int(clamping: old?[0] ?? 0), ever = old?[1] ?? 0
            return [UInt64(max(0, present + delta)), ever + (added ? 1 : 0)]
        }
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
    static func counts(prefix: [UInt8], asOf seq: UInt64, _ c: Cursor) throws -> (present: Int, ever: Int) {
        guard let v = try CountBlocks.values(prefix, asOf: seq, width: 2, c) else { return (0, 0) }
        return (Int(clamping: v[0]), Int(clamping: v[1]))
    }

    /// The sort key that puts keys in the order people read ids: keys that are whole numbers
    /// (`UInt64(key)`) by value, then the rest by their UTF-8 bytes; of equal numbers, the one
    /// written as `String(value)` ("7") first, then the others ("+7", "07") by bytes. A number
    /// is `0x00 | u8 n | its n big-endian bytes, no leading zero byte` (so a shorter number sorts
    /// first), then, when the key is not `String(value)`, the key's bytes; any other key is
    /// `0x01 key`. The key is always recoverable. A seven-digit id takes 5 bytes (16 before
    /// items 29: `0x00 u64be key`).
    public static func naturalKey(_ key: String) -> [UInt8] {
        var out: [UInt8] = []
        appendNaturalKey(key, text: nil, to: &out)
        return out
    }

    /// Appends ``naturalKey(_:)`` to `out`, with `text` (an encrypted store's digest of the key)
    /// in place of the key's bytes when given; a number's digest is kept whatever its spelling.
    /// One append per part: it runs for every put.
    static func appendNaturalKey(_ key: String, text: [UInt8]?, to out: inout [UInt8]) {
        guard let n = UInt64(key) else {
            out.append(1)
            if let text { out.append(contentsOf: text) } else { out.append(contentsOf: key.utf8) }
            return
        }
        let count = (64 - n.leadingZeroBitCount + 7) / 8
        out.append(0)
        out.append(UInt8(count))
        for i in stride(from: count - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: n >> (8 * UInt64(i)))) }
        if let text {
            out.append(contentsOf: text)
        } else if !isPlainNumber(key) {
            out.append(contentsOf: key.utf8)
        }
    }

    /// Whether a key that parses as a `UInt64` is written as `String(value)`: no sign, no
    /// leading zero (what the parse accepts besides digits is a leading `+` or `-`).
    static func isPlainNumber(_ key: String) -> Bool {
        guard let first = key.utf8.first else { return false }
        return (first >= UInt8(ascii: "1") && first <= UInt8(ascii: "9")) || key == "0"
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
        guard raw.first == 0 else { return try tables.reveal(UnsafeRawBufferPointer(rebasing: raw[min(1, raw.count)...]), in: txn) }
        guard raw.count >= 2, raw[1] <= 8, raw.count >= 2 + Int(raw[1]) else { throw EventStoreError.corrupted("a natural key is truncated") }
        let end = 2 + Int(raw[1])
        // The key as written, when it is not the number's own spelling (in an encrypted store,
        // its digest: every number key keeps one).
        if end < raw.count { return try tables.reveal(UnsafeRawBufferPointer(rebasing: raw[end...]), in: txn) }
        var n: UInt64 = 0
        for b in raw[2..<end] { n = n << 8 | UInt64(b) }
        return String(n)
    }

    /// ``naturalKey(_:)`` as a table stores it: in an encrypted store the id after the prefix is
    /// its digest (``TableSet/text(_:)``), so numbers keep their order and texts follow their
    /// digests' order.
    static func storedNaturalKey(_ key: String, _ tables: TableSet) -> [UInt8] {
        var out: [UInt8] = []
        appendNaturalKey(key, text: tables.isEncrypted ? tables.text(key) : nil, to: &out)
        return out
    }
}
