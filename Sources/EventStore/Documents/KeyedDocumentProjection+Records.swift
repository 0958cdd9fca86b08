import Foundation
import LMDB

// Keys and the byte layouts of `current` and `history` records (docs/architecture.md, Reference).

extension KeyedDocumentProjection {
    /// `collection 0x00 storedNaturalKey(key)`, the key of the key's `current` record: the table
    /// is in natural key order, so a page walks it (since items 29; before, `current` was keyed
    /// `collection 0x00 key` and a table `order` held the natural keys, each id stored twice).
    /// `digest`: the key's ``TableSet/text(_:)`` when the caller has it (an encrypted store).
    static func currentKey(_ collection: String, _ key: String, _ tables: TableSet, digest: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(collection.utf8.count + key.utf8.count + 12 + (tables.isEncrypted ? 16 : 0))
        out.append(contentsOf: collection.utf8)
        out.append(0)
        appendNaturalKey(key, text: tables.isEncrypted ? digest ?? tables.text(key) : nil, to: &out)
        return out
    }

    /// `collection 0x00 key`, what every `history` key of the key starts with (see
    /// ``withKeys(_:_:_:_:)``).
    static func historyPrefix(_ collection: String, _ key: String, _ tables: TableSet) -> [UInt8] {
        withKeys(collection, key, 0, tables) { prefix, _ in [UInt8](prefix) }
    }

    /// `collection 0x00 key 0x00 seq(u64be)`, the history key, built on the stack; `body` gets
    /// its part before the second 0x00 (``historyPrefix(_:_:_:)``) and the history key. It runs for every
    /// put: no array is allocated. (``validate(_:_:)`` bounds both names.)
    /// In an encrypted store the key part is the key's digest (``TableSet/text(_:)``; `digest`
    /// when the caller has it).
    @inline(__always)
    static func withKeys<T>(
        _ collection: String, _ key: String, _ seq: UInt64, _ tables: TableSet, digest known: [UInt8]? = nil,
        _ body: (_ prefix: UnsafeRawBufferPointer, _ history: UnsafeRawBufferPointer) throws -> T
    ) rethrows -> T {
        // One stack buffer, filled by a plain function: `body` (the whole of a put) is inlined
        // here instead of becoming a closure whose captures (the event, the context) are copied
        // for every put.
        let digest = tables.isEncrypted ? known ?? tables.text(key) : nil
        let keyCount = digest?.count ?? key.utf8.count
        return try withUnsafeTemporaryAllocation(byteCount: collection.utf8.count + keyCount + 10, alignment: 1) { buffer in
            let currentCount = fillKeys(buffer, collection, key, digest, seq)
            let all = UnsafeRawBufferPointer(buffer)
            return try body(UnsafeRawBufferPointer(rebasing: all[..<currentCount]), all)
        }
    }

    /// Writes `collection 0x00 key 0x00 seq(u64be)` (the key's digest for `key` when given) into
    /// `buffer`, which has exactly the room; returns the length of the part before the seq's 0x00.
    static func fillKeys(
        _ buffer: UnsafeMutableRawBufferPointer, _ collection: String, _ key: String, _ digest: [UInt8]?,
        _ seq: UInt64
    ) -> Int {
        var n = 0
        func copy(_ bytes: UnsafeRawBufferPointer) {
            UnsafeMutableRawBufferPointer(rebasing: buffer[n...]).copyMemory(from: bytes)
            n += bytes.count
        }
        var collection = collection
        collection.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
        buffer[n] = 0
        n += 1
        if let digest {
            digest.withUnsafeBytes { copy($0) }
        } else {
            var key = key
            key.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
        }
        buffer[n] = 0
        buffer.storeBytes(of: seq.bigEndian, toByteOffset: n + 1, as: UInt64.self)
        return n
    }

    static func historyKey(_ collection: String, _ key: String, _ seq: UInt64, _ tables: TableSet) -> [UInt8] {
        withKeys(collection, key, seq, tables) { [UInt8]($1) }
    }

