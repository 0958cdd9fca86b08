import Foundation
import Synchronization
import CZstd
import LMDB

/// How payload bodies are stored in the `blobs` database, keyed by SHA-256 of the raw bytes.
///
/// Value layout: `u8 codec | varint rawSize | bytes`, where codec 0 stores the body as it is and
/// codec 2 stores `8-byte seal | zstd frame`, the seal being the first 8 bytes of SHA-256 over the
/// frame. A body is compressed with zstd (level 3) when it is at least 128 bytes and compression
/// saves at least 10%.
///
/// Why the seal: a zstd frame has bits a decoder ignores (the header's unused bit, slack in
/// entropy tables), so a flipped bit there decodes to the same body and the content hash alone
/// cannot see it. The seal makes every change of the stored bytes detectable by `verify`.
/// Codec 1 (zstd without a seal, written by earlier versions) is still read.
///
/// Codec 4 stores a body as a delta against another stored body (the previous version of the
/// same URL: ``DeltaChains``): `u8 4 | varint rawSize | 8-byte seal | varint baseSeq | varint depth
/// | frame`, the frame compressed with the base body as a zstd prefix (`ZSTD_CCtx_refPrefix`, the
/// `--patch-from` technique), magicless and without a content size; the seal covers everything
/// after it (base, depth and frame). `depth` counts the deltas down to a keyframe (a body stored
/// whole, depth 0), so a read decodes at most ``DeltaChains/keyframeInterval`` frames.
///
/// Codec 5 stores a pretty-printed JSON body without its layout (``JSONLayout``): `u8 5 | u8
/// layout | varint rawSize | row`, the row (codec 0, 2 or 4) holding the body's minified form,
/// `rawSize` the body's own size. A delta chain runs through the minified forms: a delta row
/// inside codec 5 is made against its base's stored form, and a read puts the layout back on
/// the top body only.
///
/// Codec 6 stores a list's version as its skeleton and the elements it brings to its window of
/// versions (``BodyWindow``): a link of a chain as codec 4 is, and read the same way.
enum BlobCodec {
    static let raw: UInt8 = 0
    static let zstd: UInt8 = 1
    static let sealedZstd: UInt8 = 2
    /// A `blobs` row that points to the `bodies` row (by seq) holding the stored body.
    static let pointer: UInt8 = 3
    /// A delta against the body stored under another seq.
    static let delta: UInt8 = 4
    /// A pretty-printed JSON body stored minified (``JSONLayout``), around a row of its form.
    static let laidOut: UInt8 = 5
    /// A list's version as its skeleton and the elements it brings to its window (``BodyWindow``).
    static let window: UInt8 = 6
    static let sealSize = 8
    static let compressionThreshold = 128
    static let level: Int32 = 3

    static func hash(_ bytes: [UInt8]) -> [UInt8] { Hashing.sha256(bytes) }

    /// Encodes a body for storage, compressing with `context` (reused: creating a zstd context
    /// per body costs more than compressing a small one).
    static func encode(_ body: [UInt8], context: ZstdContext, level: Int32 = level) -> [UInt8] {
        if body.count >= compressionThreshold {
            let bound = ZSTD_compressBound(body.count)
            // Room for the header and the frame's bound from the start: the frame is written in
            // place, and the array is allocated once.
            var w = ByteWriter(capacity: 1 + 10 + sealSize + bound)
            // Header (codec + size varint + seal room) first, then compress straight into the tail.
            w.u8(sealedZstd)
            w.varint(body.count)
            let sealAt = w.bytes.count
            let header = sealAt + sealSize
            w.bytes.append(contentsOf: repeatElement(0, count: sealSize + bound))
            let n = w.bytes.withUnsafeMutableBytes { o in
                body.withUnsafeBytes { i in
                    ZSTD_compressCCtx(context.cctx, o.baseAddress! + header, bound, i.baseAddress, i.count, level)
                }
            }
            if ZSTD_isError(n) == 0, n * 10 <= body.count * 9 {
                w.bytes.removeLast(bound - n)
                seal(&w.bytes, at: sealAt)
                return w.bytes
            }
        }
        var w = ByteWriter(capacity: body.count + 12)
        w.u8(raw)
        w.varint(body.count)
        w.raw(body)
        return w.bytes
    }

