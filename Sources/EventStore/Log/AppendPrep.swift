import Foundation
import LMDB

/// The bodies of one append — hash, stored form and, for document types, canonical form —
/// prepared while its write transaction runs, or earlier, while the append before it commits,
/// when the caller had the batch at hand (``EventStore/prepare(_:)``).
///
/// For a batch of at least 64 KiB of bodies, a helper thread claims events in order and prepares
/// them ahead of the writer. The writer, reaching an event nobody has claimed yet, claims and
/// prepares it itself; reaching one the helper is preparing right then, it prepares the next
/// unclaimed one meanwhile, and waits only when none is left. So on two
/// cores the preparation overlaps the log writes and projections instead of preceding them, and
/// neither thread idles while the other has work. A smaller batch is prepared by the writer alone,
/// as it reaches each event.
///
/// The helper does not compress a body its read snapshot already stores, and skips an event whose
/// body is stored and whose id the snapshot holds (it looks the id up only then: an event already
/// in the log comes back with its body, and a lookup per new event cost the helper a sixth of its
/// time); the writer's transaction checks both again. It never waits for a
/// snapshot while holding a claimed event, so the writer never waits on a helper that waits on
/// the map's gate.
// Unchecked: its slots are guarded by its condition lock; each prepared body is handed over
// whole, once.
final class AppendPrep: @unchecked Sendable {
    let batch: [NewEvent]
    private let documentTypes: Set<String>
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var results: [PreparedBody?]
    private var done: [Bool]
    /// Each body's minified form (``JSONLayout``) once worked out, nil inside when it is not laid
    /// out: the one event that needs it as a base while another thread prepares it reads it here
    /// instead of minifying it a second time (a third of the minifying an import did).
    private var layouts: [(form: [UInt8], layout: UInt8)??]
    private var next = 0
    private var helperRunning = false

    /// For each event whose body may be stored as a delta, the batch's last event before it with
    /// such a body in the same lineage: the body it will most likely follow, so its delta can be
    /// compressed here, off the writer (``DeltaChains``; an import's batch is one file's
    /// consecutive versions).
    private let bases: [Int?]

    init(_ batch: [NewEvent], documentTypes: Set<String>) {
        self.batch = batch
        self.documentTypes = documentTypes
        var lastOf: [[UInt8]: Int] = [:]
        bases = batch.indices.map { i in
            guard let payload = batch[i].payload, payload.count >= DeltaChains.minimum else { return nil }
            let lineage = DeltaChains.lineage(of: batch[i])
            defer { lastOf[lineage] = i }
            return lastOf[lineage]
        }
        results = Array(repeating: nil, count: batch.count)
        done = Array(repeating: false, count: batch.count)
        layouts = Array(repeating: nil, count: batch.count)
    }

    /// Starts the helper on `thread` when the batch is worth a second core.
    func startHelper(on thread: DedicatedThreadExecutor, environment: Environment, schema: LogSchema, zstd: ZstdContext) {
        let bytes = batch.reduce(0) { $0 + ($1.payload?.count ?? 0) }
        guard bytes >= 64 << 10, batch.count > 1 else { return }
        helperRunning = true
        let (ids, bodyIndex) = (schema.ids, schema.bodyIndex)
        thread.run { [self] in
            // Without a snapshot every claimed body is prepared in full. The snapshot is renewed
            // every 64 events, between a publish and the next claim: a long-lived reader would
            // hold back a map growth (which waits for readers) for the rest of the batch.
            var snapshot: Transaction?
            var sinceRenewal = 64
            defer {
                snapshot?.abort()
                condition.lock(); helperRunning = false; condition.broadcast(); condition.unlock()
            }
            while true {
                if sinceRenewal == 64 {
                    snapshot?.abort()
                    snapshot = try? environment.begin(readOnly: true)
                    sinceRenewal = 0
                }
                guard let i = claim(), let payload = batch[i].payload else { break }
                sinceRenewal += 1
                let hash = batch[i].erasedForm?.original ?? BlobCodec.hash(payload)
                let stored = snapshot.map { (try? bodyIndex.contains(hash, in: $0)) ?? false } ?? false
                // An event already in the log is not appended again: nothing to prepare.
                if stored, let snapshot, (try? schema.withIDKey(batch[i].id) { try snapshot.get(ids, key: $0) }) != nil {
                    publish(i, nil)
                    continue
                }
                publish(
                    i,
                    speculate(
                        i,
                        PreparedBody(
                            payload, hash: hash, stored: stored, canonical: batch[i].canonicalPayload, type: batch[i].type,
                            documentTypes: documentTypes, zstd: zstd, encode: bases[i] == nil, minify: { _ in self.layout(of: i) }), zstd: zstd))
            }
        }
    }

