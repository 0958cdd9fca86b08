import EventStore
import Foundation
import Logging
import PostgresNIO
import TeamLog

/// The floor of the team-log benchmark, on a scratch database: the team log's tables dropped
/// before each run, and the same rows as a push written and read back by plain statements (no
/// Strata logic). Its own connection pool: the team-log library has no hook that drops tables.
final class TeamLogFloor: Sendable {
    let client: PostgresClient
    let logger: Logger
    private let running: Task<Void, Never>

    init(url: String, logger: Logger) throws {
        let client = PostgresClient(configuration: try TeamLogLocation(url: url).clientConfiguration(), backgroundLogger: logger)
        self.client = client
        self.logger = logger
        running = Task { await client.run() }
    }

    func close() { running.cancel() }

    /// Drops the team log's tables (or only the floor's) and makes the floor's tables anew.
    func reset(floorOnly: Bool = false) async throws {
        if !floorOnly {
            try await client.query("DROP TABLE IF EXISTS strata_events, strata_bodies, strata_head, strata_leases, strata_schema", logger: logger)
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
    func insert(_ events: [RecordedEvent], bodies: [[UInt8]: [UInt8]], batch: Int) async throws {
        var cols: [PostgresTeamLog.Columns] = []
        var batchBodies: [(keys: [ByteBuffer], sizes: [Int64], stored: [ByteBuffer])] = []
        var seen = Set<[UInt8]>()
        var hash = TeamChain.zero
        for (i, e) in events.enumerated() {
            if i % batch == 0 { cols.append(PostgresTeamLog.Columns()); batchBodies.append(([], [], [])) }
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
    func read() async throws -> Int {
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