    /// The `blobs` row for a body stored in `bodies` under `seq`, built on the stack for `body`.
    static func withPointer<T>(to seq: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeTemporaryAllocation(byteCount: 9, alignment: 1) { row in
            row[0] = pointer
            row.storeBytes(of: seq.bigEndian, toByteOffset: 1, as: UInt64.self)
            return try body(UnsafeRawBufferPointer(row))
        }
    }

    /// The seq a `blobs` row points to, or nil for a row holding the body itself (format 1).
    static func pointee(_ row: UnsafeRawBufferPointer) throws -> UInt64? {
        guard row.first == pointer else { return nil }
        guard row.count == 9 else { throw ByteReader.Truncated() }
        return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: row[1...]))
    }

    /// The stored body (codec, size, bytes) of the `blobs` row under `hash`, following a pointer
    /// to `bodies`; nil when there is no such row or the pointer leads nowhere.
    static func stored(hash: UnsafeRawBufferPointer, blobs: Database, bodies: Database, in txn: Transaction) throws -> UnsafeRawBufferPointer? {
        guard let row = try txn.get(blobs, key: hash) else { return nil }
        guard let seq = try pointee(row) else { return row }
        return try stored(seq: seq, bodies: bodies, in: txn)
    }

    /// The stored body in `bodies` under `seq`: the body the event at `seq` carried first; nil
    /// when that event stored none.
    static func stored(seq: UInt64, bodies: Database, in txn: Transaction) throws -> UnsafeRawBufferPointer? {
        try seq.bigEndianBytes.withUnsafeBytes { try txn.get(bodies, key: $0) }
    }

    /// Decodes a stored value back to the body. Throws on an unknown codec, a size mismatch, a
    /// zstd error or (with `checkSeal`, as `verify` does) a seal that does not match the frame.
    /// A delta (codec 4) needs `bases`, which reads and decodes the body it was made against.
    static func decode(_ stored: UnsafeRawBufferPointer, context: ZstdContext? = nil, checkSeal: Bool = false, bases: DeltaBases? = nil) throws -> [UInt8] {
        try body(of: stored, form: decodeForm(stored, context: context, checkSeal: checkSeal, bases: bases))
    }

    /// Decodes a row to its stored form: the body, or for codec 5 its minified form (what a
    /// delta made against it was made against).
    static func decodeForm(_ stored: UnsafeRawBufferPointer, context: ZstdContext? = nil, checkSeal: Bool = false, bases: DeltaBases? = nil) throws -> [UInt8] {
        let (codec, size, rest) = try header(inner(stored))
        switch codec {
        case raw, zstd, sealedZstd:
            return try [UInt8](unsafeUninitializedCapacity: size) { o, count in
                try decodeSelfContained(codec, size: size, rest, checkSeal: checkSeal, dctx: context?.dctx, into: UnsafeMutableRawBufferPointer(o))
                count = size
            }
        case delta, window:
            guard let bases else { throw EventStoreError.corrupted("a delta-encoded body was read without its chain") }
            return try ZstdContext.maybePooled(context) { try bases.decodeChain(inner(stored), context: $0, checkSeal: checkSeal) }
        default:
            throw ByteReader.Truncated()
        }
    }

    /// The row inside a codec 5 row, or the row itself.
    static func inner(_ stored: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        try laidOutParts(stored)?.row ?? stored
    }

    /// The body of a row whose stored form is `form`: the form itself, or for codec 5 the form
    /// with its layout put back.
    static func body(of stored: UnsafeRawBufferPointer, form: [UInt8]) throws -> [UInt8] {
        guard let parts = try laidOutParts(stored) else { return form }
        guard parts.size <= 1 << 34 else { throw ByteReader.Truncated() }
        return try form.withUnsafeBytes { try JSONLayout.expand($0, layout: parts.layout, size: Int(parts.size)) }
    }

    /// A codec 5 row's layout byte, the body's size and the row of its minified form (the reader
    /// of what ``laidOutRow(_:layout:size:)`` writes); nil for a row of any other codec.
    private static func laidOutParts(_ stored: UnsafeRawBufferPointer) throws -> (layout: UInt8, size: UInt64, row: UnsafeRawBufferPointer)? {
        guard stored.first == laidOut else { return nil }
        var r = ByteReader(stored)
        _ = try r.u8()
        let layout = try r.u8()
        let size = try r.varint()
        let row = try r.slice(r.remaining)
        // One layer: a form is never laid out again.
        guard row.first != laidOut else { throw ByteReader.Truncated() }
        return (layout, size, row)
    }

    /// The row for `body`: ``encode(_:context:level:)`` of its minified form inside codec 5
    /// when it is pretty-printed JSON (``JSONLayout``), else of the body. What the log stores;
    /// a body that leaves the store (``PortableBody``) is encoded without it.
    static func encodeBody(_ body: [UInt8], form: (form: [UInt8], layout: UInt8)?, context: ZstdContext, level: Int32 = level) -> [UInt8] {
        guard let form else { return encode(body, context: context, level: level) }
        return laidOutRow(encode(form.form, context: context, level: level), layout: form.layout, size: body.count)
    }

    /// `row`, a row of a body's minified form, inside codec 5.
    static func laidOutRow(_ row: [UInt8], layout: UInt8, size: Int) -> [UInt8] {
        var w = ByteWriter(capacity: row.count + 12)
        w.u8(laidOut)
        w.u8(layout)
        w.varint(size)
        w.raw(row)
        return w.bytes
    }
}

