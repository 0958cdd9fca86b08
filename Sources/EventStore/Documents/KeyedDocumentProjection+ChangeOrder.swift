import Foundation
import LMDB

// `changed`: which keys each event wrote a version of, and how, in the order of the log, for a
// projection that keeps it (``KeyedDocumentProjection/keepsChangeOrder``): a walk of a span's
// changes reads the span's rows, not every key's history, and knows each version's kind without
// a seek.

extension KeyedDocumentProjection {
    /// Remembers that the version `hk` names (`collection 0x00 key 0x00 seq`) was written, and
    /// its kind: the key part joins its collection's list for the event, written by
    /// ``flushChangeOrder(_:_:)``.
    static func noteChange(_ hk: UnsafeRawBufferPointer, _ kind: ChangeKind, _ memo: DocumentFold) {
        guard let split = hk.firstIndex(of: 0) else { return }
        let collection = UnsafeRawBufferPointer(rebasing: hk[..<split])
        let key = UnsafeRawBufferPointer(rebasing: hk[(split + 1)..<(hk.count - 9)])
        // An event almost always writes one collection: a short list, compared by bytes.
        let i =
            memo.changeOrder.firstIndex { $0.collection.elementsEqual(collection) }
            ?? {
                memo.changeOrder.append(([UInt8](collection), []))
                return memo.changeOrder.count - 1
            }()
        memo.changeOrder[i].keys.append(kind.code)
        ByteWriter.varint(UInt64(key.count)) { memo.changeOrder[i].keys.append($0) }
        memo.changeOrder[i].keys.append(contentsOf: key)
    }

    /// Writes the event's `changed` rows: `collection 0x00 seq(u64be)` → `u8 kind, varint n,
    /// n bytes` per version, by key in natural order (the key's stored part: its digest
    /// in an encrypted store, as in `history`).
    static func flushChangeOrder(_ seq: UInt64, _ ctx: ProjectionContext) throws {
        for (collection, keys) in ctx.memo.changeOrder where !keys.isEmpty {
            let value = ctx.tables.isEncrypted ? keys : compressedChangeRow(try naturalOrder(keys))
            try ctx.transaction.put(ctx.tables["changed"], key: collection + [0] + seq.bigEndianBytes, value: value)
        }
        ctx.memo.changeOrder.removeAll(keepingCapacity: true)
    }

    /// The first byte of a compressed `changed` row: `0x01 | varint n | frame` (zstd level 9,
    /// magicless, no content size) of the row's n bytes. A row's own first byte is a kind
    /// (0x80…0x83).
    static let compressedChangeRowMark: UInt8 = 0x01
    /// Rows from 64 bytes to 64 KiB are compressed when that makes them smaller: a scrape of a
    /// list that items come and go from writes a row of hundreds of keys whose numbers share
    /// their first digits (the outages history's rows: 0.76 MB, 0.30 MB compressed); a larger
    /// row stays as it is, so a walk that wants the first few versions of a 200,000-version
    /// event decodes no other (an encrypted store's rows, digests, stay as they are too).
    static let compressedChangeRowLimits = 64...(64 << 10)

    static func compressedChangeRow(_ row: [UInt8]) -> [UInt8] {
        guard compressedChangeRowLimits.contains(row.count) else { return row }
        return CompressedValue.framed(row, mark: compressedChangeRowMark, level: 9, keeping: { $0 + 4 < row.count }) ?? row
    }

    /// A row's entries in the keys' natural order (numbers by value, then text: as ids are
    /// read), so a walk hands an event's changes on as it reads them, unsorted. (An encrypted
    /// store's rows hold digests, in no order a reader can use: its walk sorts.)
    static func naturalOrder(_ row: [UInt8]) throws -> [UInt8] {
        var entries: [(natural: [UInt8], range: Range<Int>)] = []
        try row.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            while !r.isAtEnd {
                let start = r.offset
                _ = try r.u8()
                let key = try r.slice(Int(try r.varint()))
                entries.append((naturalKey(String(decoding: key, as: UTF8.self)), start..<r.offset))
            }
        }
        entries.sort { $0.natural.lexicographicallyPrecedes($1.natural) }
        var out: [UInt8] = []
        out.reserveCapacity(row.count)
        for e in entries { out.append(contentsOf: row[e.range]) }
        return out
    }
}

