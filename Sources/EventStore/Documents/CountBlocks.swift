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
            var last: [UInt64]?
            try walk(e, prefix: prefix, width: width) { at, values in
                guard at <= seq else { return false }
                last = values
                return true
            }
            return last
        } catch {
            throw EventStoreError.corrupted("a stored count is damaged; rebuild the projection")
        }
    }

    /// Records `values` as the counts after the change at `seq` (at or after every change so far).
    package static func set(_ prefix: [UInt8], seq: UInt64, values: [UInt64], _ c: Cursor) throws {
        var changes: [(UInt64, [UInt64])] = []
        var first = seq
        if let e = try c.seek(atMost: prefix + [UInt8](repeating: 0xFF, count: 8) + [blockSuffix]), e.key.starts(with: prefix),
            e.key.count == prefix.count + 9, e.key.last == blockSuffix
        {
            first = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(prefix.count + 8)]))
            do {
                try walk(e, prefix: prefix, width: values.count) { at, v in
                    changes.append((at, v))
                    return true
                }
            } catch {
                throw EventStoreError.corrupted("a stored count is damaged; rebuild the projection")
            }
            if changes.last?.0 == seq { changes.removeLast() }
            if let last = changes.last?.0, last > seq {
                throw EventStoreError.corrupted("a count at seq \(seq) comes after one at \(last); rebuild the projection")
            }
            if changes.count >= capacity {
                changes = []
                first = seq
            }
        }
        changes.append((seq, values))
        var w = ByteWriter(capacity: changes.count * (2 + 3 * values.count))
        var previous = first
        for (at, v) in changes {
            w.varint(at - previous)
            previous = at
            for x in v { w.varint(x) }
        }
        let key = prefix + first.bigEndianBytes + [blockSuffix]
        try key.withUnsafeBytes { k in try w.bytes.withUnsafeBytes { try c.put(key: k, value: $0, flags: []) } }
    }

    /// Each change of the block `e`, in seq order, until `body` returns false.
    private static func walk(_ e: Cursor.Entry, prefix: [UInt8], width: Int, _ body: (UInt64, [UInt64]) throws -> Bool) throws {
        var at = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefix.count..<(prefix.count + 8)]))
        var r = ByteReader(e.value)
        var n = 0
        while !r.isAtEnd {
            let gap = try r.varint()
            guard n == 0 ? gap == 0 : gap > 0, gap <= UInt64.max - at, n < capacity else { throw ByteReader.Truncated() }
            at += gap
            var values: [UInt64] = []
            for _ in 0..<width { values.append(try r.varint()) }
            n += 1
            guard try body(at, values) else { return }
        }
        guard n > 0 else { throw ByteReader.Truncated() }
    }

    /// A row from before blocks: `width` varints.
    private static func plain(_ value: UnsafeRawBufferPointer, width: Int) throws -> [UInt64] {
        var r = ByteReader(value)
        return try (0..<width).map { _ in try r.varint() }
    }
}