extension BlobCodec {
    /// Whether a stored row reads on its own (any codec but a delta).
    static func isSelfContained(_ stored: UnsafeRawBufferPointer) -> Bool { !isDelta(stored) }

    /// Whether a stored row builds on another (codec 4 or 6, or either inside codec 5).
    static func isDelta(_ stored: UnsafeRawBufferPointer) -> Bool {
        let codec = stored.first == laidOut ? (try? inner(stored).first) : stored.first
        return codec == delta || codec == window
    }

    /// The delta row for `body` against `base` (stored under `baseSeq`, `depth` deltas from its
    /// keyframe counting this one); nil when zstd fails.
    static func encodeDelta(_ body: [UInt8], base: [UInt8], baseSeq: UInt64, depth: Int, context: ZstdContext, level: Int32 = level) -> [UInt8]? {
        guard let frame = context.compress(body, prefix: base, level: level) else { return nil }
        return deltaRow(frame: frame, size: body.count, baseSeq: baseSeq, depth: depth)
    }

    /// The delta row around `frame`, a body of `size` bytes compressed against its base
    /// (``ZstdContext/compress(_:prefix:level:)``).
    static func deltaRow(frame: [UInt8], size: Int, baseSeq: UInt64, depth: Int) -> [UInt8] {
        var w = ByteWriter(capacity: frame.count + 32)
        w.u8(delta)
        w.varint(size)
        let sealAt = w.bytes.count
        w.raw(repeatElement(0, count: sealSize))
        w.varint(baseSeq)
        w.varint(depth)
        w.raw(frame)
        seal(&w.bytes, at: sealAt)
        return w.bytes
    }

    /// Writes the seal of a row at `sealAt`: the first ``sealSize`` bytes of SHA-256 over
    /// everything after it (codecs 2, 4 and 6 seal so).
    static func seal(_ row: inout [UInt8], at sealAt: Int) {
        row.withUnsafeMutableBytes { b in
            Hashing.sha256(
                UnsafeRawBufferPointer(rebasing: b[(sealAt + sealSize)...]), into: UnsafeMutableRawBufferPointer(rebasing: b[sealAt..<(sealAt + sealSize)]))
        }
    }

    /// Decodes a row that reads on its own (codec 0, 1 or 2) into `context`'s scratch buffer
    /// `slot`; returns the body's size.
    /// A codec 5 row decodes to its minified form here, what the deltas above it were made against.
    static func decodeWhole(_ stored: UnsafeRawBufferPointer, into context: ZstdContext, slot: Int, checkSeal: Bool) throws -> Int {
        let (codec, size, rest) = try header(inner(stored))
        guard codec != delta, codec != window else { throw ByteReader.Truncated() }
        try decodeSelfContained(codec, size: size, rest, checkSeal: checkSeal, dctx: context.dctx, into: context.scratch(slot, capacity: size))
        return size
    }

