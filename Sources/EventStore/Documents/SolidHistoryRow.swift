import LMDB

/// Solid rows: how a closed row of `history` is stored in `history-packed`.
///
/// A closed row's deltas are each a zstd frame of their own against the row's keyframe, 35–40
/// bytes for a change of a few fields, most of it the frame's own cost, and each version's header
/// (seq, time, version, kind) takes about 15 bytes that do not compress where they sit, between
/// documents. A solid row stores the row's versions as columns, headers first (each field as a
/// small difference from the version before), then every document whole, one after the other, and
/// compresses the lot as one frame: a document costs the bytes that changed and a few matches
/// against the one before it. Measured on the scraping histories (docs/benchmarks.md, "Real
/// scraping histories"). Closed rows are solid (no version is added to them again), and so are open
/// rows of small documents (``openForm(_:seq:)``), compressed again with each version they gain.
///
/// The columns (``encodeColumns(_:)``):
/// ```
/// varint count
/// count × (varint seq − previous seq, varint time (see ``encodeTime``), u8 kind,
///          varint version − previous version, varint document length, varint rest length)
/// the rests (what follows each record's document: its changes blob), then the documents
/// ```
/// A closed row's columns wait for their block alone (`u8 1 | varint n | frame`, zstd,
/// magicless, no content size), then are compressed with the rows that closed beside them
/// (``blockMark``, HistoryBlocks.swift). Rows written before blocks are read too: `u8 1` alone, or
/// `u8 2` against the first ``anchorPrefixLimit`` bytes of an anchor's columns
/// (``anchorInterval``). A read decompresses the row (or its block up to the row's end) and
/// rebuilds the plain row (``HistoryRow``'s entries, every document `.inline`), so every reader
/// of rows reads a solid row as it reads any other.
extension KeyedDocumentProjection.HistoryRow {
    /// The first byte of a solid row. A plain row starts with 0, its first version's offset.
    static let solidMark: UInt8 = 0x01
    /// The most document text a row holds: a read decompresses the whole row. A version joins its
    /// key's row only while the row stays within it (``KeyedDocumentProjection/deltaOrKeyframe``),
    /// so a row of large documents closes after a few versions instead of
    /// ``KeyedDocumentProjection/keyframeInterval``; one document larger than half of it is a row
    /// of its own and stays plain. At 32 KiB most rows of the incidents history (items of 4–37 KB)
    /// stayed plain; at 128 KiB each of its 20 KB items started a row every six versions, its
    /// whole document again each time (0.27 MB of its 1.07 MB item history). Rows of small
    /// documents are bounded by ``KeyedDocumentProjection/keyframeInterval`` first: 32 versions of
    /// 4 KB fit a block (``blockLimit``), and an as-of read of them on a 1 M-event log takes
    /// 55–59 µs at p99 (at 256 KiB rows of 64 versions, 100 µs).
    static let solidTextLimit = 512 << 10

    /// An open row (in `history`, still growing) whose keyframe, its first document, has at most
    /// this much text is stored solid too (``openForm(_:seq:)``), and its versions share
    /// ``openTextLimit``. Most keys of a list that changes in place never close their last row:
    /// on the `items` workload, 650 keys' open rows of up to 31 deltas, each a zstd frame of its
    /// own after a keyframe compressed alone, were 1.12 MB of its 5.69 MB store.
    static let openKeyframeLimit = 2 << 10
    /// The most document text an open row of small documents holds (its versions' texts added
    /// up, as for ``solidTextLimit``): every version it gains decompresses and compresses it
    /// again. 32 versions of 2 KiB fit.
    static let openTextLimit = 64 << 10

    /// How `history` stores the open row `plain` of first seq `seq` (a row's plain bytes):
    /// solid, compressed alone at ``pendingLevel`` (the form it waits in for its block once
    /// closed), when it has two versions or more and its keyframe's text is at most
    /// ``openKeyframeLimit``; nil when it stays plain. A function of the row's versions alone, so
    /// a row reads back the same whichever batch wrote it.
    static func openForm(_ plain: UnsafeRawBufferPointer, seq: UInt64) -> [UInt8]? {
        var r = ByteReader(plain)
        // Before anything is decompressed: the first version's text, and a second version.
        guard (try? r.varint()) != nil, let first = try? r.slice(r.count()), !r.isAtEnd else { return nil }
        var record = ByteReader(first)
        guard (try? KeyedDocumentProjection.VersionHeader(reading: &record)) != nil,
            let text = try? KeyedDocumentProjection.DocumentSource.textCount(reading: &record), text <= openKeyframeLimit,
            let columns = solidColumns(plain, seq: seq, keeping: .allButLast)
        else { return nil }
        return solid(columns, level: pendingLevel)
    }

