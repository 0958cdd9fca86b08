public import EventStore
import Foundation

/// A complete snapshot of a source's list from somewhere other than its API: a file, a commit.
public struct Snapshot: Sendable {
    /// Where it came from (a file URL, `git:REPO:PATH`, the commit in the `commit` metadata: one URL, so each version is a delta of the one before); stored as the page's `url`.
    public var url: String
    public var body: [UInt8]
    /// When the API said this (nil: now).
    public var recordedAt: Timestamp?
    /// Makes the import idempotent: a snapshot whose key was imported before into the same
    /// source is skipped (a git commit id). nil: always imported.
    public var idempotencyKey: String?
    /// Extra metadata for its events (commit, author date).
    public var metadata: [(key: String, value: String)]

    public init(
        url: String, body: [UInt8], recordedAt: Timestamp? = nil, idempotencyKey: String? = nil,
        metadata: [(key: String, value: String)] = []
    ) {
        self.url = url; self.body = body; self.recordedAt = recordedAt; self.idempotencyKey = idempotencyKey; self.metadata = metadata
    }
}

/// What an import did.
public struct ImportSummary: Sendable, Equatable {
    public var source: String
    public var run: String
    /// Snapshots appended by this run.
    public var imported = 0
    /// Snapshots already in the log (same idempotency key), skipped.
    public var alreadyImported = 0
    /// Empty or invalid snapshots, recorded as `FetchFailed` and skipped.
    public var failed = 0
    public var failures: [String] = []
    /// Bytes of JSON read (imported snapshots).
    public var bytes = 0
    /// Some snapshots were observed before the newest observation already stored, which was
    /// then restated so it stays the current state.
    public var backfilled = false
    public var added = 0
    public var changed = 0
    public var removed = 0
    public var seconds: Double = 0
}

extension Fetcher {
    /// Records snapshots as complete passes over the source's list, exactly as if fetched, in
    /// batches of `batchSize` (one transaction each: a killed import keeps whole snapshots).
    /// Small batches keep the file small: LMDB keeps the pages the last transactions freed, and a
    /// batch of 8 snapshots of a 200 KB list frees about a third as many as one of 64 (the
    /// scraping history of docs/benchmarks.md: 21.6 MB against 25.7 MB, for 30 s against 24 s).
    ///
    /// Each snapshot is observed at its `recordedAt`; one older than the newest observation of
    /// the source is backfilled: after its batch the newest observation is restated (its pages
    /// referenced again, no body stored twice), so the current state stays the newest and a
    /// date read finds each snapshot at its time (``ObservationTimeline``).
    /// - Parameter skipInvalid: record an empty or invalid snapshot as a failure and go on
    ///   (a git history); false: stop at the first one, throwing its ``FetchError``.
    public func importSnapshots(
        _ source: SourceDefinition, snapshots: AsyncThrowingStream<Snapshot, any Error>, skipInvalid: Bool = false,
        batchSize: Int = 8, progress: (@Sendable (FetchProgress) -> Void)? = nil
    ) async throws -> ImportSummary {
        let clock = ContinuousClock()
        let started = clock.now
        let run = UUID().uuidString.lowercased()
        let context = RunContext(source: source, run: run, options: FetchOptions(), gate: try await IngestGate.of(source, store: store))
        var summary = ImportSummary(source: source.name, run: run)
        let extraction = ItemExtraction(source)
        var firstSeq: UInt64?
        var batch: [NewEvent] = []
        // The body size of each snapshot in the batch.
        var sizes: [Int] = []
        /// Appends the batch, then restates the newest observation if the batch (or a killed
        /// import before it: this runs at the end even with nothing to append) left an older one
        /// current.
        func flush() async throws {
            if !batch.isEmpty {
                let outcomes = try await store.append(batch)
                // A snapshot's two events go in and are skipped together.
                for (i, o) in outcomes.enumerated() where i % 2 == 0 {
                    if o.appended {
                        summary.imported += 1
                        summary.bytes += sizes[i / 2]
                        firstSeq = firstSeq ?? o.seq
                    } else {
                        summary.alreadyImported += 1
                    }
                }
                batch.removeAll(keepingCapacity: true)
                sizes.removeAll(keepingCapacity: true)
            }
            if try await restateNewestObservation(source, run: run) { summary.backfilled = true }
        }
        for try await var snapshot in snapshots {
            // Worked out here, beside the reads of the history, and handed to the fold: it was a
            // fifth of the writer thread's time (NewEvent.shared).
            let items: [ItemExtraction.CanonicalItem]
            do {
                guard !snapshot.body.isEmpty else {
                    throw FetchError(code: .malformedJSON, message: "the snapshot is empty", url: snapshot.url)
                }
                snapshot.body = try context.gate.list(snapshot.body, items: source.items, url: snapshot.url)
                items = try extraction.pageItems(in: snapshot.body, url: snapshot.url)
            } catch {
                try await recordFailure(
                    context, url: snapshot.url, stage: "import", error: error, attempt: 1, willRetry: false,
                    extra: snapshot.metadata, recordedAt: snapshot.recordedAt)
                guard skipInvalid else { throw error }
                summary.failed += 1
                summary.failures.append("\(snapshot.url): \((error as? FetchError)?.message ?? "\(error)")")
                continue
            }
            var meta = common(context) + [("page", "1"), ("url", snapshot.url), ("status", "200"), ("import", "true")] + extraction.metadata
            if snapshot.recordedAt != nil { meta.append(("backfill", "true")) }
            meta += snapshot.metadata
            let ids = snapshot.idempotencyKey.map { key in (Self.eventID(source.name, key, "page"), Self.eventID(source.name, key, "done")) }
            var page = NewEvent(
                id: ids?.0, type: DataEvents.pageFetched, recordedAt: snapshot.recordedAt, stream: source.name, metadata: meta, payload: snapshot.body)
            page.shared = [extraction.shared(items)]
            batch.append(page)
            var done = common(context) + [("pages", "1"), ("complete", "true"), ("import", "true")]
            if snapshot.recordedAt != nil { done.append(("backfill", "true")) }
            batch.append(
                NewEvent(
                    id: ids?.1, type: DataEvents.fetchCompleted, recordedAt: snapshot.recordedAt, stream: source.name,
                    metadata: done + snapshot.metadata))
            sizes.append(snapshot.body.count)
            progress?(
                FetchProgress(
                    source: source.name, stage: .list, done: summary.imported + summary.alreadyImported + summary.failed + batch.count / 2, total: nil))
            if sizes.count >= batchSize || sizes.reduce(0, +) >= 32 << 20 { try await flush() }
        }
        try await flush()
        if let firstSeq, !summary.backfilled {
            var counts = FetchSummary(source: source.name, run: run)
            try await countChanges(&counts, source: source.name, since: firstSeq, everyVersion: true)
            summary.added = counts.added
            summary.changed = counts.changed + counts.reappeared
            summary.removed = counts.removed
        }
        summary.seconds = seconds(clock.now - started)
        return summary
    }