/// A walk of a collection's `changed` rows in seq order (``DocumentReader/changeOrder(collection:after:upTo:)``).
public struct ChangeOrderWalk {
    let reader: DocumentReader
    let prefix: [UInt8]
    let upTo: UInt64
    let cursor: Cursor
    var entry: Cursor.Entry?

    /// The next seq that wrote versions, and its row; nil after the span's last.
    public mutating func next() throws -> (seq: UInt64, row: ChangeRow)? {
        guard let e = entry, e.key.count == prefix.count + 8, e.key.hasPrefix(prefix) else { return nil }
        let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
        guard seq <= upTo else { entry = nil; return nil }
        entry = try cursor.next()
        guard e.value.first == KeyedDocumentProjection.compressedChangeRowMark else {
            return (seq, ChangeRow(seq: seq, reader: ByteReader(e.value), owner: nil))
        }
        var r = ByteReader(e.value)
        do {
            _ = try r.u8()
            let size = try r.varint()
            guard KeyedDocumentProjection.compressedChangeRowLimits.contains(Int(clamping: size)) else { throw ByteReader.Truncated() }
            let owner = KeyedDocumentProjection.OwnedBytes(count: Int(size))
            let frame = UnsafeRawBufferPointer(rebasing: e.value[r.offset...])
            try ZstdContext.pooled { try $0.decompress(frame, prefix: UnsafeRawBufferPointer(start: nil, count: 0), into: owner.buffer, size: Int(size)) }
            return (seq, ChangeRow(seq: seq, reader: ByteReader(UnsafeRawBufferPointer(rebasing: owner.buffer[..<Int(size)])), owner: owner))
        } catch {
            throw EventStoreError.corrupted("the change-order row at seq \(seq) does not decompress")
        }
    }
}

/// One event's versions of a collection, each a kind and the key's stored bytes, by key in
/// natural order (in an encrypted store, by digest), read one at a time: a walk that wants the
/// first few of a 200,000-version event, or only its changes, decodes no other key. The bytes are
/// the read transaction's, valid while it lasts.
public struct ChangeRow {
    let seq: UInt64
    var reader: ByteReader
    /// The decompressed bytes of a compressed row, which `reader` reads.
    let owner: KeyedDocumentProjection.OwnedBytes?

    /// The next version's kind and stored key bytes (``TableSet/reveal(_:in:)`` gives its text).
    public mutating func next() throws -> (key: UnsafeRawBufferPointer, kind: ChangeKind)? {
        guard !reader.isAtEnd else { return nil }
        guard let kind = ChangeKind(code: try reader.u8()) else { throw EventStoreError.corrupted("a change-order row at seq \(seq) has an unknown kind") }
        return (try reader.slice(Int(try reader.varint())), kind)
    }
}

extension DocumentReader {
    /// The versions of `collection` written after `after` up to `upTo`, seq by seq
    /// (``ChangeOrderWalk``); nil when the projection does not keep the change order (the
    /// caller walks the keys' histories instead).
    public func changeOrder(collection: String, after: UInt64, upTo: UInt64) throws -> ChangeOrderWalk? {
        guard let table = tables.table(named: "changed") else { return nil }
        let prefix = Array(collection.utf8) + [0]
        let c = try transaction.cursor(table)
        let first = try after == .max ? nil : c.seek(atLeast: prefix + (after + 1).bigEndianBytes)
        return ChangeOrderWalk(reader: self, prefix: prefix, upTo: upTo, cursor: c, entry: first)
    }
}
