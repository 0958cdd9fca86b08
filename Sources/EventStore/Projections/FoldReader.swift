import Foundation
import LMDB

/// One chunk of a catch-up or rebuild: the events (from, to] and, per lagging projection, the seq
/// it has applied. Projections whose checkpoint is at or past `to` sit the chunk out.
struct FoldPlan: Equatable, Sendable {
    struct Reader: Equatable, Sendable {
        var projection: Int
        var applied: UInt64
    }

    var from: UInt64
    var to: UInt64
    var readers: [Reader]
}

extension FoldPlan {
    /// The next chunk given every projection's checkpoint, or nil when none lags the head.
    init?(checkpoints: [UInt64], head: UInt64, chunk: Int) {
        guard let from = checkpoints.filter({ $0 < head }).min() else { return nil }
        let to = min(head, from + UInt64(chunk))
        self.init(
            from: from, to: to, readers: checkpoints.enumerated().compactMap { $0.element < to ? Reader(projection: $0.offset, applied: $0.element) : nil })
    }

    /// The chunk after this one, once this one's readers have applied it (nil when that reaches `head`).
    func next(checkpoints: [UInt64], head: UInt64, chunk: Int) -> FoldPlan? {
        var after = checkpoints
        for r in readers { after[r.projection] = to }
        return FoldPlan(checkpoints: after, head: head, chunk: chunk)
    }
}

/// What a chunk's fold reads from the log: each reader's events (decoded once, and only if some
/// reader takes the type) and the events' bodies (``BodyArena/read(_:from:to:documentTypes:schema:in:zstd:budget:)``).
struct FoldInput: Sendable {
    var events: [[RecordedEvent]]
    var bodies: BodyArena

    /// `documentTypes`: the types whose bodies get their canonical form worked out too, for a
    /// read-ahead thread with time to spare (the writer then skips that work).
    /// `prepared`: the types whose bodies a ``BodyPrep`` reads instead.
    /// `pool`: memory of earlier chunks' bodies, reused.
    static func read(
        _ plan: FoldPlan, filters: [EventTypeFilter], schema: LogSchema, zstd: ZstdContext, txn: Transaction,
        documentTypes: Set<String> = [], prepared: Set<String> = [], pool: BodyArena.Pool? = nil
    ) throws -> FoldInput {
        let readers = plan.readers.map { (filters[$0.projection], $0.applied) }
        let events = try readEvents(from: plan.from + 1, to: plan.to, for: readers, schema: schema, txn: txn)
        let all = union(events)
        let bodies = try BodyArena.read(
            prepared.isEmpty ? all : all.filter { !prepared.contains($0.type) }, from: plan.from, to: plan.to,
            documentTypes: documentTypes, schema: schema, in: txn, zstd: zstd, pool: pool)
        return FoldInput(events: events, bodies: bodies)
    }

    /// Reads the events (from, to] once for several readers, each with a type filter and the seq
    /// it has already applied. An event is decoded only if some reader takes it; the type is
    /// compared in the stored bytes.
    static func readEvents(
        from: UInt64, to: UInt64, for readers: [(filter: EventTypeFilter, applied: UInt64)],
        schema: LogSchema, txn: Transaction
    ) throws -> [[RecordedEvent]] {
        var c = try EnvelopeCursor(schema, txn)
        var out = [[RecordedEvent]](repeating: [], count: readers.count)
        // Room for every event a reader could take: growing by doubling copied the chunk's events
        // several times into fresh pages the kernel had to zero (pages never touched cost nothing).
        for (i, r) in readers.enumerated() where to >= from {
            let after = max(from - 1, r.applied)
            if to > after { out[i].reserveCapacity(Int(to - after)) }
        }
        var entry = try c.seek(atLeast: from)
        while let (seq, envelope) = entry {
            if seq > to { break }
            guard let type = Envelope.type(in: envelope) else {
                throw EventStoreError.corrupted("event \(seq) does not decode")
            }
            var event: RecordedEvent?
            for (i, r) in readers.enumerated() where seq > r.applied && r.filter.accepts(type) {
                if event == nil {
                    do { event = try Envelope.decode(envelope) } catch {
                        throw EventStoreError.corrupted("event \(seq) does not decode")
                    }
                }
                out[i].append(event!)
            }
            entry = try c.next()
        }
        return out
    }

