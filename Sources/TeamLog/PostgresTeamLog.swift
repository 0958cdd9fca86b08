public import EventStore
import Foundation
public import Logging
import PostgresNIO
import Synchronization

/// The team log on PostgreSQL: one shared, gapless, hash-chained history that Strata stores push
/// their events to and pull the others' from (schema: ``TeamLogSchema``).
///
/// A push sends a store's own events (those it appended, by its local seq after the last one the
/// log has from this node) in batches: first the bodies the log lacks, then, in one transaction
/// holding the head row's lock, the events the log does not hold yet (by id), each given the next
/// global seq and the next link of the chain. Re-sending is harmless: an event already there keeps
/// its seq. A pull appends the log's events after a position, in global order, to a store (each
/// link checked; an event the store holds already, by id, is skipped), and returns the new
/// position. postgres-nio's client owns the connections; ``close()`` ends them.
public final class PostgresTeamLog: Sendable {
    let client: PostgresClient
    let logger: Logger
    private let running: Task<Void, Never>
    public let location: TeamLogLocation
    private let probeConfiguration: PostgresConnection.Configuration
    /// Whether ``migrate()`` has run for this instance.
    private let migrated = Mutex(false)
    /// How long one database step may take (``run(_:_:)``).
    public let operationTimeout: Duration
    /// The node that events appended through ``EventLog/append(_:)`` come from (a store's node
    /// id, when a store appends through this log).
    public let directNode: String

    /// Connects lazily; nothing is sent until the first call.
    /// - Throws: ``TeamLogError`` when the password's variable is not set.
    /// `environment`: where the password comes from (the process environment when nil).
    public init(
        location: TeamLogLocation, environment: [String: String]? = nil, operationTimeout: Duration = .seconds(30),
        directNode: String = "direct", logger: Logger
    ) throws {
        self.operationTimeout = operationTimeout
        self.directNode = directNode
        let environment = environment ?? ProcessInfo.processInfo.environment
        self.location = location
        self.logger = logger
        let password = try location.password(environment: environment)  // read once, for both
        probeConfiguration = try location.connectionConfiguration(password: password)
        let client = PostgresClient(configuration: location.configuration(password: password), backgroundLogger: logger)
        self.client = client
        running = Task { await client.run() }
    }

    /// Ends the connections; waits at most `grace` for the pool to finish (a pool whose
    /// connection the server cut in the middle of a transaction may never report back, and a
    /// command must still end).
    public func close(grace: Duration = .seconds(2)) async {
        running.cancel()
        let running = self.running
        _ = try? await withDeadline(grace) { await running.value }
    }

    // MARK: Schema

    /// Creates or migrates the tables (under an advisory lock, so two nodes starting at once
    /// do not race).
    /// - Throws: ``TeamLogError`` `.newerSchema` when the log was made by a newer Strata.
    public func migrate() async throws {
        // Once per instance: push, pull, status and verify each start here.
        guard !migrated.withLock({ $0 }) else { return }
        // One direct connection first: the pool retries a server it cannot reach for a long
        // while, and a refused connection should say so at once.
        try await run("connect to the team log") { [self] in
            let c = try await PostgresConnection.connect(configuration: probeConfiguration, id: 0, logger: logger)
            try await c.close()
        }
        // The common case reads the version and takes no lock (a node paused inside another
        // node's migration must not hold everyone's start).
        let current = try await run("read the team log's version") { [self] in
            var exists = false
            for try await e in try await client.query("SELECT to_regclass('strata_schema') IS NOT NULL", logger: logger).decode(Bool.self) { exists = e }
            guard exists else { return 0 }
            var version = 0
            for try await v in try await client.query("SELECT coalesce(max(version), 0) FROM strata_schema", logger: logger).decode(Int.self) { version = v }
            return version
        }
        guard current > TeamLogSchema.version else {
            if current == TeamLogSchema.version { migrated.withLock { $0 = true }; return }
            try await createOrMigrate()
            migrated.withLock { $0 = true }
            return
        }
        throw TeamLogError(
            .newerSchema, "the team log's tables are version \(current), from a newer strata (this one knows \(TeamLogSchema.version)); upgrade strata")
    }

