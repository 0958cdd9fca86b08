import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Jepsen-style schedules for the team log with the binary and a real PostgreSQL: a lease holder
/// paused (SIGSTOP) past its lease while another node takes over, then resumed; two nodes pushing
/// at once while a third pulls. The checker: seqs gapless, every event once, the chain holds, a
/// source's fencing tokens never go back and each token's events come from one node, and the
/// puller holds the log's events in the log's order.
@Suite(.serialized) struct TeamLogScheduleTests {
    /// The checks every schedule ends with.
    static func check(_ pg: PostgresServer, total: Int, store: String) async throws {
        #expect(try pg.psql("SELECT count(*), min(seq), max(seq), count(DISTINCT event_id) FROM strata_events") == "\(total)|1|\(total)|\(total)\n")
        let verified = try await strata(["remote", "status", "--verify"], store: store)
        #expect(verified.status == 0 && verified.stdout.contains("chain: ok (\(total) events, gapless)"), "\(verified.stdout)\(verified.stderr)")
        // Tokens only grow along a source's events, and each token's events are one node's.
        #expect(
            try pg.psql(
                """
                SELECT count(*) FROM (SELECT lease_token < lag(lease_token) OVER (PARTITION BY stream ORDER BY seq) AS back FROM strata_events) x WHERE back
                """) == "0\n")
        #expect(
            try pg.psql(
                """
                SELECT count(*) FROM (SELECT stream, lease_token FROM strata_events WHERE lease_token IS NOT NULL
                  GROUP BY stream, lease_token HAVING count(DISTINCT origin_node) > 1) x
                """) == "0\n")
    }

    @Test func aNodePausedPastItsLeaseIsRefusedNotInterleaved() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["STRATA_TEAM_PAUSES"] ?? "") ?? 3
        let pg = try await offPoolThread { try PostgresServer() }
        let (a, b) = (makeStoreDir(), makeStoreDir())
        for store in [a, b] {
            #expect(
                try await strata(["_append-loop", "--count", "1", "--stream", "setup", "--id-prefix", "setup-\(store.suffix(8))"], store: store).status == 0)
            #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0)
        }
        var rng = SystemRandomNumberGenerator()
        var total = 2, refused = 0  // the two setup events
        for round in 0..<rounds {
            // A holds the lease (its own from the last round: renewed, same token) for one second.
            let lease = try await strata(["remote", "lease", "books", "--ttl", "1"], store: a)
            #expect(lease.status == 0, "\(lease.stderr)")
            #expect(
                try await strata(["_append-loop", "--count", "400", "--batch", "100", "--stream", "books", "--id-prefix", "a\(round)"], store: a).status == 0)
            // A step with no answer in 4 s fails the push (STRATA_TEAM_TIMEOUT), as a cut
            // connection may never report back.
            let (p, _, errPipe) = try startStrata(["remote", "push", "--batch", "10"], store: a, env: ["STRATA_TEAM_TIMEOUT": "4"])
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...120, using: &rng)))
            let paused = p.isRunning && kill(p.processIdentifier, SIGSTOP) == 0
            // A's lease runs out while it sleeps; B takes the source (no force needed; if A sleeps
            // inside its append transaction, the server ends A's session after 5 s idle and B's
            // lease waits for that) and pushes.
            try await Task.sleep(for: .milliseconds(1_300))
            let takeover = try await strata(["remote", "lease", "books"], store: b)
            #expect(takeover.status == 0 && takeover.stdout.contains("from node"), "\(takeover.stdout)\(takeover.stderr)")
            #expect(try await strata(["_append-loop", "--count", "50", "--batch", "25", "--stream", "books", "--id-prefix", "b\(round)"], store: b).status == 0)
            let pushB = try await strata(["remote", "push"], store: b)
            #expect(pushB.status == 0, "\(pushB.stderr)")
            if paused { kill(p.processIdentifier, SIGCONT) }
            try await waitForExit(p)
            var stderr = String(decoding: errPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            var status = p.terminationStatus
            if status == 1 {
                // A was cut off inside its transaction (rolled back): its retry meets the fence.
                #expect(stderr.hasPrefix("Error: could not ") && stderr.contains("try again"), "\(stderr)")
                let retry = try await strata(["remote", "push"], store: a)
                (status, stderr) = (retry.status, retry.stderr)
            }
            if status == 5 {
                refused += 1
                #expect(stderr.contains("the lease on books is held by node") && stderr.contains("--force"), "\(stderr)")
                let report = try await strata(["remote", "status"], store: a)
                #expect(report.status == 0 && report.stdout.contains("conflict:") && !report.stdout.contains("in conflict: 0 "), "\(report.stdout)")
            } else {
                #expect(status == 0, "\(stderr)")
            }
            try await Self.check(pg, total: try Int(pg.psql("SELECT count(*) FROM strata_events").dropLast())!, store: b)
            // A takes the lease back while B's is live (a warning), and its late events go in.
            let forced = try await strata(["remote", "lease", "books", "--force"], store: a)
            #expect(forced.status == 0 && forced.stderr.contains("before it expired"), "\(forced.stderr)")
            let pushA = try await strata(["remote", "push"], store: a)
            #expect(pushA.status == 0, "\(pushA.stderr)")
            total += 450
        }
        // B's events under its old token are now late: refused, exit 5, nothing appended.
        #expect(try await strata(["_append-loop", "--count", "5", "--stream", "books", "--id-prefix", "late"], store: b).status == 0)
        let late = try await strata(["remote", "push"], store: b)
        #expect(late.status == 5 && late.stderr.contains("5 event(s) of books"), "\(late.stderr)")
        #expect(try await strata(["remote", "push"], store: a).status == 0)
        try await Self.check(pg, total: total, store: a)
        #expect(refused >= 1, "no round paused A mid-push")
        print("team log pauses: \(rounds) rounds, \(refused) late pushes refused")
    }

    @Test func twoNodesPushAtOnceWhileAThirdPulls() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        let (a, b, c) = (makeStoreDir(), makeStoreDir(), makeStoreDir())
        for (store, name) in [(a, "a"), (b, "b")] {
            #expect(try await strata(["_append-loop", "--count", "1500", "--batch", "100", "--stream", name, "--id-prefix", name], store: store).status == 0)
        }
        for store in [a, b, c] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
        #expect(try await strata(["remote", "status"], store: c).status == 0)  // the tables exist before the race
        let (pa, _, ea) = try startStrata(["remote", "push", "--batch", "20"], store: a)
        let (pb, _, eb) = try startStrata(["remote", "push", "--batch", "20"], store: b)
        var pulls = 0, last = 0
        while pa.isRunning || pb.isRunning {
            let pull = try await strata(["remote", "pull"], store: c)
            #expect(pull.status == 0, "\(pull.stderr)")
            let at = Int(pull.stdout.split(separator: " ").last(where: { Int($0) != nil }).map(String.init) ?? "") ?? 0
            #expect(at >= last, "the pull position went back")
            last = at
            pulls += 1
        }
        try await waitForExit(pa)
        try await waitForExit(pb)
        #expect(pa.terminationStatus == 0, "\(String(decoding: ea.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
        #expect(pb.terminationStatus == 0, "\(String(decoding: eb.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
        #expect(try await strata(["remote", "pull"], store: c).status == 0)
        try await Self.check(pg, total: 3000, store: c)
        // Both nodes' batches interleave in the log; the puller holds them in the log's order.
        let global = try pg.psql("SELECT event_id FROM strata_events ORDER BY seq").split(separator: "\n").map(String.init)
        let local = try await strata(["log", "--oldest-first", "--limit", "100000", "--format", "ndjson"], store: c)
        let ids = try local.stdout.split(separator: "\n").map { try #require((try jsonObject(String($0)) as? [String: Any])?["id"] as? String) }
        #expect(ids == global)
        #expect(Set(global.prefix(1500).map { $0.prefix(1) }).count == 2, "the two pushes did not overlap")
        // The pushers pull (each put in the log's order): all three fold the same projections.
        for store in [a, b] { #expect(try await strata(["remote", "pull"], store: store).status == 0) }
        try await TeamLogCLITests.expectSameProjections([a, b, c])
        print("team log race: \(pulls) pulls while two nodes pushed")
    }

    /// The network to PostgreSQL cut (both ends see it closed) or stalled (nothing moves, nothing
    /// closes) at random points of pushes, through a proxy on a loopback port: each push ends
    /// (done, or one clear error line within its deadline), and at the end the log holds every
    /// event once, gapless and chained, and a store that pulls through the same proxy holds them.
    @Test func pushesThroughACutOrStalledNetworkLoseNothing() async throws {
        let faults = Int(ProcessInfo.processInfo.environment["STRATA_TEAM_CUTS"] ?? "") ?? 8
        let pg = try await offPoolThread { try PostgresServer() }
        let proxy = try FaultyProxy(to: pg.socketDirectory + "/.s.PGSQL.\(pg.port)")
        let url = "postgres://\(PostgresServer.user)@127.0.0.1:\(proxy.port)/strata"
        let a = makeStoreDir()
        #expect(try await strata(["_append-loop", "--count", "2000", "--batch", "100", "--id-prefix", "net"], store: a).status == 0)
        #expect(try await strata(["remote", "add", "team", url], store: a).status == 0)
        #expect(try await strata(["remote", "status"], store: a).status == 0)
        var rng = SystemRandomNumberGenerator()
        var total = 2000, failed = 0, round = 0
        for i in 0..<faults {
            let before = proxy.connections
            let (p, _, errPipe) = try startStrata(["remote", "push", "--batch", "10"], store: a, env: ["STRATA_TEAM_TIMEOUT": "3"])
            // The fault comes once the push is talking to the server (its reachability probe and
            // its pool's first connection are through), at a random point after that: under a
            // loaded machine a fixed delay from the start can fall before the push connects.
            for _ in 0..<300 where proxy.connections < before + 2 && p.isRunning { try await Task.sleep(for: .milliseconds(50)) }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...300, using: &rng)))
            if i % 2 == 0 {
                proxy.cut()
            } else {
                proxy.stall()
                try await Task.sleep(for: .milliseconds(Int.random(in: 500...4_000, using: &rng)))
                proxy.restore()
            }
            try await waitForExit(p)
            let stderr = String(decoding: errPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            if p.terminationStatus != 0 {
                failed += 1
                #expect(p.terminationStatus == 1 && stderr.hasPrefix("Error: could not ") && stderr.split(separator: "\n").count == 1, "\(stderr)")
            }
            if try pg.psql("SELECT count(*) FROM strata_events") == "\(total)\n" {
                round += 1
                #expect(try await strata(["_append-loop", "--count", "300", "--batch", "100", "--id-prefix", "net\(round)"], store: a).status == 0)
                total += 300
            }
        }
        proxy.restore()
        let final = try await strata(["remote", "push"], store: a)
        #expect(final.status == 0, "\(final.stderr)")
        try await Self.check(pg, total: total, store: a)
        let b = makeStoreDir()
        #expect(try await strata(["remote", "add", "team", url], store: b).status == 0)
        #expect(try await strata(["remote", "pull"], store: b).status == 0)
        let global = try pg.psql("SELECT event_id FROM strata_events ORDER BY seq").split(separator: "\n").map(String.init)
        let local = try await strata(["log", "--oldest-first", "--limit", "100000", "--format", "ndjson"], store: b)
        let ids = try local.stdout.split(separator: "\n").map { try #require((try jsonObject(String($0)) as? [String: Any])?["id"] as? String) }
        #expect(ids == global && ids.count == total)
        #expect(failed >= 1, "no fault reached a push")
        print("team log partitions: \(faults) cuts and stalls, \(failed) pushes failed cleanly, \(total) events, \(proxy.connections) connections")
        proxy.stop()
    }

    /// `remote pull --follow` with a poll far away (an hour): events reach the follower because a
    /// push's commit notifies it, and again after PostgreSQL restarts (the notifications sent
    /// while it was away are lost; the follower pulls when it listens again). SIGTERM ends it
    /// cleanly with its position saved.
    @Test func aFollowerPullsWhenAPushCommitsAndAfterTheServerRestarts() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        let (a, c) = (makeStoreDir(), makeStoreDir())
        #expect(try await strata(["_append-loop", "--count", "100", "--batch", "50", "--id-prefix", "first"], store: a).status == 0)
        for store in [a, c] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
        #expect(try await strata(["remote", "status"], store: c).status == 0)
        let (follower, out, err) = try startStrata(["remote", "pull", "--follow", "--poll", "3600"], store: c, env: ["STRATA_TEAM_TIMEOUT": "5"])
        func held() async throws -> Int {
            let r = try await strata(["log", "--limit", "100000", "--format", "ndjson"], store: c)
            return r.stdout.split(separator: "\n").count
        }
        func waitFor(_ n: Int, within seconds: Int) async throws -> Bool {
            for _ in 0..<(seconds * 4) {
                if try await held() == n { return true }
                try await Task.sleep(for: .milliseconds(250))
            }
            return false
        }
        #expect(try await waitFor(0, within: 5))
        try await Task.sleep(for: .seconds(2))  // listening by now
        #expect(try await strata(["remote", "push"], store: a).status == 0)
        #expect(try await waitFor(100, within: 20), "a commit did not wake the follower")
        try await offPoolThread { pg.crash() }
        try await offPoolThread { try pg.start() }
        #expect(try await strata(["_append-loop", "--count", "50", "--batch", "50", "--id-prefix", "second"], store: a).status == 0)
        let push = try await strata(["remote", "push"], store: a)
        #expect(push.status == 0, "\(push.stderr)")
        #expect(try await waitFor(150, within: 30), "the follower did not pull after the restart")
        // C appends events of its own meanwhile, and A pushes more: the follower's next pull
        // finds C's own events overtaken and puts its store in the log's order itself, then
        // follows on.
        #expect(try await strata(["_append-loop", "--count", "20", "--batch", "20", "--id-prefix", "own"], store: c).status == 0)
        #expect(try await strata(["_append-loop", "--count", "30", "--batch", "30", "--id-prefix", "third"], store: a).status == 0)
        #expect(try await strata(["remote", "push"], store: a).status == 0)
        try await Task.sleep(for: .seconds(4))
        #expect(try await strata(["_append-loop", "--count", "10", "--batch", "10", "--id-prefix", "fourth"], store: a).status == 0)
        #expect(try await strata(["remote", "push"], store: a).status == 0)
        #expect(try await waitFor(210, within: 30), "the follower did not pull after putting the store in order")
        kill(follower.processIdentifier, SIGTERM)
        try await waitForExit(follower)
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(
            follower.terminationStatus == 0 && stdout.contains("stopped following at seq 190"),
            "\(stdout)\(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
        #expect(
            stdout.contains("put this store in the log's order after seq 150: 30 event(s) of the log, then 20 of its own not pushed yet (seqs 181–200)"),
            "\(stdout)")
        // Its own events were overtaken again by A's last push: the follower put them after it
        // too, unless a `strata log` above had the store open right then; a pull finishes it.
        _ = try await strata(["remote", "pull"], store: c)
        let ids = try await strata(["log", "--oldest-first", "--limit", "100000", "--format", "ndjson"], store: c).stdout
            .split(separator: "\n").map { try #require((try jsonObject(String($0)) as? [String: Any])?["id"] as? String) }
        #expect(Array(ids[150..<180]) == (0..<30).map { "third-\($0)" })
        #expect(Array(ids[180..<190]) == (0..<10).map { "fourth-\($0)" })
        #expect(Array(ids[190...]) == (0..<20).map { "own-\($0)" })
        #expect(try await strata(["remote", "pull"], store: c).stdout.contains("pulled 0 event(s)"))
        #expect(try await strata(["verify"], store: c).status == 0)
    }
}
