package import EventStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

// Pull: the log's events after a position, each link of the chain checked, appended to a store.
extension PostgresTeamLog {
    package struct PullReport: Sendable, Hashable {
        /// Events appended to the store.
        package var appended = 0
        /// Events the store held already (its own, pushed before).
        package var alreadyHere = 0
        package var bodiesDownloaded = 0
        package var bodyBytesDownloaded = 0
        /// The global seq pulled up to (the next pull starts after it).
        package var position: UInt64 = 0
    }

    /// Appends the log's events after `position` to `store`, `batch` per append, checking every
    /// link of the chain.
    /// - Throws: ``TeamLogError`` `.corrupted` when a link does not hold (nothing after it is appended).
    package func pull(into store: EventStore, after position: UInt64, batch: Int = 1_000) async throws -> PullReport {
        try await migrate()
        var report = PullReport(position: position)
        var previous = try await hash(at: position)
        // Pipelined: the next batch's rows and missing bodies are read while this one is checked
        // and appended (a body both batches need may then be downloaded twice; never missed,
        // since a batch references a body only when the store holds it already).
        var current = try await pullBatch(after: position, store, batch)
        let erasures = ErasureListings(log: self)
        while let batchNow = current {
            async let following = pullBatch(after: batchNow.rows.last!.seq, store, batch)
            do {
                var batchEvents: [NewEvent] = []
                for r in batchNow.rows {
                    let expected = TeamChain.hash(previous: previous, seq: r.seq, event: r.event)
                    guard expected == r.hash else {
                        throw TeamLogError(
                            .corrupted,
                            "the team log's event \(r.seq) does not match its hash chain (changed in the database); nothing after seq \(r.seq - 1) was pulled")
                    }
                    previous = r.hash
                    let e = r.event
                    var payload: [UInt8]?
                    var reference: PayloadReference?
                    var erasedForm: ErasedForm?
                    if let h = e.bodyHash {
                        if let body = batchNow.bodies[h] {
                            // A body that no longer hashes to its digest was erased (`strata forget`,
                            // retention) on the node that pushed it before it was pushed: what the
                            // log holds is the erased form, and this node stores it as that node
                            // does, under the original's digest with the erasure's `rewritten` row,
                            // so both fold the same projections. Anything else changed in the
                            // database is refused.
                            let digest = Hashing.sha256(body)
                            if digest != h {
                                guard let by = try await erasures.erasure(h, digest, stream: e.stream) else {
                                    throw TeamLogError(.corrupted, "the team log's body \(h.prefix(8)) does not match its hash")
                                }
                                erasedForm = ErasedForm(original: h, erasureSeq: by)
                            }
                            payload = body
                        } else {
                            reference = PayloadReference(hash: h, size: e.bodySize ?? 0)
                        }
                    }
                    var event = NewEvent(
                        id: e.id, type: e.type, schemaVersion: e.schemaVersion, recordedAt: e.recordedAt, stream: e.stream,
                        metadata: e.metadata.map { ($0.key, $0.value) }, payload: payload, payloadReference: reference)
                    event.erasedForm = erasedForm
                    batchEvents.append(event)
                }
                let outcomes = try await store.append(batchEvents)
                let appended = outcomes.filter(\.appended).count
                report.appended += appended
                report.alreadyHere += outcomes.count - appended
                report.bodyBytesDownloaded += batchNow.bodyBytes
                report.bodiesDownloaded += batchNow.bodies.count
                report.position = batchNow.rows.last!.seq
            } catch {
                _ = try? await following
                throw error
            }
            current = try await following
        }
        return report
    }

    struct PullBatch: Sendable {
        var rows: [Row]
        var bodies: [[UInt8]: [UInt8]]
        var bodyBytes: Int
    }