    /// A stored row's codec, body size and the bytes after them.
    private static func header(_ stored: UnsafeRawBufferPointer) throws -> (codec: UInt8, size: Int, rest: UnsafeRawBufferPointer) {
        var r = ByteReader(stored)
        let codec = try r.u8()
        let size = Int(try r.varint())
        guard size <= 1 << 34 else { throw ByteReader.Truncated() }
        return (codec, size, try r.slice(r.remaining))
    }

    /// Writes the body of a row that reads on its own (codec 0, 1 or 2; `rest`: what follows
    /// its codec and size) to `out`, checking the seal when asked; with no `dctx`, zstd's
    /// one-shot decoder.
    private static func decodeSelfContained(
        _ codec: UInt8, size: Int, _ rest: UnsafeRawBufferPointer, checkSeal: Bool,
        dctx: OpaquePointer?, into out: UnsafeMutableRawBufferPointer
    ) throws {
        switch codec {
        case raw:
            guard rest.count == size else { throw ByteReader.Truncated() }
            if size > 0 { out.copyMemory(from: rest) }
        case zstd, sealedZstd:
            var frame = rest
            if codec == sealedZstd {
                guard rest.count > sealSize else { throw ByteReader.Truncated() }
                let seal = UnsafeRawBufferPointer(rebasing: rest[..<sealSize])
                frame = UnsafeRawBufferPointer(rebasing: rest[sealSize...])
                if checkSeal, !Hashing.sha256(frame, prefix: sealSize).elementsEqual(seal) { throw ByteReader.Truncated() }
            }
            let n =
                if let dctx {
                    ZSTD_decompressDCtx(dctx, out.baseAddress, size, frame.baseAddress, frame.count)
                } else {
                    ZSTD_decompress(out.baseAddress, size, frame.baseAddress, frame.count)
                }
            guard ZSTD_isError(n) == 0, n == size else { throw ByteReader.Truncated() }
        default:
            throw ByteReader.Truncated()
        }
    }
}

/// The parts of a row that builds on another (codec 4 or 6) after its codec and size.
struct DeltaHeader {
    var size: Int
    var base: UInt64
    var depth: Int
    /// A delta's frame; a window row's skeleton and objects frames.
    var frame: UnsafeRawBufferPointer
    /// A window row's parts (codec 6), nil for a delta.
    var window:
        (starts: Bool, restarts: Bool, skeletonSize: Int, objectsSize: Int, skeletonFrame: UnsafeRawBufferPointer, objectsFrame: UnsafeRawBufferPointer)?

    /// `stored`: a delta or window row, or a codec 5 row around one (its stored form's).
    init(_ stored: UnsafeRawBufferPointer, checkSeal: Bool) throws {
        let stored = try BlobCodec.inner(stored)
        var r = ByteReader(stored)
        let codec = try r.u8()
        guard codec == BlobCodec.delta || codec == BlobCodec.window else { throw ByteReader.Truncated() }
        size = Int(try r.varint())
        guard size <= 1 << 34 else { throw ByteReader.Truncated() }
        let seal = try r.slice(BlobCodec.sealSize)
        let sealed = UnsafeRawBufferPointer(rebasing: stored[(stored.count - r.remaining)...])
        if checkSeal, !Hashing.sha256(sealed, prefix: BlobCodec.sealSize).elementsEqual(seal) { throw ByteReader.Truncated() }
        base = try r.varint()
        let d = try r.varint()
        guard d >= 1, d <= UInt64(DeltaChains.maximumDepth) else { throw ByteReader.Truncated() }
        depth = Int(d)
        if codec == BlobCodec.window {
            let flags = try r.u8()
            let skeletonSize = try r.varint(), objectsSize = try r.varint(), skeletonFrameSize = try r.varint()
            guard flags <= 2 else { throw ByteReader.Truncated() }
            guard skeletonSize <= 1 << 34, objectsSize <= 1 << 34, skeletonFrameSize <= UInt64(r.remaining) else { throw ByteReader.Truncated() }
            frame = UnsafeRawBufferPointer(rebasing: stored[r.offset...])
            let skeletonFrame = try r.slice(Int(skeletonFrameSize))
            window = (flags == 1, flags == 2, Int(skeletonSize), Int(objectsSize), skeletonFrame, try r.slice(r.remaining))
        } else {
            frame = try r.slice(r.remaining)
        }
    }
}

