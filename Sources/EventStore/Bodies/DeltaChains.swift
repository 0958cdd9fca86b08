import Foundation
import LMDB

/// Delta-compressed history of bodies: a body that is the next version of the same lineage (the
/// same stream, event type and `url` metadata: the next response of one URL; without a URL, the
/// same `collection` and `key`: the next version of one document) is stored as a zstd
/// delta against the previous version (``BlobCodec`` codec 4), a chain at most
/// ``keyframeInterval`` − 1 deltas deep, so a read decodes at most that many frames. A new chain
/// starts from the lineage's anchor (its last body stored whole) when that costs less than half a
/// keyframe, else it is a keyframe and the new anchor; a large delta is tried again against the
/// version before the last (the way back from an odd version). Deltas are made between stored
/// forms: a pretty-printed JSON body's is its minified form (codec 5, ``JSONLayout``).
///
/// The `lineage` table maps the first 16 bytes of the lineage's SHA-256 (``lineage(stream:type:metadata:)``) to its last
/// stored body: `u64be seq | varint depth | 8 bytes of the body's SHA-256`, then its anchor's
/// `u64be seq | 8 bytes of its SHA-256` (absent in rows written before anchors). The writer keeps the
/// last bodies it stored in memory, so a chain grows without decoding its base; a remembered body
/// is used only when the seq and the hash prefix in the committed row match it (an aborted
/// transaction or another process's append can not hand it a wrong base). Only lineages seen
/// twice are remembered: a lineage's second version decodes its base from the log once, and a
/// fetch of many URLs each seen once (the details of a list) keeps none of their bodies alive
/// (a fetch of 2,000 details of 4 KB: 12 MB less resident, 2,000 fewer page faults).
/// A body's delta frame against the body it is expected to follow in its lineage
/// (``DeltaChains/row(for:laidOut:hash:whole:seq:lineage:schema:txn:context:speculative:)``).
struct SpeculativeDelta: Sendable {
    /// The SHA-256 of the base body.
    var baseHash: [UInt8]
    /// Made between the stored forms of the two bodies (``JSONLayout``).
    var frame: [UInt8]
    /// The first seq of the append: the frame is used only against a base stored by this append.
    /// A base whose body an older row holds (the same body fetched again, deduplicated) may be
    /// stored in another form than the one the frame was made against (whole, by a version
    /// before ``BlobCodec/laidOut``).
    var notBefore: UInt64 = 0
}

public final class DeltaChains {
    /// Bodies smaller than this are compressed on their own: a delta saves little there, and
    /// small documents stay one zstd call from their bytes.
    static let minimum = 1024
    /// Versions from one keyframe to the next (``StoreOptions/deltaKeyframeInterval``): the
    /// balance between store size (fewer keyframes) and the time to read any version (shorter
    /// chains). What a read decodes is bounded by ``chainBytes`` too, so this bounds chains of
    /// small bodies: at 48, the fires history's 130 KB versions started a chain every 48 (0.43 MB
    /// of its 1.43 MB of bodies, a keyframe or a delta against the anchor each) and read at
    /// 0.64–0.71 ms p99; at 128, 1.23 MB and 1.18–1.31 ms (docs/benchmarks.md).
    public static let defaultKeyframeInterval = 128
    /// The zstd level of a keyframe that starts a lineage's chain again (every
    /// ``keyframeInterval`` versions). A chain's keyframes are most of what a lineage stores, and
    /// one is written only every ``defaultKeyframeInterval`` versions, so it gets the slower,
    /// denser level; a lineage's first body keeps ``BlobCodec/level``, so a first fetch is not
    /// slower.
    static let keyframeLevel: Int32 = 11
    /// The zstd level of a delta of a body of ``denseDeltaMinimum`` bytes or more. On the
    /// scraping history's 200 KB list, a delta is 640 bytes at level 3 (0.5 ms) and 520 at level
    /// 9 (about 4 ms): levels from 5 up search the base with a binary tree instead of hash chains,
    /// and the deltas of a large, slowly changing list are most of what its history stores.
    /// Smaller bodies (a detail, a page of
    /// a paged list) keep ``BlobCodec/level``: their fetch pays for every millisecond.
    static let denseDeltaLevel: Int32 = 9
    static let denseDeltaMinimum = 64 << 10
    /// The deepest chain a row may claim (a damaged depth is rejected, not followed).
    static let maximumDepth = 1024

