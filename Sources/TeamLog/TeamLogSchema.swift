/// The team log's tables, created and migrated by Strata (like GRDB's migrations: one list of
/// versions, applied in order under a lock, recorded in `strata_schema`).
///
/// - `strata_head`: one row, the last global seq and the chain hash there. Every push locks it
///   (`SELECT … FOR UPDATE`), so appends are serialized: the global seq is gapless and its
///   order is commit order (a reader never sees seq 9 before seq 8 commits).
/// - `strata_events`: one row per event, by global seq; `event_id` UNIQUE (a retried push finds
///   its events and gets their seqs back); `origin_node`, `origin_seq`: where it was first
///   appended; `hash`: SHA-256 over the hash before it and the event (``TeamChain``).
/// - `strata_bodies`: bodies by the SHA-256 of their bytes, stored compressed on their own
///   (``EventStore/PortableBody``), uploaded before the events that reference them; `STORAGE
///   EXTERNAL`, so PostgreSQL does not try to compress them again.
/// - `strata_leases` (version 2): which node may append a source's (stream's) new events, with
///   a fencing token that grows at every change of holder and an expiry after which another
///   node may take the lease; `strata_events.lease_token` records the token each event was
///   appended under, so the checker can see that a stream's tokens never go back.
enum TeamLogSchema {
    static let version = 2

    static let migrations: [[String]] = [
        // 1
        [
            """
            CREATE TABLE strata_head (
              id int PRIMARY KEY CHECK (id = 1),
              seq bigint NOT NULL,
              hash bytea NOT NULL
            )
            """,
            "INSERT INTO strata_head VALUES (1, 0, decode(repeat('00', 32), 'hex'))",
            """
            CREATE TABLE strata_bodies (
              hash bytea PRIMARY KEY,
              size bigint NOT NULL,
              stored bytea NOT NULL
            )
            """,
            "ALTER TABLE strata_bodies ALTER COLUMN stored SET STORAGE EXTERNAL",
            """
            CREATE TABLE strata_events (
              seq bigint PRIMARY KEY,
              event_id text NOT NULL UNIQUE,
              type text NOT NULL,
              schema_version int NOT NULL,
              recorded_at bigint NOT NULL,
              stream text NOT NULL,
              metadata jsonb NOT NULL,
              body_hash bytea REFERENCES strata_bodies (hash),
              body_size bigint,
              origin_node text NOT NULL,
              origin_seq bigint NOT NULL,
              hash bytea NOT NULL,
              UNIQUE (origin_node, origin_seq)
            )
            """
        ],
        // 2
        [
            """
            CREATE TABLE strata_leases (
              stream text PRIMARY KEY,
              node text NOT NULL,
              token bigint NOT NULL,
              expires_at timestamptz NOT NULL
            )
            """,
            "ALTER TABLE strata_events ADD COLUMN lease_token bigint"
        ]
    ]
}