    /// Runs `body` with the bytes `history` stores for the open row `plain` of first seq `seq`:
    /// its solid form (``openForm(_:seq:)``), or `plain` itself.
    static func withOpenForm<T>(_ plain: UnsafeRawBufferPointer, seq: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        guard let solid = openForm(plain, seq: seq) else { return try body(plain) }
        return try solid.withUnsafeBytes(body)
    }

    /// The stored form of the open row `stored` (solid, of first seq `seq`) with `version`
    /// joined: a delta (`frame`, of `size` bytes of text) against the row's keyframe, its first
    /// document. The same bytes ``openForm(_:seq:)`` gives for the row's plain bytes with the
    /// version's entry after them, without rebuilding those bytes and reading them again.
    static func joiningOpen(
        _ stored: UnsafeRawBufferPointer, seq: UInt64, _ version: SolidVersion, size: Int, frame: [UInt8]
    ) throws -> [UInt8] {
        var versions = try openVersions(stored, seq: seq)
        guard let first = versions.first?.document, let last = versions.last?.document else {
            throw EventStoreError.corrupted("the history row of seq \(seq) is empty")
        }
        var joined = version
        do {
            // Against the row's keyframe, or its last version when the keyframe is kept as a
            // slice (``KeyedDocumentProjection/deltaOrKeyframe``).
            let prefix = first.isEmpty ? last : first
            joined.document = try frame.withUnsafeBytes { f in try ZstdContext.pooled { try $0.decompress(f, prefix: prefix, size: size) } }
        } catch {
            throw EventStoreError.corrupted("a version joining the history row of seq \(seq) does not decompress")
        }
        versions.append(joined)
        guard let solid = solid(encodeColumns(keepingSlices(versions, seq: seq, .allButLast)), level: pendingLevel) else {
            throw EventStoreError.corrupted("the history row of seq \(seq) does not compress")
        }
        return solid
    }

    /// The columns of the open row of first seq `seq` stored solid (``openForm(_:seq:)``).
    static func openColumns(_ stored: UnsafeRawBufferPointer, seq: UInt64) throws -> [UInt8] {
        do {
            return try columns(ofSolid: stored)
        } catch {
            throw EventStoreError.corrupted("the history row of seq \(seq) does not decompress")
        }
    }

    /// The versions of the open row of first seq `seq` stored solid (``openForm(_:seq:)``),
    /// every document whole.
    static func openVersions(_ stored: UnsafeRawBufferPointer, seq: UInt64) throws -> [SolidVersion] {
        let columns = try openColumns(stored, seq: seq)
        do {
            return try decodeColumns(columns)
        } catch {
            throw EventStoreError.corrupted("the history row of seq \(seq) does not decode")
        }
    }

    /// The plain bytes of the open row of first seq `seq` stored solid (``openForm(_:seq:)``),
    /// rebuilt.
    static func plain(ofOpen stored: UnsafeRawBufferPointer, seq: UInt64) throws -> KeyedDocumentProjection.OwnedBytes {
        plainRow(try openVersions(stored, seq: seq))
    }

    struct SolidVersion: Equatable {
        var offset: UInt64
        var version: UInt64
        var time: Int64
        var kind: UInt8
        var document: [UInt8]
        var rest: [UInt8]
    }

    /// The columns of the row `plain` (the row of seq `seq` as `history` holds it: its versions,
    /// every document whole, ``encodeColumns(_:)``), or nil for a row that stays plain (one
    /// version, more text than ``solidTextLimit``, a record this version does not write).
    ///
    /// `slices`: which versions whose records name the slice of their page's body they came from
    /// (``PayloadSlice``) keep that slice instead of their document (``keepingSlices(_:seq:_:)``).
    static func solidColumns(_ plain: UnsafeRawBufferPointer, seq: UInt64, keeping slices: Slices = .none) -> [UInt8]? {
        guard worthSolid(plain), var versions = try? solidVersions(Self(seq: seq, bytes: plain)), versions.count > 1 else { return nil }
        versions = keepingSlices(versions, seq: seq, slices)
        let columns = encodeColumns(versions)
        // What a read will rebuild, checked once here: a row that would not read back exactly
        // stays plain.
        guard (try? decodeColumns(columns)) == versions else { return nil }
        return columns
    }

    /// A solid row of `columns` compressed alone at `level` (a row waiting for its block).
    static func solid(_ columns: [UInt8], level: Int32) -> [UInt8]? {
        CompressedValue.framed(columns, mark: solidMark, level: level)
    }