    let keyframeInterval: Int

    /// The most bytes a read of one version decodes along its chain (its depth times its size,
    /// about): 20 MiB. Each link of a chain decompresses a whole version, so a chain of 47 deltas
    /// of the outages history's largest lists (500–700 KB) took 2.7–3.0 ms to read at p99; a
    /// chain of bodies of S bytes ends after 20 MiB / S versions (at least 8). At 24 MiB with
    /// chains of up to 48, only its largest lists reached the bound (1.55–1.65 ms at p99); with
    /// chains of up to 128 its 200–500 KB lists did too, and p99 came out 1.54–2.04 ms. At 20 MiB:
    /// 1.44–1.60 ms, and its bodies 3.73 MB (3.77 at 24 MiB, 3.98 at 16). Bodies under 160 KiB
    /// keep the whole ``keyframeInterval``.
    static let chainBytes = 20 << 20

    /// Versions from one keyframe to the next for bodies of `size` bytes.
    func chainLength(_ size: Int) -> Int { min(keyframeInterval, max(8, Self.chainBytes / max(size, 1))) }
    private var remembered: [[UInt8]: (seq: UInt64, hash: ArraySlice<UInt8>, body: [UInt8])] = [:]
    private var rememberedBytes = 0
    private static let rememberedLimit = 64 << 20

    init(keyframeInterval: Int) {
        precondition((1...Self.maximumDepth).contains(keyframeInterval), "a keyframe interval is 1–\(Self.maximumDepth)")
        self.keyframeInterval = keyframeInterval
    }

    /// The lineage key of a body carried by an event of `stream` and `type`: its `url`
    /// metadata when it has one (the responses of one URL), else its `collection` and `key`
    /// (the versions of one document), else none (the stream and type alone).
    static func lineage(stream: String, type: String, metadata: (String) -> String?) -> [UInt8] {
        var key = Array(stream.utf8)
        key.append(0)
        key += type.utf8
        key.append(0)
        if var url = metadata("url") {
            // Imports from git before format 4 named each version's commit in its URL
            // (`git:REPO@COMMIT:PATH`, the commit also in `commit`): taken out, the versions of
            // one file chain when such a store migrates.
            if let commit = metadata("commit"), !commit.isEmpty, let range = url.range(of: "@" + commit + ":") {
                url.replaceSubrange(range, with: ":")
            }
            key += url.utf8
        } else if let document = metadata("key") {
            key.append(0)
            key += (metadata("collection") ?? "").utf8
            key.append(0)
            key += document.utf8
        }
        return Hashing.sha256(key, prefix: 16)
    }

    static func lineage(of event: NewEvent) -> [UInt8] {
        lineage(stream: event.stream, type: event.type) { name in event.metadata.first { $0.key == name }?.value }
    }

    static func lineage(of event: RecordedEvent) -> [UInt8] {
        lineage(stream: event.stream, type: event.type) { event[metadata: $0] }
    }

    /// Whether a delta of `delta` bytes of a body of `size` bytes is kept without compressing the
    /// body alone to compare (at most a sixteenth of it: JSON compresses on its own by 5–10×, so
    /// the body alone would not be smaller). Compressing each 130 KB version of the fires history
    /// alone, only to compare with its 1 KB delta, was 15% of its import.
    static func isSmall(_ delta: Int, of size: Int) -> Bool { delta * 16 <= size }

    /// The zstd level of a delta of a body of `size` bytes.
    static func deltaLevel(_ size: Int) -> Int32 { size >= denseDeltaMinimum ? denseDeltaLevel : BlobCodec.level }

