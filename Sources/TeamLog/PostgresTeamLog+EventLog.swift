package import EventStore
import Foundation
import PostgresNIO

/// The team log through the engine's ``EventLog`` interface, the one a store's LMDB log
/// implements: seqs are the global seqs, hashes the team chain's (``TeamChain``), bodies come
/// from `strata_bodies`. An append through it is a push of new events by the node
/// ``directNode``: bodies first, then the events in one transaction holding the head row, fenced
/// by the sources' leases like any push.
extension PostgresTeamLog: EventLog {
    package func events(_ query: EventQuery) async throws -> [RecordedEvent] {
        guard query.limit > 0, query.fromSeq <= query.toSeq else { return [] }
        try await migrate()
        let from = Int64(clamping: query.fromSeq), to = Int64(clamping: query.toSeq), limit = Int64(clamping: query.limit)
        let stream = query.stream, type = query.type
        return try await run("read the team log") { [self] in
            // The direction cannot be a bind: two spellings of one query.
            let rows =
                query.descending
                ? try await client.query(
                    """
                    SELECT \(unescaped: Self.eventColumns) FROM strata_events e
                    WHERE seq BETWEEN \(from) AND \(to) AND (\(stream)::text IS NULL OR stream = \(stream)) AND (\(type)::text IS NULL OR type = \(type))
                    ORDER BY seq DESC LIMIT \(limit)
                    """, logger: logger)
                : try await client.query(
                    """
                    SELECT \(unescaped: Self.eventColumns) FROM strata_events e
                    WHERE seq BETWEEN \(from) AND \(to) AND (\(stream)::text IS NULL OR stream = \(stream)) AND (\(type)::text IS NULL OR type = \(type))
                    ORDER BY seq LIMIT \(limit)
                    """, logger: logger)
            return try await Self.recorded(rows)
        }
    }

    package func event(id: String) async throws -> RecordedEvent? {
        try await migrate()
        return try await run("read the team log") { [self] in
            try await Self.recorded(
                try await client.query("SELECT \(unescaped: Self.eventColumns) FROM strata_events e WHERE event_id = \(id)", logger: logger)
            ).first
        }
    }

    package func payload(of event: RecordedEvent) async throws -> [UInt8]? {
        guard let p = event.payload else { return nil }
        guard let body = try await body(sha256: p.hashHex) else {
            throw TeamLogError(.corrupted, "the team log lacks the body of event \(event.seq) (\(p.hashHex.prefix(16))…)")
        }
        return body
    }

    package func body(sha256 hex: String) async throws -> [UInt8]? {
        guard let hash = [UInt8](hex: hex), hash.count == 32 else { return nil }
        try await migrate()
        let key = ByteBuffer(bytes: hash)
        let stored: [UInt8]? = try await run("read the team log's bodies") { [self] in
            var out: [UInt8]?
            for try await b in try await client.query("SELECT stored FROM strata_bodies WHERE hash = \(key)", logger: logger).decode(ByteBuffer.self) {
                out = Array(b.readableBytesView)
            }
            return out
        }
        guard let stored else { return nil }
        let body = try PortableBody.decode(stored)
        guard Hashing.sha256(body) == hash else { throw TeamLogError(.corrupted, "the team log's body \(hex.prefix(16))… does not match its hash") }
        return body
    }

    /// The last seq before the first event recorded after `time` (the head when none is): the
    /// store's rule, where an event's effective time is the latest `recordedAt` up to it.
    package func seq(asOf time: Timestamp) async throws -> UInt64 {
        try await migrate()
        let t = time.microseconds
        return try await run("read the team log") { [self] in
            var out: Int64 = 0
            for try await s in try await client.query(
                """
                SELECT coalesce((SELECT min(seq) - 1 FROM strata_events WHERE recorded_at > \(t)), (SELECT seq FROM strata_head WHERE id = 1))
                """, logger: logger
            ).decode(Int64.self) { out = s }
            return UInt64(out)
        }
    }

    /// Appends new events as node ``directNode`` (their bodies uploaded first; a
    /// `payloadReference` must name a body the log holds). Events without a `recordedAt` take
    /// the time now.
    /// - Throws: ``TeamLogError`` `.fenced` when a source is leased to another node.
    package func append(_ events: [NewEvent]) async throws -> [AppendOutcome] {
        guard !events.isEmpty else { return [] }
        try await migrate()
        let base = try await lastOriginSeq(node: directNode)
        let now = SystemClock().now()
        var bodies: [[UInt8]: [UInt8]] = [:]
        var recorded: [RecordedEvent] = []
        for (i, e) in events.enumerated() {
            var reference = e.payloadReference
            if let p = e.payload {
                let hash = Hashing.sha256(p)
                bodies[hash] = p
                reference = PayloadReference(hash: hash, size: p.count)
            }
            recorded.append(
                RecordedEvent(
                    seq: base + UInt64(i) + 1, id: e.id, type: e.type, schemaVersion: e.schemaVersion,
                    recordedAt: e.recordedAt ?? now, stream: e.stream,
                    metadata: e.metadata.map { RecordedEvent.Metadatum(key: $0.key, value: $0.value) },
                    payload: reference, previousHash: [], hash: []))
        }
        _ = try await uploadBodies(of: recorded) { event in
            guard let body = bodies[event.payload!.hash] else {
                throw TeamLogError(.corrupted, "event \(event.id) references a body the team log does not hold (\(event.payload!.hashHex.prefix(16))…)")
            }
            return body
        }
        return try await append(recorded, node: directNode, leases: [:]).outcomes
    }

    static let eventColumns = """
        seq, event_id, type, schema_version, recorded_at, stream, metadata::text, coalesce(body_hash, ''::bytea), coalesce(body_size, -1), hash,
        coalesce((SELECT p.hash FROM strata_events p WHERE p.seq = e.seq - 1), '\\x'::bytea)
        """

    static func recorded(_ rows: PostgresRowSequence) async throws -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        for try await (seq, id, type, version, time, stream, metadata, bh, bs, hash, previous) in rows.decode(
            (Int64, String, String, Int32, Int64, String, String, ByteBuffer, Int64, ByteBuffer, ByteBuffer).self)
        {
            let bodyHash = Array(bh.readableBytesView)
            let prev = Array(previous.readableBytesView)
            out.append(
                RecordedEvent(
                    seq: UInt64(seq), id: id, type: type, schemaVersion: Int(version), recordedAt: Timestamp(microseconds: time),
                    stream: stream, metadata: try TeamLogJSON.decode(metadata),
                    payload: bodyHash.isEmpty ? nil : PayloadReference(hash: bodyHash, size: Int(bs)),
                    previousHash: prev.isEmpty ? TeamChain.zero : prev, hash: Array(hash.readableBytesView)))
        }
        return out
    }
}
