import LMDB

/// Blocks: closed rows of `history-packed` compressed together, up to what one read decompresses.
///
/// A solid row compressed alone pays for what it shares with the rows that closed beside it: the
/// field names and values its collection repeats (a list of outages: 23,500 rows of 180 bytes,
/// each about 2 KB of columns), the seqs and times of the events every row of the schema's field
/// counts saw. Against an anchor row's first 32 KiB (the layout before blocks) a row found some of
/// that; in a block, every row after the first finds it in the rows before it. On the outages
/// history the blocks hold the item history's rows in 2.87 MB instead of 4.81, and the schema's
/// in 0.59 MB instead of 1.15 (docs/benchmarks.md, "Real scraping histories").
///
/// A closed row of two versions or more whose columns fit ``blockLimit`` (``solidColumns(_:seq:)``)
/// first waits as a solid row of its own under its number, compressed fast (``pendingLevel``).
/// When the next such row would take the waiting rows' columns past ``blockLimit``, or any other
/// row closes (one that stays plain: one version, or more text than ``solidTextLimit``; or one
/// larger than ``blockLimit``, written at once as a block of its own), the waiting rows become one
/// block, stored under the number of the first of them, and their own entries go: a block holds
/// consecutive numbers. Which rows a block holds follows from the rows alone, never from where a
/// batch or a transaction ended, so a rebuild writes the same blocks. Number 0, which no row
/// takes, holds how many rows wait and their columns' length, so an append does not walk back to
/// count them.
///
/// ```
/// entry: u8 3 | varint count | varint offset in the stream | varint length
/// in the stream: u8 3 | varint count | count × varint columns length | varint n |
///   frame (zstd, magicless, no content size) of n bytes: every row's columns
///   (``encodeColumns(_:)``), in number order
/// ```
/// The blocks follow each other in a stream of chunks of ``chunkSize`` bytes under keys `0xFF,
/// u64be index`, after every number; a block's entry, under the number of its first row, says
/// where it is. A read of row `number` seeks the last entry at or before it: the row's own, or
/// the entry of the block that holds it, whose bytes it reads from the stream and decompresses up
/// to that row's end.
extension KeyedDocumentProjection.HistoryRow {
    static let blockMark: UInt8 = 0x03
    /// The most columns a block of several rows holds, so the most a read of a row in one
    /// decompresses (about 40 µs): a row of 32 versions of 4 KB documents fits, with its headers.
    /// A larger row (up to ``solidTextLimit`` of documents) is a block of its own.
    static let blockLimit = (128 << 10) + (8 << 10)
    /// The most columns any block holds: a block of one row of ``solidTextLimit`` of documents and
    /// their headers.
    static let blockColumnsLimit = solidTextLimit + (64 << 10)
    /// The level of a block of several rows. Their columns are many versions of small documents,
    /// where zstd's level 15 finds what 9 misses: on the `items` workload's 116 blocks, 1.50 MB at
    /// 9, 1.50 at 14, 1.38 at 15, 1.37 at 16; on the outages history's 371, 2.70, 2.70, 2.52, 2.52
    /// MB. Compressing them takes 10 times as long (1.4 s and 3.1 s of an import, against 15–16×
    /// less than git-history's); reading them, no longer.
    static let blockLevel: Int32 = 15
    /// The level of a block of one large row (more than ``blockLimit`` of columns: a few versions
    /// of large documents), where 15 saved 3% of the incidents history's blocks of one row for 17
    /// times the time.
    static let largeBlockLevel: Int32 = 9
    /// A waiting row is compressed a second time, into its block: the first time is only for the
    /// rows still waiting when an append ends, so it is the fastest level.
    static let pendingLevel: Int32 = 1
    /// The key of the waiting rows' count and length: number 0.
    static let pendingKey = [UInt8](repeating: 0, count: 8)

    /// The rows waiting for their block: how many, and their columns' length.
    struct Pending: Equatable {
        var count = 0
        var columns = 0

        init(count: Int = 0, columns: Int = 0) {
            self.count = count
            self.columns = columns
        }

        init(_ txn: Transaction, _ db: Database) throws {
            guard let stored = try txn.get(db, key: KeyedDocumentProjection.HistoryRow.pendingKey) else { return }
            try stored.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                count = try KeyedDocumentProjection.HistoryRow.bounded(&r, 1 << 20)
                columns = try KeyedDocumentProjection.HistoryRow.bounded(&r, 1 << 40)
            }
        }

