import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Jepsen-style schedules for the team log, with a checker: `strata remote push` killed with
/// SIGKILL at random points, and PostgreSQL itself crashed and restarted mid-push. Afterwards the
/// log's seqs are gapless, every event of the store is in it exactly once, its chain holds, and a
/// store that pulls it holds the same events in the same order.
@Suite(.serialized) struct TeamLogKillTests {
    @Test func killedTeamPushesAndACrashedServerLoseNothingAndDuplicateNothing() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["STRATA_TEAM_KILLS"] ?? "") ?? 20
        let pg = try await offPoolThread { try PostgresServer() }
        let a = makeStoreDir()
        #expect(try await strata(["_append-loop", "--count", "3000", "--batch", "100", "--id-prefix", "node-a"], store: a).status == 0)
        #expect(try await strata(["remote", "add", "team", pg.url], store: a).status == 0)
        // The tables exist before the first kill (a push killed at once may not have made them),
        // so the checks between kills can count rows.
        #expect(try await strata(["remote", "status"], store: a).status == 0)
        var rng = SystemRandomNumberGenerator()
        var interrupted = 0, total = 3000, round = 0
        while interrupted < kills {
            let (p, _, _) = try startStrata(["remote", "push", "--batch", "10"], store: a)
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...300, using: &rng)))
            if p.isRunning { kill(p.processIdentifier, SIGKILL); interrupted += 1 }
            try await waitForExit(p)
            // Everything pushed before the kills ran out: more events to push.
            if try pg.psql("SELECT count(*) FROM strata_events") == "\(total)\n" {
                round += 1
                #expect(try await strata(["_append-loop", "--count", "300", "--batch", "50", "--id-prefix", "more\(round)"], store: a).status == 0)
                total += 300
            }
        }
        // PostgreSQL crashed during a push, then back: the push fails with one clear line.
        let (p, _, errPipe) = try startStrata(["remote", "push", "--batch", "40"], store: a)
        try await Task.sleep(for: .milliseconds(30))
        try await offPoolThread { pg.crash() }
        try await waitForExit(p)
        let stderr = String(decoding: errPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 0 || stderr.hasPrefix("Error: could not"), "\(stderr)")
        try await offPoolThread { try pg.start() }
        let final = try await strata(["remote", "push"], store: a)
        #expect(final.status == 0, "\(final.stderr)")

        // The checker.
        #expect(try pg.psql("SELECT count(*), min(seq), max(seq), count(DISTINCT event_id) FROM strata_events") == "\(total)|1|\(total)|\(total)\n")
        #expect(try pg.psql("SELECT seq FROM strata_head") == "\(total)\n")
        let verified = try await strata(["remote", "status", "--verify"], store: a)
        #expect(verified.status == 0 && verified.stdout.contains("chain: ok (\(total) events, gapless)"), "\(verified.stdout)\(verified.stderr)")
        let b = makeStoreDir()
        #expect(try await strata(["remote", "add", "team", pg.url], store: b).status == 0)
        #expect(try await strata(["remote", "pull"], store: b).status == 0)
        let ea = try await strata(["log", "--oldest-first", "--limit", "100000", "--format", "ndjson"], store: a)
        let eb = try await strata(["log", "--oldest-first", "--limit", "100000", "--format", "ndjson"], store: b)
        func ids(_ text: String) throws -> [String] {
            try text.split(separator: "\n").map { try #require((try jsonObject(String($0)) as? [String: Any])?["id"] as? String) }
        }
        let (ia, ib) = (try ids(ea.stdout), try ids(eb.stdout))
        #expect(ia == ib && ia.count == total)
        try await TeamLogCLITests.expectSameProjections([a, b])
        print("team log kills: \(interrupted) pushes killed, \(total) events")
    }

    /// `strata remote pull` SIGKILLed at random points while it puts a store in the log's order
    /// (copying the store, appending the log's events and the store's own, swapping the
    /// directories), again and again, each round giving it something to reorder. Afterwards a
    /// pull finishes: the store holds the log's events at the log's seqs, then every one of its
    /// unpushed events in the order it appended them; nothing is lost or doubled, no copy is
    /// left behind, and it verifies.
    @Test func pullsKilledWhileTheyReorderLoseNothing() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["STRATA_REORDER_KILLS"] ?? "") ?? 20
        let pg = try await offPoolThread { try PostgresServer() }
        let (a, b) = (makeStoreDir(), makeStoreDir())
        for (store, node) in [(a, "node-a"), (b, "node-b")] {
            #expect(try await strata(["_append-loop", "--count", "2000", "--batch", "200", "--id-prefix", node], store: store).status == 0)
            #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0)
            #expect(try await strata(["remote", "push"], store: store).status == 0)
        }
        var outbox: [String] = []
        func addOutbox(_ round: Int, _ n: Int) async throws {
            #expect(try await strata(["_append-loop", "--count", "\(n)", "--batch", "50", "--id-prefix", "own\(round)"], store: b).status == 0)
            outbox += (0..<n).map { "own\(round)-\($0)" }
        }
        try await addOutbox(0, 200)
        var rng = SystemRandomNumberGenerator()
        var interrupted = 0, round = 0, finished = 0, midCopy = 0
        while interrupted < kills {
            if FileManager.default.fileExists(atPath: b + ".replica") { midCopy += 1 }
            let (p, _, _) = try startStrata(["remote", "pull"], store: b)
            if interrupted % 2 == 0 {
                // At a random point of the whole pull.
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...1_500, using: &rng)))
            } else {
                // Once the copy has been started (however slow the machine), 0–400 ms into it;
                // the pull may finish meanwhile.
                for _ in 0..<400 where p.isRunning && !FileManager.default.fileExists(atPath: b + ".replica") {
                    try await Task.sleep(for: .milliseconds(25))
                }
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...400, using: &rng)))
            }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); interrupted += 1 } else { finished += 1 }
            try await waitForExit(p)
            if !p.isRunning, p.terminationStatus == 0 {
                // In order now: A pushes more and B appends more of its own, so the next pull
                // has the outbox to move after A's new events.
                round += 1
                #expect(try await strata(["_append-loop", "--count", "100", "--batch", "50", "--id-prefix", "more\(round)"], store: a).status == 0)
                #expect(try await strata(["remote", "push"], store: a).status == 0)
                try await addOutbox(round, 50)
            }
        }
        let last = try await strata(["remote", "pull"], store: b)
        #expect(last.status == 0, "\(last.stdout)\(last.stderr)")
        // The checker.
        let logIDs = try pg.psql("SELECT string_agg(event_id, ',' ORDER BY seq) FROM strata_events")
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        let events = try await strata(["log", "--oldest-first", "--limit", "100000", "--format", "ndjson"], store: b)
        let mine = try events.stdout.split(separator: "\n").map { try #require((try jsonObject(String($0)) as? [String: Any])?["id"] as? String) }
        #expect(Array(mine.prefix(logIDs.count)) == logIDs)
        #expect(Array(mine.dropFirst(logIDs.count)) == outbox)
        #expect(mine.count == logIDs.count + outbox.count && Set(mine).count == mine.count)
        #expect(!FileManager.default.fileExists(atPath: b + ".replica"))
        let verified = try await strata(["verify"], store: b)
        #expect(verified.status == 0, "\(verified.stdout)")
        // B's outbox pushed and pulled by A: both fold the same projections.
        #expect(try await strata(["remote", "sync"], store: b).status == 0)
        #expect(try await strata(["remote", "pull"], store: a).status == 0)
        try await TeamLogCLITests.expectSameProjections([a, b])
        // Some kills landed while the copy was being written (it was left behind, then removed).
        #expect(midCopy > 0)
        print("reorder kills: \(interrupted) pulls killed (\(midCopy) while copying), \(finished) finished, \(mine.count) events")
    }
}