    /// The row to store for `body` (hash `hash`, whole encoding `whole`) under `seq`: a delta
    /// against the lineage's last body when that is smaller, else `whole`. Records the choice
    /// in `lineage`. `laidOut`: the body minified, when it is pretty-printed JSON
    /// (``JSONLayout/minified(_:)``); deltas are then made between stored forms and stored
    /// inside codec 5. `speculative`: the body's frame against a body it was expected to follow
    /// (the one before it in its batch, worked out off the writer); used when that body, by its
    /// hash, is the lineage's last — the same frame the writer would compress.
    /// `windowed`: the body is stored as a window row when it can be (``NewEvent/windowed``,
    /// ``BodyWindow``).
    func row(
        for body: [UInt8], laidOut: (form: [UInt8], layout: UInt8)?, hash: [UInt8], whole makeWhole: () -> [UInt8], seq: UInt64,
        lineage: [UInt8], windowed: Bool = false, schema: LogSchema, txn: Transaction, context: ZstdContext, speculative: SpeculativeDelta? = nil
    ) throws -> [UInt8] {
        // Compressed once, and only when needed: a small delta (``isSmall(_:of:)``) is kept
        // without it.
        var wholeForm: [UInt8]?
        func whole() -> [UInt8] {
            if let wholeForm { return wholeForm }
            wholeForm = makeWhole()
            return wholeForm!
        }
        guard body.count >= Self.minimum else { return whole() }
        // What deltas are made of and against: the stored forms.
        let content = laidOut?.form ?? body
        var depth = 0
        let row = try Self.lineageRow(lineage, schema, txn)
        let last = row?.last, anchor = row?.anchor
        func delta(against last: (seq: UInt64, depth: Int, hash: [UInt8])) throws -> [UInt8]? {
            if let speculative, last.seq >= speculative.notBefore, speculative.baseHash.prefix(8).elementsEqual(last.hash) {
                return BlobCodec.deltaRow(frame: speculative.frame, size: content.count, baseSeq: last.seq, depth: last.depth + 1)
            }
            guard let base = try base(last, lineage: lineage, schema: schema, txn: txn, context: context) else { return nil }
            return BlobCodec.encodeDelta(content, base: base, baseSeq: last.seq, depth: last.depth + 1, context: context, level: Self.deltaLevel(content.count))
        }
        var chosen: [UInt8]
        // Whether `chosen` is a delta of `content` (to be put inside codec 5), not a whole row.
        var isDelta = false
        // A window row when the body can be one; a full window starts a chain again, as a
        // chain's last version does (a window on a full one would read both).
        var outcome = WindowOutcome.unsuitable
        if windowed, let last, last.depth + 1 < chainLength(body.count), last.seq < seq {
            outcome = try windowRow(content, hash: hash, seq: seq, last: last, lineage: lineage, schema: schema, txn: txn, context: context)
        }
        if case .row(let window) = outcome {
            chosen = window
            isDelta = true
            depth = last!.depth + 1
        } else if case .unsuitable = outcome, let last, last.depth + 1 < chainLength(body.count), last.seq < seq, let delta = try delta(against: last),
            Self.isSmall(delta.count, of: content.count) || (!Self.isRaw(whole()) && delta.count < whole().count)
        {
            chosen = delta
            isDelta = true
            depth = last.depth + 1
            // A large delta may be the way back from an odd version (keys reordered, a truncated
            // or emptied file): then the version before it is the better base, and the chain
            // does not grow.
            if delta.count >= Self.retryAbove,
                let (againstEarlier, earlierDepth) = try deltaAgainstEarlier(content, last: last, schema: schema, txn: txn, context: context),
                againstEarlier.count < delta.count
            {
                chosen = againstEarlier
                depth = earlierDepth
            }
        } else if Self.isRaw(whole()) {
            // An incompressible body (an image) is left whole, outside its lineage: a delta would
            // not find much either (and as its lineage gets no row, none is tried next time).
            return whole()
        } else {
            chosen = whole()
            // A keyframe that starts a chain again: denser, or a delta against the anchor.
            if last != nil {
                let dense = BlobCodec.encodeBody(body, form: laidOut, context: context, level: Self.keyframeLevel)
                if dense.count < chosen.count { chosen = dense }
                // A new chain starts from the lineage's anchor when that costs less than half a
                // keyframe; else this keyframe is the anchor from now on.
                // (An interval of 1 stores every body whole: no chain at all.)
                if keyframeInterval > 1, let anchor, anchor.seq < seq,
                    let anchored = try anchoredDelta(content, against: anchor, depth: 1, schema: schema, txn: txn, context: context),
                    anchored.count * 2 < chosen.count
                {
                    chosen = anchored
                    isDelta = true
                    depth = 1
                }
            }
        }
        if isDelta, let laidOut { chosen = BlobCodec.laidOutRow(chosen, layout: laidOut.layout, size: body.count) }
        var w = ByteWriter(capacity: 40)
        w.u64(seq)
        w.varint(depth)
        w.raw(hash.prefix(8))
        // The anchor: this body when it is stored whole, else the one the lineage had.
        if depth == 0 {
            w.u64(seq)
            w.raw(hash.prefix(8))
        } else if let anchor {
            w.u64(anchor.seq)
            w.raw(anchor.hash)
        }
        try txn.put(schema.lineage, key: lineage, value: w.bytes)
        // A lineage seen once may never be seen again (one detail URL of a list): not kept. What
        // is kept is the row's stored form, what the next delta is made against (a whole row of
        // an older format holds the body as it is).
        if last != nil { remember(lineage, seq: seq, hash: hash.prefix(8), body: chosen.first == BlobCodec.laidOut ? content : body) }
        return chosen
    }

