import EventStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

// Creating and migrating the tables (``TeamLogSchema``).
extension PostgresTeamLog {
    /// Creates or migrates the tables (under an advisory lock, so two nodes starting at once
    /// do not race).
    /// - Throws: ``TeamLogError`` `.newerSchema` when the log was made by a newer Strata.
    package func migrate() async throws {
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

    func createOrMigrate() async throws {
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
}