        func write(_ txn: Transaction, _ db: Database) throws {
            var w = ByteWriter(capacity: 8)
            w.varint(count)
            w.varint(columns)
            _ = try txn.put(db, key: KeyedDocumentProjection.HistoryRow.pendingKey, value: w.bytes)
        }
    }

    /// Makes the `pending.count` waiting rows, the last rows of `history-packed`, one block under
    /// the number of the first of them.
    static func closeBlock(_ pending: Pending, _ txn: Transaction, _ db: Database) throws {
        guard pending.count > 0 else { return }
        var rows: [(number: UInt64, columns: [UInt8])] = []
        let c = try txn.cursor(db)
        var e = try lastNumbered(c)
        while rows.count < pending.count {
            guard let entry = e, entry.key.count == 8, entry.value.first == solidMark else {
                throw EventStoreError.corrupted("history-packed does not end with the \(pending.count) rows waiting for a block")
            }
            rows.append((UInt64(bigEndianBytes: entry.key), try columns(ofSolid: entry.value)))
            e = try c.previous()
        }
        rows.reverse()
        guard rows[0].number > 0, rows.last!.number - rows[0].number == UInt64(rows.count - 1) else {
            throw EventStoreError.corrupted("the rows waiting for a block in history-packed are not consecutive")
        }
        for row in rows { _ = try txn.delete(db, key: row.number.bigEndianBytes) }
        try writeBlock(rows, txn, db)
    }

    /// Writes the rows (consecutive numbers, each its columns) as one block: its bytes to the
    /// stream, its entry under the first number.
    static func writeBlock(_ rows: [(number: UInt64, columns: [UInt8])], _ txn: Transaction, _ db: Database) throws {
        let joined = rows.flatMap(\.columns)
        var w = ByteWriter(capacity: joined.count / 3 + 16 + 3 * rows.count)
        w.u8(blockMark)
        w.varint(rows.count)
        for row in rows { w.varint(row.columns.count) }
        w.varint(joined.count)
        let level = rows.count > 1 ? blockLevel : largeBlockLevel
        guard let frame = ZstdContext.pooled({ $0.compress(joined, prefix: [], level: level) }) else {
            throw EventStoreError.corrupted("a history block of \(joined.count) bytes does not compress")
        }
        w.raw(frame)
        let offset = try appendToStream(w.bytes, txn, db)
        var entry = ByteWriter(capacity: 24)
        entry.u8(blockMark)
        entry.varint(rows.count)
        entry.varint(offset)
        entry.varint(w.bytes.count)
        _ = try txn.put(db, key: rows[0].number.bigEndianBytes, value: entry.bytes)
    }

    /// The bytes of a stream chunk: LMDB keeps a value of up to about 2,020 bytes (with its
    /// 9-byte key) in a leaf page, two to a page, and a larger one on whole pages of its own. A
    /// block of 9 KB took three pages (2.5 KB unused on average, 0.24 MB of the incidents
    /// history's 1.27 MB of item blocks); cut into chunks of its own, each block's last chunk
    /// left half a page. So blocks follow each other in one stream of chunks that fill their
    /// pages, two each, sealed too (28 bytes more each), and a block's entry says where it is.
    static let chunkSize = 1_992
    /// The first byte of a stream chunk's key, after every number's.
    static let streamMark: UInt8 = 0xFF

    /// The last entry before the stream: the last row or block, or number 0.
    static func lastNumbered(_ c: Cursor) throws -> Cursor.Entry? {
        guard try c.seek(atLeast: [streamMark]) != nil else { return try c.last() }
        return try c.previous()
    }

    static func chunkKey(_ index: UInt64) -> [UInt8] { [streamMark] + index.bigEndianBytes }

    /// Appends `bytes` to the stream: the last chunk is filled first, then new ones follow.
    /// Returns where they start.
    static func appendToStream(_ bytes: [UInt8], _ txn: Transaction, _ db: Database) throws -> UInt64 {
        let c = try txn.cursor(db)
        var index: UInt64 = 0
        var tail: [UInt8] = []
        if let last = try c.last(), last.key.count == 9, last.key.first == streamMark {
            index = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: last.key[1...]))
            tail = [UInt8](last.value)
            guard !tail.isEmpty, tail.count <= chunkSize else {
                throw EventStoreError.corrupted("the last chunk of history-packed's stream is \(tail.count) bytes")
            }
        }
        let offset = index * UInt64(chunkSize) + UInt64(tail.count)
        var at = 0
        if !tail.isEmpty, tail.count < chunkSize {
            at = min(chunkSize - tail.count, bytes.count)
            _ = try txn.put(db, key: chunkKey(index), value: tail + bytes[..<at])
        }
        if !tail.isEmpty { index += 1 }
        while at < bytes.count {
            let end = min(at + chunkSize, bytes.count)
            try chunkKey(index).withUnsafeBytes { k in
                try bytes.withUnsafeBytes { _ = try txn.put(db, key: k, value: UnsafeRawBufferPointer(rebasing: $0[at..<end]), flags: .append) }
            }
            index += 1
            at = end
        }
        return offset
    }

    /// The `length` bytes of the stream from `offset`.
    static func readStream(offset: UInt64, length: Int, _ c: Cursor) throws -> [UInt8] {
        var index = offset / UInt64(chunkSize)
        var skip = Int(offset % UInt64(chunkSize))
        var out: [UInt8] = []
        out.reserveCapacity(length)
        guard var chunk = try chunkKey(index).withUnsafeBytes({ try c.seek(exactly: $0) }) else { throw ByteReader.Truncated() }
        while true {
            guard chunk.count > skip else { throw ByteReader.Truncated() }
            let take = min(chunk.count - skip, length - out.count)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[skip..<(skip + take)]))
            if out.count == length { return out }
            // Every chunk but the stream's last is whole.
            guard chunk.count == chunkSize, let next = try c.next(), next.key.count == 9, next.key.first == streamMark,
                UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: next.key[1...])) == index + 1
            else { throw ByteReader.Truncated() }
            index += 1
            skip = 0
            chunk = next.value
        }
    }

    /// The entry holding packed row `number` (its own, or the block holding it) and that entry's
    /// number.
    static func packedEntry(_ number: UInt64, _ c: Cursor) throws -> (at: UInt64, value: UnsafeRawBufferPointer)? {
        guard number > 0, let e = try number.bigEndianBytes.withUnsafeBytes({ try c.seek(atMost: $0) }), e.key.count == 8 else { return nil }
        return (UInt64(bigEndianBytes: e.key), e.value)
    }

    /// The stored block a block entry (`entry`) names, read from the stream.
    static func storedBlock(_ entry: UnsafeRawBufferPointer, _ c: Cursor) throws -> [UInt8] {
        var r = ByteReader(entry)
        guard try r.u8() == blockMark else { throw ByteReader.Truncated() }
        _ = try bounded(&r, blockLimit)
        let offset = try r.varint()
        let length = try bounded(&r, 2 * blockColumnsLimit)
        guard r.isAtEnd, length > 0 else { throw ByteReader.Truncated() }
        return try readStream(offset: offset, length: length, c)
    }

    /// A varint of at most `limit` (a count or a length of what is not in `r`).
    static func bounded(_ r: inout ByteReader, _ limit: Int) throws -> Int {
        let v = try r.varint()
        guard v <= UInt64(limit) else { throw ByteReader.Truncated() }
        return Int(v)
    }

    /// How many rows the block `stored` holds (nil: `stored` is not a block).
    static func blockCount(_ stored: UnsafeRawBufferPointer) throws -> Int? {
        guard stored.first == blockMark else { return nil }
        var r = ByteReader(stored)
        _ = try r.u8()
        return try bounded(&r, blockLimit)
    }

    /// Row `number`'s plain bytes from the block stored under `first`, decompressed up to its end.
    static func unpackBlock(_ stored: UnsafeRawBufferPointer, first: UInt64, number: UInt64) throws -> KeyedDocumentProjection.OwnedBytes {
        let (start, length, _, frame) = try blockParts(stored, first: first, number: number)
        let columns = try ZstdContext.pooled { try $0.decompressStart(frame, count: start + length) }
        return try plainRow(columns, start..<(start + length))
    }

    /// The plain bytes of the row whose columns are `range` of a block's decompressed columns.
    private static func plainRow(_ columns: [UInt8], _ range: Range<Int>) throws -> KeyedDocumentProjection.OwnedBytes {
        try columns.withUnsafeBytes { try plainRow(decodeColumns(UnsafeRawBufferPointer(rebasing: $0[range]))) }
    }

    /// Where row `number`'s columns are in the block stored under `first` (`stored`, its bytes
    /// in the stream), the length of all its columns and its frame.
    private static func blockParts(_ stored: UnsafeRawBufferPointer, first: UInt64, number: UInt64) throws -> (
        start: Int, length: Int, total: Int, frame: UnsafeRawBufferPointer
    ) {
        var r = ByteReader(stored)
        guard try r.u8() == blockMark, number >= first else { throw ByteReader.Truncated() }
        let count = try bounded(&r, blockLimit)
        let index = Int(clamping: number - first)
        guard index < count else { throw ByteReader.Truncated() }
        var start = 0, length = 0
        for i in 0..<count {
            let n = try bounded(&r, blockColumnsLimit)
            if i < index { start += n } else if i == index { length = n }
        }
        let total = try bounded(&r, blockColumnsLimit)
        guard start + length <= total, length > 0 else { throw ByteReader.Truncated() }
        return (start, length, total, UnsafeRawBufferPointer(rebasing: stored[r.offset...]))
    }

    /// Row `number`'s plain bytes from the block whose entry (under `first`) is `entry`. A read
    /// decompresses the block up to the row's end. In a read-only transaction, a block read again
    /// within its last ``ReadBlocks/recentLimit`` blocks is decompressed whole and kept (the
    /// last ``ReadBlocks/keptLimit`` such): a walk of versions in log order (`changes`) reads the
    /// rows that closed together, which share blocks, while reads of versions here and there (an
    /// as-of read, a million of them in one transaction) decompress as before. A write
    /// transaction keeps none: it may write the block.
    static func blockRow(
        _ entry: UnsafeRawBufferPointer, first: UInt64, number: UInt64, _ c: Cursor, _ txn: Transaction, _ tables: TableSet
    ) throws -> KeyedDocumentProjection.OwnedBytes {
        guard txn.readOnly else { return try storedBlock(entry, c).withUnsafeBytes { try unpackBlock($0, first: first, number: number) } }
        let blocks = try txn.derived(ReadBlocks.Key(dbi: tables["history-packed"].dbi)) { ReadBlocks() }
        let index = Int(clamping: number - first)
        if let block = blocks.kept.last(where: { $0.first == first }), index + 1 < block.ends.count {
            return try plainRow(block.columns, block.ends[index]..<block.ends[index + 1])
        }
        let stored = try storedBlock(entry, c)
        guard blocks.recent.contains(first) else {
            blocks.recent.append(first)
            if blocks.recent.count > ReadBlocks.recentLimit { blocks.recent.removeFirst() }
            return try stored.withUnsafeBytes { try unpackBlock($0, first: first, number: number) }
        }
        return try stored.withUnsafeBytes { raw in
            let (start, length, total, frame) = try blockParts(raw, first: first, number: number)
            let columns = try ZstdContext.pooled { try $0.decompressStart(frame, count: total) }
            blocks.kept.append((first, columns, try rowEnds(raw)))
            if blocks.kept.count > ReadBlocks.keptLimit { blocks.kept.removeFirst() }
            return try plainRow(columns, start..<(start + length))
        }
    }

    /// Where each row's columns start in a stored block, and where the last ends.
    private static func rowEnds(_ stored: UnsafeRawBufferPointer) throws -> [Int] {
        var r = ByteReader(stored)
        _ = try r.u8()
        let count = try bounded(&r, blockLimit)
        var ends = [0]
        for _ in 0..<count { ends.append(ends[ends.count - 1] + (try bounded(&r, blockColumnsLimit))) }
        return ends
    }

    /// The blocks a read-only transaction read lately (their first numbers) and the ones it
    /// keeps whole.
    private final class ReadBlocks {
        struct Key: Hashable { var dbi: UInt32 }
        static let recentLimit = 16
        static let keptLimit = 4
        var recent: [UInt64] = []
        var kept: [(first: UInt64, columns: [UInt8], ends: [Int])] = []
    }
}

extension KeyedDocumentProjection.HistoryRow {
    /// The number the next row packed through `c` takes: after the last entry's, or after the
    /// last row of the block it is.
    static func nextNumber(_ c: Cursor) throws -> UInt64 {
        guard let last = try lastNumbered(c), last.key.count == 8 else { return 1 }
        let at = UInt64(bigEndianBytes: last.key)
        guard at > 0 else { return 1 }
        return at + UInt64(try blockCount(last.value) ?? 1)
    }
}