    /// The log's rows after `position` (at most `batch`), with the bodies the store lacks.
    func pullBatch(after position: UInt64, _ store: EventStore, _ batch: Int) async throws -> PullBatch? {
        let rows = try await rows(after: position, limit: batch)
        guard !rows.isEmpty else { return nil }
        let hashes = Array(Set(rows.compactMap(\.event.bodyHash)))
        let stored = try await store.storedBodies(hashes)
        let needed = hashes.filter { !stored.contains($0) }.map { ByteBuffer(bytes: $0) }
        guard !needed.isEmpty else { return PullBatch(rows: rows, bodies: [:], bodyBytes: 0) }
        let (bodies, bytes) = try await run("download bodies from the team log") { [self] in
            var bodies: [[UInt8]: [UInt8]] = [:], bytes = 0
            for try await (h, stored) in try await client.query("SELECT hash, stored FROM strata_bodies WHERE hash = ANY(\(needed))", logger: logger).decode(
                (ByteBuffer, ByteBuffer).self)
            {
                let stored = Array(stored.readableBytesView)
                bytes += stored.count
                bodies[Array(h.readableBytesView)] = try PortableBody.decode(stored)
            }
            return (bodies, bytes)
        }
        return PullBatch(rows: rows, bodies: bodies, bodyBytes: bytes)
    }

    /// The `[original, now]` digest pairs the log's erasure events list (events whose metadata
    /// has `rewrites`: ``EventStore/rewriteRecord(_:)``), by stream, read once per stream.
    final class ErasureListings {
        let log: PostgresTeamLog
        private var byStream: [String: [[UInt8]: UInt64]] = [:]
        init(log: PostgresTeamLog) { self.log = log }

        /// The seq of the erasure that lists the pair; nil when none does.
        func erasure(_ original: [UInt8], _ now: [UInt8], stream: String) async throws -> UInt64? {
            if byStream[stream] == nil { byStream[stream] = try await log.erasurePairs(stream: stream) }
            return byStream[stream]![original + now]
        }
    }

    /// Every pair the stream's erasure events list, each as original ++ now, with the seq of the
    /// (first) event that lists it.
    func erasurePairs(stream: String) async throws -> [[UInt8]: UInt64] {
        try await run("read the team log's erasures") { [self] in
            var pairs: [[UInt8]: UInt64] = [:]
            let query: PostgresQuery =
                #"SELECT e.seq, b.stored FROM strata_events e JOIN strata_bodies b ON b.hash = e.body_hash WHERE e.stream = \#(stream) AND e.metadata @> '[["rewrites"]]'::jsonb ORDER BY e.seq"#
            for try await (seq, stored) in try await client.query(query, logger: logger).decode((Int64, ByteBuffer).self) {
                let body = try PortableBody.decode(Array(stored.readableBytesView))
                for pair in RewritePair.listed(in: body) ?? [] where pairs[pair.original + pair.now] == nil {
                    pairs[pair.original + pair.now] = UInt64(seq)
                }
            }
            return pairs
        }
    }

    struct Row: Sendable {
        var seq: UInt64
        var event: TeamEvent
        var hash: [UInt8]
    }

    /// The log's rows after `position` (at most `limit`), read through ``events(_:)``.
    func rows(after position: UInt64, limit: Int) async throws -> [Row] {
        try await events(EventQuery(fromSeq: position + 1, limit: limit)).map { Row(seq: $0.seq, event: TeamEvent($0), hash: $0.hash) }
    }

    /// The chain hash at `seq` (zeros at 0).
    func hash(at seq: UInt64) async throws -> [UInt8] {
        guard seq > 0 else { return TeamChain.zero }
        let s = Int64(seq)
        return try await run("read the team log") { [self] in
            var out: [UInt8]?
            for try await h in try await client.query("SELECT hash FROM strata_events WHERE seq = \(s)", logger: logger).decode(ByteBuffer.self) {
                out = Array(h.readableBytesView)
            }
            guard let out else {
                throw TeamLogError(
                    .diverged, "the team log has no event \(seq), which this store pulled up to: it is another log, or was reset; pull into a new store")
            }
            return out
        }
    }
}
