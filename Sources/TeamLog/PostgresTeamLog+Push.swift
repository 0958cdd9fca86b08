package import EventStore
import Foundation
import Logging
package import PostgresNIO
import Synchronization

// Push: a store's own events the log lacks, bodies first, then the events under the head row's lock.
extension PostgresTeamLog {
    package struct PushReport: Sendable, Hashable {
        /// Events the log did not hold, now given global seqs.
        package var appended = 0
        /// Events sent that the log held already (pulled from it, or a retried push).
        package var alreadyThere = 0
        package var bodiesUploaded = 0
        package var bodyBytesUploaded = 0
        /// Bodies of the log replaced by their erased forms (an erasure pushed).
        package var bodiesErased = 0
        /// The log's head after the push.
        package var headSeq: UInt64 = 0
    }

    /// How long an append transaction may sit idle between its statements before PostgreSQL
    /// ends its session (the client's own work between statements takes milliseconds).
    static let idleTimeoutMilliseconds = 5_000

    /// Sends the store's own events the log does not hold, `batch` per transaction. `leases`:
    /// the fencing token this node holds for each source it leased (``acquireLease(stream:node:ttl:force:)``).
    /// - Throws: ``TeamLogError`` `.fenced` when a new event's source is leased to another node,
    ///   or under a newer token than this node's: that batch is not appended (the ones before
    ///   it stay), so a node paused past its lease cannot interleave its late events.
    /// `inOrder`: the store's events up to this seq are the log's own, at the log's seqs (a pull
    /// put them there), so the push starts after them: a node that pulled a long history and
    /// never pushed does not walk it again.
    package func push(
        from store: EventStore, node: String, leases: [String: UInt64] = [:], batch: Int = 1_000, inOrder: UInt64 = 0
    ) async throws -> PushReport {
        try await migrate()
        var report = PushReport()
        // Pipelined: while one batch's append transaction runs, the next batch is read from the
        // store and its missing bodies compressed and uploaded (bodies before the events that
        // reference them, as ever; a body uploaded for a batch that is then refused is harmless).
        var current = try await prepareBatch(from: max(try await lastOriginSeq(node: node), inOrder) + 1, store, batch)
        while let batchNow = current {
            async let following = prepareBatch(from: batchNow.events.last!.seq + 1, store, batch)
            let appended: Int, head: UInt64
            do {
                let (outcomes, h) = try await append(batchNow.events, node: node, leases: leases, erased: batchNow.erased)
                (appended, head) = (outcomes.filter(\.appended).count, h)
            } catch {
                _ = try? await following
                throw error
            }
            report.bodiesErased += batchNow.erased.keys.count
            report.bodiesUploaded += batchNow.bodies
            report.bodyBytesUploaded += batchNow.bodyBytes
            report.appended += appended
            report.alreadyThere += batchNow.events.count - appended
            report.headSeq = head
            current = try await following
        }
        if report.headSeq == 0 { report.headSeq = try await head().seq }
        return report
    }

    /// The log's bodies an erasure event among `events` (`ItemForgotten`, `RetentionApplied`:
    /// metadata `rewrites`) replaces: each original it lists, with the form this store holds now.
    /// The batch's append writes them over the originals in its transaction (``append(_:node:leases:erased:)``),
    /// so the team log keeps no more of what was erased than the node that erased it, from the
    /// moment the event is in it. A node pulling later receives the erased forms, which it checks
    /// against the event's list; one that pulled the originals before applies the event.
    struct ErasedBodies: Sendable {
        var keys: [ByteBuffer] = []
        var sizes: [Int64] = []
        var stored: [ByteBuffer] = []
    }

    func erasedBodies(listedBy events: [RecordedEvent], from store: EventStore) async throws -> ErasedBodies {
        var out = ErasedBodies()
        for e in events where e[metadata: "rewrites"] != nil {
            guard let payload = try await store.payload(of: e), let pairs = RewritePair.listed(in: payload) else { continue }
            for pair in pairs {
                guard let body = try await store.body(sha256: pair.original.hex), Hashing.sha256(body) == pair.now else { continue }
                out.keys.append(ByteBuffer(bytes: pair.original))
                out.sizes.append(Int64(body.count))
                out.stored.append(ByteBuffer(bytes: PortableBody.encode(body)))
            }
        }
        return out
    }

    struct PushBatch: Sendable {
        var events: [RecordedEvent]
        var bodies: Int
        var bodyBytes: Int
        var erased: ErasedBodies
    }

    /// The store's events from `seq` (at most `batch`), with the bodies the log lacks uploaded.
    func prepareBatch(from seq: UInt64, _ store: EventStore, _ batch: Int) async throws -> PushBatch? {
        let events = try await store.events(EventQuery(fromSeq: seq, limit: batch))
        guard !events.isEmpty else { return nil }
        let (count, bytes) = try await uploadBodies(of: events, from: store)
        return PushBatch(events: events, bodies: count, bodyBytes: bytes, erased: try await erasedBodies(listedBy: events, from: store))
    }

