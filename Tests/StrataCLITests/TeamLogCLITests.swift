import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Two stores sharing one history through a real PostgreSQL, with the binary: the README's
/// two-node setup.
@Suite(.serialized) struct TeamLogCLITests {
    @Test func twoStoresShareTheirHistoryThroughATeamLog() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { server in
            let (a, b) = (makeStoreDir(), makeStoreDir())
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                    "--page-param", "page", "--page-size", "10", "--index", "make"
                ], store: a)
            #expect(add.status == 0)
            for store in [a, b] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
            #expect(try await strata(["fetch", "cars"], store: a).status == 0)
            let status = try await strata(["remote", "status"], store: a)
            #expect(status.stdout.contains("ahead: 5 event(s) to push"), "\(status.stdout)\(status.stderr)")
            let push = try await strata(["remote", "push"], store: a)
            #expect(push.status == 0 && push.stdout.contains("pushed 5 event(s)"), "\(push.stdout)\(push.stderr)")
            let pull = try await strata(["remote", "pull"], store: b)
            #expect(pull.status == 0 && pull.stdout.contains("pulled 5 event(s)"), "\(pull.stdout)\(pull.stderr)")
            for args in [
                ["list", "cars", "--format", "json"], ["history", "cars", "3", "--format", "json"], ["list", "cars", "--as-of", "3", "--format", "json"]
            ] {
                let x = try await strata(args, store: a), y = try await strata(args, store: b)
                #expect(x.status == 0 && x.stdout == y.stdout, "\(args)")
            }
            // A's fetch took the lease on cars: B's fetch is refused until A releases it.
            server.version = 2
            let refused = try await strata(["fetch", "cars"], store: b)
            #expect(
                refused.status == 5 && refused.stderr.contains("source cars not fetched: team log team: the lease on cars is held by node"), "\(refused.stderr)"
            )
            #expect(try await strata(["remote", "release", "cars"], store: a).status == 0)
            // B fetches the next version and syncs; A pulls it.
            #expect(try await strata(["fetch", "cars"], store: b).status == 0)
            // B pushes only its own events: the ones it pulled are the log's, in the log's order.
            let synced = try await strata(["remote", "sync"], store: b)
            #expect(synced.status == 0 && synced.stdout.contains("pushed 4 event(s) (0 already there)"), "\(synced.stdout)\(synced.stderr)")
            let pulled = try await strata(["remote", "pull"], store: a)
            #expect(pulled.stdout.contains("pulled 4 event(s)"), "\(pulled.stdout)\(pulled.stderr)")
            let x = try await strata(["list", "cars", "--format", "json"], store: a), y = try await strata(["list", "cars", "--format", "json"], store: b)
            #expect(x.stdout == y.stdout && x.stdout.contains("\"id\""))
            let verified = try await strata(["remote", "status", "--verify"], store: a)
            #expect(verified.status == 0 && verified.stdout.contains("chain: ok (9 events, gapless)"), "\(verified.stdout)\(verified.stderr)")
            // No password in the registry, a refused connection is one clear line.
            #expect(try await strata(["remote", "add", "pw", "postgres://strata:secret@db/x"], store: a).status == 64)
            #expect(try await strata(["remote", "add", "down", "postgres://strata@/strata?host=/tmp/strata-pg-none"], store: a).status == 0)
            let down = try await strata(["remote", "push", "down"], store: a)
            #expect(down.status == 1 && down.stderr.hasPrefix("Error: could not connect to the team log"), "\(down.stderr)")
        }
        _ = pg
    }

    /// Two nodes fetching between their pushes: each pull puts the store in the log's order
    /// (its own unpushed events after the log's), so both stores hold the same events at the same
    /// seqs, read the same at every seq and fold identical projections (verify's digests).
    @Test func nodesThatFetchedMeanwhileEndInTheLogsOrder() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { server in
            let (a, b) = (makeStoreDir(), makeStoreDir())
            // Each node fetches a source of its own (a fetch leases its source in the team log).
            for (store, source) in [(a, "cars"), (b, "cars-b")] {
                #expect(
                    try await strata(
                        [
                            "source", "add", source, "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                            "--page-param", "page", "--page-size", "10", "--index", "make"
                        ], store: store
                    ).status == 0)
                #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0)
                #expect(try await strata(["fetch", source], store: store).status == 0)
            }
            func run(_ args: [String], _ store: String) async throws -> String {
                let r = try await strata(args, store: store)
                #expect(r.status == 0, "\(args): \(r.stdout)\(r.stderr)")
                return r.stdout + (args.first == "remote" ? r.stderr : "")
            }
            _ = try await run(["remote", "push"], a)
            _ = try await run(["remote", "push"], b)
            // B's own events were overtaken by A's: B is rewritten in the log's order.
            let pulled = try await run(["remote", "pull"], b)
            #expect(pulled.contains("put this store in the log's order after seq 0: 10 event(s) of the log, then 0 of its own"), "\(pulled)")
            // Both fetch version 2; A pushes first, B syncs, A pulls: each reorders once.
            server.version = 2
            for (store, source) in [(a, "cars"), (b, "cars-b")] { _ = try await run(["fetch", source], store) }
            _ = try await run(["remote", "push"], a)
            let synced = try await run(["remote", "sync"], b)
            #expect(synced.contains("put this store in the log's order after seq 10"), "\(synced)")
            let intoA = try await run(["remote", "pull"], a)
            #expect(intoA.contains("put this store in the log's order after seq 5"), "\(intoA)")
            // Version 3 on B only, not pushed: a pull with nothing new keeps it as the outbox.
            server.version = 3
            _ = try await run(["fetch", "cars-b"], b)
            let outboxPull = try await run(["remote", "pull"], b)
            #expect(!outboxPull.contains("put this store"), "\(outboxPull)")
            let status = try await run(["remote", "status"], b)
            #expect(status.contains("its seqs are the log's up to 18") && status.contains("ahead: 4 event(s) to push"), "\(status)")
            // A third node pulls while B's outbox is not pushed.
            let c = makeStoreDir()
            _ = try await run(["remote", "add", "team", pg.url], c)
            _ = try await run(["remote", "pull"], c)
            let head = 18
            let events = try await run(["log", "--oldest-first", "--format", "ndjson", "--limit", "1000", "--until", "\(head)"], a)
            #expect(events.split(separator: "\n").count == head)
            for other in [b, c] {
                let theirs = try await run(["log", "--oldest-first", "--format", "ndjson", "--limit", "1000", "--until", "\(head)"], other)
                #expect(Self.idsBySeq(events) == Self.idsBySeq(theirs))
            }
            for seq in 1...head {
                let args = ["list", "cars", "--as-of", "\(seq)", "--format", "json"]
                let x = try await run(args, a), y = try await run(args, b), z = try await run(args, c)
                #expect(x == y && y == z, "as of \(seq)")
            }
            // B pushes its outbox; everyone pulls; the projections are identical.
            _ = try await run(["remote", "sync"], b)
            for store in [a, c] { _ = try await run(["remote", "pull"], store) }
            var digests: [String] = []
            for store in [a, b, c] {
                let v = try await run(["verify", "--format", "json"], store)
                #expect(v.contains("\"ok\": true"), "\(v)")
                digests.append(v)
            }
            #expect(Self.digests(digests[0]) == Self.digests(digests[1]) && Self.digests(digests[1]) == Self.digests(digests[2]))
            #expect(!Self.digests(digests[0]).isEmpty)
            // The team log read through the same interface as a store's log: C (which only
            // pulled) lists the log's events at the log's seqs either way.
            let remote = try await run(["log", "--remote", "team", "--oldest-first", "--format", "ndjson", "--limit", "1000"], c)
            let local = try await run(["log", "--oldest-first", "--format", "ndjson", "--limit", "1000"], c)
            #expect(Self.idsBySeq(remote) == Self.idsBySeq(local) && Self.idsBySeq(remote).count == 22)
            let table = try await run(["log", "--remote", "team", "--limit", "3"], a)
            #expect(table.contains("22") && table.contains("cars"), "\(table)")
            let missing = try await strata(["log", "--remote", "nowhere"], store: a)
            #expect(missing.status == 3 && missing.stderr.contains("no remote named nowhere"), "\(missing.stderr)")
        }
        _ = pg
    }

    /// A store another process has open is not swapped: the pull says so and keeps its order;
    /// the next pull, once it is closed, puts it in order. The store is encrypted: its copy is
    /// made under the same key.
    @Test func aStoreOpenElsewhereKeepsItsOrderUntilTheNextPull() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        let (a, b) = (makeStoreDir(), makeStoreDir())
        let key = makeStoreDir() + ".key"
        #expect(try await strata(["key", "generate", key], store: b).status == 0)
        let sealed = ["STRATA_KEY_FILE": key]
        for (store, n, env) in [(a, 3, [:]), (b, 2, sealed)] {
            #expect(try await strata(["remote", "add", "team", pg.url], store: store, env: env).status == 0)
            for i in 0..<n {
                let r = try await strata(
                    [
                        "record", "--stream", "notes", "--type", "DocumentRecorded", "--meta", "collection=notes",
                        "--meta", "key=\(n)-\(i)", "--payload", "-"
                    ], store: store, stdin: Data("{\"i\":\(i)}".utf8), env: env)
                #expect(r.status == 0, "\(r.stderr)")
            }
            #expect(try await strata(["remote", "push"], store: store, env: env).status == 0)
        }
        // Another process holds the store open (its shared lock on strata.lock).
        let fd = open(b + "/strata.lock", O_RDWR)
        #expect(fd >= 0 && flock(fd, LOCK_SH) == 0)
        let busy = try await strata(["remote", "pull"], store: b, env: sealed)
        #expect(busy.status == 0 && busy.stderr.contains("open in another strata process"), "\(busy.stdout)\(busy.stderr)")
        #expect(!FileManager.default.fileExists(atPath: b + ".replica"))
        close(fd)
        let again = try await strata(["remote", "pull"], store: b, env: sealed)
        #expect(again.stdout.contains("put this store in the log's order after seq 0: 5 event(s) of the log"), "\(again.stdout)\(again.stderr)")
        let ids = Self.idsBySeq(try await strata(["log", "--oldest-first", "--format", "ndjson"], store: b, env: sealed).stdout)
        let theirs = Self.idsBySeq(try await strata(["log", "--oldest-first", "--format", "ndjson"], store: a).stdout)
        #expect(ids.count == 5 && Array(ids.prefix(3)) == Array(theirs.prefix(3)))
        let verified = try await strata(["verify"], store: b, env: sealed)
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(try await strata(["verify"], store: b).status != 0)  // still sealed: no key, no read
        _ = pg
    }

    /// Every write takes its source's lease as a fetch does: a node that forgets an item after
    /// another node fetched, pushed and released the source takes the released lease (no
    /// `--force`), pushes the erasure at once, and every node that pulls it no longer shows the
    /// item. The nodes' projections are then identical, the HTTP cache included.
    @Test func anErasureAfterAnotherNodesReleaseIsPushedAtOnce() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { server in
            let (a, b) = (makeStoreDir(), makeStoreDir())
            func run(_ args: [String], _ store: String) async throws -> String {
                let r = try await strata(args, store: store)
                #expect(r.status == 0, "\(args): \(r.stdout)\(r.stderr)")
                return r.stdout + r.stderr
            }
            _ = try await run(
                [
                    "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                    "--page-param", "page", "--page-size", "10", "--index", "make"
                ], a)
            for store in [a, b] { _ = try await run(["remote", "add", "team", pg.url], store) }
            _ = try await run(["fetch", "cars", "--details"], a)
            _ = try await run(["remote", "push"], a)
            _ = try await run(["remote", "release", "cars"], a)
            _ = try await run(["remote", "pull"], b)
            server.version = 2
            _ = try await run(["fetch", "cars", "--details"], b)
            _ = try await run(["remote", "push"], b)
            _ = try await run(["remote", "release", "cars"], b)
            let status = try await run(["remote", "status"], a)
            #expect(status.contains("lease: cars released by node"), "\(status)")
            _ = try await run(["remote", "pull"], a)
            _ = try await run(["forget", "cars", "3", "--reason", "asked"], a)
            let pushed = try await strata(["remote", "push"], store: a)
            #expect(
                pushed.status == 0 && pushed.stdout.contains("pushed 1 event(s) (") && pushed.stdout.contains(" already there), 1 body the log lacked ("),
                "\(pushed.stdout)\(pushed.stderr)")
            _ = try await run(["remote", "pull"], b)
            for store in [a, b] {
                let shown = try await strata(["show", "cars", "3"], store: store)
                #expect(shown.status == 3 && shown.stderr.contains("erased at seq"), "\(shown.stdout)\(shown.stderr)")
                #expect(!(try await run(["list", "cars", "--format", "json"], store)).contains("\"id\": \"3\""))
            }
            // Another node's live lease refuses a write up front, naming the holder.
            _ = try await run(["remote", "release", "cars"], a)
            _ = try await run(["fetch", "cars"], b)
            let refused = try await strata(["forget", "cars", "4", "--reason", "asked"], store: a)
            #expect(refused.status == 5 && refused.stderr.contains("the lease on cars is held by node"), "\(refused.stderr)")
            _ = try await run(["remote", "sync"], b)
            _ = try await run(["remote", "pull"], a)
            try await Self.expectSameProjections([a, b])
            // Retention applied by one node (its compact takes the lease): pushed, pulled, and
            // the nodes still fold the same projections; a third node that pulls everything
            // afterwards receives the dropped bodies as dropped, and agrees too.
            _ = try await run(["remote", "release", "cars"], b)
            _ = try await run(["source", "change", "cars", "--keep-versions", "1"], a)
            let compacted = try await run(["compact"], a)
            #expect(compacted.contains("retention: cars dropped"), "\(compacted)")
            _ = try await run(["remote", "push"], a)
            _ = try await run(["remote", "pull"], b)
            let c = makeStoreDir()
            _ = try await run(["remote", "add", "team", pg.url], c)
            _ = try await run(["remote", "pull"], c)
            try await Self.expectSameProjections([a, b, c])
        }
        _ = pg
    }

    /// Redaction is a team property: the key is handed around as a file and the history records
    /// which one it is redacted with. A node with another key is refused (exit 4, nothing
    /// appended) instead of recording every redacted value as changed; with the team's key, a
    /// refetch of unchanged data changes nothing and the nodes fold identical projections. A
    /// store that redacted alone under its own key cannot push into the team's history.
    @Test func nodesShareOneRedactionKey() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { server in
            let (a, b, c) = (makeStoreDir(), makeStoreDir(), makeStoreDir())
            let key = makeStoreDir() + ".redaction.key"
            func run(_ args: [String], _ store: String) async throws -> String {
                let r = try await strata(args, store: store)
                #expect(r.status == 0, "\(args): \(r.stdout)\(r.stderr)")
                return r.stdout + r.stderr
            }
            func events(_ store: String) async throws -> Int {
                try await strata(["log", "--limit", "100000", "--format", "ndjson"], store: store).stdout.split(separator: "\n").count
            }
            let add = [
                "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                "--page-param", "page", "--page-size", "10", "--redact", "description"
            ]
            _ = try await run(add, a)
            for store in [a, b] { _ = try await run(["remote", "add", "team", pg.url], store) }
            _ = try await run(["fetch", "cars"], a)
            _ = try await run(["remote", "push"], a)
            _ = try await run(["remote", "release", "cars"], a)
            _ = try await run(["remote", "pull"], b)
            // B's own key is not the history's: refused, nothing appended.
            let before = try await events(b)
            let refused = try await strata(["fetch", "cars"], store: b)
            #expect(
                refused.status == 4 && refused.stderr.contains("is not the one its history is redacted with")
                    && refused.stderr.contains("strata key redaction install"), "\(refused.stderr)")
            #expect(try await events(b) == before)
            // With the team's key, B sees A's data unchanged.
            let exported = try await run(["key", "redaction", "export", key], a)
            #expect(exported.contains("wrote the redaction key (check "), "\(exported)")
            let keyHex = try #require(FileManager.default.contents(atPath: key)).map { String(format: "%02x", $0) }.joined()
            #expect(keyHex.count == 64 && !exported.contains(String(keyHex.prefix(16))), "the key itself is never printed")
            _ = try await run(["key", "redaction", "install", key], b)
            let shown = try await run(["key", "redaction"], b)
            #expect(shown.contains("the history is redacted with: check") && !shown.contains("they differ"), "\(shown)")
            let refetched = try await run(["fetch", "cars"], b)
            #expect(refetched.contains("+0 added, ~0 changed, -0 removed"), "\(refetched)")
            _ = try await run(["remote", "push"], b)
            _ = try await run(["remote", "release", "cars"], b)
            _ = try await run(["remote", "pull"], a)
            try await Self.expectSameProjections([a, b])
            // C redacted alone, under its own key: its push is refused, the team log unchanged.
            _ = try await run(add, c)
            _ = try await run(["fetch", "cars"], c)
            _ = try await run(["remote", "add", "team", pg.url], c)
            let pushed = try await strata(["remote", "push"], store: c)
            #expect(pushed.status == 4 && pushed.stderr.contains("redacted with another key"), "\(pushed.stdout)\(pushed.stderr)")
            let status = try await run(["remote", "status"], a)
            #expect(status.contains("behind: 0 event(s)"), "\(status)")
        }
        _ = pg
    }

    static func idsBySeq(_ ndjson: String) -> [String] {
        ndjson.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return "\(o["seq"] ?? "")/\(o["id"] ?? "")"
        }
    }

    /// The cross-node oracle: every store verifies against its own rebuild, and all of them hold
    /// the same digest for every projection (two nodes that pulled the same log fold the same).
    static func expectSameProjections(_ stores: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var digests: [[String]] = []
        for store in stores {
            let v = try await strata(["verify", "--format", "json"], store: store)
            #expect(v.status == 0, "\(store): \(v.stdout)\(v.stderr)", sourceLocation: sourceLocation)
            digests.append(Self.digests(v.stdout))
        }
        #expect(!digests[0].isEmpty && digests.allSatisfy { $0 == digests[0] }, "\(digests)", sourceLocation: sourceLocation)
    }

    static func digests(_ verifyJSON: String) -> [String] {
        guard let o = try? JSONSerialization.jsonObject(with: Data(verifyJSON.utf8)) as? [String: Any],
            let ps = o["projections"] as? [[String: Any]]
        else { return [] }
        return ps.map { "\($0["name"] ?? "")=\($0["digest"] ?? "")" }
    }

    /// A fetch in a store that shares a team log takes its source's lease first: another node's
    /// fetch of the source is refused (exit 5, nothing appended) while the lease lives, `--force`
    /// takes it over (and the first node's later pushes of the source are refused), and a team
    /// log out of reach lets the fetch go on with a warning.
    @Test func aFetchTakesItsSourcesLeaseFirst() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { server in
            let (a, b, c) = (makeStoreDir(), makeStoreDir(), makeStoreDir())
            for store in [a, b, c] {
                #expect(
                    try await strata(
                        [
                            "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                            "--page-param", "page", "--page-size", "10"
                        ], store: store
                    ).status == 0)
            }
            for store in [a, b] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
            func events(_ store: String) async throws -> Int {
                try await strata(["log", "--limit", "100000", "--format", "ndjson"], store: store).stdout.split(separator: "\n").count
            }
            let first = try await strata(["fetch", "cars"], store: a)
            #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
            let status = try await strata(["remote", "status"], store: a)
            #expect(status.stdout.contains("lease: cars held by this node, token 1"), "\(status.stdout)")
            let before = try await events(b)
            let refused = try await strata(["fetch", "cars"], store: b)
            #expect(
                refused.status == 5 && refused.stderr.contains("the lease on cars is held by node") && refused.stderr.contains("--force"), "\(refused.stderr)")
            #expect(try await events(b) == before)
            let forced = try await strata(["fetch", "cars", "--force"], store: b)
            #expect(forced.status == 0 && forced.stderr.contains("took the lease on cars from node"), "\(forced.stderr)")
            #expect(try await strata(["remote", "push"], store: b).status == 0)
            // A lost the lease: its fetch is refused now. Taking it back with --force, A fetches
            // and pushes (its earlier events of cars too, after B's).
            server.version = 2
            #expect(try await strata(["fetch", "cars"], store: a).status == 5)
            #expect(try await strata(["fetch", "cars", "--force"], store: a).status == 0)
            let push = try await strata(["remote", "push"], store: a)
            #expect(push.status == 0, "\(push.stderr)")
            // A team log out of reach: the fetch goes on, with a warning.
            #expect(try await strata(["remote", "add", "down", "postgres://strata@/strata?host=/tmp/strata-pg-none"], store: c).status == 0)
            let offline = try await strata(["fetch", "cars"], store: c, env: ["STRATA_TEAM_TIMEOUT": "3"])
            #expect(offline.status == 0 && offline.stderr.contains("could not lease cars in team log down"), "\(offline.stderr)")
            #expect(try await events(c) > 1)
        }
        _ = pg
    }
}