    /// Event `i`'s prepared body: the helper's, or prepared here with `zstd` and `isStored` when
    /// nobody has claimed it yet. Nil for an event without a body (or one the helper skipped: the
    /// caller then prepares it).
    func body(_ i: Int, zstd: ZstdContext, isStored: ([UInt8]) -> Bool) -> PreparedBody? {
        condition.lock()
        while !done[i] {
            let j: Int?
            if next <= i {
                // Nobody has claimed it: take it. Events before it that nobody claimed were passed
                // without a body (or as duplicates); a rerun of the transaction prepares them then.
                for k in next..<i { done[k] = true }
                next = i + 1
                j = i
            } else {
                // The helper is preparing it: prepare the next one meanwhile instead of waiting.
                j = claimLocked()
            }
            guard let j else { condition.wait(); continue }
            condition.unlock()
            let body = prepare(j, zstd: zstd, isStored: isStored)
            condition.lock()
            results[j] = body
            done[j] = true
        }
        let body = results[i]
        condition.unlock()
        return body ?? batch[i].payload.map { _ in prepare(i, zstd: zstd, isStored: isStored)! }
    }

    /// Stops the helper at its next claim and waits for it: nothing it holds outlives the append.
    func finish() {
        condition.lock()
        next = batch.count
        while helperRunning { condition.wait() }
        condition.unlock()
    }

    private func claim() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        return claimLocked()
    }

    /// The next unclaimed event with a body, now claimed. Lock held.
    private func claimLocked() -> Int? {
        while next < batch.count && batch[next].payload == nil { next += 1 }
        guard next < batch.count else { return nil }
        next += 1
        return next - 1
    }

    private func publish(_ i: Int, _ body: PreparedBody?) {
        condition.lock()
        results[i] = body
        done[i] = true
        condition.broadcast()
        condition.unlock()
    }

    private func prepare(_ i: Int, zstd: ZstdContext, isStored: ([UInt8]) -> Bool) -> PreparedBody? {
        let e = batch[i]
        guard let payload = e.payload else { return nil }
        return speculate(
            i,
            PreparedBody(
                payload, declaredHash: e.erasedForm?.original, canonical: e.canonicalPayload, type: e.type, documentTypes: documentTypes, zstd: zstd,
                isStored: isStored, encode: bases[i] == nil, minify: { _ in self.layout(of: i) }),
            zstd: zstd)
    }

    /// `body` with its delta against its likely base (``bases``), when it is to be stored; and
    /// compressed on its own too unless that delta is small (``DeltaChains/isSmall(_:of:)``: the
    /// writer then keeps it without comparing), so the writer seldom compresses a body itself.
    /// The delta is made between the two bodies' stored forms (``JSONLayout``), as the writer's.
    private func speculate(_ i: Int, _ body: PreparedBody, zstd: ZstdContext) -> PreparedBody {
        var body = body
        // A window row (``BodyWindow``) is made on the writer, against its window: neither a
        // delta nor the body alone would be used.
        guard bases[i] == nil || !batch[i].windowed else { return body }
        let content = body.laidOut?.form ?? body.staged.body
        if let j = bases[i], !body.isStored {
            let base = form(of: j)
            if let frame = zstd.compress(content, prefix: base, level: DeltaChains.deltaLevel(content.count)) {
                body.delta = SpeculativeDelta(baseHash: hash(of: j), frame: frame)
            }
        }
        let small = body.delta.map { DeltaChains.isSmall($0.frame.count, of: content.count) } ?? false
        if !body.isStored, body.encoded == nil, !small {
            body.encoded = BlobCodec.encodeBody(body.staged.body, form: body.laidOut, context: zstd)
        }
        return body
    }

    /// The stored form of event `j`'s body (minified when it is pretty-printed JSON): as
    /// prepared, when it is, else worked out.
    private func form(of j: Int) -> [UInt8] {
        condition.lock()
        let known = done[j] ? results[j].flatMap { $0.isStored ? nil : $0 } : nil
        condition.unlock()
        if let known { return known.laidOut?.form ?? known.staged.body }
        return layout(of: j)?.form ?? batch[j].payload!
    }

    /// Event `j`'s body minified (``JSONLayout/minified(_:)``), worked out once.
    private func layout(of j: Int) -> (form: [UInt8], layout: UInt8)? {
        condition.lock()
        let known = layouts[j]
        condition.unlock()
        if let known { return known }
        let made = JSONLayout.minified(batch[j].payload!)
        condition.lock()
        layouts[j] = .some(made)
        condition.unlock()
        return made
    }

    /// The hash of event `j`'s body: as prepared, when it is, else worked out.
    private func hash(of j: Int) -> [UInt8] {
        condition.lock()
        let known = done[j] ? results[j]?.hash : nil
        condition.unlock()
        return known ?? BlobCodec.hash(batch[j].payload!)
    }
}