    /// Whether a whole row stores its body raw (incompressible), inside codec 5 or not.
    private static func isRaw(_ row: [UInt8]) -> Bool {
        row.withUnsafeBytes { (try? BlobCodec.inner($0).first) == BlobCodec.raw }
    }

    /// A delta of this size or more, after a last body stored as one too, is tried again against
    /// the version before the lineage's last (``deltaAgainstEarlier(_:last:schema:txn:context:)``). Small deltas are the usual
    /// next versions; a return from an odd version costs as much as its departure (the
    /// scraping history's `pages`: 10–40 KB, against about 200 bytes for a usual version).
    static let retryAbove = 4096

    /// `content` (a body's stored form) as a delta against the base of the lineage's last body
    /// (the version before it in its chain), at the last body's depth; nil when the last body is
    /// a keyframe or its base cannot be read. Each step down a chain stays shallower and earlier.
    private func deltaAgainstEarlier(
        _ content: [UInt8], last: (seq: UInt64, depth: Int, hash: [UInt8]), schema: LogSchema, txn: Transaction, context: ZstdContext
    ) throws -> (row: [UInt8], depth: Int)? {
        // Only after a large departure: a way back follows one, and a history whose every
        // version moves a few KB (a feed of 130 KB) would pay a decode and a delta each time.
        guard last.depth >= 1, let row = try BlobCodec.stored(seq: last.seq, bodies: schema.bodies, in: txn), BlobCodec.isDelta(row),
            row.count >= Self.retryAbove
        else {
            return nil
        }
        let earlier = try DeltaHeader(row, checkSeal: false).base
        guard earlier < last.seq, let stored = try BlobCodec.stored(seq: earlier, bodies: schema.bodies, in: txn) else { return nil }
        let base = try DeltaBases(bodies: schema.bodies, txn: txn).form(stored, seq: earlier, context: context)
        guard
            let encoded = BlobCodec.encodeDelta(
                content, base: base, baseSeq: earlier, depth: last.depth, context: context, level: Self.deltaLevel(content.count))
        else { return nil }
        return (encoded, last.depth)
    }

    /// `content` (a body's stored form) as a delta against the whole body `base` names (a
    /// keyframe, checked against its hash prefix), at `depth`; nil when that body is no longer
    /// stored whole or is not the one named (an erasure rewrote it).
    private func anchoredDelta(
        _ content: [UInt8], against base: (seq: UInt64, hash: [UInt8]), depth: Int, schema: LogSchema, txn: Transaction, context: ZstdContext
    ) throws -> [UInt8]? {
        guard let row = try BlobCodec.stored(seq: base.seq, bodies: schema.bodies, in: txn), !BlobCodec.isDelta(row) else { return nil }
        let form = try BlobCodec.decodeForm(row, context: context)
        guard Hashing.sha256(try BlobCodec.body(of: row, form: form), prefix: 8) == base.hash else { return nil }
        return BlobCodec.encodeDelta(content, base: form, baseSeq: base.seq, depth: depth, context: context, level: Self.keyframeLevel)
    }

    /// The lineage's row: its last stored body (seq, depth, hash prefix) and its anchor, the body
    /// its chains start from, stored whole (seq, hash prefix; nil in a row written before anchors).
    static func lineageRow(_ lineage: [UInt8], _ schema: LogSchema, _ txn: Transaction) throws -> (
        last: (seq: UInt64, depth: Int, hash: [UInt8]), anchor: (seq: UInt64, hash: [UInt8])?
    )? {
        guard let row = try txn.get(schema.lineage, key: lineage) else { return nil }
        return try row.withUnsafeBytes { try lineageRow($0) }
    }

    /// A `lineage` row's fields (``lineageRow(_:_:_:)``).
    static func lineageRow(_ raw: UnsafeRawBufferPointer) throws -> (
        last: (seq: UInt64, depth: Int, hash: [UInt8]), anchor: (seq: UInt64, hash: [UInt8])?
    ) {
        var r = ByteReader(raw)
        let last = (seq: try r.u64(), depth: Int(try r.varint()), hash: try r.bytes(8))
        guard r.remaining >= 16 else { return (last, nil) }
        return (last, (try r.u64(), try r.bytes(8)))
    }

