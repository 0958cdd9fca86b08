package import LMDB

/// Counts as of any seq (a collection's documents, a source's items), kept in blocks: a row per
/// count change cost its key (the name and a seq), LMDB's node header and slot, about 31 bytes
/// for 4 bytes of counts (0.14 MB of the outages history's `counts`, as much again in the
/// schema's `item-counts`). A block holds up to ``capacity`` changes of one name:
///
/// ```
/// key:   prefix (the name, 0x00), seq(u64be) of the block's first change, 0x01
/// value: per change: varint (seq − the change before's; 0 for the first), `width` varints
/// ```
///
/// A read as of a seq is one seek to the block at or before it and a walk of its changes. The
/// last block takes each change (the same seq's again replaces it) until it is full. The key's
/// last byte tells a block from a row written before blocks (`prefix seq(u64be)` → the
/// counts), which is still read.
package enum CountBlocks {
    static let capacity = 64
    static let blockSuffix: UInt8 = 0x01

    /// The counts after the last change at or before `seq` (nil: none by then).
    package static func values(_ prefix: [UInt8], asOf seq: UInt64, width: Int, _ c: Cursor) throws -> [UInt64]? {
        guard let e = try c.seek(atMost: prefix + seq.bigEndianBytes + [blockSuffix]), e.key.starts(with: prefix) else { return nil }
        do {
            if e.key.count == prefix.count + 8 { return try plain(e.value, width: width) }
            guard e.key.count == prefix.count + 9, e.key.last == blockSuffix else { return nil }
            return try last(of: e, prefix: prefix, width: width, atMost: seq).values
        } catch {
            throw EventStoreError.corrupted("a stored count is damaged; rebuild the projection")
        }
    }

    /// Records the counts after the change at `seq` (at or after every change so far):
    /// `change` gets the last counts (nil: none yet) and returns the new ones. One walk of the
    /// last block; the change is appended to its bytes, or replaces its last change of the same
    /// seq.
    package static func update(_ prefix: [UInt8], seq: UInt64, width: Int, _ c: Cursor, _ change: ([UInt64]?) -> [UInt64]) throws {
        var first = seq
        var kept: UnsafeRawBufferPointer?
        var previous = seq
        var old: [UInt64]?
        if let e = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 8) + [blockSuffix]), e.key.starts(with: prefix) {
            do {
                if e.key.count == prefix.count + 8 {
                    old = try plain(e.value, width: width)
                } else if e.key.count == prefix.count + 9, e.key.last == blockSuffix {
                    let last = try last(of: e, prefix: prefix, width: width, atMost: .max)
                    old = last.values
                    guard last.seq <= seq else {
                        throw EventStoreError.corrupted("a count at seq \(seq) comes after one at \(last.seq); rebuild the projection")
                    }
                    if last.seq == seq {
                        // The same event again: its change is replaced.
                        first = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(prefix.count + 8)]))
                        kept = UnsafeRawBufferPointer(rebasing: e.value[..<last.offset])
                        previous = last.before
                    } else if last.count < capacity {
                        first = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(prefix.count + 8)]))
                        kept = e.value
                        previous = last.seq
                    }
                }
            } catch let error as EventStoreError {
                throw error
            } catch {
                throw EventStoreError.corrupted("a stored count is damaged; rebuild the projection")
            }
        }
        let values = change(old)
        var w = ByteWriter(capacity: (kept?.count ?? 0) + 2 + 3 * width)
        if let kept { w.raw(kept) }
        w.varint(seq - previous)
        for x in values { w.varint(x) }
        let key = prefix + first.bigEndianBytes + [blockSuffix]
        try key.withUnsafeBytes { k in try w.bytes.withUnsafeBytes { try c.put(key: k, value: $0, flags: []) } }
    }

    /// The last change at or before `atMost` of the block `e`: its seq, the seq before it (its
    /// own for the first), its counts, where it starts, and how many changes the block has up
    /// to it.
    private static func last(of e: Cursor.Entry, prefix: [UInt8], width: Int, atMost: UInt64) throws
        -> (seq: UInt64, before: UInt64, values: [UInt64]?, offset: Int, count: Int)
    {
        var at = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(prefix.count + 8)]))
        var r = ByteReader(e.value)
        var n = 0
        var found: (seq: UInt64, before: UInt64, offset: Int, end: Int)?
        while !r.isAtEnd {
            let start = r.offset
            let gap = try r.varint()
            guard n == 0 ? gap == 0 : gap > 0, gap <= UInt64.max - at, n < capacity else { throw ByteReader.Truncated() }
            let before = at
            at += gap
            for _ in 0..<width { _ = try r.varint() }
            n += 1
            if at <= atMost { found = (at, n == 1 ? at : before, start, r.offset) } else { break }
        }
        guard n > 0 else { throw ByteReader.Truncated() }
        guard let found else { return (at, at, nil, 0, n) }
        // The found change's counts, read again from where they start.
        var v = ByteReader(UnsafeRawBufferPointer(rebasing: e.value[found.offset..<found.end]))
        _ = try v.varint()
        let values = try (0..<width).map { _ in try v.varint() }
        return (found.seq, found.before, values, found.offset, n)
    }

    /// A row from before blocks: `width` varints.
    private static func plain(_ value: UnsafeRawBufferPointer, width: Int) throws -> [UInt64] {
        var r = ByteReader(value)
        return try (0..<width).map { _ in try r.varint() }
    }
}