    /// How many of the store's events after the last one the log has from `node` the log does
    /// not hold (what a push would append), by source.
    package func unpushed(from store: EventStore, node: String) async throws -> [String: Int] {
        try await migrate()
        var next = try await lastOriginSeq(node: node) + 1
        var counts: [String: Int] = [:]
        while true {
            let events = try await store.events(EventQuery(fromSeq: next, limit: 10_000))
            guard let last = events.last else { return counts }
            let ids = events.map(\.id)
            let known = try await run("read the team log") { [self] in
                var known = Set<String>()
                for try await id in try await client.query("SELECT event_id FROM strata_events WHERE event_id = ANY(\(ids))", logger: logger).decode(
                    String.self)
                { known.insert(id) }
                return known
            }
            for e in events where !known.contains(e.id) { counts[e.stream, default: 0] += 1 }
            next = last.seq + 1
        }
    }

    /// How many of the log's events after `position` the store does not hold (what a pull would
    /// append).
    package func unpulled(into store: EventStore, after position: UInt64) async throws -> Int {
        var from = position
        var count = 0
        while true {
            let ids = try await eventIDs(after: from, limit: 10_000)
            guard let last = ids.last else { return count }
            for (_, id) in ids where try await store.event(id: id) == nil { count += 1 }
            from = last.seq
        }
    }

    /// The log's seqs and event ids after `seq`, at most `limit`, in seq order.
    func eventIDs(after seq: UInt64, limit: Int) async throws -> [(seq: UInt64, id: String)] {
        let from = Int64(seq), n = Int64(limit)
        return try await run("read the team log") { [self] in
            var out: [(seq: UInt64, id: String)] = []
            for try await (s, id) in try await client.query(
                "SELECT seq, event_id FROM strata_events WHERE seq > \(from) ORDER BY seq LIMIT \(n)", logger: logger
            ).decode((Int64, String).self) {
                out.append((UInt64(s), id))
            }
            return out
        }
    }

    /// The largest local seq of `node` the log holds (0: none).
    func lastOriginSeq(node: String) async throws -> UInt64 {
        try await run("read the team log") { [self] in
            var n: Int64 = 0
            for try await v in try await client.query("SELECT coalesce(max(origin_seq), 0) FROM strata_events WHERE origin_node = \(node)", logger: logger)
                .decode(Int64.self)
            { n = v }
            return UInt64(n)
        }
    }

    /// Uploads the bodies of `events` the log lacks, compressed on their own.
    func uploadBodies(of events: [RecordedEvent], from store: EventStore) async throws -> (Int, Int) {
        try await uploadBodies(of: events) { event in
            guard let body = try await store.payload(of: event) else {
                throw TeamLogError(.corrupted, "the body of event \(event.seq) is missing from the store")
            }
            return body
        }
    }

    /// Uploads the bodies of `events` the log lacks (`body` gives each), compressed on their own:
    /// how many, and their bytes.
    func uploadBodies(of events: [RecordedEvent], body: (RecordedEvent) async throws -> [UInt8]) async throws -> (Int, Int) {
        var wanted: [[UInt8]: RecordedEvent] = [:]
        for e in events { if let p = e.payload { wanted[p.hash] = e } }
        guard !wanted.isEmpty else { return (0, 0) }
        let hashes = wanted.keys.map { ByteBuffer(bytes: $0) }
        let present = try await run("read the team log's bodies") { [self] in
            var present = Set<[UInt8]>()
            for try await h in try await client.query("SELECT hash FROM strata_bodies WHERE hash = ANY(\(hashes))", logger: logger).decode(ByteBuffer.self) {
                present.insert(Array(h.readableBytesView))
            }
            return present
        }
        var (keys, sizes, stored) = ([ByteBuffer](), [Int64](), [ByteBuffer]())
        var bytes = 0
        for (hash, event) in wanted where !present.contains(hash) {
            let raw = try await body(event)
            let portable = PortableBody.encode(raw)
            keys.append(ByteBuffer(bytes: hash)); sizes.append(Int64(raw.count)); stored.append(ByteBuffer(bytes: portable))
            bytes += portable.count
        }
        guard !keys.isEmpty else { return (0, 0) }
        _ = try await run("upload bodies to the team log") { [self, keys, sizes, stored] in
            try await client.query(
                """
                INSERT INTO strata_bodies (hash, size, stored)
                SELECT * FROM unnest(\(keys)::bytea[], \(sizes)::bigint[], \(stored)::bytea[]) ON CONFLICT DO NOTHING
                """, logger: logger)
        }
        return (keys.count, bytes)
    }