    /// The columns of a solid row compressed alone (a row waiting for its block).
    static func columns(ofSolid stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard stored.first == solidMark else { throw ByteReader.Truncated() }
        return try decompressSolid(stored, prefix: [])
    }

    /// Before blocks, every ``anchorInterval``-th packed row (numbers 1, 65, 129, …) was an anchor:
    /// compressed on its own (``solidMark``), it was the prefix (zstd's dictionary without
    /// training) the solid rows after it compressed against (``anchoredMark``), up to the next
    /// anchor (alone when the anchor stayed plain); such rows are still read, and a read of one
    /// decompresses the anchor's first ``anchorPrefixLimit`` bytes too.
    static let anchorInterval: UInt64 = 64
    static let anchoredMark: UInt8 = 0x02

    static func anchor(of number: UInt64) -> UInt64 { (number - 1) / anchorInterval * anchorInterval + 1 }

    /// What the rows anchored at packed row `number` are compressed against: the first
    /// ``anchorPrefixLimit`` bytes of its columns (it is a solid row compressed alone).
    static func anchorPrefix(_ number: UInt64, _ txn: Transaction, _ tables: TableSet) throws -> [UInt8] {
        let key = number.bigEndianBytes
        guard let row = try key.withUnsafeBytes({ try txn.get(tables["history-packed"], key: $0) }), row.first == solidMark else {
            throw EventStoreError.corrupted("the packed history row \(number), an anchor, is missing or not solid")
        }
        return try decompressSolid(row, prefix: [], upTo: anchorPrefixLimit)
    }

    /// The most of an anchor's columns the rows after it are compressed against: a read of an
    /// anchored row decompresses that much of the anchor first, and an anchor of large
    /// documents is up to ``solidTextLimit``. Its first documents give the matches the rest
    /// would (the same sizes to a few bytes on the scraping histories).
    static let anchorPrefixLimit = 32 << 10

    /// Whether a row has two versions or more and at most ``solidTextLimit`` bytes of documents,
    /// from the records' headers and sizes (nothing is decompressed). A row of one version (a
    /// keyframe closed by the next; every version of a document that is its event's whole
    /// payload, whose stored form is the log's) stays as it is: solid, it saved 0.03 MB of the
    /// incidents history's item history, and cost a 1 M-event rebuild two fifths of its time
    /// and an as-of read the decompression of an anchor.
    private static func worthSolid(_ row: UnsafeRawBufferPointer) -> Bool {
        var r = ByteReader(row)
        var versions = 0, text = 0
        do {
            while !r.isAtEnd {
                _ = try r.varint()
                let slice = try r.slice(try r.count())
                if versions == 0, r.isAtEnd { return false }
                var record = ByteReader(slice)
                _ = try KeyedDocumentProjection.VersionHeader(reading: &record)
                text += try KeyedDocumentProjection.DocumentSource.textCount(reading: &record)
                versions += 1
                guard text <= solidTextLimit else { return false }
            }
        } catch {
            return false
        }
        return versions > 1
    }

    /// The plain bytes of a solid row, rebuilt.
    static func unpackSolid(_ stored: UnsafeRawBufferPointer, number: UInt64, _ txn: Transaction, _ tables: TableSet) throws
        -> KeyedDocumentProjection.OwnedBytes
    {
        let prefix = stored.first == anchoredMark ? try anchorPrefix(anchor(of: number), txn, tables) : []
        return try plainRow(decodeColumns(decompressSolid(stored, prefix: prefix)))
    }

    /// Which versions of a solid row keep their slices (``keepingSlices(_:seq:_:)``).
    enum Slices {
        /// None: every document whole.
        case none
        /// Every version but the last: an open row, whose last version is its key's document
        /// now (read whole, as every list and page of items reads it), and which the next
        /// version is compressed against when the row's keyframe is kept as a slice.
        case allButLast
        /// Every version: a closed row.
        case all
    }

    /// `versions` of the row of first seq `seq`, each whose record names a slice of its page's
    /// body (its rest: ``PayloadSlice/blob(seq:size:)``) without its document, as `slices` says:
    /// the row keeps the slice, and a read takes the document from the log (a version with no
    /// document and that rest, ``plainRow(_:)``).
    static func keepingSlices(_ versions: [SolidVersion], seq: UInt64, _ slices: Slices = .all) -> [SolidVersion] {
        let count: Int
        switch slices {
        case .none: return versions
        case .allButLast: count = versions.count - 1
        case .all: count = versions.count
        }
        return versions.enumerated().map { i, v in
            guard i < count, !v.document.isEmpty, sliceNamed(byRest: v.rest, seq: seq + v.offset)?.size == v.document.count else { return v }
            var kept = v
            kept.document = []
            return kept
        }
    }