    /// The digest kept in `current` to tell a changed document from an unchanged one: the first
    /// 16 bytes of SHA-256 over the canonical bytes.
    static func digest(_ canonical: [UInt8]) -> [UInt8] { Hashing.documentDigest(canonical) }

    /// The JSON text of the document of the version at `seq`: its canonical bytes, or the
    /// payload it was (the same document, as its event carried it).
    /// `memo`: a fold's, whose open rows are read where they are held (``HeldRows``).
    static func document(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: DocumentFold? = nil
    ) throws -> [UInt8] {
        try storedDocument(collection, key, at: seq, txn, tables, memo).text(collection, key, txn, tables, memo)
    }

    /// The document of the version at `seq` as the version holds it.
    static func storedDocument(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: DocumentFold? = nil
    ) throws -> DocumentSource {
        let source = try withVersionRecord(collection, key, at: seq, txn, tables, memo) { raw in
            var r = ByteReader(raw)
            _ = try VersionHeader(reading: &r)
            return try DocumentSource(reading: &r, seq: seq)
        }
        guard let source else {
            throw EventStoreError.corrupted("the version at seq \(seq) of \(collection)/\(key.prefix(64)) is missing from history")
        }
        return source
    }

    /// The slice of its page's body the version at `seq` is kept as (or will be, once a solid
    /// row holds it and it is not its key's last: ``PayloadSlice``), or nil.
    static func slice(
        ofVersion collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet, _ memo: DocumentFold? = nil
    ) throws -> PayloadSlice? {
        let found = try withVersionRecord(collection, key, at: seq, txn, tables, memo) { raw -> PayloadSlice? in
            var r = ByteReader(raw)
            _ = try VersionHeader(reading: &r)
            if case let .slice(slice, _) = try DocumentSource(reading: &r, seq: seq) { return slice }
            let rest = try r.blob()
            return rest.withUnsafeBytes { PayloadSlice.named(byBlob: $0, seq: seq)?.slice }
        }
        return found ?? nil
    }

    /// A version's document: canonical bytes (a document an operation built, or one a payload
    /// only contains), or, when it is an event's whole payload, that payload's stored form copied
    /// from the log (``BlobCodec``: usually zstd-compressed, so a version of a JSON document takes
    /// a fraction of its text, at no second compression).
    ///
    /// Stored after the version header as `varint n, n bytes` for canonical bytes (n > 0: no JSON
    /// text is empty), or `varint 0, varint m, m bytes` for a stored payload.
    ///
    /// Since documents 7 (items 10 and the data projections 7) a version that is not a stored
    /// payload is usually a delta: `varint 0, varint 0, varint keyframe seq, varint index, varint
    /// size, varint n, n bytes` of a magicless zstd frame compressed against the document of the
    /// key's version at the keyframe seq (the prefix), `index` (1…) counting the deltas since that
    /// keyframe. Every delta of a group refers to the keyframe itself, not to the version before
    /// it, so a read decodes at most two frames; every ``keyframeInterval`` versions (or when a
    /// delta would not be smaller) the version is a keyframe again: canonical bytes, compressed
    /// (`.encoded`) when that saves a tenth.
    ///
    /// Since items 34 a version in a closed row may be a *slice*: `varint 0, varint 0, varint 0,
    /// varint back, varint lower, varint count, varint size`, the `count` bytes at `lower` of the
    /// body the log stores in its row at seq (the version's seq − `back`), whose canonical form
    /// (`size` bytes) is the document (``PayloadSlice``). The item history then holds no copy of
    /// a list item the page's body already holds.
    enum DocumentSource {
        case inline([UInt8])
        case encoded([UInt8])
        case delta(keyframe: UInt64, index: Int, size: Int, frame: [UInt8])
        case slice(PayloadSlice, size: Int)

