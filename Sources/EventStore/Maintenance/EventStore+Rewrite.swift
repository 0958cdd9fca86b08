import Foundation
import LMDB

/// One stored body to rewrite in place: the body whose SHA-256 is `original` is to hold
/// `content` from now on (an erasure: the body without what was erased).
public struct BodyRewrite: Sendable, Hashable {
    public var original: [UInt8]
    public var content: [UInt8]

    public init(original: [UInt8], content: [UInt8]) {
        self.original = original
        self.content = content
    }

    /// The SHA-256 of what the row will hold.
    public var rewritten: [UInt8] { Hashing.sha256(content) }
}

/// Erasure that keeps the log verifiable. An event (an `ItemForgotten`, say) is appended first,
/// naming in its payload's `rewrites` member each body it replaces, as `[original hex, new hex]`
/// (``rewriteRecord(_:)``); ``rewriteBodies(_:by:)`` then replaces the rows in one transaction
/// and records each in `rewritten` (original → that event's seq, new hash). The envelopes and
/// their chain are untouched — every event still names the body it carried by its original
/// digest — and `verify` accepts a body whose content hashes to the new digest only when
/// `rewritten` says so and the chained event at that seq lists the pair: an erasure is itself in
/// the log, and nothing else can change a body unseen.
/// One body an erasure (a forget, a retention) replaced, as its event lists it: the digest the
/// events name, and the digest of what the row holds now.
public struct RewritePair: Sendable, Hashable {
    public var original: [UInt8]
    public var now: [UInt8]

    public init(original: [UInt8], now: [UInt8]) {
        self.original = original
        self.now = now
    }

    /// The pairs an erasure event's payload lists in its `rewrites` member
    /// (``EventStore/rewriteRecord(_:)``), in order; nil when the payload is no such record. The
    /// one place that reads the member: the engine's verify, the erasures' re-application, and
    /// the team log's push and pull all go through here.
    public static func listed(in payload: [UInt8]) -> [RewritePair]? {
        guard let doc = try? JSONValue(parsing: payload), case .array(let pairs)? = doc.value(atPath: "rewrites") else { return nil }
        return pairs.compactMap { pair in
            guard case .array(let p) = pair, p.count == 2, case .string(let o) = p[0], case .string(let n) = p[1],
                let original = [UInt8](hex: o), let now = [UInt8](hex: n), original.count == 32, now.count == 32
            else { return nil }
            return RewritePair(original: original, now: now)
        }
    }
}

extension EventStore {
    /// The `rewrites` member of the event that asks for `rewrites`.
    public static func rewriteRecord(_ rewrites: [BodyRewrite]) -> JSONValue {
        .array(rewrites.map { .array([.string($0.original.hex), .string($0.rewritten.hex)]) })
    }

    /// Rewrites the rows of `rewrites` for the event at `seq`, which must name them
    /// (``rewriteRecord(_:)``), then folds every projection again from the log as it now reads.
    /// Rows this event rewrote already are skipped, so a run stopped part-way (a killed process)
    /// is finished by running it again (a body a later event rewrites again, taking out more,
    /// names that event from then on); the rewrite itself is one transaction, and the rebuild that follows
    /// resumes at the next open. Returns how many rows it rewrote.
    /// - Throws: ``EventStoreError`` when a body is not stored.
    @discardableResult
    public func rewriteBodies(_ rewrites: [BodyRewrite], by seq: UInt64) async throws -> Int {
        let n: Int
        do { n = try await writer.rewriteBodies(rewrites, by: seq) } catch { throw EventStoreError.wrap(error, "the erasure failed") }
        try await catchUp()
        return n
    }

    /// The seq of the event that rewrote the body first stored with SHA-256 `original`, or nil.
    public func rewrittenBy(_ original: [UInt8]) async throws -> UInt64? {
        let schema = self.schema
        return try await read { txn in try schema.rewrite(of: original, txn)?.by }
    }
}

extension LogSchema {
    /// The `rewritten` row of a body: who rewrote it and the hash it has now.
    func rewrite(of original: [UInt8], _ txn: Transaction) throws -> (by: UInt64, now: [UInt8])? {
        guard let v = try txn.get(rewritten, key: original), v.count == 72 else { return nil }
        return (v.withUnsafeBytes { UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: $0[0..<8])) }, Array(v[8..<40]))
    }
}