    /// The events of several readers' lists, each once, in seq order: a merge of the lists (each
    /// is in seq order), with no set of seen seqs and one array of the right size.
    static func union(_ lists: [[RecordedEvent]]) -> [RecordedEvent] {
        guard lists.count > 1 else { return lists.first ?? [] }
        var out: [RecordedEvent] = []
        out.reserveCapacity(lists.map(\.count).max() ?? 0)
        var next = [Int](repeating: 0, count: lists.count)
        while true {
            var lowest: UInt64 = .max
            for k in lists.indices where next[k] < lists[k].count { lowest = min(lowest, lists[k][next[k]].seq) }
            guard lowest != .max else { return out }
            var taken = false
            for k in lists.indices where next[k] < lists[k].count && lists[k][next[k]].seq == lowest {
                if !taken { out.append(lists[k][next[k]]); taken = true }
                next[k] += 1
            }
        }
    }
}

/// Reads the next chunk of a fold on a thread of its own, in a read transaction, while the writer
/// folds the current chunk: reading, decoding and decompressing then overlap the projections'
/// work on a second core. The log below the head never changes, so what it reads is what the
/// writer would read; the writer still checks that the plan it gets matches its own.
// Unchecked: a read transaction and arenas owned by its helper thread until handed over whole.
final class FoldReadAhead: @unchecked Sendable {
    let plan: FoldPlan
    private let finished = DispatchSemaphore(value: 0)
    private var result: Result<FoldInput, any Error>?

    /// `after`: a ``BodyPrep`` of the current chunk that shares `zstd`; the read starts once it is done.
    /// `pool`: memory for the chunk's bodies.
    init(
        _ plan: FoldPlan, filters: [EventTypeFilter], documentTypes: Set<String>, schema: LogSchema, environment: Environment, zstd: ZstdContext,
        after prep: BodyPrep? = nil, pool: BodyArena.Pool? = nil
    ) {
        self.plan = plan
        let thread = Thread { [self] in
            prep?.wait()
            result = Result {
                try environment.read {
                    try FoldInput.read(plan, filters: filters, schema: schema, zstd: zstd, txn: $0, documentTypes: documentTypes, pool: pool)
                }
            }
            finished.signal()
        }
        thread.name = "strata.read-ahead"
        thread.start()
    }

    /// Waits for the read; nil when it failed (the writer then reads in its own transaction and
    /// reports the failure from there).
    func wait() -> FoldInput? {
        finished.wait()
        finished.signal()  // later waits return at once
        return try? result?.get()
    }
}

/// The document bodies of the chunk being folded, read and prepared on a helper thread while the
/// writer decodes and folds that same chunk: each event's own `bodies` row (in seq order) is
/// decompressed, and for a document type canonicalized and digested. For a chunk that was not
/// read ahead (the first one of a fold), this puts a second core to work from the start.
///
/// The helper publishes its work in parts of ``partSize`` seqs, each part one ``BodyArena``;
/// the writer copies what it needs out of a part on its own thread. No per-event object crosses
/// threads, so neither allocator sees frees of the other's small blocks (an earlier split that
/// handed over per-event arrays cost more CPU than it saved).
// Unchecked: parts are filled by its helper thread and published whole under its lock.
final class BodyPrep: @unchecked Sendable {
    static let partSize: UInt64 = 2_048

    let from: UInt64, to: UInt64
    private let condition = NSCondition()
    private var parts: [BodyArena?]
    private var published = 0
    private var finished = false
    private var cancelled = false