        /// `seq`: the version's (a slice names its body's row from it).
        init(reading r: inout ByteReader, seq: UInt64) throws {
            let n = Int(try r.varint())
            if n > 0 { self = .inline([UInt8](try r.slice(n))); return }
            let m = Int(try r.varint())
            if m > 0 { self = .encoded([UInt8](try r.slice(m))); return }
            let keyframe = try r.varint()
            if keyframe == 0 {
                let slice = try PayloadSlice(reading: &r, seq: seq)
                let size = Int(try r.varint())
                guard size > 0, size <= 1 << 30 else { throw ByteReader.Truncated() }
                self = .slice(slice, size: size)
                return
            }
            let index = Int(try r.varint())
            let size = Int(try r.varint())
            guard index >= 1, size <= 1 << 30 else { throw ByteReader.Truncated() }
            self = .delta(keyframe: keyframe, index: index, size: size, frame: try r.blob())
        }

        /// The length of the JSON text a stored document decodes to, read from its sizes alone
        /// (nothing copied or decompressed), leaving `r` after it as ``init(reading:)`` does.
        static func textCount(reading r: inout ByteReader) throws -> Int {
            let n = Int(try r.varint())
            if n > 0 { _ = try r.slice(n); return n }
            let m = Int(try r.varint())
            if m > 0 {
                // A stored form: `u8 codec | varint size | …` (``BlobCodec``).
                let stored = try r.slice(m)
                var header = ByteReader(stored)
                _ = try header.u8()
                return Int(try header.varint())
            }
            if try r.varint() == 0 {
                _ = try PayloadSlice(reading: &r, seq: UInt64.max)
                return Int(try r.varint())
            }
            _ = try r.varint()
            let size = Int(try r.varint())
            _ = try r.slice(try r.count())
            return size
        }

        /// What follows `varint 0, varint 0` in a delta's record.
        var deltaTail: [UInt8] {
            guard case let .delta(keyframe, index, size, frame) = self else { return [] }
            var w = ByteWriter(capacity: frame.count + 24)
            w.varint(keyframe)
            w.varint(index)
            w.varint(size)
            w.blob(frame)
            return w.bytes
        }

        /// The JSON text (for a payload, as the event carried it: the same document, maybe in
        /// another key order). A delta reads its keyframe, the version of `collection`/`key`
        /// at the keyframe's seq, in `txn`.
        func text(_ collection: String, _ key: String, _ txn: Transaction, _ tables: TableSet, _ memo: DocumentFold? = nil) throws -> [UInt8] {
            switch self {
            case .inline(let bytes): return bytes
            case .encoded(let bytes): return try bytes.withUnsafeBytes { raw in try ZstdContext.pooled { try BlobCodec.decode(raw, context: $0) } }
            case let .delta(keyframe, _, _, _):
                return try text(onKeyframe: keyframeText(collection, key, at: keyframe, txn, tables, memo))
            case let .slice(slice, size):
                return try slice.text(size: size, txn, tables)
            }
        }

        /// A delta's text, given the text of its keyframe; any other form's own.
        func text(onKeyframe prefix: [UInt8]) throws -> [UInt8] {
            guard case let .delta(_, _, size, frame) = self else { return [] }
            return try frame.withUnsafeBytes { f in try ZstdContext.pooled { try $0.decompress(f, prefix: prefix, size: size) } }
        }
    }

    /// Versions from one keyframe to the next in `history` (the keyframe and its deltas). 32,
    /// not 16: a closed row is solid, so a version in it costs what changed, and a row of 16
    /// small documents (the schema's field counts, a version per event) paid as much for its
    /// pointer, its key and its frame as for its versions. Not 64: a key's open row is plain
    /// (a frame per delta), and on the `items` workload, whose 650 keys never close their last
    /// row, open rows of up to 63 deltas took 1.2 MB more than rows of 31 (9.41 against 8.22 MB);
    /// 64 saved 0.2 MB on the outages history and nothing on the incidents.
    static let keyframeInterval = 32