extension LogWriter {
    /// The transaction of ``EventStore/rewriteBodies(_:by:)``: the rows of the bodies, and every
    /// row stored as a delta on one of them (directly or down its chain), are written whole again —
    /// the first with their new content, the others with the content they had, since their base
    /// changed under them; `lineage` rows naming a rewritten row are dropped, so no later body is
    /// stored as a delta of the old content; an encrypted store's sealed chain is linked again from
    /// the first row changed; and every projection is cleared for the fold that follows.
    func rewriteBodies(_ rewrites: [BodyRewrite], by seq: UInt64) throws -> Int {
        try environment.write { txn in
            var targets: [UInt64: [UInt8]] = [:]
            var records: [(original: [UInt8], now: [UInt8])] = []
            for r in rewrites where try schema.rewrite(of: r.original, txn)?.by != seq {
                guard r.original.count == 32, let row = try r.original.withUnsafeBytes({ try schema.bodyIndex.indexedSeq($0, in: txn) }) else {
                    throw EventStoreError(code: .invalidArgument, message: "no stored body has the digest \(r.original.hex.prefix(16))")
                }
                targets[row] = r.content
                records.append((r.original, r.rewritten))
            }
            guard let first = targets.keys.min() else { return 0 }
            // Every row from the first target on is read in seq order, before anything is written,
            // so a delta's base is decoded as it was.
            var rebuilt: [UInt64: [UInt8]] = [:]
            var changed = Set(targets.keys)
            let bases = DeltaBases(bodies: schema.bodies, txn: txn)
            let rows = try txn.cursor(schema.bodies, raw: true)
            var entry = try rows.seek(atLeast: first.bigEndianBytes)
            while let e = entry {
                let row = UInt64(bigEndianBytes: e.key)
                let plain = try txn.plainValue(schema.bodies, key: e.key, stored: e.value)
                if BlobCodec.isDelta(plain), changed.contains(try DeltaHeader(plain, checkSeal: false).base) {
                    changed.insert(row)
                    if targets[row] == nil { rebuilt[row] = try bases.decode(plain, seq: row, context: zstd) }
                } else if BlobCodec.isDelta(plain) || targets[row] != nil {
                    // Decoded while the rows below are as they were, for the deltas above it.
                    _ = try bases.decode(plain, seq: row, context: zstd)
                }
                entry = try rows.next()
            }
            var counters = try Counters.read(txn, schema)
            for (row, content) in targets.merging(rebuilt, uniquingKeysWith: { a, _ in a }) {
                let old = try BlobCodec.stored(seq: row, bodies: schema.bodies, in: txn)?.count ?? 0
                let encoded = BlobCodec.encodeBody(content, form: JSONLayout.minified(content), context: zstd)
                _ = try txn.put(schema.bodies, key: row.bigEndianBytes, value: encoded)
                counters.blobStoredBytes = counters.blobStoredBytes + UInt64(encoded.count) - UInt64(old)
            }
            try counters.write(txn, schema)
            // The original is in the value too: an encrypted store's keys are digests of it, and a
            // copy under another key (`rekey`) writes the rows again from their values.
            for r in records { _ = try txn.put(schema.rewritten, key: r.original, value: seq.bigEndianBytes + r.now + r.original) }
            // A lineage whose last body changed, or was written whole again (a delta above a
            // rewritten row: its depth is 0 now), starts a new chain at its next body. (Keeping
            // the row of a rebuilt body gave the next body a depth one more than the old chain's,
            // on a base that is a keyframe now.) So does one whose anchor changed: its next chain
            // would start from content that is gone.
            let lineage = try txn.cursor(schema.lineage, raw: true)
            var l = try lineage.first()
            while let e = l {
                let v = try txn.plainValue(schema.lineage, key: e.key, stored: e.value)
                if let row = try? v.withUnsafeBytes({ try DeltaChains.lineageRow($0) }),
                    changed.contains(row.last.seq) || row.anchor.map({ changed.contains($0.seq) }) == true
                {
                    let key = [UInt8](e.key)
                    try lineage.deleteCurrent()
                    // Seek again: after deleting the table's last entry the cursor has no current one.
                    l = try key.withUnsafeBytes { try lineage.seek(atLeast: $0) }
                    continue
                }
                l = try lineage.next()
            }
            if let chain = schema.sealedChain {
                let head = try LogHead.read(txn, schema).seq
                for s in first...max(first, head) { try SealedChain.relink(s, chain: chain, schema, txn) }
            }
            for p in projections { try reset(p, txn: txn) }
            return targets.count
        }
    }
}

extension EventStore {
    /// Writes this store's `rewritten` rows into `target` (a copy of its log).
    func copyRewrites(into target: EventStore) async throws {
        let schema = self.schema
        let rows: [[UInt8]] = try await read { txn in
            var out: [[UInt8]] = []
            let c = try txn.cursor(schema.rewritten)
            var e = try c.first()
            while let entry = e {
                if entry.value.count == 72 { out.append([UInt8](entry.value)) }
                e = try c.next()
            }
            return out
        }
        guard !rows.isEmpty else { return }
        try await target.writer.putRewrites(rows)
    }
}

extension LogWriter {
    func putRewrites(_ values: [[UInt8]]) throws {
        try environment.write { txn in
            for v in values { _ = try txn.put(schema.rewritten, key: Array(v[40..<72]), value: v) }
        }
    }
}
