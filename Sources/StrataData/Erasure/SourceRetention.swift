public import EventStore
public import Foundation

/// What one source's retention dropped at a compaction.
public struct RetentionSummary: Sendable, Equatable {
    public var source: String
    /// The `RetentionApplied` event's seq.
    public var seq: UInt64
    /// The first seq kept: reads before it answer "before the retention horizon".
    public var horizon: UInt64
    public var bodies: Int
    public var bytes: Int
}

/// A source's retention (`keep`, `keepVersions`), applied at `strata compact`: the bodies only
/// events before the source's horizon carry are replaced by ``droppedBody`` through the same
/// rewrite an erasure uses (their digests stay, so the chain verifies), and a `RetentionApplied`
/// event records the horizon and what was dropped.
///
/// The horizon is where a complete pass starts: for `keep`, the newest pass observed at or before
/// now minus the window (so the state at the horizon is whole); for `keepVersions N`, the N-th
/// newest pass. A body any event at or after the horizon carries (a 304 confirming an old page,
/// an unchanged detail), or any event of another stream, is kept.
public struct SourceRetention: Sendable {
    public static let droppedBody = Array(#"{"strata.retention":"dropped"}"#.utf8)
    /// The event types whose bodies retention may drop (never a source's definition).
    static let droppable: Set<String> = [
        DataEvents.pageFetched, DataEvents.readAheadDiscarded, DataEvents.detailFetched, DataEvents.imageFetched,
        TrafficEvents.exchangeRecorded, TrafficEvents.requestBodyRecorded
    ]

    let store: EventStore
    /// Called with a source's name right before its retention writes (the source's lease in a
    /// team store); what it throws stops the retention before anything is appended.
    let beforeWriting: @Sendable (String) async throws -> Void

    public init(store: EventStore, beforeWriting: @escaping @Sendable (String) async throws -> Void = { _ in }) {
        self.store = store
        self.beforeWriting = beforeWriting
    }

    /// Applies the `RetentionApplied` events of the log whose bodies this store still holds as
    /// they were: one pulled from a team log after this node had pulled the originals, or one
    /// whose rewrite a killed process did not finish. Each listed body this store holds, not
    /// rewritten by that event yet, becomes ``droppedBody``, as on the node that applied it.
    /// Returns how many events it applied.
    @discardableResult
    public func applyPending() async throws -> Int {
        let events = try await store.events(EventQuery(type: DataEvents.retentionApplied))
        guard !events.isEmpty else { return 0 }
        let dropped = Hashing.sha256(Self.droppedBody)
        var applied = 0
        for e in events {
            guard let body = try await store.payload(of: e), let pairs = RewritePair.listed(in: body) else { continue }
            // An event's rewrite is one transaction: when its first body is rewritten by it, all are.
            if let first = pairs.first, try await store.rewrittenBy(first.original) == e.seq { continue }
            var plan: [BodyRewrite] = []
            for pair in pairs where pair.now == dropped {
                guard try await store.rewrittenBy(pair.original) != e.seq, try await !store.storedBodies([pair.original]).isEmpty else { continue }
                plan.append(BodyRewrite(original: pair.original, content: Self.droppedBody))
            }
            guard !plan.isEmpty else { continue }
            try await store.rewriteBodies(plan, by: e.seq)
            applied += 1
        }
        return applied
    }

    /// Applies the retention of every source that has one, as of `now`.
    public func apply(now: Date = Date()) async throws -> [RetentionSummary] {
        var out: [RetentionSummary] = []
        for source in try await SourceCatalog(store: store).all() where source.keep != nil || source.keepVersions != nil {
            if let s = try await apply(source, now: now) { out.append(s) }
        }
        return out
    }

    /// The seq before which `source` keeps nothing, if its retention has dropped anything.
    public func horizon(source: String) async throws -> UInt64? {
        let applied = try await store.events(EventQuery(stream: source, type: DataEvents.retentionApplied))
        return applied.compactMap { $0[metadata: "horizon"].flatMap(UInt64.init) }.max()
    }

    /// Applies `source`'s retention as of `now` unless the log shows it applied less than
    /// `interval` seconds before (what `strata watch` does after a fetch: a retention that
    /// moves the horizon rewrites bodies and folds the projections again, so once a day is
    /// enough for growth to stay bounded). nil when it was not due or dropped nothing new.
    /// - Throws: ``FetchError`` `source` when there is no such source.
    public func apply(source name: String, unlessAppliedWithin interval: TimeInterval, now: Date = Date()) async throws -> RetentionSummary? {
        guard let source = try await SourceCatalog(store: store).get(name) else {
            throw FetchError(code: .source, message: "no source named \(name)", url: "")
        }
        guard source.keep != nil || source.keepVersions != nil else { return nil }
        if let last = try await store.events(EventQuery(stream: name, type: DataEvents.retentionApplied)).last,
            now.timeIntervalSince(last.recordedAt.date) < interval
        {
            return nil
        }
        return try await apply(source, now: now)
    }

    func apply(_ source: SourceDefinition, now: Date) async throws -> RetentionSummary? {
        let passes = try await store.events(EventQuery(stream: source.name, type: DataEvents.fetchCompleted)).compactMap {
            e -> (start: UInt64, at: Timestamp)? in
            guard e[metadata: "complete"] == "true", let pages = e[metadata: "pages"].flatMap(UInt64.init), pages < e.seq else { return nil }
            return (e.seq - pages, e.recordedAt)
        }
        let start: UInt64?
        if let keep = source.keep {
            let cutoff = Timestamp(now.addingTimeInterval(-keep))
            start = passes.last { $0.at <= cutoff }?.start
        } else if let n = source.keepVersions, passes.count > n {
            start = passes[passes.count - n].start
        } else {
            start = nil
        }
        guard let horizon = start, horizon > (try await self.horizon(source: source.name) ?? 0) else { return nil }
        // Every body an event at or after the horizon, or of another stream, carries stays.
        let head = try await store.head().seq
        var kept = Set<[UInt8]>()
        var candidates: [[UInt8]: Int] = [:]
        var from: UInt64 = 1
        while from <= head {
            let chunk = try await store.events(EventQuery(fromSeq: from, toSeq: head, limit: 4_096))
            guard let last = chunk.last else { break }
            for e in chunk {
                guard let ref = e.payload else { continue }
                if e.stream == source.name && e.seq < horizon && Self.droppable.contains(e.type) {
                    candidates[ref.hash] = ref.size
                } else {
                    kept.insert(ref.hash)
                }
            }
            from = last.seq + 1
        }
        var rewrites: [BodyRewrite] = []
        var bytes = 0
        for (hash, size) in candidates where !kept.contains(hash) {
            rewrites.append(BodyRewrite(original: hash, content: Self.droppedBody))
            bytes += size
        }
        rewrites.sort { $0.original.lexicographicallyPrecedes($1.original) }
        let policy = source.keep.map { "keep \(Int($0))s" } ?? "keep \(source.keepVersions ?? 0) versions"
        let payload = JSONValue.object([
            "source": .string(source.name), "horizon": .number(String(horizon)), "policy": .string(policy),
            "bodies": .number(String(rewrites.count)), "bytes": .number(String(bytes)), "rewrites": EventStore.rewriteRecord(rewrites)
        ])
        let event = NewEvent(
            type: DataEvents.retentionApplied, stream: source.name,
            metadata: [
                ("source", source.name), ("horizon", String(horizon)), ("bodies", String(rewrites.count)), ("bytes", String(bytes)),
                ("rewrites", String(rewrites.count))
            ],
            payload: payload.canonicalBytes)
        try await beforeWriting(source.name)
        let seq = try await store.append(event).seq
        try await store.rewriteBodies(rewrites, by: seq)
        return RetentionSummary(source: source.name, seq: seq, horizon: horizon, bodies: rewrites.count, bytes: bytes)
    }
}