/// Reads the bases of delta rows in one transaction, keeping the last few bodies decoded, so a
/// chain read in seq order (a fold, `verify`, a migration) decodes each body once. Bodies are
/// kept and chains walked in their stored forms (a codec 5 row's minified form).
final class DeltaBases {
    let bodies: Database
    let txn: Transaction
    private var recent: [(seq: UInt64, form: [UInt8])] = []
    private static let remembered = 4
    /// Forms met on the way up a long chain, every ``checkpointEvery`` links (when
    /// ``keepsCheckpoints``), so a read of an earlier version of the same chain starts from the
    /// nearest one below it instead of from the keyframe: a walk back through a history (the
    /// changes of a list, newest first) decodes at most that many links a version after its
    /// first. On the `pages` history (275 KB versions, chains of up to 76) the first view of its
    /// latest changes took 95–104 ms, four fifths of it zstd copying matches out of the versions
    /// below; 47–56 ms with them (every 8 links: 40 ms, but an item's versions, oldest first,
    /// paid 5 ms more for the copies).
    private var checkpoints = ByteBudget<UInt64, [UInt8]>(budget: DeltaBases.checkpointBudget)
    /// Whether this reader keeps checkpoints: one that reads many versions of a history in one
    /// transaction. A reader made for one body would only pay for the copies (reading every
    /// `pages` body once in random order: p50 0.69 → 0.98 ms with them).
    let keepsCheckpoints: Bool
    static let checkpointEvery = 16
    /// What the checkpoints of one reader may hold; the oldest go first.
    static let checkpointBudget = 32 << 20

    init(bodies: Database, txn: Transaction, keepsCheckpoints: Bool = false) {
        self.bodies = bodies
        self.txn = txn
        self.keepsCheckpoints = keepsCheckpoints
    }

