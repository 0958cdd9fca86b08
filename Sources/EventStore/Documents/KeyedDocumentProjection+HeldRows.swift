import Foundation
import LMDB

// The rows a fold holds (``HeldRows``) instead of writing each version at once.

extension KeyedDocumentProjection {
    /// Starts the key's new row (`hk`, of `count` bytes that `fill` writes) where the fold holds
    /// it, closing the key's row before: packed from where the fold holds it, or else from
    /// `history` (``packPreviousRow(before:_:)``).
    static func holdNewRow(
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

    /// Packs the key's newest row, the one holding the version just written at `hk`'s seq (a
    /// removal: no version joins that row again), written out first where the fold holds it.
    /// When that row is the key's first (it starts at `firstSeq`), it is its only one: no
    /// pointer goes to `history`, and its number is returned for the key's `current` record
    /// (``CurrentRecord/packed``).
    static func closeRow(_ hk: UnsafeRawBufferPointer, firstSeq: UInt64, _ ctx: ProjectionContext) throws -> UInt64? {
        let held = ctx.memo.held
        if !held.isEmpty, let open = held.row(UnsafeRawBufferPointer(rebasing: hk[..<(hk.count - 8)])) {
            if open.seq == firstSeq, open.closed.isEmpty {
                held.remove(open)
                return try packRow(open.bytes, seq: open.seq, ctx)
            }
            try writeHeldRow(open, ctx.transaction, ctx.tables, ctx.memo)
        }
        return try packPreviousRow(before: hk, ctx, keepingFirst: firstSeq).number
    }

    /// Writes every row the fold holds to `history`, in key order: for each key, the pointers of
    /// the rows it closed (packed already) and its open row.
    static func flushHeldRows(_ ctx: ProjectionContext) throws {
        let held = ctx.memo.held
        guard !held.isEmpty else { return }
        for row in held.takeSorted() { try write(row, ctx.transaction, ctx.tables, ctx.memo) }
    }

    /// Writes one key's held rows to `history` and stops holding them.
    static func writeHeldRow(_ row: HeldRows.Row, _ txn: Transaction, _ tables: TableSet, _ memo: DocumentFold) throws {
        memo.held.remove(row)
        try write(row, txn, tables, memo)
    }

    /// Writes the pointers of a key's closed rows, then its open row.
    static func write(_ row: HeldRows.Row, _ txn: Transaction, _ tables: TableSet, _ memo: DocumentFold) throws {
        let c = try memo.historyCursor ?? txn.cursor(tables["history"])
        memo.historyCursor = c
        let prefix = row.key
        try withUnsafeTemporaryAllocation(byteCount: prefix.count + 8 + HistoryRow.pointerCapacity, alignment: 1) { buffer in
            prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[..<prefix.count]).copyMemory(from: $0) }
            let key = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<(prefix.count + 8)])
            let pointer = UnsafeMutableRawBufferPointer(rebasing: buffer[(prefix.count + 8)...])
            for (seq, number) in row.closed {
                buffer.storeBytes(of: seq.bigEndian, toByteOffset: prefix.count, as: UInt64.self)
                let n = HistoryRow.writePointer(to: number, into: pointer)
                try c.put(key: key, value: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pointer)[..<n]), flags: [])
            }
            buffer.storeBytes(of: row.seq.bigEndian, toByteOffset: prefix.count, as: UInt64.self)
            try row.bytes.withUnsafeBytes { plain in
                try HistoryRow.withOpenForm(plain, seq: row.seq) { try c.put(key: key, value: $0, flags: []) }
            }
        }
    }
}
