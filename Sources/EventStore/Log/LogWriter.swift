import Foundation
import LMDB
import Logging

/// The single writer of a store in this process. Every LMDB write transaction runs here, on a
/// private serial queue, begins and ends inside one synchronous call, and never spans an `await`.
/// Writers in other processes are serialized by LMDB's lock; each transaction reads the head
/// afresh, so a second process appends after the first.
actor LogWriter {
    private let executor: DedicatedThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    let environment: Environment
    let schema: LogSchema
    let projections: [any Projection]
    /// Each projection's event-type filter, in the order of `projections`.
    private let filters: [EventTypeFilter]
    let clock: any EventClock
    let logger: Logger
    let zstd = ZstdContext()
    /// The fold read-ahead's context (its threads run inside calls to this actor, one at a time).
    private let helperZstd = ZstdContext()
    /// The thread that prepares an append's bodies ahead of its transaction (``AppendPrep``), and
    /// its own context: a batch may be prepared while another call of this actor runs.
    private let prepThread = DedicatedThreadExecutor(name: "strata.append-prep")
    private let prepZstd = ZstdContext()
    /// Every projection's `documentTypes`.
    private let documentTypes: Set<String>
    /// Bodies stored as deltas against the previous version of their URL.
    private let deltas: DeltaChains

    init(
        environment: Environment, schema: LogSchema, projections: [any Projection], clock: any EventClock, logger: Logger,
        keyframeInterval: Int = DeltaChains.defaultKeyframeInterval
    ) {
        executor = DedicatedThreadExecutor(name: "strata.writer")
        self.environment = environment
        self.schema = schema
        self.projections = projections
        filters = projections.map { EventTypeFilter($0.eventTypes) }
        documentTypes = projections.reduce(into: []) { $0.formUnion($1.documentTypes) }
        self.clock = clock
        self.logger = logger
        deltas = DeltaChains(keyframeInterval: keyframeInterval)
    }

    deinit {
        executor.shutdown()
        prepThread.shutdown()
    }

    // MARK: Append

    /// Starts preparing `batch`'s bodies on the helper thread now (when the batch is worth it),
    /// so its append, queued behind one that commits meanwhile, finds them ready.
    nonisolated func prepare(_ batch: [NewEvent]) -> AppendPrep {
        let prep = AppendPrep(batch, documentTypes: documentTypes)
        prep.startHelper(on: prepThread, environment: environment, schema: schema, zstd: prepZstd)
        return prep
    }

    /// Appends a batch in one write transaction, with every projection's updates and checkpoint.
    func append(_ batch: [NewEvent]) throws -> [AppendOutcome] {
        try append(prepare(batch))
    }

    /// Appends a batch whose preparation ``prepare(_:)`` started.
    func append(_ prep: AppendPrep) throws -> [AppendOutcome] {
        defer { prep.finish() }
        let batch = prep.batch
        for e in batch { try Self.validate(e) }
        let started = ContinuousClock.now
        // A projection that throws has the batch written again with the careful fold.
        let outcomes = try foldingDirectly { direct in
            try environment.write { txn -> [AppendOutcome] in
                let payloads = PayloadSource(schema: schema, zstd: zstd)
                var head = try LogHead.read(txn, schema)
                var counters = try Counters.read(txn, schema)
                let firstNew = head.seq + 1
                let (outcomes, fresh) = try claimIDs(batch, firstNew: firstNew, effective: head.effectiveTime, txn)
                guard !fresh.isEmpty else { return outcomes }
                let recorded = try writeFresh(fresh, of: prep, firstNew: firstNew, head: &head, counters: &counters, payloads: payloads, txn)
                try counters.write(txn, schema)
                try applyProjections(recorded, from: firstNew, payloads: payloads, txn: txn, direct: direct)
                return outcomes
            }
        }
        let appended = outcomes.lazy.filter(\.appended).count
        logger.debug(
            "appended batch",
            metadata: [
                "batch.size": "\(batch.count)", "batch.appended": "\(appended)",
                "batch.lastSeq": "\(outcomes.last?.seq ?? 0)",
                "batch.duration": "\(ContinuousClock.now - started)"
            ])
        return outcomes
    }

    /// First pass: every id is claimed with one insert (an existing row is the duplicate's seq),
    /// and each new event gets its seq, its time and its stream, type and time index rows. None of
    /// it needs a body, so the helper prepares bodies meanwhile and starts the second pass ahead
    /// of the writer instead of racing it from the first event.
    private func claimIDs(
        _ batch: [NewEvent], firstNew: UInt64, effective start: Timestamp, _ txn: Transaction
    ) throws -> (outcomes: [AppendOutcome], fresh: [(index: Int, at: Timestamp)]) {
        var outcomes: [AppendOutcome] = []
        outcomes.reserveCapacity(batch.count)
        var fresh: [(index: Int, at: Timestamp)] = []
        fresh.reserveCapacity(batch.count)
        var effective = start
        var indexes = IndexBlockWriter(schema, txn)
        for (i, e) in batch.enumerated() {
            let seq = firstNew + UInt64(fresh.count)
            if let existing = try Self.claim(schema, id: e.id, seq: seq, txn) {
                outcomes.append(AppendOutcome(seq: UInt64(bigEndianBytes: existing), id: e.id, appended: false))
                continue
            }
            let at = e.recordedAt ?? clock.now()
            effective = max(effective, at)
            try indexes.add(stream: e.stream, type: e.type, effective: effective, seq: seq)
            outcomes.append(AppendOutcome(seq: seq, id: e.id, appended: true))
            fresh.append((i, at))
        }
        try indexes.flush()
        return (outcomes, fresh)
    }

    /// Second pass: bodies, envelopes (the hash chain) and the log's rows, in seq order. Returns
    /// the events as recorded; each body, and what the caller worked out for the projections
    /// (``NewEvent/shared``), is staged in `payloads` for them.
    private func writeFresh(
        _ fresh: [(index: Int, at: Timestamp)], of prep: AppendPrep, firstNew: UInt64, head: inout LogHead, counters: inout Counters,
        payloads: PayloadSource, _ txn: Transaction
    ) throws -> [RecordedEvent] {
        var recorded: [RecordedEvent] = []
        recorded.reserveCapacity(fresh.count)
        for (n, (i, at)) in fresh.enumerated() {
            let e = prep.batch[i]
            let seq = firstNew + UInt64(n)
            // Prepared by the helper, or here (in this transaction's view of the stored bodies).
            let body =
                e.payload == nil
                ? nil
                : prep.body(i, zstd: zstd) { [schema] hash in
                    (try? schema.bodyIndex.contains(hash, in: txn)) ?? false
                }
            let (ref, stored) = try storeBody(of: e, body, seq: seq, firstNew: firstNew, txn)
            var event = RecordedEvent(
                seq: seq, id: e.id, type: e.type, schemaVersion: e.schemaVersion, recordedAt: at,
                stream: e.stream, metadata: e.metadata.map { .init(key: $0.key, value: $0.value) },
                payload: ref, previousHash: head.hash, hash: [])
            let envelope = Envelope.encode(&event)
            try writeEvent(event, envelope: envelope, storedBlob: stored, counters: &counters, txn: txn)
            head.seq = seq
            head.hash = event.hash
            if let body {
                var staged = body.staged
                staged.stored = stored?.withUnsafeBytes { BlobCodec.isSelfContained($0) } == true ? stored : nil
                payloads.stage(staged, for: seq)
            }
            for v in e.shared { payloads.shared.keep(SharedValues.Key(seq: seq, kind: v.kind), v.value, bytes: v.bytes) }
            recorded.append(event)
        }
        return recorded
    }

    /// The event's body reference, and the row to store under `seq` when the body is new (whole,
    /// or a delta against an earlier version). A body's hash is claimed with one insert: a row
    /// there already is the body stored by an earlier event, and this one stores nothing.
    /// `firstNew`: the append's first seq.
    private func storeBody(of e: NewEvent, _ body: PreparedBody?, seq: UInt64, firstNew: UInt64, _ txn: Transaction) throws -> (
        PayloadReference?, [UInt8]?
    ) {
        if let body {
            let ref = PayloadReference(hash: body.hash, size: body.staged.body.count)
            guard try Self.claimBody(body.hash, seq: seq, schema, txn) else { return (ref, nil) }
            let whole = { [zstd] in body.encoded ?? BlobCodec.encodeBody(body.staged.body, form: body.laidOut, context: zstd) }
            if let erased = e.erasedForm {
                // Stored whole, outside every delta chain, with the row an erasure writes.
                let row = erased.erasureSeq.bigEndianBytes + Hashing.sha256(body.staged.body) + erased.original
                _ = try txn.put(schema.rewritten, key: erased.original, value: row)
                return (ref, whole())
            }
            guard body.staged.body.count >= DeltaChains.minimum else { return (ref, whole()) }
            var speculative = body.delta
            speculative?.notBefore = firstNew
            let row = try deltas.row(
                for: body.staged.body, laidOut: body.laidOut, hash: body.hash, whole: whole, seq: seq, lineage: DeltaChains.lineage(of: e),
                windowed: e.windowed, schema: schema, txn: txn, context: zstd, speculative: speculative)
            return (ref, row)
        }
        if let existing = e.payloadReference {
            guard try schema.bodyIndex.contains(existing.hash, in: txn) else {
                throw EventStoreError.invalid("event \(e.id.prefix(64)) references body \(existing.hashHex.prefix(16)), which is not stored")
            }
            return (existing, nil)
        }
        return (nil, nil)
    }

    /// Inserts `id` → `seq` into `ids` unless `id` is there; returns the row found then.
    ///
    /// The seq is stored big-endian without its leading zero bytes (at least one byte): 2 or 3
    /// bytes instead of 8 for most stores, which took `ids` from 37.7 to 31.2 bytes a row (0.19
    /// to 0.16 MB for 5,000 events). Rows of 8 bytes, written before, read the same: every reader
    /// decodes big-endian of any length (``Swift/UInt64/init(bigEndianBytes:)``).
    private static func claim(_ schema: LogSchema, id: String, seq: UInt64, _ txn: Transaction) throws -> UnsafeRawBufferPointer? {
        try seq.withShortBigEndianBytes { value in try schema.withIDKey(id) { try txn.insert(schema.ids, key: $0, value: value) } }
    }

    /// Makes `seq` the home of a body not stored yet; false when it is stored already (the event
    /// at `seq` then stores nothing).
    private static func claimBody(_ hash: [UInt8], seq: UInt64, _ schema: LogSchema, _ txn: Transaction) throws -> Bool {
        try hash.withUnsafeBytes { try schema.bodyIndex.claim($0, seq: seq, in: txn) }
    }

    /// Writes one encoded event and its indexes but the id's, which the caller claimed (as it did
    /// the body's hash when `storedBlob` is given: the body to store under this seq).
    private func write(
        _ event: RecordedEvent, envelope: [UInt8], storedBlob: [UInt8]?,
        head: inout LogHead, counters: inout Counters, indexes: inout IndexBlockWriter, txn: Transaction
    ) throws {
        let effective = max(head.effectiveTime, event.recordedAt)
        try indexes.add(stream: event.stream, type: event.type, effective: effective, seq: event.seq)
        try writeEvent(event, envelope: envelope, storedBlob: storedBlob, counters: &counters, txn: txn)
        head = LogHead(seq: event.seq, hash: event.hash, effectiveTime: effective)
    }

    /// The event's envelope row and, when `storedBlob` is given, its body's row.
    private func writeEvent(_ event: RecordedEvent, envelope: [UInt8], storedBlob: [UInt8]?, counters: inout Counters, txn: Transaction) throws {
        try withUnsafeBytes(of: event.seq.bigEndian) { seqKey in
            _ = try envelope.withUnsafeBytes { try txn.put(schema.events, key: seqKey, value: $0, flags: .append) }
            guard let ref = event.payload else { return }
            counters.payloadBytes += UInt64(ref.size)
            counters.payloadCount += 1
            guard let storedBlob else { return }
            // The body goes to `bodies` under this seq (appended: fresh pages in order); the body
            // index maps its hash to that seq.
            _ = try storedBlob.withUnsafeBytes { try txn.put(schema.bodies, key: seqKey, value: $0, flags: .append) }
            counters.blobCount += 1
            counters.blobRawBytes += UInt64(ref.size)
            counters.blobStoredBytes += UInt64(storedBlob.count)
        }
        if let chain = schema.sealedChain { try SealedChain.link(event.seq, chain: chain, schema, txn) }
    }

    /// Copies already-recorded events (envelope bytes and stored blobs kept as they are) into this
    /// store, applying projections: the scratch side of replay and verify.
    func importRecorded(_ chunk: [RecordedChunkEntry]) throws {
        guard !chunk.isEmpty else { return }
        try foldingDirectly { direct in
            try environment.write { txn in
                var head = try LogHead.read(txn, schema)
                var counters = try Counters.read(txn, schema)
                let first = head.seq + 1
                var events: [RecordedEvent] = []
                var indexes = IndexBlockWriter(schema, txn)
                for entry in chunk {
                    guard entry.event.seq == head.seq + 1 else {
                        throw EventStoreError(code: .invalidArgument, message: "replay chunk is not contiguous at seq \(entry.event.seq)")
                    }
                    _ = try Self.claim(schema, id: entry.event.id, seq: entry.event.seq, txn)
                    var stored = entry.storedBlob
                    if stored != nil, let ref = entry.event.payload, try !Self.claimBody(ref.hash, seq: entry.event.seq, schema, txn) { stored = nil }
                    try write(entry.event, envelope: entry.envelope, storedBlob: stored, head: &head, counters: &counters, indexes: &indexes, txn: txn)
                    events.append(entry.event)
                }
                try indexes.flush()
                try counters.write(txn, schema)
                try applyProjections(events, from: first, payloads: PayloadSource(schema: schema, zstd: zstd), txn: txn, direct: direct)
            }
        }
    }

    // MARK: Delta chains

    /// Rewrites the bodies of a store older than format 4 as delta chains, `chunk` bodies per
    /// transaction, resuming after the last seq a previous run committed; the last transaction
    /// drops every projection's checkpoint (a projection that copied a body's stored form then
    /// matches a rebuild again), so the catch-up that follows rebuilds them. Returns the bodies
    /// rewritten.
    func migrateToDeltaChains(chunk: Int = 1_024, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) throws -> Int {
        var rewritten = 0
        while true {
            let done = try environment.write { txn -> Bool in
                guard let mark = try txn.get(schema.meta, key: LogSchema.deltaMigrationKey) else { return true }
                let after = mark.withUnsafeBytes { UInt64(bigEndianBytes: $0) }
                var counters = try Counters.read(txn, schema)
                let rows = try txn.cursor(schema.bodies)
                var entry = try rows.seek(atLeast: (after + 1).bigEndianBytes)
                var last = after
                var n = 0
                var rewrites: [(seq: UInt64, row: [UInt8])] = []
                while let e = entry, n < chunk {
                    let seq = UInt64(bigEndianBytes: e.key)
                    last = seq
                    n += 1
                    if BlobCodec.isSelfContained(e.value), let event = try schema.event(at: seq, txn) {
                        let whole = [UInt8](e.value)
                        let body = try BlobCodec.decode(e.value, context: zstd)
                        if body.count >= DeltaChains.minimum {
                            let row = try deltas.row(
                                for: body, laidOut: JSONLayout.minified(body), hash: event.payload?.hash ?? Hashing.sha256(body), whole: { whole },
                                seq: seq,
                                lineage: DeltaChains.lineage(of: event), schema: schema, txn: txn, context: zstd)
                            if row != whole { rewrites.append((seq, row)) }
                        }
                    }
                    entry = try rows.next()
                }
                let finished = entry == nil
                // Written after the walk: its cursor is not moved under it.
                for w in rewrites {
                    let old = try BlobCodec.stored(seq: w.seq, bodies: schema.bodies, in: txn)?.count ?? 0
                    _ = try txn.put(schema.bodies, key: w.seq.bigEndianBytes, value: w.row)
                    counters.blobStoredBytes = counters.blobStoredBytes + UInt64(w.row.count) - UInt64(old)
                }
                rewritten += rewrites.count
                try counters.write(txn, schema)
                if finished {
                    _ = try txn.delete(schema.meta, key: LogSchema.deltaMigrationKey)
                    try txn.clear(schema.checkpoints)
                    return true
                }
                try txn.put(schema.meta, key: LogSchema.deltaMigrationKey, value: last.bigEndianBytes)
                let head = try LogHead.read(txn, schema).seq
                progress?(last, head)
                return false
            }
            if done { return rewritten }
        }
    }

    // MARK: Projections

    private func applyProjections(_ events: [RecordedEvent], from firstSeq: UInt64, payloads: PayloadSource, txn: Transaction, direct: Bool) throws {
        for (i, p) in projections.enumerated() {
            let tables = schema.projectionTables[p.name]!
            var cp = try Checkpoint.read(p.name, txn, schema)
            if cp?.version != p.version {
                // Stale or missing: rebuild it from zero within this transaction.
                try reset(p, txn: txn)
                cp = Checkpoint(version: p.version, seq: 0)
            }
            if cp!.seq + 1 < firstSeq {
                try catchUp(i, tables: tables, from: cp!.seq, to: firstSeq - 1, payloads: payloads, txn: txn, direct: direct)
            }
            let filter = filters[i]
            let applied = cp!.seq
            // Usually every event is new to the projection and of its types: no copy then. The
            // test reads each event in place by index (a closure taking events copies each one).
            func takes(_ j: Int) -> Bool { events[j].seq > applied && filter.accepts(events[j].type) }
            try apply(
                p, events.indices.allSatisfy(takes) ? events : events.indices.filter(takes).map { events[$0] },
                tables: tables, payloads: payloads, txn: txn, direct: direct)
            try Checkpoint(version: p.version, seq: events.last!.seq).write(p.name, txn, schema)
        }
    }

    /// Applies events to one projection.
    ///
    /// `direct`: the events fold straight into `txn`, and an event that throws throws
    /// ``FoldThrew``: the caller undoes the whole transaction and runs it again with `direct`
    /// false. A nested transaction would cost every page the fold reads a second search of the
    /// dirty pages, for a path taken only when an event is bad.
    ///
    /// Else the batch runs in one nested transaction; if any event throws, the batch is undone and
    /// re-run event by event, quarantining the ones that throw.
    private func apply(_ p: any Projection, _ events: [RecordedEvent], tables: TableSet, payloads: PayloadSource, txn: Transaction, direct: Bool) throws {
        guard !events.isEmpty else { return }
        if direct {
            let ctx = ProjectionContext(transaction: txn, tables: tables, payloads: payloads)
            do {
                // Through the buffer: each event is lent in place (an array's subscript copied
                // every event for the call: 8 retains and releases).
                try events.withUnsafeBufferPointer { buffer in
                    for j in buffer.indices { try p.apply(buffer[j], in: ctx) }
                }
                try p.finish(ctx)
            } catch let error as StorageError {
                throw error
            } catch {
                throw FoldThrew()
            }
            return
        }
        do {
            try txn.nested { child in
                let ctx = ProjectionContext(transaction: child, tables: tables, payloads: payloads)
                for j in events.indices { try p.apply(events[j], in: ctx) }
                try p.finish(ctx)
            }
            return
        } catch let error as StorageError {
            throw error
        } catch {
            // Fall through to the event-by-event path.
        }
        for e in events {
            do {
                try txn.nested { child in
                    let ctx = ProjectionContext(transaction: child, tables: tables, payloads: payloads)
                    try p.apply(e, in: ctx)
                    try p.finish(ctx)
                }
            } catch let error as StorageError {
                throw error
            } catch {
                let reason = "\(e.type) v\(e.schemaVersion): \(error)"
                try txn.put(schema.quarantine, key: LogSchema.indexKey(p.name, e.seq), value: Array(reason.utf8.prefix(2000)))
                logger.warning("event quarantined", metadata: ["projection.name": "\(p.name)", "event.seq": "\(e.seq)"])
            }
        }
    }

    /// Folds events (from, to] from the log into projection `index`, inside `txn`.
    private func catchUp(_ index: Int, tables: TableSet, from: UInt64, to: UInt64, payloads: PayloadSource, txn: Transaction, direct: Bool) throws {
        var next = from + 1
        while next <= to {
            let plan = FoldPlan(from: next - 1, to: min(to, next + 4_095), readers: [.init(projection: index, applied: from)])
            let input = try FoldInput.read(plan, filters: filters, schema: schema, zstd: zstd, txn: txn)
            payloads.ahead = input.bodies
            try apply(projections[index], input.events[0], tables: tables, payloads: payloads, txn: txn, direct: direct)
            next = plan.to + 1
        }
    }

    func reset(_ p: any Projection, txn: Transaction) throws {
        for db in schema.projectionTables[p.name]!.all { try txn.clear(db) }
        let prefix = Array(p.name.utf8) + [0]
        let c = try txn.cursor(schema.quarantine)
        var e = try c.seek(atLeast: prefix)
        while let entry = e, entry.key.hasPrefix(prefix) {
            try c.deleteCurrent()
            // Seek again: after deleting the table's last entry the cursor has no current one.
            e = try c.seek(atLeast: prefix)
        }
        try Checkpoint(version: p.version, seq: 0).write(p.name, txn, schema)
    }

    /// Brings every projection (or the named ones, after resetting them) up to the head, in
    /// transactions of `chunk` events each, so a rebuild is resumable: a killed rebuild continues
    /// from its last committed checkpoint at the next open. All lagging projections fold in one
    /// pass over the log: each event is read once and decoded once, and only if a projection
    /// takes its type.
    func catchUpAll(resetting names: Set<String> = [], chunk: Int, progress: (@Sendable (RebuildProgress) -> Void)?) throws {
        try resetProjections(names)
        var fold = ChunkedFold()
        defer { _ = fold.ahead?.wait() }
        while true {
            let done = try foldingDirectly { direct in
                try environment.write { txn in try foldNextChunk(&fold, chunk: chunk, progress: progress, txn: txn, direct: direct) }
            }
            if done { break }
        }
    }

    /// Clears the projections named, and those whose version changed, for a fold from the start.
    private func resetProjections(_ names: Set<String>) throws {
        try environment.write { txn in
            for p in projections {
                let cp = try Checkpoint.read(p.name, txn, schema)
                if names.contains(p.name) || cp?.version != p.version {
                    if cp != nil { logger.info("rebuilding projection", metadata: ["projection.name": "\(p.name)", "projection.version": "\(p.version)"]) }
                    try reset(p, txn: txn)
                }
            }
        }
    }

    /// What a fold keeps from chunk to chunk: while the writer folds one chunk, the next is read
    /// and decoded on another thread (``FoldReadAhead``), its bodies into the memory of the chunk
    /// before (``BodyArena/Pool``); a folded chunk's events are freed on another thread.
    private struct ChunkedFold {
        var ahead: FoldReadAhead?
        let pool = BodyArena.Pool()
        let release = DispatchQueue(label: "strata.fold-release")
    }

    /// Every projection's checkpoint; one whose version another process changed since the reset
    /// starts over.
    private func checkpoints(_ txn: Transaction) throws -> [UInt64] {
        try projections.map { p in
            if let cp = try Checkpoint.read(p.name, txn, schema), cp.version == p.version { return cp.seq }
            try reset(p, txn: txn)
            return 0
        }
    }

    /// Folds the next chunk of the log into every projection behind the head, in `txn`; true when
    /// none is behind.
    ///
    /// The chunk was read ahead while the one before it folded, and the next one is read ahead
    /// while this one folds. The chunk folds straight into the transaction (a nested one would
    /// cost every page read a second search of the dirty pages); if an event throws, the whole
    /// transaction is undone and the chunk folded again, projection by projection, quarantining
    /// what throws.
    private func foldNextChunk(
        _ fold: inout ChunkedFold, chunk: Int, progress: (@Sendable (RebuildProgress) -> Void)?, txn: Transaction, direct: Bool
    ) throws -> Bool {
        let head = try LogHead.read(txn, schema)
        let checkpoints = try checkpoints(txn)
        guard let plan = FoldPlan(checkpoints: checkpoints, head: head.seq, chunk: chunk) else {
            progress?(RebuildProgress(projection: projections.map(\.name).joined(separator: ", "), applied: head.seq, head: head.seq))
            return true
        }
        // A chunk not read ahead (the first of a fold) gets its document bodies prepared on the
        // helper thread while this one decodes and folds it. Normally done by the end; on an
        // error (a full map reruns the chunk) it is stopped, and its read transaction ends
        // before the map may grow.
        var prep: BodyPrep?
        defer { prep?.cancel() }
        var input: FoldInput?
        if let ahead = fold.ahead, ahead.plan == plan {
            input = ahead.wait()
        } else {
            if plan.to - plan.from >= 4_096, !documentTypes.isEmpty {
                _ = fold.ahead?.wait()
                prep = BodyPrep(from: plan.from, to: plan.to, documentTypes: documentTypes, schema: schema, environment: environment, zstd: helperZstd)
            }
            input = try FoldInput.read(
                plan, filters: filters, schema: schema, zstd: zstd, txn: txn, prepared: prep == nil ? [] : documentTypes, pool: fold.pool)
        }
        if let next = plan.next(checkpoints: checkpoints, head: head.seq, chunk: chunk), fold.ahead?.plan != next {
            _ = fold.ahead?.wait()
            fold.ahead = FoldReadAhead(
                next, filters: filters, documentTypes: documentTypes, schema: schema, environment: environment, zstd: helperZstd,
                after: prep, pool: fold.pool)
        }
        let payloads = PayloadSource(schema: schema, zstd: zstd)
        payloads.ahead = input!.bodies
        payloads.prep = prep
        for (j, r) in plan.readers.enumerated() {
            let p = projections[r.projection]
            try apply(p, input!.events[j], tables: schema.projectionTables[p.name]!, payloads: payloads, txn: txn, direct: direct)
        }
        for r in plan.readers {
            let p = projections[r.projection]
            try Checkpoint(version: p.version, seq: plan.to).write(p.name, txn, schema)
        }
        progress?(
            RebuildProgress(projection: plan.readers.map { projections[$0.projection].name }.joined(separator: ", "), applied: plan.to, head: head.seq))
        // The chunk's events were decoded (allocated) on the read-ahead thread; they are freed
        // on another one too, off the writer's path.
        if let spent = input.take() { fold.release.async { withExtendedLifetime(spent) {} } }
        return false
    }

    /// A projection threw (not the store) while folding straight into a transaction: the caller
    /// undoes the transaction and runs it again with ``apply(_:_:tables:payloads:txn:direct:)``'s
    /// careful path.
    private struct FoldThrew: Error {}

    /// Runs `body` (one write transaction) with projections folding straight into it; if one
    /// threw, the transaction was undone, and `body` runs again with the careful path, which
    /// quarantines what throws.
    private func foldingDirectly<T>(_ body: (_ direct: Bool) throws -> T) throws -> T {
        do { return try body(true) } catch is FoldThrew {
            carefulFolds += 1
            return try body(false)
        }
    }

    /// Transactions folded again with the careful path since the writer started (a projection
    /// threw while folding straight into them).
    private(set) var carefulFolds = 0

    // MARK: Validation

    static func validate(_ e: NewEvent) throws {
        func bad(_ what: String) -> EventStoreError { .invalid("event \(e.id.prefix(64)): \(what)") }
        guard !e.id.isEmpty, e.id.utf8.count <= 256, !e.id.utf8.contains(0) else { throw bad("the id must be 1–256 bytes without NUL") }
        guard !e.type.isEmpty, e.type.utf8.count <= 128, !e.type.utf8.contains(0) else { throw bad("the type must be 1–128 bytes without NUL") }
        guard !e.stream.isEmpty, e.stream.utf8.count <= 256, !e.stream.utf8.contains(0) else { throw bad("the stream must be 1–256 bytes without NUL") }
        guard e.schemaVersion >= 1 else { throw bad("the schema version must be at least 1") }
        guard e.payload == nil || e.payloadReference == nil else { throw bad("give a payload or a payload reference, not both") }
        guard e.metadata.count <= 64 else { throw bad("at most 64 metadata entries are allowed") }
        var total = 0
        for m in e.metadata {
            guard !m.key.isEmpty, m.key.utf8.count <= 128 else { throw bad("metadata keys must be 1–128 bytes") }
            total += m.key.utf8.count + m.value.utf8.count
        }
        guard total <= 16_384 else { throw bad("metadata must total at most 16 KiB; put large data in the payload") }
    }
}