    /// How a new version with document `canonical` is stored: a delta against the keyframe of
    /// the key's row holding the version before it (`previous`, the key's last changed seq: its
    /// open row, whose first version is the keyframe every other version of it is stored
    /// against), or, when there is none, the row is full, its documents' text and this one's
    /// would pass its limit (``HistoryRow/openTextLimit`` for a row of small documents, else
    /// ``HistoryRow/solidTextLimit``: a closed row is always solid) or the delta would not be
    /// smaller, a keyframe.
    static func deltaOrKeyframe(
        _ canonical: [UInt8], _ collection: String, _ key: String, previous: UInt64?,
        _ txn: Transaction, _ tables: TableSet, _ memo: DocumentFold? = nil
    ) throws -> DocumentSource {
        if let previous {
            let open = try withRow(collection, key, at: previous, txn, tables, memo) { row in
                var count = 0, text = 0
                var keyframe: DocumentSource?
                var last: (seq: UInt64, record: UnsafeRawBufferPointer)?
                try row.forEach { at, raw in
                    var r = ByteReader(raw)
                    _ = try VersionHeader(reading: &r)
                    if keyframe == nil {
                        var first = r
                        keyframe = try DocumentSource(reading: &first, seq: row.seq)
                    }
                    last = (at, raw)
                    text += try DocumentSource.textCount(reading: &r)
                    count += 1
                    return true
                }
                guard let keyframe, let last else { return nil as (seq: UInt64, count: Int, text: Int, source: DocumentSource, prefix: DocumentSource)? }
                // A solid open row keeps its versions but the last as slices of their pages
                // (``HistoryRow/Slices/allButLast``): its next version is compressed against
                // that last one (``HistoryRow/joiningOpen``), whose text the row holds.
                var prefix = keyframe
                if case .slice = keyframe {
                    var r = ByteReader(last.record)
                    _ = try VersionHeader(reading: &r)
                    prefix = try DocumentSource(reading: &r, seq: last.seq)
                }
                return (seq: row.seq, count: count, text: text, source: keyframe, prefix: prefix)
            }
            guard let open = open ?? nil else {
                throw EventStoreError.corrupted("the version at seq \(previous) of \(collection)/\(key.prefix(64)) is missing from history")
            }
            if open.count < keyframeInterval {
                let prefix = try open.prefix.text(collection, key, txn, tables, memo)
                let keyframeSize: Int
                if case let .slice(_, size) = open.source { keyframeSize = size } else { keyframeSize = prefix.count }
                let limit = keyframeSize <= HistoryRow.openKeyframeLimit ? HistoryRow.openTextLimit : HistoryRow.solidTextLimit
                if open.text + canonical.count <= limit,
                    let frame = ZstdContext.pooled({ $0.compress(canonical, prefix: prefix, level: BlobCodec.level) }),
                    frame.count + 8 < canonical.count
                {
                    return .delta(keyframe: open.seq, index: open.count, size: canonical.count, frame: frame)
                }
            }
        }
        let encoded = ZstdContext.pooled { BlobCodec.encode(canonical, context: $0) }
        return encoded.first == BlobCodec.raw ? .inline(canonical) : .encoded(encoded)
    }

    /// Runs `body` with the stored bytes of the version written at exactly `seq` (its record in
    /// its row; valid only inside `body`: a solid row's bytes live as long as the row), or
    /// returns nil when there is none.
    ///
    /// `memo`: a fold's; the key's open row is read where the fold holds it, if it holds one
    /// (``HeldRows``), and written out first when an earlier version is asked for.
    static func withVersionRecord<T>(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: DocumentFold? = nil, _ body: (UnsafeRawBufferPointer) throws -> T
    ) throws -> T? {
        try withRow(collection, key, at: seq, txn, tables, memo) { row in
            var result: T?
            try row.forEach { s, record in
                if s == seq { result = try body(record) }
                return s < seq
            }
            return result
        } ?? nil
    }