    /// A deterministic event id for an imported snapshot: a UUID-shaped digest of the source,
    /// the snapshot's key and the event's part.
    static func eventID(_ source: String, _ key: String, _ part: String) -> String {
        let hex = Hashing.sha256(Array("strata-import\u{0}\(source)\u{0}\(key)\u{0}\(part)".utf8), prefix: 16).hex
        let c = Array(hex)
        let parts: [String] = [String(c[0..<8]), String(c[8..<12]), String(c[12..<16]), String(c[16..<20]), String(c[20..<32])]
        return parts.joined(separator: "-")
    }

    /// When the list's current state (the last complete pass in the log) is not its newest
    /// observation (the complete pass observed last: an import of older data came after it),
    /// appends that observation again: its pages as references to the bodies already stored,
    /// and a `FetchCompleted`, all at its time and marked `restates`. Returns whether it did.
    @discardableResult
    func restateNewestObservation(_ source: SourceDefinition, run: String) async throws -> Bool {
        let name = source.name
        let state = try await store.read { [store] txn in
            let reader = ObservationTimeline.Reader(transaction: txn, tables: try store.tables(of: "timeline"))
            return (try reader.newestPass(stream: name), try reader.lastCompletePass(stream: name))
        }
        guard let newest = state.0, let current = state.1, newest.pages.upperBound != current else { return false }
        let pages = try await store.events(EventQuery(fromSeq: newest.pages.lowerBound, toSeq: newest.pages.upperBound - 1))
        guard !pages.isEmpty,
            pages.allSatisfy({
                $0.stream == name && $0.payload != nil
                    && ($0.type == DataEvents.pageFetched || $0.type == DataEvents.pageNotModified)
            })
        else { return false }
        let context = RunContext(source: source, run: run, options: FetchOptions(), gate: .restating(source))
        var events: [NewEvent] = pages.map { page in
            var meta = common(context) + page.metadata.filter { $0.key != "source" && $0.key != "run" && $0.key != "restates" }.map { ($0.key, $0.value) }
            meta.append(("restates", String(page.seq)))
            if page[metadata: "import"] == nil { meta.append(("import", "true")) }
            return NewEvent(type: DataEvents.pageNotModified, recordedAt: newest.recordedAt, stream: name, metadata: meta, payloadReference: page.payload)
        }
        events.append(
            NewEvent(
                type: DataEvents.fetchCompleted, recordedAt: newest.recordedAt, stream: name,
                metadata: common(context) + [
                    ("pages", String(pages.count)), ("complete", "true"), ("import", "true"),
                    ("restates", String(newest.pages.upperBound))
                ]))
        _ = try await store.append(events)
        return true
    }
}