/// A body ready for the write transaction: its content hash, its stored form (nil when it was
/// already stored), and the staged body the projections read (with its canonical form when its
/// event type is one a projection stores as a document).
struct PreparedBody: Sendable {
    var hash: [UInt8]
    /// Whether the store held the body when it was prepared.
    var isStored: Bool
    /// The body compressed on its own; nil when stored, or when its delta was small enough not
    /// to need it (``DeltaChains/row(for:laidOut:hash:whole:seq:lineage:schema:txn:context:speculative:)``
    /// compresses it then only if it must).
    var encoded: [UInt8]?
    /// The body minified, when it is pretty-printed JSON and not stored yet (``JSONLayout``):
    /// its stored form.
    var laidOut: (form: [UInt8], layout: UInt8)?
    var staged: StagedBody
    /// The body as a delta of the one before it in its batch, when it has one there (see
    /// ``AppendPrep``).
    var delta: SpeculativeDelta?

    /// `canonical`: the body's canonical form, when the caller already has it.
    init(
        _ body: [UInt8], declaredHash: [UInt8]? = nil, canonical: [UInt8]? = nil, type: String, documentTypes: Set<String>, zstd: ZstdContext,
        isStored: ([UInt8]) -> Bool = { _ in false }, encode: Bool = true,
        minify: ([UInt8]) -> (form: [UInt8], layout: UInt8)? = JSONLayout.minified
    ) {
        let hash = declaredHash ?? BlobCodec.hash(body)
        self.init(
            body, hash: hash, stored: isStored(hash), canonical: canonical, type: type, documentTypes: documentTypes, zstd: zstd, encode: encode,
            minify: minify)
    }