    /// Runs `body` with the key's row holding its version in force at `seq`, or returns nil when
    /// there is none. `memo`: as in ``withVersionRecord(_:_:at:_:_:_:_:)``.
    static func withRow<T>(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet,
        _ memo: DocumentFold? = nil, _ body: (HistoryRow) throws -> T
    ) throws -> T? {
        if let memo, !memo.held.isEmpty,
            let open = withKeys(collection, key, 0, tables, { memo.held.row(UnsafeRawBufferPointer(rebasing: $1[..<($1.count - 8)])) })
        {
            if seq >= open.seq { return try open.bytes.withUnsafeBytes { try body(HistoryRow(seq: open.seq, bytes: $0)) } }
            try writeHeldRow(open, txn, tables, memo)
        }
        guard let row = try HistoryRow.containing(collection, key, seq, txn, tables) else { return nil }
        return try body(row)
    }

    /// One row of `history`: a keyframe (or a version stored whole) and the deltas against it,
    /// keyed `collection 0x00 key 0x00 seq(u64be)` by the seq of its first version. The value is
    /// its versions in seq order, each `varint (seq − row seq), varint n, n bytes` of a version
    /// record (header, document, changes). So a version costs its record and two varints, not a
    /// key and a B-tree node of its own; an as-of read is still one seek (the row at or before
    /// the seq) and a walk of at most ``keyframeInterval`` entries.
    struct HistoryRow {
        /// The seq of the row's first version (its key's last 8 bytes).
        let seq: UInt64
        let bytes: UnsafeRawBufferPointer
        /// The decompressed bytes of a solid row, which `bytes` point into (nil: `bytes` point
        /// into the map, valid for the transaction).
        private let owner: OwnedBytes?

        /// The first byte of a row's value in `history` when the row itself was moved to
        /// `history-packed`, followed by its number there as a varint (``pointerMark``; 3 bytes
        /// for the outages history's 23,000 rows), or, as rows before items 29 were written,
        /// `packedMark` and the number as u64be. A row's own first byte is the varint 0 of its
        /// first version's offset.
        static let pointerMark: UInt8 = 0xFE
        static let packedMark: UInt8 = 0xFF
        /// The most bytes a pointer takes: the mark and a varint of a u64.
        static let pointerCapacity = 11

        /// Whether a `history` value points to `history-packed`.
        static func isPointer(_ value: UnsafeRawBufferPointer) -> Bool { value.first.map { $0 >= pointerMark } ?? false }

        /// Writes the value that stands in `history` for a row packed under `number` into
        /// `pointer` (``pointerCapacity`` bytes at least); returns its length.
        static func writePointer(to number: UInt64, into pointer: UnsafeMutableRawBufferPointer) -> Int {
            pointer[0] = pointerMark
            var n = 1
            ByteWriter.varint(number) {
                pointer[n] = $0; n += 1
            }
            return n
        }