    /// Decodes a delta row: walks its chain down to a keyframe (or to a body decoded lately),
    /// then back up, each link decompressed with the one below it as the prefix, between the
    /// context's two scratch buffers; only the top body gets an array of its own. (An array per
    /// link cost a fresh mapping and a page fault per 4 KiB of every link: about half the time.)
    func decodeChain(_ top: UnsafeRawBufferPointer, context: ZstdContext, checkSeal: Bool) throws -> [UInt8] {
        var links = [try DeltaHeader(top, checkSeal: checkSeal)]
        if links[0].window != nil { return try decodeWindowed(links[0], context: context, checkSeal: checkSeal) }
        var start: [UInt8]?
        var keyframe: UnsafeRawBufferPointer?
        while start == nil && keyframe == nil {
            let link = links[links.count - 1]
            if let hit = recent.last(where: { $0.seq == link.base })?.form ?? checkpoints[link.base] {
                start = hit
                break
            }
            guard let row = try BlobCodec.stored(seq: link.base, bodies: bodies, in: txn) else {
                throw EventStoreError.corrupted("the base (seq \(link.base)) of a delta-encoded body is missing")
            }
            // Each step down is shallower and earlier in the log: a damaged depth or base is an
            // error, never a loop. (Usually exactly one shallower; a row written on a base that a
            // rewrite had stored whole again claims more, and reads the same.)
            if BlobCodec.isDelta(row) {
                let next = try DeltaHeader(row, checkSeal: checkSeal)
                guard next.depth < link.depth, next.base < link.base else { throw ByteReader.Truncated() }
                // A window below: read the rest as a chain with windows in it.
                if next.window != nil { return try decodeWindowed(links[0], context: context, checkSeal: checkSeal) }
                links.append(next)
            } else {
                guard link.depth >= 1 else { throw ByteReader.Truncated() }
                keyframe = row
            }
        }
        let checkpointing = keepsCheckpoints && links.count > Self.checkpointEvery
        // The bottom of the chain in scratch buffer 0, then each link up into the other one.
        var current = 0
        var size: Int
        if let start {
            size = start.count
            start.withUnsafeBytes { context.scratch(0, capacity: size).copyMemory(from: $0) }
        } else {
            size = try BlobCodec.decodeWhole(keyframe!, into: context, slot: 0, checkSeal: checkSeal)
        }
        // Link i's version is stored under the seq the link above it names as its base.
        for i in stride(from: links.count - 1, through: 1, by: -1) {
            let link = links[i]
            let prefix = UnsafeRawBufferPointer(context.scratch(current, capacity: size)).prefix(size)
            let out = context.scratch(1 - current, capacity: link.size)
            try context.decompress(link.frame, prefix: UnsafeRawBufferPointer(rebasing: prefix), into: out, size: link.size)
            current = 1 - current
            size = link.size
            if checkpointing, (links.count - i) % Self.checkpointEvery == 0, i > 1 {
                keepCheckpoint(links[i - 1].base, UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out).prefix(size)))
            }
        }
        let prefix = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(context.scratch(current, capacity: size)).prefix(size))
        let top = links[0]
        var failure: (any Error)?
        let body = [UInt8](unsafeUninitializedCapacity: top.size) { o, count in
            do {
                try context.decompress(top.frame, prefix: prefix, into: UnsafeMutableRawBufferPointer(o), size: top.size)
                count = top.size
            } catch {
                failure = error
                count = 0
            }
        }
        context.releaseLargeScratch()
        if let failure { throw failure }
        return body
    }

    /// How many checkpoints the reader holds (for tests).
    var checkpointCount: Int { checkpoints.count }

    private func keepCheckpoint(_ seq: UInt64, _ form: UnsafeRawBufferPointer) {
        guard checkpoints[seq] == nil, form.count <= Self.checkpointBudget / 4 else { return }
        checkpoints.keep([UInt8](form), for: seq, bytes: form.count)
    }

    /// The window after the row decoded last, under its seq (``BodyWindow``): a chain read in seq
    /// order takes it for the row above instead of decoding the window again.
    private var window: (seq: UInt64, state: BodyWindow.State, reader: BodyWindow.Reader)?
    /// The window after the top row of the last chain with a window at its top, until
    /// ``form(_:seq:context:checkSeal:)`` files it under that row's seq.
    private var topWindow: (state: BodyWindow.State, reader: BodyWindow.Reader)?

    /// Decodes a chain with window rows in it (codec 6, ``BodyWindow``), `top` its top row:
    /// down to a keyframe, a form decoded lately or the window after a row decoded lately, then
    /// back up; each window row steps its window (or starts one on the form below it), and a
    /// delta above one is made against the form its skeleton names.
    private func decodeWindowed(_ top: DeltaHeader, context: ZstdContext, checkSeal: Bool) throws -> [UInt8] {
        var links = [top]
        var form: [UInt8]?
        var current: (state: BodyWindow.State, reader: BodyWindow.Reader)?
        while form == nil && current == nil {
            let link = links[links.count - 1]
            // A row that goes on with its window needs that window; any other, the form below it.
            let goesOn = link.window.map { !$0.starts } ?? false
            if goesOn, let w = window, w.seq == link.base {
                // Taken, not copied: the objects grow in place, and the stream goes on once.
                current = (w.state, w.reader)
                window = nil
                break
            }
            if !goesOn, let hit = recent.last(where: { $0.seq == link.base }) {
                form = hit.form
                break
            }
            guard let row = try BlobCodec.stored(seq: link.base, bodies: bodies, in: txn) else {
                throw EventStoreError.corrupted("the base (seq \(link.base)) of a delta-encoded body is missing")
            }
            if BlobCodec.isDelta(row) {
                let below = try DeltaHeader(row, checkSeal: checkSeal)
                guard below.depth < link.depth, below.base < link.base, !goesOn || below.window != nil else { throw ByteReader.Truncated() }
                links.append(below)
            } else {
                guard link.depth >= 1, !goesOn else { throw ByteReader.Truncated() }
                form = try BlobCodec.decodeForm(row, context: context, checkSeal: checkSeal)
            }
        }
        for (i, link) in links.enumerated().reversed() {
            if let parts = link.window {
                try BodyWindow.step(&current, form: parts.starts ? form : nil, link, context: context)
                // A form only where the row above (or the read) needs it.
                let above = i == 0 ? nil : links[i - 1].window
                form = i == 0 || above == nil || above!.starts ? try current!.state.form() : nil
            } else {
                let base = try form ?? current!.state.form()
                form = try context.decompress(link.frame, prefix: base, size: link.size)
                current = nil
            }
        }
        topWindow = current
        return form!
    }

    /// The window after the row stored under `seq` when it is a window row (``BodyWindow``), for
    /// a writer to go on with; nil for a row of any other codec.
    func window(_ row: UnsafeRawBufferPointer, seq: UInt64, context: ZstdContext) throws -> BodyWindow.State? {
        guard BlobCodec.isDelta(row), case let header = try DeltaHeader(row, checkSeal: false), header.window != nil else { return nil }
        if let w = window, w.seq == seq { return w.state }
        _ = try decodeWindowed(header, context: context, checkSeal: false)
        defer { topWindow = nil }
        return topWindow?.state
    }

    /// Decodes the row stored under `seq`, remembering its stored form for the deltas made
    /// against it.
    func decode(_ row: UnsafeRawBufferPointer, seq: UInt64, context: ZstdContext?, checkSeal: Bool = false) throws -> [UInt8] {
        try BlobCodec.body(of: row, form: form(row, seq: seq, context: context, checkSeal: checkSeal))
    }

    /// The stored form of the row stored under `seq` (``BlobCodec/decodeForm(_:context:checkSeal:bases:)``),
    /// remembered for the deltas made against it.
    func form(_ row: UnsafeRawBufferPointer, seq: UInt64, context: ZstdContext?, checkSeal: Bool = false) throws -> [UInt8] {
        if let hit = recent.last(where: { $0.seq == seq }) { return hit.form }
        topWindow = nil
        let form = try BlobCodec.decodeForm(row, context: context, checkSeal: checkSeal, bases: self)
        if let top = topWindow {
            window = (seq, top.state, top.reader)
            topWindow = nil
        }
        // Only a body a delta may be made against (minified, it may be smaller than that).
        if form.count >= DeltaChains.minimum || row.first == BlobCodec.laidOut {
            if recent.count == Self.remembered { recent.removeFirst() }
            recent.append((seq, form))
        }
        return form
    }
}