    /// The base body's stored form: remembered, else decoded from the log (its chain included).
    private func base(
        _ last: (seq: UInt64, depth: Int, hash: [UInt8]), lineage: [UInt8], schema: LogSchema,
        txn: Transaction, context: ZstdContext
    ) throws -> [UInt8]? {
        if let r = remembered[lineage], r.seq == last.seq, r.hash.elementsEqual(last.hash) { return r.body }
        guard let row = try BlobCodec.stored(seq: last.seq, bodies: schema.bodies, in: txn) else { return nil }
        let form = try DeltaBases(bodies: schema.bodies, txn: txn).form(row, seq: last.seq, context: context)
        return Hashing.sha256(try BlobCodec.body(of: row, form: form), prefix: 8) == last.hash ? form : nil
    }

    /// Each lineage's window after its last row, when this writer stored it: the next version
    /// goes on with it only when the lineage's committed row names that row (its seq and hash
    /// prefix). Otherwise (another writer, a restart, an aborted append) the window is read from
    /// the log and its objects stream started again on it (``BodyWindow/Writer/init(resuming:seq:hash:)``).
    private var windows: [[UInt8]: BodyWindow.Writer] = [:]
    /// The most windows kept: each holds a compressor with its tables (12 MB,
    /// ``BodyWindow/hashLog``).
    private static let windowsKept = 4

    /// `content` (a body's stored form) as a window row above the lineage's last body: in its
    /// window (kept, or read from the log), or in one that starts on it; `.full` when the window
    /// is full, `.unsuitable` when the body cannot be stored so
    /// (``BodyWindow/Writer/row(_:depth:seq:hash:context:)``) or the last body cannot be read.
    private func windowRow(
        _ content: [UInt8], hash: [UInt8], seq: UInt64, last: (seq: UInt64, depth: Int, hash: [UInt8]), lineage: [UInt8],
        schema: LogSchema, txn: Transaction, context: ZstdContext
    ) throws -> WindowOutcome {
        var writer = windows.removeValue(forKey: lineage)
        if let w = writer, w.seq != last.seq || !w.hash.elementsEqual(last.hash) { writer = nil }
        if writer == nil, let row = try BlobCodec.stored(seq: last.seq, bodies: schema.bodies, in: txn),
            let state = try DeltaBases(bodies: schema.bodies, txn: txn).window(row, seq: last.seq, context: context),
            Hashing.sha256(try BlobCodec.body(of: row, form: state.form()), prefix: 8) == last.hash
        {
            // The last body is a window row another writer stored: its window goes on.
            writer = BodyWindow.Writer(resuming: state, seq: last.seq, hash: last.hash[...])
        }
        if writer == nil {
            guard let form = try base(last, lineage: lineage, schema: schema, txn: txn, context: context) else { return .unsuitable }
            writer = BodyWindow.Writer(keyframe: form, seq: last.seq, hash: last.hash[...])
        }
        // A window whose stream failed is dropped and the body stored as a delta; one that took
        // no row stays as it was (a full one ends its chain).
        guard let row = try? writer!.row(content, depth: last.depth + 1, seq: seq, hash: hash.prefix(8), context: context) else {
            return writer!.full ? .full : .unsuitable
        }
        if windows.count >= Self.windowsKept { windows.removeAll(keepingCapacity: true) }
        windows[lineage] = writer
        return .row(row)
    }

    /// What ``windowRow(_:hash:seq:last:lineage:schema:txn:context:)`` made of a body.
    private enum WindowOutcome {
        case row([UInt8])
        /// The window is full: the body starts a chain again.
        case full
        /// The body cannot be stored in a window (or the last one cannot be read): a delta.
        case unsuitable
    }

    private func remember(_ lineage: [UInt8], seq: UInt64, hash: ArraySlice<UInt8>, body: [UInt8]) {
        if let old = remembered[lineage] { rememberedBytes -= old.body.count }
        if rememberedBytes + body.count > Self.rememberedLimit {
            remembered.removeAll(keepingCapacity: true)
            rememberedBytes = 0
        }
        remembered[lineage] = (seq, hash, body)
        rememberedBytes += body.count
    }
}