    /// Prepares the bodies of events (from, to] whose type is in `documentTypes`, in a read
    /// transaction of its own, up to `budget` bytes of arenas; bodies over 64 KiB are left to the
    /// writer.
    init(
        from: UInt64, to: UInt64, documentTypes: Set<String>, schema: LogSchema, environment: Environment, zstd: ZstdContext,
        budget: Int = 256 << 20
    ) {
        self.from = from
        self.to = to
        parts = Array(repeating: nil, count: Int((to - from + Self.partSize - 1) / Self.partSize))
        let types = documentTypes.map { Array($0.utf8) }
        let thread = Thread { [self] in
            try? environment.read { txn in try self.run(types: types, schema: schema, txn: txn, zstd: zstd, budget: budget) }
            condition.lock(); finished = true; condition.broadcast(); condition.unlock()
        }
        thread.name = "strata.body-prep"
        thread.start()
    }

    private func run(types: [[UInt8]], schema: LogSchema, txn: Transaction, zstd: ZstdContext, budget: Int) throws {
        var events = try EnvelopeCursor(schema, txn)
        let bodies = try txn.cursor(schema.bodies)
        let bases = DeltaBases(bodies: schema.bodies, txn: txn)
        var used = 0
        for k in parts.indices {
            condition.lock(); let stop = cancelled; condition.unlock()
            if stop { return }
            let start = from + 1 + UInt64(k) * Self.partSize
            let end = min(to, start + Self.partSize - 1)
            let part = BodyArena(from: start - 1, to: end)
            var row = try bodies.seek(atLeast: start.bigEndianBytes)
            while let r = row {
                let seq = UInt64(bigEndianBytes: r.key)
                if seq > end { break }
                defer { row = try? bodies.next() }
                guard r.value.count <= 64 << 10, let e = try events.seek(atLeast: seq), e.seq == seq, let type = Envelope.type(in: e.envelope),
                    types.contains(where: { $0.count == type.count && $0.elementsEqual(type) }),
                    let body = try? bases.decode(r.value, seq: seq, context: zstd),
                    body.withUnsafeBytes({ part.put(body: $0, for: seq) })
                else { continue }
                // A delta's row does not read on its own: it is not handed out as a stored form.
                if BlobCodec.isSelfContained(r.value) { part.put(stored: r.value, for: seq) }
                part.prepareDocument(seq)
                // Past the budget, the rest of the chunk is left to the writer.
                if used + part.count > budget { break }
            }
            used += part.count
            condition.lock(); parts[k] = part; published = k + 1; condition.broadcast(); condition.unlock()
            if used > budget { return }
        }
    }

    /// The part holding `seq`, once published; nil when the helper stopped before it.
    private func part(_ seq: UInt64) -> BodyArena? {
        guard seq > from, seq <= to else { return nil }
        let k = Int((seq - from - 1) / Self.partSize)
        condition.lock()
        defer { condition.unlock() }
        while published <= k && !finished { condition.wait() }
        return parts[k]
    }

    /// The body of event `seq`, if the helper prepared it.
    func body(_ seq: UInt64) -> [UInt8]? { part(seq)?.body(seq) }

    /// The stored form (the `bodies` row) of event `seq`'s body, if the helper prepared it.
    func stored(_ seq: UInt64) -> [UInt8]? { part(seq)?.stored(seq) }

    /// Whether `json` is event `seq`'s body; nil when the helper did not prepare it.
    func matches(_ seq: UInt64, _ json: [UInt8]) -> Bool? { part(seq)?.matches(seq, json) }

    /// The canonical form and digest of event `seq`'s body, if the helper prepared them and `json`
    /// is that body.
    func document(_ seq: UInt64, matching json: [UInt8]) -> (canonical: [UInt8], digest: [UInt8])? {
        part(seq)?.document(seq, matching: json)
    }

    /// The canonical form and digest of event `seq`'s body, if the helper prepared them.
    func document(_ seq: UInt64) -> (canonical: [UInt8], digest: [UInt8])? { part(seq)?.document(seq) }

    /// Stops the helper at its next part (the writer no longer needs it) and waits for it.
    func cancel() {
        condition.lock(); cancelled = true; condition.unlock()
        wait()
    }

    /// Waits for the helper to finish (the next chunk's read-ahead starts after it).
    func wait() {
        condition.lock()
        while !finished { condition.wait() }
        condition.unlock()
    }
}