/// Reusable zstd compression and decompression contexts. Not thread-safe: one per writer or per
/// read batch.
// Unchecked: raw zstd context pointers, used by one thread at a time (one per writer or batch).
final class ZstdContext: @unchecked Sendable {
    let cctx: OpaquePointer
    let dctx: OpaquePointer

    init() {
        cctx = ZSTD_createCCtx()
        dctx = ZSTD_createDCtx()
    }

    deinit {
        ZSTD_freeCCtx(cctx)
        ZSTD_freeDCtx(dctx)
        for b in buffers { free(b.pointer) }
    }

    /// Compresses `body` with `prefix` as its reference (a delta): magicless, without a content
    /// size (the row carries it); nil on a zstd error.
    func compress(_ body: [UInt8], prefix: [UInt8], level: Int32) -> [UInt8]? {
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)
        defer { ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters) }
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)
        ZSTD_CCtx_setParameter(cctx, Self.formatParameter, Self.magicless)
        let bound = ZSTD_compressBound(body.count)
        var failed = false
        // Uninitialized: zeroing a bound of a 275 KB body was 3% of an import.
        let out = [UInt8](unsafeUninitializedCapacity: bound) { o, count in
            let n = prefix.withUnsafeBytes { p in
                ZSTD_CCtx_refPrefix(cctx, p.baseAddress, p.count)
                return body.withUnsafeBytes { i in ZSTD_compress2(cctx, o.baseAddress, bound, i.baseAddress, i.count) }
            }
            failed = ZSTD_isError(n) != 0
            count = failed ? 0 : n
        }
        return failed ? nil : out
    }

    /// Decompresses a frame made by ``compress(_:prefix:level:)`` against the same prefix into
    /// `out` (at least `size` bytes).
    func decompress(_ frame: UnsafeRawBufferPointer, prefix: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, size: Int) throws {
        ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters)
        defer { ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters) }
        ZSTD_DCtx_setParameter(dctx, Self.decompressFormatParameter, Self.magicless)
        ZSTD_DCtx_refPrefix(dctx, prefix.baseAddress, prefix.count)
        let n = ZSTD_decompressDCtx(dctx, out.baseAddress, size, frame.baseAddress, frame.count)
        guard ZSTD_isError(n) == 0, n == size else { throw ByteReader.Truncated() }
    }

    /// Two buffers a chain decodes between, kept for the next read (a fresh allocation of a
    /// large body is a fresh mapping: a page fault per 4 KiB).
    private var buffers: [(pointer: UnsafeMutableRawPointer?, capacity: Int)] = [(nil, 0), (nil, 0)]

    func scratch(_ slot: Int, capacity: Int) -> UnsafeMutableRawBufferPointer {
        if buffers[slot].capacity < capacity {
            free(buffers[slot].pointer)
            let grown = max(capacity, 64 << 10)
            buffers[slot] = (malloc(grown), grown)
        }
        return UnsafeMutableRawBufferPointer(start: buffers[slot].pointer, count: buffers[slot].capacity)
    }

    /// Gives back scratch buffers over 16 MiB (the pool keeps up to 16 contexts).
    func releaseLargeScratch() {
        for i in buffers.indices where buffers[i].capacity > 16 << 20 {
            free(buffers[i].pointer)
            buffers[i] = (nil, 0)
        }
    }

    /// Decompresses a frame made by ``compress(_:prefix:level:)`` against the same prefix.
    func decompress(_ frame: UnsafeRawBufferPointer, prefix: [UInt8], size: Int) throws -> [UInt8] {
        ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters)
        defer { ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters) }
        ZSTD_DCtx_setParameter(dctx, Self.decompressFormatParameter, Self.magicless)
        var n = 0
        // Written by zstd before it is read: no zero fill of a buffer as large as the body.
        let out = [UInt8](unsafeUninitializedCapacity: size) { o, count in
            n = prefix.withUnsafeBytes { p in
                ZSTD_DCtx_refPrefix(dctx, p.baseAddress, p.count)
                return ZSTD_decompressDCtx(dctx, o.baseAddress, size, frame.baseAddress, frame.count)
            }
            count = ZSTD_isError(n) == 0 && n == size ? size : 0
        }
        guard ZSTD_isError(n) == 0, n == size else { throw ByteReader.Truncated() }
        return out
    }

    /// The first `count` bytes a magicless frame (without a prefix) decompresses to: a
    /// streaming decompression that stops once they are out, so the rest is never decoded.
    func decompressStart(_ frame: UnsafeRawBufferPointer, count: Int) throws -> [UInt8] {
        ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters)
        defer { ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters) }
        ZSTD_DCtx_setParameter(dctx, Self.decompressFormatParameter, Self.magicless)
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: count) { o, n in
            var output = ZSTD_outBuffer(dst: o.baseAddress, size: count, pos: 0)
            var input = ZSTD_inBuffer(src: frame.baseAddress, size: frame.count, pos: 0)
            while output.pos < count {
                let rc = ZSTD_decompressStream(dctx, &output, &input)
                // An error, the frame's end, or all input taken with output still missing: the
                // frame is shorter than its row says (damaged).
                if ZSTD_isError(rc) != 0 || (output.pos < count && (rc == 0 || input.pos == input.size)) {
                    failed = true
                    break
                }
            }
            n = failed ? 0 : count
        }
        guard !failed else { throw ByteReader.Truncated() }
        return out
    }

    /// `ZSTD_c_format` and `ZSTD_d_format` (experimental parameters, stable since zstd 1.3.x) and
    /// `ZSTD_f_zstd1_magicless`: a delta frame leaves out the 4-byte magic number.
    static let formatParameter = ZSTD_cParameter(rawValue: 10)
    static let decompressFormatParameter = ZSTD_dParameter(rawValue: 1000)
    static let magicless: Int32 = 1

    /// Runs `body` with `context`, or a pooled one when it is nil.
    static func maybePooled<T>(_ context: ZstdContext?, _ body: (ZstdContext) throws -> T) rethrows -> T {
        if let context { return try body(context) }
        return try pooled(body)
    }

    /// Runs `body` with a context from a process-wide pool, for reads on any thread (creating a
    /// context per read costs more than decompressing a small body).
    static func pooled<T>(_ body: (ZstdContext) throws -> T) rethrows -> T {
        let context = pool.withLock { $0.popLast() } ?? ZstdContext()
        defer { pool.withLock { if $0.count < 16 { $0.append(context) } } }
        return try body(context)
    }

    private static let pool = Mutex<[ZstdContext]>([])
}