    /// `hash`: the body's; `stored`: whether the store holds it already (then it is not encoded).
    /// `encode`: false leaves `encoded` to the caller (``AppendPrep`` skips it for a body whose
    /// delta is small). `minify`: ``JSONLayout/minified(_:)``, or where ``AppendPrep`` keeps it.
    init(
        _ body: [UInt8], hash: [UInt8], stored: Bool, canonical: [UInt8]?, type: String, documentTypes: Set<String>, zstd: ZstdContext,
        encode: Bool = true, minify: ([UInt8]) -> (form: [UInt8], layout: UInt8)? = JSONLayout.minified
    ) {
        self.hash = hash
        isStored = stored
        laidOut = stored ? nil : minify(body)
        encoded = stored || !encode ? nil : BlobCodec.encodeBody(body, form: laidOut, context: zstd)
        staged = StagedBody(body)
        guard documentTypes.contains(type) else { return }
        if let canonical {
            staged.canonical = canonical
            staged.digest = Hashing.documentDigest(canonical)
        } else {
            staged.prepareDocument()
        }
    }
}

/// One event of a replay chunk: the decoded envelope, its stored bytes, and its blob if the
/// target store does not have it yet.
// Unchecked: `RecordedEvent` holds raw buffers of the reading transaction; an entry crosses
// from the reading thread to the writer once, whole, and is not read there again.
struct RecordedChunkEntry: @unchecked Sendable {
    var event: RecordedEvent
    var envelope: [UInt8]
    var storedBlob: [UInt8]?
}

