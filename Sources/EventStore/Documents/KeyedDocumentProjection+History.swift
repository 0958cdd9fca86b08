import Foundation
import LMDB

// Writing versions to `history`: a keyframe starts a row, a delta joins its keyframe's row, and
// a closed row is packed into `history-packed`.

extension KeyedDocumentProjection {
    /// Writes a version. Its field-level changes are not stored: they follow from the previous
    /// version's document, and ``DocumentReader/history(collection:key:upTo:)`` computes them,
    /// which keeps a diff (and a parse of the old document) off the ingest path.
    ///
    /// A delta joins its keyframe's row of `history` (``HistoryRow``): the row grows by one entry
    /// instead of the table by one key. Any other version starts a row of its own.
    func writeHistory(
        _ hk: UnsafeRawBufferPointer, kind: ChangeKind, document: DocumentSource,
        record: CurrentRecord, event: RecordedEvent, ctx: ProjectionContext, rest: [UInt8]? = nil
    ) throws {
        // The header (at most 10 + 8 + 11 + 1 + 10 bytes) is built on the stack; the document is
        // copied once, straight into the page.
        let inline: [UInt8]
        var group = event.seq
        switch document {
        case .inline(let bytes), .encoded(let bytes): inline = bytes
        case .delta(let keyframe, _, _, _): inline = document.deltaTail; group = keyframe
        case .slice:
            // Only a closed row keeps a version as a slice (``HistoryRow/keepingSlices``).
            throw EventStoreError.corrupted("a new version of \(event.seq) cannot be written as a slice")
        }
        let history = ctx.tables["history"]
        let txn = ctx.transaction
        if keepsChangeOrder { Self.noteChange(hk, kind, ctx.memo) }
        try withUnsafeTemporaryAllocation(byteCount: 48 + 20, alignment: 1) { header in
            var n = 0
            func emit(_ b: UInt8) { header[n] = b; n += 1 }
            ByteWriter.varint(UInt64(record.version), emit)
            withUnsafeBytes(of: UInt64(bitPattern: event.recordedAt.microseconds).bigEndian) { for b in $0 { emit(b) } }
            emit(kind.code)
            switch document {
            case .inline: ByteWriter.varint(UInt64(inline.count), emit)
            case .encoded: emit(0); ByteWriter.varint(UInt64(inline.count), emit)
            case .delta, .slice: emit(0); emit(0)
            }
            // After the document: the changes, computed on read (stores written before kept them
            // here; still read), so an empty blob; or the slice of the payload the version is
            // kept as once a solid row holds it (``PayloadSlice/blob(seq:size:)``).
            let rest = rest ?? [0]
            let recordCount = n + inline.count + rest.count
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
                rest.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[(out.count - rest.count)...]).copyMemory(from: $0) }
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
                guard let existing = try txn.get(history, key: key), !HistoryRow.isPointer(existing) else {
                    throw EventStoreError.corrupted("the keyframe row at seq \(group) is missing from history")
                }
                if existing.first == HistoryRow.solidMark, case let .delta(_, _, size, frame) = document {
                    // A solid open row takes the version whole, in its columns.
                    let version = HistoryRow.SolidVersion(
                        offset: event.seq - group, version: UInt64(record.version), time: event.recordedAt.microseconds, kind: kind.code,
                        document: [], rest: rest)
                    let solid = try HistoryRow.joiningOpen(existing, seq: group, version, size: size, frame: frame)
                    _ = try solid.withUnsafeBytes { try txn.put(history, key: key, value: $0) }
                    return
                }
                // Copied first (the put may move the page the old value is on), then stored in the
                // row's form (``HistoryRow/openForm(_:seq:)``).
                var row = [UInt8](existing)
                let at = row.count
                row.append(contentsOf: repeatElement(0, count: entryCount))
                row.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[at...])) }
                _ = try row.withUnsafeBytes { plain in
                    try HistoryRow.withOpenForm(plain, seq: group) { try txn.put(history, key: key, value: $0) }
                }
            }
        }
    }

    /// Moves the key's newest row before the one `hk` starts (it is closed: no version is added
    /// to it again) into `history-packed` under the next number there (``packRow(_:seq:_:)``:
    /// rows of every key, in the order they closed, compressed together in blocks; a row growing
    /// in the middle of `history` splits its page in two halves, and the half left behind is
    /// never written again). `history` keeps a pointer (``HistoryRow/writePointer(to:into:)``).
    ///
    /// Returns the context's `history` cursor, left next to where the row `hk` starts goes.
    @discardableResult
    static func packPreviousRow(before hk: UnsafeRawBufferPointer, _ ctx: ProjectionContext) throws -> Cursor {
        try packPreviousRow(before: hk, ctx, keepingFirst: nil).cursor
    }

    /// ``packPreviousRow(before:_:)``; a row that starts at `keepingFirst` (the key's first seq:
    /// its only row) leaves `history` instead of leaving a pointer there, and its number is
    /// returned for the key's `current` record to keep (``CurrentRecord/packed``).
    static func packPreviousRow(before hk: UnsafeRawBufferPointer, _ ctx: ProjectionContext, keepingFirst: UInt64?) throws -> (
        cursor: Cursor, number: UInt64?
    ) {
        let txn = ctx.transaction, memo = ctx.memo
        let c = try memo.historyCursor ?? txn.cursor(ctx.tables["history"])
        memo.historyCursor = c
        let prefixCount = hk.count - 8
        guard let e = try c.seek(atMost: hk), e.key.count == hk.count, !HistoryRow.isPointer(e.value),
            memcmp(e.key.baseAddress!, hk.baseAddress!, prefixCount) == 0
        else { return (c, nil) }
        // Copied: the puts below may move the page the row is on. (Plain, or solid: an open row
        // of small documents.)
        let row = [UInt8](e.value)
        let rowSeq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[prefixCount...]))
        let number = try packRow(row, seq: rowSeq, ctx)
        return try withUnsafeTemporaryAllocation(byteCount: hk.count + HistoryRow.pointerCapacity, alignment: 1) { buffer in
            // The row's key (hk with the row's seq), then the pointer: the mark and the number.
            let rowKey = UnsafeMutableRawBufferPointer(rebasing: buffer[..<hk.count])
            rowKey.copyMemory(from: hk)
            rowKey.storeBytes(of: rowSeq.bigEndian, toByteOffset: prefixCount, as: UInt64.self)
            if rowSeq == keepingFirst {
                // The cursor still stands on the row (packing wrote another table).
                try c.deleteCurrent()
                return (c, number)
            }
            let pointer = UnsafeMutableRawBufferPointer(rebasing: buffer[hk.count...])
            let n = HistoryRow.writePointer(to: number, into: pointer)
            try c.put(key: UnsafeRawBufferPointer(rowKey), value: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pointer)[..<n]), flags: .current)
            return (c, nil)
        }
    }

    /// Puts back in `history` the pointer of the only row a key's `current` record kept
    /// (``CurrentRecord/packed``): the key comes back, and its next row goes beside it.
    static func restorePointer(_ record: inout CurrentRecord, _ collection: String, _ key: String, digest: [UInt8]?, _ ctx: ProjectionContext) throws {
        guard let number = record.packed else { return }
        record.packed = nil
        try withKeys(collection, key, record.firstSeq, ctx.tables, digest: digest) { _, rowKey in
            try withUnsafeTemporaryAllocation(byteCount: HistoryRow.pointerCapacity, alignment: 1) { pointer in
                let n = HistoryRow.writePointer(to: number, into: pointer)
                try ctx.transaction.put(ctx.tables["history"], key: rowKey, value: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pointer)[..<n]))
            }
        }
    }

    /// Appends a closed row (of the version at `seq` and the deltas after it) to
    /// `history-packed` and returns its number there: a row of two versions or more that fits a
    /// block waits there for its block, solid, and closes the waiting rows' block first when it
    /// would take them past what a block holds; any other row (solid alone, or plain) closes it
    /// too (``HistoryRow/closeBlock``).
    static func packRow(_ row: [UInt8], seq: UInt64, _ ctx: ProjectionContext) throws -> UInt64 {
        let memo = ctx.memo, txn = ctx.transaction, db = ctx.tables["history-packed"]
        let packed = try memo.packedCursor ?? txn.cursor(db)
        memo.packedCursor = packed
        let number = try memo.nextPacked ?? HistoryRow.nextNumber(packed)
        memo.nextPacked = number + 1
        let stored = try memo.pendingBlock ?? HistoryRow.Pending(txn, db)
        var pending = stored
        let columns: [UInt8]?
        var waiting: [UInt8]?
        if row.first == HistoryRow.solidMark {
            // An open row stored solid (``HistoryRow/openForm(_:seq:)``): already its waiting
            // form, unless versions of it are kept as slices of their pages now it closes.
            if let closing = try row.withUnsafeBytes({ try HistoryRow.closingColumns(ofOpen: $0, seq: seq) }) {
                columns = closing
                waiting = closing.count <= HistoryRow.blockLimit ? HistoryRow.solid(closing, level: HistoryRow.pendingLevel) : nil
            } else {
                columns = try row.withUnsafeBytes { try HistoryRow.openColumns($0, seq: seq) }
                waiting = columns!.count <= HistoryRow.blockLimit ? row : nil
            }
        } else {
            columns = row.withUnsafeBytes { HistoryRow.solidColumns($0, seq: seq, keeping: .all) }
            // The row's waiting form, when it fits a block (compressed before the block closes,
            // so a row whose compression fails stays plain and closes the block like any other).
            waiting = columns.flatMap { $0.count <= HistoryRow.blockLimit ? HistoryRow.solid($0, level: HistoryRow.pendingLevel) : nil }
        }
        if pending.count > 0, waiting == nil || pending.columns + columns!.count > HistoryRow.blockLimit {
            try HistoryRow.closeBlock(pending, txn, db)
            pending = .init()
        }
        if let columns, columns.count > HistoryRow.blockLimit {
            // Larger than a block holds: a block of its own.
            try HistoryRow.writeBlock([(number, columns)], txn, db)
        } else {
            // Not appended: the blocks' stream sorts after every number.
            try (waiting ?? row).withUnsafeBytes { value in
                try withUnsafeBytes(of: number.bigEndian) { try packed.put(key: $0, value: value) }
            }
            if let columns, waiting != nil {
                pending.count += 1
                pending.columns += columns.count
            }
        }
        if pending != stored { try pending.write(txn, db) }
        memo.pendingBlock = pending
        return number
    }
}