    /// The columns of the open row `stored` (stored solid, of first seq `seq`) as it closes, its
    /// versions kept as slices where their records name one (``keepingSlices(_:seq:_:)``); nil
    /// when none does.
    static func closingColumns(ofOpen stored: UnsafeRawBufferPointer, seq: UInt64) throws -> [UInt8]? {
        let versions = try openVersions(stored, seq: seq)
        let kept = keepingSlices(versions, seq: seq)
        return kept == versions ? nil : encodeColumns(kept)
    }

    /// The slice a version's rest (its record's blob, length first) names, if any.
    static func sliceNamed(byRest rest: [UInt8], seq: UInt64) -> (slice: PayloadSlice, size: Int)? {
        guard let content = blobContent(rest) else { return nil }
        return content.withUnsafeBytes { PayloadSlice.named(byBlob: $0, seq: seq) }
    }

    /// What a version's rest holds after its blob's length, when that is all it holds.
    private static func blobContent(_ rest: [UInt8]) -> ArraySlice<UInt8>? {
        rest.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            guard let n = try? r.count(), (try? r.slice(n)) != nil, r.isAtEnd else { return nil }
            return rest[(rest.count - n)...]
        }
    }

    /// The plain bytes of a row whose columns are `versions`. A version kept as a slice (no
    /// document) becomes the slice's record (``KeyedDocumentProjection/DocumentSource``): `varint
    /// 0, varint 0, varint 0`, then its rest's slice and size, then an empty blob.
    static func plainRow(_ versions: [SolidVersion]) -> KeyedDocumentProjection.OwnedBytes {
        var size = 0
        for v in versions {
            let record = recordCount(v)
            size += varintCount(v.offset) + varintCount(UInt64(record)) + record
        }
        let owned = KeyedDocumentProjection.OwnedBytes(count: size)
        var n = 0
        func emit(_ b: UInt8) { owned.buffer[n] = b; n += 1 }
        func emit(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: owned.buffer[n..<(n + $0.count)]).copyMemory(from: $0) }
            n += bytes.count
        }
        for v in versions {
            ByteWriter.varint(v.offset, emit)
            ByteWriter.varint(UInt64(recordCount(v)), emit)
            ByteWriter.varint(v.version, emit)
            withUnsafeBytes(of: UInt64(bitPattern: v.time).bigEndian) { for b in $0 { emit(b) } }
            emit(v.kind)
            if let slice = sliceFields(v) {
                emit([0, 0, 0])
                emit(slice)
                emit(0)
                continue
            }
            ByteWriter.varint(UInt64(v.document.count), emit)
            emit(v.document)
            emit(v.rest)
        }
        return owned
    }

    /// What follows `varint 0, varint 0, varint 0` in the plain record of a version kept as a
    /// slice: its rest's content after the mark (back, lower, count, size); nil for any other.
    private static func sliceFields(_ v: SolidVersion) -> [UInt8]? {
        guard v.document.isEmpty, let content = blobContent(v.rest), content.count > 1, content.first == PayloadSlice.mark else { return nil }
        return Array(content.dropFirst())
    }

    private static func recordCount(_ v: SolidVersion) -> Int {
        if let slice = sliceFields(v) { return varintCount(v.version) + 8 + 1 + 3 + slice.count + 1 }
        return varintCount(v.version) + 8 + 1 + varintCount(UInt64(v.document.count)) + v.document.count + v.rest.count
    }

    private static func varintCount(_ v: UInt64) -> Int {
        var n = 0
        ByteWriter.varint(v) { _ in n += 1 }
        return n
    }

    /// The row's versions with their documents decoded. Every delta of a row is against the
    /// row's keyframe, its first version.
    private static func solidVersions(_ row: Self) throws -> [SolidVersion] {
        var out: [SolidVersion] = []
        var keyframe: [UInt8] = []
        var text = 0
        try row.forEach { at, raw in
            var record = ByteReader(raw)
            let version = try record.varint()
            let time = try record.i64()
            let kind = try record.u8()
            guard ChangeKind(code: kind) != nil else { throw ByteReader.Truncated() }
            let document: [UInt8]
            switch try KeyedDocumentProjection.DocumentSource(reading: &record, seq: at) {
            case let .slice(slice, size):
                // Kept as a slice already (a closed row packed again): no document, the slice
                // in its rest.
                guard try record.count() == 0, record.isAtEnd else { throw ByteReader.Truncated() }
                out.append(
                    SolidVersion(offset: at - row.seq, version: version, time: time, kind: kind, document: [], rest: slice.blob(seq: at, size: size)))
                return true
            case .inline(let bytes): document = bytes
            case .encoded(let bytes): document = try bytes.withUnsafeBytes { b in try ZstdContext.pooled { try BlobCodec.decode(b, context: $0) } }
            case let .delta(base, _, size, frame):
                guard base == row.seq, !out.isEmpty else { throw ByteReader.Truncated() }
                document = try frame.withUnsafeBytes { f in try ZstdContext.pooled { try $0.decompress(f, prefix: keyframe, size: size) } }
            }
            if out.isEmpty { keyframe = document }
            text += document.count
            guard text <= solidTextLimit, !document.isEmpty else { throw ByteReader.Truncated() }
            out.append(
                SolidVersion(
                    offset: at - row.seq, version: version, time: time, kind: kind, document: document,
                    rest: try record.bytes(record.remaining)))
            return true
        }
        return out
    }

    private static func encodeColumns(_ versions: [SolidVersion]) -> [UInt8] {
        var w = ByteWriter(capacity: versions.reduce(0) { $0 + $1.document.count + 24 })
        w.varint(versions.count)
        var seq: UInt64 = 0, time: Int64 = 0, version: UInt64 = 0
        for v in versions {
            w.varint(v.offset &- seq)
            w.varint(encodeTime(v.time &- time))
            w.u8(v.kind)
            w.varint(v.version &- version)
            w.varint(v.document.count)
            w.varint(v.rest.count)
            (seq, time, version) = (v.offset, v.time, v.version)
        }
        for v in versions { w.raw(v.rest) }
        for v in versions { w.raw(v.document) }
        return w.bytes
    }

    static func decodeColumns(_ columns: [UInt8]) throws -> [SolidVersion] {
        try columns.withUnsafeBytes { try decodeColumns($0) }
    }

    static func decodeColumns(_ raw: UnsafeRawBufferPointer) throws -> [SolidVersion] {
        var r = ByteReader(raw)
        let count = try r.count(limit: 1 << 20)
        var out: [SolidVersion] = []
        out.reserveCapacity(count)
        var seq: UInt64 = 0, time: Int64 = 0, version: UInt64 = 0
        var lengths: [(document: Int, rest: Int)] = []
        for _ in 0..<count {
            seq &+= try r.varint()
            time &+= decodeTime(try r.varint())
            let kind = try r.u8()
            version &+= try r.varint()
            lengths.append((try r.count(), try r.count()))
            out.append(SolidVersion(offset: seq, version: version, time: time, kind: kind, document: [], rest: []))
        }
        for i in out.indices { out[i].rest = try r.bytes(lengths[i].rest) }
        for i in out.indices { out[i].document = try r.bytes(lengths[i].document) }
        guard r.isAtEnd else { throw ByteReader.Truncated() }
        return out
    }

    /// The columns of a solid row, or their first `limit` bytes (a streaming decompression that
    /// stops there).
    private static func decompressSolid(_ stored: UnsafeRawBufferPointer, prefix: [UInt8], upTo limit: Int? = nil) throws -> [UInt8] {
        var r = ByteReader(stored)
        let mark = try r.u8()
        guard mark == solidMark || mark == anchoredMark else { throw ByteReader.Truncated() }
        let n = Int(try r.varint())
        guard n <= 2 * solidTextLimit + (1 << 20) else { throw ByteReader.Truncated() }
        let frame = UnsafeRawBufferPointer(rebasing: stored[r.offset...])
        if let limit, limit < n, prefix.isEmpty {
            return try ZstdContext.pooled { try $0.decompressStart(frame, count: limit) }
        }
        return try ZstdContext.pooled { context in
            try prefix.withUnsafeBytes { p in
                try [UInt8](unsafeUninitializedCapacity: n) { out, count in
                    try context.decompress(frame, prefix: p, into: UnsafeMutableRawBufferPointer(out), size: n)
                    count = n
                }
            }
        }
    }

    /// A time difference (µs) as a varint: zigzag, and divided by a million when it is whole
    /// seconds (the low bit says which), as the times of an imported history are.
    static func encodeTime(_ delta: Int64) -> UInt64 {
        let whole = delta % 1_000_000 == 0
        let v = whole ? delta / 1_000_000 : delta
        let zigzag = UInt64(bitPattern: (v << 1) ^ (v >> 63))
        return zigzag << 1 | (whole ? 1 : 0)
    }

    static func decodeTime(_ stored: UInt64) -> Int64 {
        let zigzag = stored >> 1
        let v = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
        return stored & 1 == 1 ? v &* 1_000_000 : v
    }
}
