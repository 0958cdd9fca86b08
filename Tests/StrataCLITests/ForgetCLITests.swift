import EventStore
import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata forget` through the real binary: an item forgotten after several versions leaves no
/// trace, every other item reads as before, the chain still verifies; SIGKILLs anywhere in a
/// forget leave a consistent store; a second node of a team log applies the same erasure.
@Suite struct ForgetCLITests {
    /// Item 3 as the API's write side serves it in round `round`: values no other item has.
    static func car(_ round: Int, _ marks: [String]) -> String {
        #"{"id":3,"make":"Toyota","model":"\#(marks[0])","price":\#(20_000 + round),"seller":{"name":"\#(marks[1])","city":"Gent"},"image":"/cars/images/3.png"}"#
    }

    /// A cars source over the fixture API with details and images, item 3 changed and fetched
    /// `rounds` times with fresh values; returns the values item 3 ever held.
    static func history(_ fixture: FixtureServer, store: String, rounds: Int) async throws -> [String] {
        let add = try await strata(
            [
                "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                "--page-size", "10", "--detail-url", fixture.baseURL + "/cars/offers/{id}", "--image", "image", "--index", "make"
            ], store: store)
        #expect(add.status == 0, "\(add.stderr)")
        var marks: [String] = []
        for round in 1...rounds {
            fixture.version = min(round, 3)
            let values = ["Model-\(round)-\(UUID().uuidString)", "Seller-\(round)-\(UUID().uuidString)"]
            marks += values
            _ = try await curl(["-X", "PUT", "-H", "Content-Type: application/json", "-d", car(round, values), fixture.baseURL + "/cars/offers/3"])
            let fetch = try await strata(["fetch", "cars", "--details", "--images"], store: store)
            #expect(fetch.status == 0, "\(fetch.stdout) \(fetch.stderr)")
        }
        return marks
    }

    /// The oracle of `forget`: a store that fetched item 3 in every pass and then forgot it reads
    /// exactly as one that folded the same API with item 3 removed from the start: every list at
    /// every pass, every other item's history, every diff between passes, and the schema (seqs
    /// aside: the second store never fetched item 3's details, so its events are fewer).
    @Test func aForgottenItemReadsAsIfTheLogNeverHeldIt() async throws {
        // The API without item 3, in every version: the oracle's fixture.
        let root = makeStoreDir()
        let fm = FileManager.default
        try fm.createDirectory(atPath: root + "/cars", withIntermediateDirectories: true)
        try fm.copyItem(atPath: fixturesRoot + "/cars/images", toPath: root + "/cars/images")
        for v in 1...3 {
            let dir = root + "/cars/v\(v)"
            try fm.copyItem(atPath: fixturesRoot + "/cars/v\(v)", toPath: dir)
            try? fm.removeItem(atPath: dir + "/offers/3.json")
            var list = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/offers.json"))) as? [String: Any])
            var results = try #require(list["results"] as? [[String: Any]])
            results.removeAll { $0["id"] as? Int == 3 }
            list["results"] = results
            list["count"] = results.count
            try JSONSerialization.data(withJSONObject: list).write(to: URL(fileURLWithPath: dir + "/offers.json"))
        }
        let without = FixtureServer(root: root)
        try await without.start()
        defer { Task { await without.stop() } }
        try await withFixtureServer { with in
            let forgot = makeStoreDir(), never = makeStoreDir()
            var passes: [String: [Int]] = [:]
            for (store, server) in [(forgot, with), (never, without)] {
                let add = try await strata(
                    [
                        "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                        "--page-size", "10", "--detail-url", server.baseURL + "/cars/offers/{id}", "--image", "image", "--index", "make"
                    ], store: store)
                #expect(add.status == 0, "\(add.stderr)")
                for version in 1...3 {
                    server.version = version
                    let fetch = try await strata(["fetch", "cars", "--details", "--images"], store: store)
                    #expect(fetch.status == 0, "\(fetch.stderr)")
                    let head = try jsonObject(try await strata(["log", "--format", "json", "--limit", "1"], store: store).stdout) as? [[String: Any]]
                    passes[store, default: []].append(try #require(head?.first?["seq"] as? Int))
                }
            }
            let forget = try await strata(["forget", "cars", "3", "--reason", "oracle"], store: forgot)
            #expect(forget.status == 0, "\(forget.stderr)")

            /// A read with every seq, time and hash left out, and the schema's examples (the value
            /// of whichever detail was folded first: details are fetched side by side, so their
            /// order differs between any two fetches): what the two stores must agree on.
            func reads(_ store: String, _ base: String) async throws -> [String] {
                let seqFree = { (raw: String) throws -> String in
                    let text = raw.replacingOccurrences(of: base, with: "BASE")
                    func strip(_ v: Any) -> Any {
                        if let o = v as? [String: Any] {
                            return o.filter {
                                ![
                                    "seq", "firstSeq", "changedSeq", "fromSeq", "toSeq", "recordedAt", "observedAt", "run", "hash", "lastChangedSeq",
                                    "firstSeenSeq", "lastSeenSeq", "examples"
                                ].contains($0.key)
                            }
                            .mapValues(strip)
                        }
                        if let a = v as? [Any] { return a.map(strip) }
                        return v
                    }
                    let data = try JSONSerialization.data(withJSONObject: strip(try jsonObject(text)), options: [.sortedKeys])
                    return String(decoding: data, as: UTF8.self)
                }
                var out: [String] = []
                let at = try #require(passes[store])
                for (i, seq) in at.enumerated() {
                    out.append(try seqFree(try await strata(["list", "cars", "--as-of", String(seq), "--format", "json"], store: store).stdout))
                    if i > 0 {
                        let diff = try await strata(["diff", "cars", "--from", String(at[i - 1]), "--to", String(seq), "--format", "json"], store: store)
                        out.append(try seqFree(diff.stdout))
                    }
                }
                for id in ["1", "2", "4", "9", "17", "24", "25"] {
                    let history = try await strata(["history", "cars", id, "--format", "json"], store: store)
                    out.append(history.status == 0 ? try seqFree(history.stdout) : "no history of \(id)")
                }
                out.append(try seqFree(try await strata(["schema", "cars", "--format", "json"], store: store).stdout))
                out.append(try await strata(["show", "cars", "3", "--offline", "--format", "json"], store: store).status == 3 ? "3 absent" : "3 present")
                return out
            }
            let (a, b) = (try await reads(forgot, with.baseURL), try await reads(never, without.baseURL))
            #expect(a.count == b.count)
            for (x, y) in zip(a, b) where x != y {
                let at = zip(x, y).prefix { $0 == $1 }.count
                let window = { (t: String) in String(t.dropFirst(max(0, at - 150)).prefix(400)) }
                Issue.record("the forgotten store reads …\(window(x))… where the oracle reads …\(window(y))…")
            }
            #expect(try await strata(["verify"], store: forgot).status == 0)
        }
    }

    @Test func aForgottenItemLeavesNoTraceAndEverythingElseReadsAsBefore() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            var marks = try await Self.history(fixture, store: store, rounds: 4)
            // Its content also reaches a notification (an alert on its model) and a local edit
            // still in the outbox: both are erased with it, and neither is sent afterwards.
            #expect(try await strata(["alert", "add", "cars", "models", "--on", "changed", "--field", "model", "--exec", "true"], store: store).status == 0)
            let fifth = ["Model-5-\(UUID().uuidString)", "Seller-5-\(UUID().uuidString)"]
            marks += fifth
            _ = try await curl(["-X", "PUT", "-H", "Content-Type: application/json", "-d", Self.car(5, fifth), fixture.baseURL + "/cars/offers/3"])
            #expect(try await strata(["fetch", "cars", "--details", "--images"], store: store).status == 0)
            let local = "Local-\(UUID().uuidString)"
            marks.append(local)
            #expect(try await strata(["source", "change", "cars", "--update-url", fixture.baseURL + "/cars/offers/{id}"], store: store).status == 0)
            #expect(try await strata(["config", "set", "user", "alice"], store: store).status == 0)
            let edit = try await strata(["edit", "cars", "3", "--set", "model=\(local)"], store: store)
            #expect(edit.status == 0, "\(edit.stderr)")
            let exported = try await strata(["export", "--events", "--payloads"], store: store).stdout
            let queued = exported.split(separator: "\n").filter { $0.contains("NotificationQueued") }
            #expect(queued.count == 1 && queued[0].contains(fifth[0]), "the notification carries the new model: \(queued)")
            let others = ["1", "2", "9", "17", "24"]
            func reads() async throws -> [String: String] {
                var out: [String: String] = [:]
                for id in others {
                    for args in [["show", "cars", id, "--offline"], ["history", "cars", id]] {
                        let r = try await strata(args + ["--format", "json"], store: store)
                        #expect(r.status == 0, "\(args): \(r.stderr)")
                        out[args.joined(separator: " ")] = r.stdout
                    }
                }
                return out
            }
            let listBefore = try #require(
                try jsonObject(try await strata(["list", "cars", "--format", "json", "--limit", "100"], store: store).stdout) as? [[String: Any]])
            let before = try await reads()
            #expect(listBefore.contains { $0["id"] as? String == "3" })

            let forget = try await strata(["forget", "cars", "3", "--reason", "GDPR request 114"], store: store)
            #expect(forget.status == 0 && forget.stdout.contains("forgot 1 item(s) of cars at seq"), "\(forget.stdout) \(forget.stderr)")
            let seq = try #require(forget.stdout.split(separator: " ").firstIndex(of: "seq").map { forget.stdout.split(separator: " ")[$0 + 1].dropLast() })

            // Every other item reads byte for byte as before; the list is the list without it.
            let after = try await reads()
            for (k, v) in before { #expect(after[k] == v, "\(k) changed") }
            let listAfter = try #require(
                try jsonObject(try await strata(["list", "cars", "--format", "json", "--limit", "100"], store: store).stdout) as? [[String: Any]])
            #expect(listAfter.map { $0["id"] as? String } == listBefore.filter { $0["id"] as? String != "3" }.map { $0["id"] as? String })
            for command in ["show", "history"] {
                let r = try await strata([command, "cars", "3"], store: store)
                #expect(r.status == 3 && r.stderr.contains("erased at seq \(seq): GDPR request 114"), "\(command): \(r.status) \(r.stderr)")
            }
            let forgottenAgain = try await strata(["forget", "cars", "3", "--reason", "again"], store: store)
            #expect(
                forgottenAgain.status == 3 && forgottenAgain.stderr.contains("erased at seq \(seq)"),
                "\(forgottenAgain.status) \(forgottenAgain.stdout) \(forgottenAgain.stderr)")

            let verify = try await strata(["verify"], store: store)
            #expect(verify.status == 0 && verify.stdout.contains("bodies rewritten by seq \(seq) (forget)"), "\(verify.stdout)")
            let served = try await Listening.start(["serve", "--port", "0"], store: store)
            let gone = try await RawHTTP.request(served.base, "/cars/offers/3")
            let goneText = String(decoding: gone.body, as: UTF8.self)
            #expect(gone.status == 410 && goneText.contains("erased at seq \(seq)"), "\(gone.status) \(goneText)")
            _ = try await served.stop()

            // After a compaction no byte of what it held is left in the store's files, its
            // decoded bodies or an export; the log still verifies.
            #expect(try await strata(["compact"], store: store).status == 0)
            let files = try storeBytes(store)
            let events = try await strata(["export", "--events", "--payloads"], store: store).stdout
            let har = TestScratch.path("forget") + ".har"
            #expect(try await strata(["export", "cars", "--har", har], store: store).status == 0)
            let harBytes = [UInt8](FileManager.default.contents(atPath: har) ?? Data())
            for mark in marks {
                let found = files.contains(bytes: Array(mark.utf8)) || events.contains(mark) || harBytes.contains(bytes: Array(mark.utf8))
                #expect(!found, "\(mark) is still in the store")
            }
            #expect(events.contains("ItemForgotten"), "the erasure itself stays in the log")
            let outbox = try await strata(["outbox", "--all", "--format", "json"], store: store)
            let writes = try #require(try jsonObject(outbox.stdout) as? [[String: Any]])
            #expect(writes.count == 1 && writes[0]["state"] as? String == "dropped", "\(outbox.stdout)")
            #expect(try await strata(["outbox"], store: store).stdout.contains("the outbox is empty"))
            let deliver = try await strata(["alert", "deliver"], store: store)
            #expect(deliver.status == 0 && deliver.stdout.contains("delivered 0") && deliver.stdout.contains("pending 0"), "\(deliver.stdout)")
            let again = try await strata(["verify"], store: store)
            #expect(again.status == 0 && again.stdout.contains("(forget)"), "\(again.stdout)")
        }
    }

    /// An alert's figures survive a forget of the item its notifications were about: one
    /// delivered before the forget stays delivered; one still pending is erased and leaves the
    /// pending count, never sent. A rebuild from the log gives the same figures.
    @Test func aForgetKeepsWhatWasDeliveredAndDropsWhatWasPending() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            _ = try await Self.history(fixture, store: store, rounds: 2)
            #expect(try await strata(["alert", "add", "cars", "models", "--on", "changed", "--field", "model", "--exec", "true"], store: store).status == 0)
            func change(_ round: Int) async throws {
                let values = ["Model-\(round)-\(UUID().uuidString)", "Seller-\(round)-\(UUID().uuidString)"]
                _ = try await curl(["-X", "PUT", "-H", "Content-Type: application/json", "-d", Self.car(round, values), fixture.baseURL + "/cars/offers/3"])
                #expect(try await strata(["fetch", "cars", "--details"], store: store).status == 0)
            }
            func figures() async throws -> [Int] {
                let r = try await strata(["alert", "list", "--format", "json"], store: store)
                let alert = try #require((try jsonObject(r.stdout) as? [[String: Any]])?.first, "\(r.stdout) \(r.stderr)")
                return ["pending", "delivered", "failed"].map { alert[$0] as? Int ?? -1 }
            }
            try await change(3)
            let first = try await strata(["alert", "deliver"], store: store)
            #expect(first.stdout.contains("delivered 1") && first.stdout.contains("pending 0"), "\(first.stdout)\(first.stderr)")
            try await change(4)
            #expect(try await figures() == [1, 1, 0])

            #expect(try await strata(["forget", "cars", "3", "--reason", "asked"], store: store).status == 0)
            #expect(try await figures() == [0, 1, 0])
            let after = try await strata(["alert", "deliver"], store: store)
            #expect(after.stdout.contains("delivered 0") && after.stdout.contains("pending 0"), "\(after.stdout)")
            #expect(try await strata(["rebuild"], store: store).status == 0)
            #expect(try await figures() == [0, 1, 0])
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    /// SIGKILL anywhere in a forget: the next command finds the store consistent, the item either
    /// still there (killed before its event) or erased, never half of each.
    @Test func forgetsKilledAnywhereLeaveAConsistentStore() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["STRATA_FORGET_KILLS"] ?? "") ?? 20
        try await withFixtureServer { fixture in
            let template = makeStoreDir()
            _ = try await Self.history(fixture, store: template, rounds: 3)
            // How long one forget takes here, so the kills land anywhere inside one.
            let timing = makeStoreDir()
            try? FileManager.default.removeItem(atPath: timing)
            try FileManager.default.copyItem(atPath: template, toPath: timing)
            let clock = ContinuousClock()
            let started = clock.now
            #expect(try await strata(["forget", "cars", "3", "--reason", "timing"], store: timing).status == 0)
            let elapsed = clock.now - started
            let ms = max(40, Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000))
            var rng = SystemRandomNumberGenerator()
            var (before, erased, finished) = (0, 0, 0)
            for _ in 0..<kills {
                let store = makeStoreDir()
                try? FileManager.default.removeItem(atPath: store)
                try FileManager.default.copyItem(atPath: template, toPath: store)
                let (p, _, _) = try startStrata(["forget", "cars", "3", "--reason", "killed"], store: store)
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...ms, using: &rng)))
                if p.isRunning { kill(p.processIdentifier, SIGKILL) } else { finished += 1 }
                try await waitForExit(p)
                let verify = try await strata(["verify"], store: store)
                #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
                let show = try await strata(["show", "cars", "3", "--offline"], store: store)
                if show.status == 0 {
                    before += 1
                    // Forgetting it now works as if nothing had happened.
                    #expect(try await strata(["forget", "cars", "3", "--reason", "again"], store: store).status == 0)
                    #expect(try await strata(["verify"], store: store).status == 0)
                } else {
                    #expect(show.status == 3 && show.stderr.contains("erased at seq"), "\(show.stderr)")
                    erased += 1
                }
                #expect(try await strata(["show", "cars", "17", "--offline"], store: store).status == 0)
            }
            #expect(before + erased == kills)
            print("forget kills: \(kills - finished) killed, \(finished) finished; \(before) before the event, \(erased) erased after; one forget \(ms) ms")
        }
    }

    /// A second node of a team log: the erasure it pulls is applied there too.
    @Test func aPulledErasureIsAppliedOnTheOtherNode() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { fixture in
            let (a, b) = (makeStoreDir(), makeStoreDir())
            let marks = try await Self.history(fixture, store: a, rounds: 2)
            for store in [a, b] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
            #expect(try await strata(["remote", "push"], store: a).status == 0)
            #expect(try await strata(["remote", "pull"], store: b).status == 0)
            #expect(try await strata(["show", "cars", "3", "--offline"], store: b).status == 0)
            let bodiesBefore = try Self.teamLogBodies(pg)
            #expect(marks.contains { mark in bodiesBefore.contains { $0.contains(mark) } }, "the team log held the item's values before")
            #expect(try await strata(["forget", "cars", "3", "--reason", "erase everywhere"], store: a).status == 0)
            let pushed = try await strata(["remote", "push"], store: a)
            #expect(pushed.status == 0 && pushed.stdout.contains("erased bodies replaced in the log"), "\(pushed.stdout)")
            // The team log keeps no more than the node that erased: no body in it holds a value.
            let bodiesAfter = try Self.teamLogBodies(pg)
            #expect(bodiesAfter.count == bodiesBefore.count + 1, "the erasure event's body joined, nothing left")
            for mark in marks { #expect(!bodiesAfter.contains { $0.contains(mark) }, "\(mark) in the team log's bodies") }
            let pull = try await strata(["remote", "pull"], store: b)
            #expect(pull.status == 0, "\(pull.stderr)")
            let show = try await strata(["show", "cars", "3"], store: b)
            #expect(show.status == 3 && show.stderr.contains("erase everywhere"), "\(show.status) \(show.stderr.suffix(400))")
            let verify = try await strata(["verify"], store: b)
            #expect(verify.status == 0 && verify.stdout.contains("(forget)"), "\(verify.stdout)")
            for args in [["list", "cars", "--format", "json"], ["history", "cars", "17", "--format", "json"]] {
                let x = try await strata(args, store: a), y = try await strata(args, store: b)
                #expect(x.stdout == y.stdout, "\(args)")
            }
            #expect(try await strata(["compact"], store: b).status == 0)
            let events = try await strata(["export", "--events", "--payloads"], store: b).stdout
            for mark in marks { #expect(!events.contains(mark), "\(mark) on the second node") }
        }
        _ = pg
    }

    /// Every body the team log holds, decoded, as text.
    static func teamLogBodies(_ pg: PostgresServer) throws -> [String] {
        try pg.psql("SELECT encode(stored, 'hex') FROM strata_bodies").split(separator: "\n").map { hex in
            let stored = try #require([UInt8](hex: String(hex)))
            return String(decoding: try PortableBody.decode(stored), as: UTF8.self)
        }
    }

    /// A store that forgot an item before it ever pushed: the log receives the erased forms, and a
    /// node pulling them checks each against the erasure event's list instead of refusing it.
    @Test func anErasureMadeBeforeTheFirstPushReachesANewNodeErased() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { fixture in
            let (a, c) = (makeStoreDir(), makeStoreDir())
            let marks = try await Self.history(fixture, store: a, rounds: 2)
            #expect(try await strata(["forget", "cars", "3", "--reason", "before sharing"], store: a).status == 0)
            for store in [a, c] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
            let push = try await strata(["remote", "push"], store: a)
            #expect(push.status == 0, "\(push.stderr)")
            let pull = try await strata(["remote", "pull"], store: c)
            #expect(pull.status == 0, "\(pull.stderr)")
            let show = try await strata(["show", "cars", "3", "--offline"], store: c)
            #expect(show.status == 3 && show.stderr.contains("before sharing"), "\(show.stderr)")
            #expect(try await strata(["verify"], store: c).status == 0)
            let x = try await strata(["list", "cars", "--format", "json"], store: a), y = try await strata(["list", "cars", "--format", "json"], store: c)
            #expect(x.stdout == y.stdout)
            let events = try await strata(["export", "--events", "--payloads"], store: c).stdout
            for mark in marks { #expect(!events.contains(mark), "\(mark) on the new node") }
            // The new node holds the erased bodies as the erasing node does (under the originals'
            // digests, with the erasure's rows): the same projections, the HTTP cache included,
            // and verify names the same rewrites.
            var digests: [[String]] = []
            var rewritten: [String] = []
            for store in [a, c] {
                let v = try await strata(["verify", "--format", "json"], store: store)
                #expect(v.status == 0, "\(v.stdout)\(v.stderr)")
                digests.append(TeamLogCLITests.digests(v.stdout))
                rewritten.append(try await strata(["verify"], store: store).stdout.split(separator: "\n").filter { $0.contains("rewritten") }.joined())
            }
            #expect(!digests[0].isEmpty && digests[0] == digests[1], "\(digests)")
            #expect(!rewritten[0].isEmpty && rewritten[0] == rewritten[1], "\(rewritten)")
        }
        _ = pg
    }
}
