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
        self.init(from: from, to: to, readers: checkpoints.enumerated().compactMap { $0.element < to ? Reader(projection: $0.offset, applied: $0.element) : nil })
    }

    /// The chunk after this one, once this one's readers have applied it (nil when that reaches `head`).
    func next(checkpoints: [UInt64], head: UInt64, chunk: Int) -> FoldPlan? {
        var after = checkpoints
        for r in readers { after[r.projection] = to }
        return FoldPlan(checkpoints: after, head: head, chunk: chunk)
    }
}

/// What a chunk's fold reads from the log: each reader's events (decoded once, and only if some
/// reader takes the type) and the events' bodies (``PayloadSource/readBodies(of:schema:in:zstd:budget:)``).
struct FoldInput: Sendable {
    var events: [[RecordedEvent]]
    var bodies: [UInt64: StagedBody]

    /// `documentTypes`: the types whose bodies get their canonical form worked out too, for a
    /// read-ahead thread with time to spare (the writer then skips that work).
    static func read(_ plan: FoldPlan, filters: [EventTypeFilter], schema: LogSchema, zstd: ZstdContext, txn: Transaction,
                     documentTypes: Set<String> = []) throws -> FoldInput {
        let readers = plan.readers.map { (filters[$0.projection], $0.applied) }
        let events = try readEvents(from: plan.from + 1, to: plan.to, for: readers, schema: schema, txn: txn)
        let all = union(events)
        var bodies = try PayloadSource.readBodies(of: all, schema: schema, in: txn, zstd: zstd)
        if !documentTypes.isEmpty {
            for e in all where documentTypes.contains(e.type) { bodies[e.seq]?.prepareDocument() }
        }
        return FoldInput(events: events, bodies: bodies)
    }

    /// Reads the events (from, to] once for several readers, each with a type filter and the seq
    /// it has already applied. An event is decoded only if some reader takes it; the type is
    /// compared in the stored bytes.
    static func readEvents(from: UInt64, to: UInt64, for readers: [(filter: EventTypeFilter, applied: UInt64)],
                           schema: LogSchema, txn: Transaction) throws -> [[RecordedEvent]] {
        let c = try txn.cursor(schema.events)
        var out = [[RecordedEvent]](repeating: [], count: readers.count)
        var entry = try c.seek(atLeast: from.bigEndianBytes)
        while let e = entry {
            let seq = UInt64(bigEndianBytes: e.key)
            if seq > to { break }
            guard let type = Envelope.type(in: e.value) else {
                throw EventStoreError.corrupted("event \(seq) does not decode; run `strata verify`")
            }
            var event: RecordedEvent?
            for (i, r) in readers.enumerated() where seq > r.applied && r.filter.accepts(type) {
                if event == nil {
                    do { event = try Envelope.decode(e.value) } catch {
                        throw EventStoreError.corrupted("event \(seq) does not decode; run `strata verify`")
                    }
                }
                out[i].append(event!)
            }
            entry = try c.next()
        }
        return out
    }

    /// The events of several readers' lists, each once (each list is in seq order).
    static func union(_ lists: [[RecordedEvent]]) -> [RecordedEvent] {
        guard lists.count > 1 else { return lists.first ?? [] }
        var seen = Set<UInt64>()
        return lists.joined().filter { seen.insert($0.seq).inserted }
    }
}

/// Reads the next chunk of a fold on a thread of its own, in a read transaction, while the writer
/// folds the current chunk: reading, decoding and decompressing then overlap the projections'
/// work on a second core. The log below the head never changes, so what it reads is what the
/// writer would read; the writer still checks that the plan it gets matches its own.
final class FoldReadAhead: @unchecked Sendable {
    let plan: FoldPlan
    private let finished = DispatchSemaphore(value: 0)
    private var result: Result<FoldInput, any Error>?

    init(_ plan: FoldPlan, filters: [EventTypeFilter], documentTypes: Set<String>, schema: LogSchema, environment: Environment, zstd: ZstdContext) {
        self.plan = plan
        let thread = Thread { [self] in
            result = Result {
                try environment.read { try FoldInput.read(plan, filters: filters, schema: schema, zstd: zstd, txn: $0, documentTypes: documentTypes) }
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
