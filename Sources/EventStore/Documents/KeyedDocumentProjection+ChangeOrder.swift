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
            if ctx.tables.isEncrypted {
                try ctx.transaction.put(ctx.tables["changed"], key: collection + [0] + seq.bigEndianBytes, value: keys)
            } else {
                try appendChangeRow(try naturalOrder(keys), collection: collection, seq: seq, ctx)
            }
        }
        ctx.memo.changeOrder.removeAll(keepingCapacity: true)
    }

    /// Rows of consecutive events are compressed together (the same keys change event after
    /// event: the outages history's rows took 0.44 MB compressed one by one, 0.18 MB so, and the
    /// incidents history's 0.23 MB, 0.03 MB). A row of at most ``changeBlockBytes`` waits, plain,
    /// for the rows after it; the waiting rows become one block (``changeBlockMark``) when they
    /// are ``changeBlockRows`` or the next would take them past ``changeBlockBytes``, or a larger
    /// row comes (it is stored alone, compressed when that is smaller, as is a waiting row left
    /// alone). `collection 0x00 seq 0` (no event has seq 0) counts the rows waiting, so an append
    /// reads one row to know; a read decompresses at most ``changeBlockBytes``. In a plain store
    /// only: an encrypted store's rows hold digests, stored as they are.
    static let changeBlockRows = 64
    static let changeBlockBytes = 8 << 10
    /// `0x02 | varint count | (count − 1) × varint (seq − the seq before) | count × varint row
    /// length | varint n | frame` (zstd level 9, magicless, no content size) of the rows' n
    /// bytes, under the first row's seq.
    static let changeBlockMark: UInt8 = 0x02

    private static func appendChangeRow(_ row: [UInt8], collection: [UInt8], seq: UInt64, _ ctx: ProjectionContext) throws {
        let txn = ctx.transaction, db = ctx.tables["changed"]
        let waitingKey = collection + [0] + UInt64(0).bigEndianBytes
        var waiting = (count: 0, bytes: 0)
        if let raw = try txn.get(db, key: waitingKey) {
            do {
                try raw.withUnsafeBytes { raw in
                    var r = ByteReader(raw)
                    waiting = (Int(clamping: try r.varint()), Int(clamping: try r.varint()))
                }
            } catch {
                throw EventStoreError.corrupted("the count of change-order rows waiting for their block is damaged; rebuild the projection")
            }
        }
        if waiting.count > 0, row.count > changeBlockBytes || waiting.bytes + row.count > changeBlockBytes {
            try closeChangeBlock(collection: collection, count: waiting.count, txn, db)
            waiting = (0, 0)
        }
        let key = collection + [0] + seq.bigEndianBytes
        if row.count > changeBlockBytes {
            try txn.put(db, key: key, value: compressedChangeRow(row))
        } else {
            try txn.put(db, key: key, value: row)
            waiting = (waiting.count + 1, waiting.bytes + row.count)
            if waiting.count == changeBlockRows {
                try closeChangeBlock(collection: collection, count: waiting.count, txn, db)
                waiting = (0, 0)
            }
        }
        if waiting.count == 0 {
            try txn.delete(db, key: waitingKey)
        } else {
            var w = ByteWriter(capacity: 8)
            w.varint(waiting.count)
            w.varint(waiting.bytes)
            try txn.put(db, key: waitingKey, value: w.bytes)
        }
    }

    /// Makes the collection's last `count` rows (the waiting ones, plain) one block, or a row
    /// stored alone when `count` is 1.
    private static func closeChangeBlock(collection: [UInt8], count: Int, _ txn: Transaction, _ db: Database) throws {
        let prefix = collection + [0]
        let c = try txn.cursor(db)
        var rows: [(seq: UInt64, row: [UInt8])] = []
        var entry = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 8))
        while rows.count < count, let e = entry, e.key.count == prefix.count + 8, e.key.hasPrefix(prefix) {
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
            guard seq > 0, e.value.first.map({ $0 >= 0x80 }) == true else { break }
            rows.append((seq, [UInt8](e.value)))
            entry = try c.previous()
        }
        guard rows.count == count else {
            throw EventStoreError.corrupted("the change-order rows waiting for their block are not the \(count) the count says")
        }
        rows.reverse()
        if count == 1 {
            try txn.put(db, key: prefix + rows[0].seq.bigEndianBytes, value: compressedChangeRow(rows[0].row))
            return
        }
        let joined = rows.flatMap(\.row)
        guard let frame = ZstdContext.pooled({ $0.compress(joined, prefix: [], level: 9) }) else {
            throw EventStoreError.corrupted("a change-order block of \(joined.count) bytes does not compress")
        }
        var w = ByteWriter(capacity: frame.count + 4 * count + 16)
        w.u8(changeBlockMark)
        w.varint(count)
        for i in 1..<count { w.varint(rows[i].seq - rows[i - 1].seq) }
        for r in rows { w.varint(r.row.count) }
        w.varint(joined.count)
        w.raw(frame)
        for r in rows.dropFirst() { try txn.delete(db, key: prefix + r.seq.bigEndianBytes) }
        try txn.put(db, key: prefix + rows[0].seq.bigEndianBytes, value: w.bytes)
    }

    /// The rows of a block stored under `first`: their seqs and their bytes in `owner`.
    static func changeBlock(_ stored: UnsafeRawBufferPointer, first: UInt64) throws -> (rows: [(seq: UInt64, range: Range<Int>)], owner: OwnedBytes) {
        var r = ByteReader(stored)
        do {
            guard try r.u8() == changeBlockMark else { throw ByteReader.Truncated() }
            let count = Int(clamping: try r.varint())
            guard (2...changeBlockRows).contains(count) else { throw ByteReader.Truncated() }
            var seqs = [first]
            for _ in 1..<count {
                let gap = try r.varint()
                guard gap > 0, gap <= UInt64.max - seqs.last! else { throw ByteReader.Truncated() }
                seqs.append(seqs.last! + gap)
            }
            var rows: [(UInt64, Range<Int>)] = []
            var at = 0
            for seq in seqs {
                let n = Int(clamping: try r.varint())
                guard n > 0, n <= changeBlockBytes else { throw ByteReader.Truncated() }
                rows.append((seq, at..<(at + n)))
                at += n
            }
            guard try r.varint() == UInt64(at) else { throw ByteReader.Truncated() }
            let owner = OwnedBytes(count: at)
            let frame = UnsafeRawBufferPointer(rebasing: stored[r.offset...])
            try ZstdContext.pooled { try $0.decompress(frame, prefix: UnsafeRawBufferPointer(start: nil, count: 0), into: owner.buffer, size: at) }
            return (rows, owner)
        } catch {
            throw EventStoreError.corrupted("the change-order block at seq \(first) is damaged")
        }
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
    let after: UInt64
    let upTo: UInt64
    let cursor: Cursor
    var entry: Cursor.Entry?
    /// The rows of the block being walked, from `blockIndex` on.
    var block: (rows: [(seq: UInt64, range: Range<Int>)], owner: KeyedDocumentProjection.OwnedBytes)?
    var blockIndex = 0

    /// The next seq that wrote versions, and its row; nil after the span's last.
    public mutating func next() throws -> (seq: UInt64, row: ChangeRow)? {
        while true {
            if let block {
                if blockIndex < block.rows.count {
                    let (seq, range) = block.rows[blockIndex]
                    blockIndex += 1
                    if seq <= after { continue }
                    guard seq <= upTo else { self.block = nil; entry = nil; return nil }
                    let bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(block.owner.buffer)[range])
                    return (seq, ChangeRow(seq: seq, reader: ByteReader(bytes), owner: block.owner))
                }
                self.block = nil
            }
            guard let e = entry, e.key.count == prefix.count + 8, e.key.hasPrefix(prefix) else { return nil }
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]))
            guard seq <= upTo else { entry = nil; return nil }
            entry = try cursor.next()
            // Seq 0 counts the rows waiting for a block.
            if seq == 0 { continue }
            switch e.value.first {
            case KeyedDocumentProjection.changeBlockMark:
                block = try KeyedDocumentProjection.changeBlock(e.value, first: seq)
                blockIndex = 0
                continue
            case KeyedDocumentProjection.compressedChangeRowMark:
                break
            default:
                if seq <= after { continue }
                return (seq, ChangeRow(seq: seq, reader: ByteReader(e.value), owner: nil))
            }
            if seq <= after { continue }
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
        guard after < .max else { return ChangeOrderWalk(reader: self, prefix: prefix, after: after, upTo: upTo, cursor: c, entry: nil) }
        // A block that starts at or before `after` may hold the rows after it.
        var first = try c.seek(atMost: prefix + (after + 1).bigEndianBytes)
        if let e = first, e.key.count == prefix.count + 8, e.key.hasPrefix(prefix), e.value.first == KeyedDocumentProjection.changeBlockMark,
            UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count...])) > 0
        {
            // The block's own entry: the walk starts there and passes over its rows up to `after`.
        } else {
            first = try c.seek(atLeast: prefix + (after + 1).bigEndianBytes)
        }
        return ChangeOrderWalk(reader: self, prefix: prefix, after: after, upTo: upTo, cursor: c, entry: first)
    }
}