    private func createOrMigrate() async throws {
        try await run("prepare the team log's tables") { [self] in
            try await client.withTransaction(logger: logger) { conn in
                try await Self.boundIdleTime(conn, logger)
                try await conn.query("SELECT pg_advisory_xact_lock(727382917)", logger: logger)
                try await conn.query("CREATE TABLE IF NOT EXISTS strata_schema (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)", logger: logger)
                var version = 0
                for try await v in try await conn.query("SELECT version FROM strata_schema WHERE id = 1", logger: logger).decode(Int.self) { version = v }
                guard version <= TeamLogSchema.version else {
                    throw TeamLogError(
                        .newerSchema,
                        "the team log's tables are version \(version), from a newer strata (this one knows \(TeamLogSchema.version)); upgrade strata")
                }
                for (i, steps) in TeamLogSchema.migrations.enumerated() where i + 1 > version {
                    for sql in steps { try await conn.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                }
                if version < TeamLogSchema.version {
                    try await conn.query(
                        "INSERT INTO strata_schema VALUES (1, \(TeamLogSchema.version)) ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
                        logger: logger)
                }
            }
        }
    }

    /// Every transaction of the team log holds rows or locks other nodes wait for: one stopped
    /// between two statements (paused, partitioned) has its session ended by the server after
    /// ``idleTimeoutMilliseconds`` and its work rolled back, rather than holding them.
    static func boundIdleTime(_ conn: PostgresConnection, _ logger: Logger) async throws {
        try await conn.query(PostgresQuery(unsafeSQL: "SET LOCAL idle_in_transaction_session_timeout = '\(idleTimeoutMilliseconds)ms'"), logger: logger)
    }

    // MARK: Push

    public struct PushReport: Sendable, Hashable {
        /// Events the log did not hold, now given global seqs.
        public var appended = 0
        /// Events sent that the log held already (pulled from it, or a retried push).
        public var alreadyThere = 0
        public var bodiesUploaded = 0
        public var bodyBytesUploaded = 0
        /// The log's head after the push.
        public var headSeq: UInt64 = 0
    }

    /// How long an append transaction may sit idle between its statements before PostgreSQL
    /// ends its session (the client's own work between statements takes milliseconds).
    static let idleTimeoutMilliseconds = 5_000

    /// Sends the store's own events the log does not hold, `batch` per transaction. `leases`:
    /// the fencing token this node holds for each source it leased (``acquireLease(stream:node:ttl:force:)``).
    /// - Throws: ``TeamLogError`` `.fenced` when a new event's source is leased to another node,
    ///   or under a newer token than this node's: that batch is not appended (the ones before
    ///   it stay), so a node paused past its lease cannot interleave its late events.
    public func push(from store: EventStore, node: String, leases: [String: UInt64] = [:], batch: Int = 1_000) async throws -> PushReport {
        try await migrate()
        var report = PushReport()
        // Pipelined: while one batch's append transaction runs, the next batch is read from the
        // store and its missing bodies compressed and uploaded (bodies before the events that
        // reference them, as ever; a body uploaded for a batch that is then refused is harmless).
        var current = try await prepareBatch(from: try await lastOriginSeq(node: node) + 1, store, batch)
        while let batchNow = current {
            async let following = prepareBatch(from: batchNow.events.last!.seq + 1, store, batch)
            let appended: Int, head: UInt64
            do {
                let (outcomes, h) = try await append(batchNow.events, node: node, leases: leases)
                (appended, head) = (outcomes.filter(\.appended).count, h)
            } catch {
                _ = try? await following
                throw error
            }
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

    private struct PushBatch: Sendable {
        var events: [RecordedEvent]
        var bodies: Int
        var bodyBytes: Int
    }

    /// The store's events from `seq` (at most `batch`), with the bodies the log lacks uploaded.
    private func prepareBatch(from seq: UInt64, _ store: EventStore, _ batch: Int) async throws -> PushBatch? {
        let events = try await store.events(EventQuery(fromSeq: seq, limit: batch))
        guard !events.isEmpty else { return nil }
        let (count, bytes) = try await uploadBodies(of: events, from: store)
        return PushBatch(events: events, bodies: count, bodyBytes: bytes)
    }

    /// How many of the store's events after the last one the log has from `node` the log does
    /// not hold (what a push would append), by source.
    public func unpushed(from store: EventStore, node: String) async throws -> [String: Int] {
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
    public func unpulled(into store: EventStore, after position: UInt64) async throws -> Int {
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
    private func uploadBodies(of events: [RecordedEvent], from store: EventStore) async throws -> (Int, Int) {
        try await uploadBodies(of: events) { event in
            guard let body = try await store.payload(of: event) else {
                throw TeamLogError(.corrupted, "the body of event \(event.seq) is missing from the store; run `strata verify`")
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
    func append(_ events: [RecordedEvent], node: String, leases: [String: UInt64]) async throws -> (outcomes: [AppendOutcome], head: UInt64) {
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
                let newHead = Int64(seq)
                let newHash = ByteBuffer(bytes: hash)
                try await conn.query("UPDATE strata_head SET seq = \(newHead), hash = \(newHash) WHERE id = 1", logger: logger)
                try await conn.query("NOTIFY strata_events", logger: logger)
                return (outcomes, seq)
            }
        }
    }

    /// Array binds for one insert.
    struct Columns {
        var seqs: [Int64] = [], ids: [String] = [], types: [String] = [], versions: [Int32] = [], times: [Int64] = []
        var streams: [String] = [], metadata: [String] = [], bodyHashes: [ByteBuffer] = [], bodySizes: [Int64] = []
        var originSeqs: [Int64] = [], hashes: [ByteBuffer] = [], leaseTokens: [Int64] = []

        mutating func add(seq: UInt64, _ e: TeamEvent, node: String, originSeq: UInt64, hash: [UInt8], leaseToken: UInt64? = nil) {
            seqs.append(Int64(seq)); ids.append(e.id); types.append(e.type); versions.append(Int32(e.schemaVersion))
            times.append(e.recordedAt.microseconds); streams.append(e.stream)
            metadata.append(TeamLogJSON.encode(e.metadata))
            bodyHashes.append(ByteBuffer(bytes: e.bodyHash ?? [])); bodySizes.append(Int64(e.bodySize ?? -1))
            originSeqs.append(Int64(originSeq)); hashes.append(ByteBuffer(bytes: hash))
            leaseTokens.append(leaseToken.map { Int64($0) } ?? -1)
        }
    }

    // MARK: Pull

    public struct PullReport: Sendable, Hashable {
        /// Events appended to the store.
        public var appended = 0
        /// Events the store held already (its own, pushed before).
        public var alreadyHere = 0
        public var bodiesDownloaded = 0
        public var bodyBytesDownloaded = 0
        /// The global seq pulled up to (the next pull starts after it).
        public var position: UInt64 = 0
    }

    /// Appends the log's events after `position` to `store`, `batch` per append, checking every
    /// link of the chain.
    /// - Throws: ``TeamLogError`` `.corrupted` when a link does not hold (nothing after it is appended).
    public func pull(into store: EventStore, after position: UInt64, batch: Int = 1_000) async throws -> PullReport {
        try await migrate()
        var report = PullReport(position: position)
        var previous = try await hash(at: position)
        // Pipelined: the next batch's rows and missing bodies are read while this one is checked
        // and appended (a body both batches need may then be downloaded twice; never missed,
        // since a batch references a body only when the store holds it already).
        var current = try await pullBatch(after: position, store, batch)
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
                    if let h = e.bodyHash {
                        if let body = batchNow.bodies[h] {
                            guard Hashing.sha256(body) == h else {
                                throw TeamLogError(.corrupted, "the team log's body \(h.prefix(8)) does not match its hash")
                            }
                            payload = body
                        } else {
                            reference = PayloadReference(hash: h, size: e.bodySize ?? 0)
                        }
                    }
                    batchEvents.append(
                        NewEvent(
                            id: e.id, type: e.type, schemaVersion: e.schemaVersion, recordedAt: e.recordedAt, stream: e.stream,
                            metadata: e.metadata.map { ($0.key, $0.value) }, payload: payload, payloadReference: reference))
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

    private struct PullBatch: Sendable {
        var rows: [Row]
        var bodies: [[UInt8]: [UInt8]]
        var bodyBytes: Int
    }

    /// The log's rows after `position` (at most `batch`), with the bodies the store lacks.
    private func pullBatch(after position: UInt64, _ store: EventStore, _ batch: Int) async throws -> PullBatch? {
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

    struct Row: Sendable {
        var seq: UInt64
        var event: TeamEvent
        var hash: [UInt8]
    }

    /// The log's rows after `position` (at most `limit`), read through ``events(_:)``.
    private func rows(after position: UInt64, limit: Int) async throws -> [Row] {
        try await events(EventQuery(fromSeq: position + 1, limit: limit)).map { Row(seq: $0.seq, event: TeamEvent($0), hash: $0.hash) }
    }

    /// The chain hash at `seq` (zeros at 0).
    private func hash(at seq: UInt64) async throws -> [UInt8] {
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

    // MARK: Status

    /// The log's head: its last seq and chain hash.
    public func head() async throws -> (seq: UInt64, hash: String) {
        try await migrate()
        return try await run("read the team log") { [self] in
            var out: (UInt64, String) = (0, TeamChain.zero.hex)
            for try await (s, h) in try await client.query("SELECT seq, hash FROM strata_head WHERE id = 1", logger: logger).decode((Int64, ByteBuffer).self) {
                out = (UInt64(s), Array(h.readableBytesView).hex)
            }
            return out
        }
    }

    /// Checks the whole chain and that seqs are gapless from 1: the problems found (none: holds).
    public func verify() async throws -> [String] {
        let head = try await self.head()
        var problems: [String] = []
        var previous = TeamChain.zero
        var expected: UInt64 = 1
        var position: UInt64 = 0
        while true {
            let rows = try await rows(after: position, limit: 10_000)
            guard !rows.isEmpty else { break }
            for r in rows {
                if r.seq != expected { problems.append("seq gap: expected \(expected), found \(r.seq)") }
                if TeamChain.hash(previous: previous, seq: r.seq, event: r.event) != r.hash { problems.append("event \(r.seq) does not match its hash chain") }
                previous = r.hash
                expected = r.seq + 1
            }
            position = rows.last!.seq
        }
        if expected - 1 != head.seq || previous.hex != head.hash {
            problems.append("the head row (seq \(head.seq)) does not match the last event (\(expected - 1))")
        }
        return problems
    }

    /// Runs a database step, turning postgres-nio's errors into a ``TeamLogError`` that says what
    /// was being done, without the password. A step that has not finished after
    /// ``operationTimeout`` fails with `.connection`: a connection the server or the network cut
    /// mid-transaction does not always report back, and a push must end, not hang.
    /// postgres-nio's error in words: its code and the server's message (never the query's binds).
    static func describe(_ e: PSQLError) -> String {
        e.code.description + (e.serverInfo?[.message].map { ": \($0)" } ?? "")
    }

    func run<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withDeadline(operationTimeout) { try await body() }
        } catch let e as TeamLogError {
            throw e
        } catch let e as PostgresTransactionError {
            if let inner = e.closureError as? TeamLogError { throw inner }
            let cause: any Error = e.closureError ?? e.commitError ?? e.beginError ?? e.rollbackError ?? e
            let text = (cause as? PSQLError).map(Self.describe) ?? "\(cause)"
            throw TeamLogError(
                .connection,
                "could not \(what) at \(TeamLogLocation.redact(location.url)) (\(text)); the transaction was rolled back, nothing of it was appended; try again"
            )
        } catch let e as PSQLError {
            throw TeamLogError(
                .connection,
                "could not \(what) at \(TeamLogLocation.redact(location.url)) (\(Self.describe(e))); check the URL, that the server runs and the password ($PGPASSWORD, ~/.pgpass)"
            )
        } catch is DeadlinePassed {
            throw TeamLogError(
                .connection,
                "could not \(what) at \(TeamLogLocation.redact(location.url)): no answer in \(operationTimeout) (the connection was cut or the server stalled; nothing was committed unless a retry finds it there); try again"
            )
        } catch {
            throw TeamLogError(.connection, "could not \(what) at \(TeamLogLocation.redact(location.url)): \(error)")
        }
    }
}

/// Metadata as JSON text (`[["key","value"],…]`), for the `jsonb` column.
enum TeamLogJSON {
    static func encode(_ metadata: [RecordedEvent.Metadatum]) -> String {
        let pairs = metadata.map { [$0.key, $0.value] }
        let data = try! JSONSerialization.data(withJSONObject: pairs, options: [.withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    static func decode(_ text: String) throws -> [RecordedEvent.Metadatum] {
        guard let pairs = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String]] else {
            throw TeamLogError(.corrupted, "an event's metadata in the team log is not a list of pairs")
        }
        return try pairs.map {
            guard $0.count == 2 else { throw TeamLogError(.corrupted, "an event's metadata in the team log is not a list of pairs") }
            return RecordedEvent.Metadatum(key: $0[0], value: $0[1])
        }
    }
}

// MARK: Benchmark support (`strata bench teamlog`)

extension PostgresTeamLog {
    /// Empties the team log (or only the floor's table). For benchmarks on a scratch database.
    public func benchReset(floorOnly: Bool = false) async throws {
        if !floorOnly {
            try await client.query("DROP TABLE IF EXISTS strata_events, strata_bodies, strata_head, strata_leases, strata_schema", logger: logger)
            migrated.withLock { $0 = false }
        }
        try await client.query("DROP TABLE IF EXISTS strata_floor_events, strata_floor_bodies", logger: logger)
        try await client.query("CREATE TABLE strata_floor_bodies (hash bytea PRIMARY KEY, size bigint NOT NULL, stored bytea NOT NULL)", logger: logger)
        try await client.query("ALTER TABLE strata_floor_bodies ALTER COLUMN stored SET STORAGE EXTERNAL", logger: logger)
        try await client.query(
            """
            CREATE TABLE strata_floor_events (seq bigint PRIMARY KEY, event_id text NOT NULL UNIQUE, type text NOT NULL, schema_version int NOT NULL,
              recorded_at bigint NOT NULL, stream text NOT NULL, metadata jsonb NOT NULL, body_hash bytea, body_size bigint,
              origin_node text NOT NULL, origin_seq bigint NOT NULL, hash bytea NOT NULL, UNIQUE (origin_node, origin_seq))
            """, logger: logger)
    }

    /// The floor of a push: the same rows (bodies compressed, hashes computed beforehand) by plain
    /// `INSERT … SELECT * FROM unnest(…)`, one transaction per `batch`.
    public func benchFloorInsert(_ events: [RecordedEvent], bodies: [[UInt8]: [UInt8]], batch: Int) async throws {
        var cols: [Columns] = []
        var batchBodies: [(keys: [ByteBuffer], sizes: [Int64], stored: [ByteBuffer])] = []
        var seen = Set<[UInt8]>()
        var hash = TeamChain.zero
        for (i, e) in events.enumerated() {
            if i % batch == 0 { cols.append(Columns()); batchBodies.append(([], [], [])) }
            let t = TeamEvent(e)
            hash = TeamChain.hash(previous: hash, seq: UInt64(i + 1), event: t)
            cols[cols.count - 1].add(seq: UInt64(i + 1), t, node: "floor", originSeq: e.seq, hash: hash)
            if let h = t.bodyHash, let b = bodies[h], seen.insert(h).inserted {
                batchBodies[batchBodies.count - 1].keys.append(ByteBuffer(bytes: h))
                batchBodies[batchBodies.count - 1].sizes.append(Int64(t.bodySize ?? 0))
                batchBodies[batchBodies.count - 1].stored.append(ByteBuffer(bytes: b))
            }
        }
        for (c, b) in zip(cols, batchBodies) {
            let (keys, sizes, stored) = b
            try await client.withTransaction(logger: logger) { conn in
                try await conn.query(
                    "INSERT INTO strata_floor_bodies SELECT * FROM unnest(\(keys)::bytea[], \(sizes)::bigint[], \(stored)::bytea[]) ON CONFLICT DO NOTHING",
                    logger: logger)
                try await conn.query(
                    """
                    INSERT INTO strata_floor_events
                    SELECT s, i, t, v, r, st, m::jsonb, NULLIF(bh, ''::bytea), NULLIF(bs, -1), 'floor', os, h
                    FROM unnest(\(c.seqs)::bigint[], \(c.ids)::text[], \(c.types)::text[], \(c.versions)::int[], \(c.times)::bigint[],
                                \(c.streams)::text[], \(c.metadata)::text[], \(c.bodyHashes)::bytea[], \(c.bodySizes)::bigint[],
                                \(c.originSeqs)::bigint[], \(c.hashes)::bytea[]) AS x(s, i, t, v, r, st, m, bh, bs, os, h)
                    """, logger: logger)
            }
        }
    }

    /// The floor of a pull: every event row and every body read in seq order, decoded to Swift
    /// values, nothing appended anywhere.
    public func benchFloorRead() async throws -> Int {
        var n = 0
        let rows = try await client.query(
            """
            SELECT seq, event_id, type, schema_version, recorded_at, stream, metadata::text, coalesce(body_hash, ''::bytea), coalesce(body_size, -1), hash
            FROM strata_floor_events ORDER BY seq
            """, logger: logger)
        for try await _ in rows.decode((Int64, String, String, Int32, Int64, String, String, ByteBuffer, Int64, ByteBuffer).self) { n += 1 }
        for try await _ in try await client.query("SELECT hash, stored FROM strata_floor_bodies", logger: logger).decode((ByteBuffer, ByteBuffer).self) {}
        return n
    }
}

struct DeadlinePassed: Error {}

/// `body`'s result, or ``DeadlinePassed`` when it takes longer than `limit`. `body` runs as a task
/// of its own and is cancelled at the deadline; since a stuck await may ignore cancellation, the
/// caller does not wait for it to end.
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let waiting = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let take: @Sendable () -> CheckedContinuation<T, any Error>? = {
        waiting.withLock { w in
            defer { w = nil }; return w
        }
    }
    return try await withCheckedThrowingContinuation { c in
        waiting.withLock { $0 = c }
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            take()?.resume(with: result)
        }
        Task {
            try? await Task.sleep(for: limit)
            if let c = take() {
                work.cancel()
                c.resume(throwing: DeadlinePassed())
            }
        }
    }
}
