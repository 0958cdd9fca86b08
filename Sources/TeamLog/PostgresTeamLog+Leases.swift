import EventStore
import Foundation
import PostgresNIO

/// Leases: one node at a time appends a source's new events to the team log.
///
/// A lease row (`strata_leases`) names the holder, a fencing token and an expiry. Taking a lease
/// that another node holds gives a token one larger; renewing one's own keeps it. A push sends
/// the tokens its node holds, and the append transaction (which already holds the head row's
/// lock) reads the lease rows of the sources it is about to append `FOR SHARE`: an event whose
/// source is leased to another node, or under a newer token, refuses the whole batch. The
/// expiry only decides when another node may take the lease without `force`; the token decides
/// what is appended. So a node paused past its lease (SIGSTOP, a long GC, a laptop lid) that
/// wakes up and pushes finds a newer token and is refused rather than interleaved; if nobody
/// took the lease meanwhile, its token is still current and its events go in, in order. A
/// source nobody leased is open to every node.
extension PostgresTeamLog {
    package struct Lease: Sendable, Hashable {
        package var stream: String
        package var node: String
        package var token: UInt64
        /// Seconds until it expires (negative: expired that long ago; -infinity: released).
        package var secondsLeft: Double
        /// Released by its holder: free for any node, without waiting or forcing.
        package var isReleased: Bool { secondsLeft == -.infinity }
    }

    package struct LeaseGrant: Sendable, Hashable {
        package var token: UInt64
        /// The node it was taken from (nil: it was free or this node's already).
        package var takenFrom: String?
        /// Whether it was taken from a node whose lease had not expired (`force`).
        package var forced: Bool

        package init(token: UInt64, takenFrom: String?, forced: Bool) {
            self.token = token
            self.takenFrom = takenFrom
            self.forced = forced
        }
    }

    /// Takes or renews the lease on `stream` for `ttl` seconds.
    /// - Throws: ``TeamLogError`` `.fenced` when another node holds an unexpired lease and
    ///   `force` is false.
    package func acquireLease(stream: String, node: String, ttl: Double, force: Bool) async throws -> LeaseGrant {
        try await migrate()
        let micros = Int64(ttl * 1_000_000)
        return try await run("take a lease in the team log") { [self] in
            try await client.withTransaction(logger: logger) { conn -> LeaseGrant in
                // A push of this source holds its row `FOR SHARE` until it commits, or until the
                // server ends a stalled pusher's session (``idleTimeoutMilliseconds``).
                try await conn.query(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = '\(Self.idleTimeoutMilliseconds * 2)ms'"), logger: logger)
                try await Self.boundIdleTime(conn, logger)
                // A first lease inserts a placeholder (never seen outside this transaction), so
                // two nodes taking a new source at once serialize on its row.
                try await conn.query("INSERT INTO strata_leases VALUES (\(stream), '', 0, '-infinity') ON CONFLICT DO NOTHING", logger: logger)
                var holder = "", token: Int64 = 0, live = false
                for try await (n, t, l) in try await conn.query(
                    "SELECT node, token, expires_at > clock_timestamp() FROM strata_leases WHERE stream = \(stream) FOR UPDATE", logger: logger
                ).decode((String, Int64, Bool).self) { (holder, token, live) = (n, t, l) }
                var grant = LeaseGrant(token: UInt64(token), takenFrom: nil, forced: false)
                if holder != node {
                    if live && !force {
                        throw TeamLogError(
                            .fenced,
                            "the lease on \(stream) is held by node \(TeamLogNode.short(holder)) (token \(token)) and has not expired"
                        )
                    }
                    grant = LeaseGrant(token: UInt64(token + 1), takenFrom: holder.isEmpty ? nil : holder, forced: live)
                }
                let newToken = Int64(grant.token)
                try await conn.query(
                    """
                    UPDATE strata_leases SET node = \(node), token = \(newToken),
                      expires_at = clock_timestamp() + make_interval(secs => \(Double(micros) / 1_000_000))
                    WHERE stream = \(stream)
                    """, logger: logger)
                return grant
            }
        }
    }

    /// Ends this node's lease on `stream` at once (another node may take it without `force`);
    /// the token stays, so the next holder's is larger. A released lease expires at -infinity, so
    /// it reads as released, not as expired. False when this node does not hold it.
    package func releaseLease(stream: String, node: String) async throws -> Bool {
        try await migrate()
        return try await run("release a lease in the team log") { [self] in
            var released = false
            for try await _ in try await client.query(
                "UPDATE strata_leases SET expires_at = '-infinity' WHERE stream = \(stream) AND node = \(node) RETURNING token", logger: logger
            ).decode(Int64.self) { released = true }
            return released
        }
    }

    /// Every lease, by source.
    package func leases() async throws -> [Lease] {
        try await migrate()
        return try await run("read the team log's leases") { [self] in
            var out: [Lease] = []
            for try await (s, n, t, left) in try await client.query(
                """
                SELECT stream, node, token,
                  CASE WHEN expires_at = '-infinity' THEN '-Infinity'::float8 ELSE extract(epoch FROM expires_at - clock_timestamp())::float8 END
                FROM strata_leases ORDER BY stream
                """, logger: logger
            ).decode((String, String, Int64, Double).self) {
                out.append(Lease(stream: s, node: n, token: UInt64(t), secondsLeft: left))
            }
            return out
        }
    }

    /// Inside the append transaction: the token each leased source of `events` is appended
    /// under; throws `.fenced` when one is leased to another node or a newer token.
    func fence(_ events: [RecordedEvent], node: String, leases held: [String: UInt64], _ conn: PostgresConnection) async throws -> [String: UInt64] {
        let streams = Array(Set(events.map(\.stream)))
        guard !streams.isEmpty else { return [:] }
        var tokens: [String: UInt64] = [:]
        for try await (s, n, t) in try await conn.query(
            "SELECT stream, node, token FROM strata_leases WHERE stream = ANY(\(streams)) FOR SHARE", logger: logger
        ).decode((String, String, Int64).self) {
            let token = UInt64(t)
            guard n == node, held[s] == token else {
                let late = events.filter { $0.stream == s }
                let mine = held[s].map { "token \($0)" } ?? "no lease"
                throw TeamLogError(
                    .fenced,
                    """
                    the lease on \(s) is held by \(n == node ? "this node under a newer token" : "node \(TeamLogNode.short(n))") (token \(token); this node has \(mine)): \
                    \(late.count) event(s) of \(s) from seq \(late.first!.seq) were not pushed, and nothing of their batch was appended. \
                    Take the lease with `strata remote lease \(s) --force` to push them after the other node's
                    """)
            }
            tokens[s] = token
        }
        return tokens
    }
}

/// How a node is named in messages: the last 12 hex digits of its id, the random part of its v7
/// UUID (the first ones are its creation time, alike for nodes made in the same millisecond).
package enum TeamLogNode {
    package static func short(_ id: String) -> String { String(id.suffix(12)) }
}