/// The progress of a rebuild or catch-up.
public struct RebuildProgress: Sendable {
    public var projection: String
    public var applied: UInt64
    public var head: UInt64

    public init(projection: String, applied: UInt64, head: UInt64) {
        self.projection = projection
        self.applied = applied
        self.head = head
    }
}

/// The last event of the log.
struct LogHead {
    var seq: UInt64
    var hash: [UInt8]
    var effectiveTime: Timestamp

    static func read(_ txn: Transaction, _ s: LogSchema) throws -> LogHead {
        var c = try EnvelopeCursor(s, txn)
        guard let (seq, envelope) = try c.last() else {
            return LogHead(seq: 0, hash: Envelope.zeroHash, effectiveTime: Timestamp(microseconds: .min))
        }
        guard envelope.count >= 32 else { throw EventStoreError.corrupted("the last event (\(seq)) is truncated") }
        let hash = [UInt8](envelope[(envelope.count - 32)...])
        let time = try IndexBlocks.lastTime(txn, s) ?? Timestamp(microseconds: .min)
        return LogHead(seq: seq, hash: hash, effectiveTime: time)
    }
}

/// A projection's checkpoint: its version and the last seq it applied.
struct Checkpoint: Equatable {
    var version: Int
    var seq: UInt64

    static func read(_ name: String, _ txn: Transaction, _ s: LogSchema) throws -> Checkpoint? {
        guard let b = try txn.get(s.checkpoints, key: Array(name.utf8)) else { return nil }
        return try b.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            return Checkpoint(version: Int(try r.varint()), seq: try r.u64())
        }
    }

    func write(_ name: String, _ txn: Transaction, _ s: LogSchema) throws {
        var w = ByteWriter(capacity: 12)
        w.varint(version)
        w.u64(seq)
        try txn.put(s.checkpoints, key: Array(name.utf8), value: w.bytes)
    }
}