    /// Appends the events the log does not hold, in one transaction holding the head's lock: each
    /// event's outcome (its seq in the log; `appended` false for one the log held, or that came
    /// twice in the batch) and the head after.
    func append(
        _ events: [RecordedEvent], node: String, leases: [String: UInt64], erased: ErasedBodies = ErasedBodies()
    ) async throws -> (outcomes: [AppendOutcome], head: UInt64) {
        let ids = events.map(\.id)
        return try await run("append to the team log") { [self] in
            try await client.withTransaction(logger: logger) { conn -> ([AppendOutcome], UInt64) in
                // This transaction holds the head row, so every node's push waits for it: its idle
                // time is bounded (``boundIdleTime(_:_:)``) in the same round trip.
                var headSeq: Int64 = 0
                var headHash = TeamChain.zero
                let bound = "\(Self.idleTimeoutMilliseconds)ms"
                for try await (s, h, _) in try await conn.query(
                    """
                    SELECT seq, hash, set_config('idle_in_transaction_session_timeout', \(bound), true) FROM strata_head WHERE id = 1 FOR UPDATE
                    """, logger: logger
                ).decode((Int64, ByteBuffer, String).self) {
                    headSeq = s; headHash = Array(h.readableBytesView)
                }
                var known: [String: UInt64] = [:]
                for try await (id, seq) in try await conn.query("SELECT event_id, seq FROM strata_events WHERE event_id = ANY(\(ids))", logger: logger).decode(
                    (String, Int64).self)
                {
                    known[id] = UInt64(seq)
                }
                let held = known
                var fresh: [RecordedEvent] = []
                var next = UInt64(headSeq)
                for e in events where known[e.id] == nil {
                    next += 1
                    known[e.id] = next  // an id twice in one batch is appended once
                    fresh.append(e)
                }
                var seen = Set<String>()
                let outcomes = events.map { e in
                    AppendOutcome(seq: known[e.id]!, id: e.id, appended: held[e.id] == nil && seen.insert(e.id).inserted)
                }
                let tokens = try await fence(fresh, node: node, leases: leases, conn)
                var cols = Columns()
                var seq = UInt64(headSeq)
                var hash = headHash
                for e in fresh {
                    seq += 1
                    let t = TeamEvent(e)
                    hash = TeamChain.hash(previous: hash, seq: seq, event: t)
                    cols.add(seq: seq, t, node: node, originSeq: e.seq, hash: hash, leaseToken: tokens[e.stream])
                }
                guard !cols.seqs.isEmpty else { return (outcomes, UInt64(headSeq)) }
                try await conn.query(
                    """
                    INSERT INTO strata_events (seq, event_id, type, schema_version, recorded_at, stream, metadata, body_hash, body_size, origin_node, origin_seq, hash, lease_token)
                    SELECT s, i, t, v, r, st, m::jsonb, NULLIF(bh, ''::bytea), NULLIF(bs, -1), \(node), os, h, NULLIF(lt, -1)
                    FROM unnest(\(cols.seqs)::bigint[], \(cols.ids)::text[], \(cols.types)::text[], \(cols.versions)::int[], \(cols.times)::bigint[],
                                \(cols.streams)::text[], \(cols.metadata)::text[], \(cols.bodyHashes)::bytea[], \(cols.bodySizes)::bigint[],
                                \(cols.originSeqs)::bigint[], \(cols.hashes)::bytea[], \(cols.leaseTokens)::bigint[])
                      AS x(s, i, t, v, r, st, m, bh, bs, os, h, lt)
                    """, logger: logger)
                if !erased.keys.isEmpty {
                    try await conn.query(
                        """
                        UPDATE strata_bodies AS b SET size = u.size, stored = u.stored
                        FROM unnest(\(erased.keys)::bytea[], \(erased.sizes)::bigint[], \(erased.stored)::bytea[]) AS u(hash, size, stored)
                        WHERE b.hash = u.hash
                        """, logger: logger)
                }
                let newHead = Int64(seq)
                let newHash = ByteBuffer(bytes: hash)
                try await conn.query("UPDATE strata_head SET seq = \(newHead), hash = \(newHash) WHERE id = 1", logger: logger)
                try await conn.query("NOTIFY strata_events", logger: logger)
                return (outcomes, seq)
            }
        }
    }

    /// Array binds for one insert (the lab's floor binds the same).
    package struct Columns {
        package init() {}
        package var seqs: [Int64] = [], ids: [String] = [], types: [String] = [], versions: [Int32] = [], times: [Int64] = []
        package var streams: [String] = [], metadata: [String] = [], bodyHashes: [ByteBuffer] = [], bodySizes: [Int64] = []
        package var originSeqs: [Int64] = [], hashes: [ByteBuffer] = [], leaseTokens: [Int64] = []

        package mutating func add(seq: UInt64, _ e: TeamEvent, node: String, originSeq: UInt64, hash: [UInt8], leaseToken: UInt64? = nil) {
            seqs.append(Int64(seq)); ids.append(e.id); types.append(e.type); versions.append(Int32(e.schemaVersion))
            times.append(e.recordedAt.microseconds); streams.append(e.stream)
            metadata.append(TeamLogJSON.encode(e.metadata))
            bodyHashes.append(ByteBuffer(bytes: e.bodyHash ?? [])); bodySizes.append(Int64(e.bodySize ?? -1))
            originSeqs.append(Int64(originSeq)); hashes.append(ByteBuffer(bytes: hash))
            leaseTokens.append(leaseToken.map { Int64($0) } ?? -1)
        }
    }
}