        /// The number a pointer value holds.
        static func pointedNumber(_ value: UnsafeRawBufferPointer) throws -> UInt64 {
            if value.first == packedMark {
                guard value.count == 9 else { throw ByteReader.Truncated() }
                return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: value[1...]))
            }
            var r = ByteReader(UnsafeRawBufferPointer(rebasing: value[1...]))
            let number = try r.varint()
            guard r.isAtEnd else { throw ByteReader.Truncated() }
            return number
        }

        /// The row holding the version in force at `seq` for `collection`/`key`, or nil.
        static func containing(_ collection: String, _ key: String, _ seq: UInt64, _ txn: Transaction, _ tables: TableSet) throws -> HistoryRow? {
            let k = historyKey(collection, key, seq, tables)
            let c = try txn.cursor(tables["history"])
            func ofKey(_ e: Cursor.Entry?) -> Bool {
                e.map { $0.key.count == k.count && $0.key.prefix(k.count - 8).elementsEqual(k.prefix(k.count - 8)) } ?? false
            }
            guard let e = try c.seek(atMost: k), ofKey(e) else {
                // No row in `history` at or before `seq`. A key with rows after it keeps none in
                // `current` (a read before a key's first version); else its only row may be there.
                if ofKey(try c.seek(atLeast: k)) { return nil }
                return try keptInCurrent(collection, key, txn, tables).flatMap { $0.seq <= seq ? $0 : nil }
            }
            return try HistoryRow(key: e.key, value: e.value, txn, tables)
        }

        /// Visits the key's rows in seq order while `body` returns true: `history`'s, or the one
        /// its `current` record keeps (``CurrentRecord/packed``) when `history` has none.
        static func forEachRow(
            _ collection: String, _ key: String, _ txn: Transaction, _ tables: TableSet, _ body: (HistoryRow) throws -> Bool
        ) throws {
            let prefix = historyPrefix(collection, key, tables) + [0]
            let c = try txn.cursor(tables["history"])
            var entry = try c.seek(atLeast: prefix)
            guard let first = entry, first.key.hasPrefix(prefix), first.key.count == prefix.count + 8 else {
                if let row = try keptInCurrent(collection, key, txn, tables) { _ = try body(row) }
                return
            }
            while let e = entry, e.key.hasPrefix(prefix), e.key.count == prefix.count + 8 {
                guard try body(try HistoryRow(key: e.key, value: e.value, txn, tables)) else { return }
                entry = try c.next()
            }
        }

        /// The key's only row when its `current` record keeps it (a key whose history is one
        /// closed row: ``CurrentRecord/packed``); nil otherwise.
        static func keptInCurrent(_ collection: String, _ key: String, _ txn: Transaction, _ tables: TableSet) throws -> HistoryRow? {
            let record = try currentKey(collection, key, tables).withUnsafeBytes { k in try txn.get(tables["current"], key: k).map { try CurrentRecord($0) } }
            guard let record else { return nil }
            guard let number = record.packed else { return nil }
            return try HistoryRow(seq: record.firstSeq, number: number, txn, tables)
        }

        /// The row a `history` entry (key and value) stands for, read from `history-packed`
        /// when the value points there.
        init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, _ txn: Transaction, _ tables: TableSet) throws {
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: key[(key.count - 8)...]))
            guard Self.isPointer(value) else {
                guard value.first == Self.solidMark else {
                    self.init(seq: seq, bytes: value)
                    return
                }
                // An open row of small documents, solid (``openForm(_:seq:)``).
                self.init(seq: seq, owner: try Self.plain(ofOpen: value, seq: seq))
                return
            }
            guard let number = try? Self.pointedNumber(value) else { throw EventStoreError.corrupted("a packed history row of seq \(seq) is missing") }
            try self.init(seq: seq, number: number, txn, tables)
        }

        /// The row of first seq `seq` packed under `number` in `history-packed`.
        init(seq: UInt64, number: UInt64, _ txn: Transaction, _ tables: TableSet) throws {
            self.seq = seq
            // The row's own entry, or the block holding it.
            let c = try txn.cursor(tables["history-packed"])
            guard let (at, row) = try Self.packedEntry(number, c), at > 0 else {
                throw EventStoreError.corrupted("a packed history row of seq \(seq) is missing")
            }
            do {
                if let count = try Self.blockCount(row) {
                    guard number - at < UInt64(count) else { throw EventStoreError.corrupted("a packed history row of seq \(seq) is missing") }
                    owner = try Self.blockRow(row, first: at, number: number, c, txn, tables)
                } else {
                    guard at == number else { throw EventStoreError.corrupted("a packed history row of seq \(seq) is missing") }
                    guard row.first == Self.solidMark || row.first == Self.anchoredMark else { bytes = row; owner = nil; return }
                    owner = try Self.unpackSolid(row, number: number, txn, tables)
                }
            } catch let error as EventStoreError {
                throw error
            } catch {
                throw EventStoreError.corrupted("the packed history row of seq \(seq) does not decompress")
            }
            bytes = UnsafeRawBufferPointer(owner!.buffer)
        }

        init(seq: UInt64, bytes: UnsafeRawBufferPointer) {
            self.seq = seq
            self.bytes = bytes
            owner = nil
        }

        private init(seq: UInt64, owner: OwnedBytes) {
            self.seq = seq
            self.owner = owner
            bytes = UnsafeRawBufferPointer(owner.buffer)
        }

        /// Visits the versions in seq order while `body` returns true.
        func forEach(_ body: (_ seq: UInt64, _ record: UnsafeRawBufferPointer) throws -> Bool) throws {
            var r = ByteReader(bytes)
            while !r.isAtEnd {
                let at = seq + (try r.varint())
                let n = Int(try r.varint())
                guard try body(at, try r.slice(n)) else { return }
            }
        }

        /// Runs `body` with the last version at or before `seq` (its record is valid only inside
        /// `body`), or returns nil when the row has none.
        func withLast<T>(atMost seq: UInt64, _ body: (_ seq: UInt64, _ record: UnsafeRawBufferPointer) throws -> T) throws -> T? {
            var found: (UInt64, UnsafeRawBufferPointer)?
            try forEach { s, record in
                guard s <= seq else { return false }
                found = (s, record)
                return true
            }
            guard let found else { return nil }
            return try withExtendedLifetime(owner) { try body(found.0, found.1) }
        }
    }

    /// Bytes a solid history row was decompressed into, freed with the last row that uses them.
    final class OwnedBytes {
        let buffer: UnsafeMutableRawBufferPointer

        init(count: Int) { buffer = .allocate(byteCount: max(count, 1), alignment: 8) }

        deinit { buffer.deallocate() }
    }

    /// The head of a `history` record, before the document: version, time, how it came to be.
    struct VersionHeader {
        var version: Int
        var recordedAt: Timestamp
        var kind: ChangeKind

        init(reading r: inout ByteReader) throws {
            version = Int(try r.varint())
            recordedAt = Timestamp(microseconds: try r.i64())
            // One byte since documents 7; the kind's name before.
            let first = try r.u8()
            if let kind = ChangeKind(code: first) {
                self.kind = kind
            } else {
                guard let kind = ChangeKind(rawValue: String(decoding: try r.slice(Int(first)), as: UTF8.self)) else {
                    throw DocumentError("unknown change kind in history")
                }
                self.kind = kind
            }
        }
    }

    struct CurrentRecord {
        var version: Int
        var firstSeq: UInt64
        var changedSeq: UInt64
        var lastSeenSeq: UInt64
        var removed: Bool
        var digest: Digest16
        /// The number in `history-packed` of the key's only row, when its history is that one
        /// closed row (a removed key that never came back): kept here instead of a pointer row
        /// in `history`, which cost a gone key about 40 bytes (outages' 22,922 keys, nearly all
        /// gone: 0.93 MB). Only a removed record keeps one.
        var packed: UInt64?

        init(version: Int, firstSeq: UInt64, changedSeq: UInt64, lastSeenSeq: UInt64, removed: Bool, digest: Digest16) {
            self.version = version
            self.firstSeq = firstSeq
            self.changedSeq = changedSeq
            self.lastSeenSeq = lastSeenSeq
            self.removed = removed
            self.digest = digest
        }

        init(_ raw: UnsafeRawBufferPointer) throws {
            var r = ByteReader(raw)
            let header = try DocumentSummary(reading: &r)
            version = header.version
            firstSeq = header.firstSeq
            changedSeq = header.changedSeq
            lastSeenSeq = header.lastSeenSeq
            removed = header.removed
            // A removed key's record has no digest (since documents 16, items 27): nothing
            // compares with it, a return is a version whatever it holds. Its flag 2: the number
            // of its only row follows (since documents 20, items 32 and the versions with it).
            if removed, raw[r.offset - 1] == Self.removedKeepingRow {
                digest = Digest16(high: 0, low: 0)
                packed = try r.varint()
            } else {
                digest = removed && r.isAtEnd ? Digest16(high: 0, low: 0) : Digest16(try r.slice(16))
            }
        }

        /// The removed flag of a record that keeps its key's only row (``packed``).
        static let removedKeepingRow: UInt8 = 2

        /// The stored form, built on the stack (it is written on every put): four varints, the
        /// removed flag and, unless removed, the digest (a list that items leave for good keeps
        /// a record per gone key: outages' 22,922 keys, nearly all gone, 16 bytes each), or the
        /// number of the only row a removed key keeps here.
        func withEncoded<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try withUnsafeTemporaryAllocation(byteCount: 4 * 10 + 1 + 16, alignment: 1) { out in
                var n = 0
                func emit(_ b: UInt8) { out[n] = b; n += 1 }
                ByteWriter.varint(UInt64(version), emit); ByteWriter.varint(firstSeq, emit)
                ByteWriter.varint(changedSeq, emit); ByteWriter.varint(lastSeenSeq, emit)
                if removed, let packed {
                    emit(Self.removedKeepingRow)
                    ByteWriter.varint(packed, emit)
                } else {
                    emit(removed ? 1 : 0)
                }
                if !removed { withUnsafeBytes(of: (digest.high.bigEndian, digest.low.bigEndian)) { for b in $0 { emit(b) } } }
                return try body(UnsafeRawBufferPointer(rebasing: out[0..<n]))
            }
        }
    }

    /// A document digest (``digest(_:)``), held inline: no array per record read.
    struct Digest16: Equatable {
        var high: UInt64
        var low: UInt64

        init(_ bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count == 16, "a digest is 16 bytes")
            high = UInt64(bigEndianBytes: bytes)
            low = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: bytes[8...]))
        }

        init(_ bytes: [UInt8]) { self = bytes.withUnsafeBytes { Digest16($0) } }

        init(high: UInt64, low: UInt64) {
            self.high = high
            self.low = low
        }
    }

    static func decodeVersion(
        collection: String, key: String, seq: UInt64, _ raw: UnsafeRawBufferPointer,
        _ txn: Transaction, _ tables: TableSet
    ) throws -> DocumentVersion {
        let stored = try decodeStoredVersion(seq: seq, raw)
        return try StoredDocumentTexts([stored], collection: collection, key: key, reader: DocumentReader(transaction: txn, tables: tables)).parsed(0)
    }

    /// A history record's version as stored: nothing decoded.
    static func decodeStoredVersion(seq: UInt64, _ raw: UnsafeRawBufferPointer) throws -> StoredDocumentVersion {
        var r = ByteReader(raw)
        let header = try VersionHeader(reading: &r)
        let document = try DocumentSource(reading: &r, seq: seq)
        // After the document: the changes stores before documents 7 kept, or the slice of the
        // payload an open row's version will be kept as (``PayloadSlice/mark``).
        let rest = try r.blob()
        return StoredDocumentVersion(
            version: header.version, seq: seq, recordedAt: header.recordedAt, kind: header.kind, document: document,
            storedChanges: rest.first == PayloadSlice.mark ? [] : [UInt8](rest))
    }

    /// The text of the keyframe a delta of `collection`/`key` refers to: the version at `seq`.
    static func keyframeText(
        _ collection: String, _ key: String, at seq: UInt64, _ txn: Transaction, _ tables: TableSet, _ memo: DocumentFold? = nil
    ) throws -> [UInt8] {
        let base = try storedDocument(collection, key, at: seq, txn, tables, memo)
        if case .delta = base {
            throw EventStoreError.corrupted("the keyframe at seq \(seq) of \(collection)/\(key.prefix(64)) is itself a delta")
        }
        return try base.text(collection, key, txn, tables, memo)
    }
}
