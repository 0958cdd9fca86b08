import EventStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

// The log's head and a check of its whole chain.
extension PostgresTeamLog {
    /// The log's head: its last seq and chain hash.
    package func head() async throws -> (seq: UInt64, hash: String) {
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
    package func verify() async throws -> [String] {
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
}
