import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Alerts through the real binary: the fixture server moving between versions on loopback, a
/// real webhook receiver (``WebhookReceiver``), `watch` delivering beside its fetches, and
/// SIGKILL at random points with every expected notification arriving under exactly one id.
@Suite(.serialized) struct AlertCLITests {
    private func addCars(_ server: FixtureServer, store: String, every: String? = nil) async throws {
        var args = ["source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model"]
        if let every { args += ["--every", every, "--jitter", "0"] }
        #expect(try await strata(args, store: store).status == 0)
    }

    private func alerts(_ store: String) async throws -> [[String: Any]] {
        let r = try await strata(["alert", "list", "--format", "json"], store: store)
        return (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [[String: Any]] ?? []
    }

    private func pending(_ store: String) async throws -> Int {
        try await alerts(store).reduce(0) { $0 + ($1["pending"] as? Int ?? 0) }
    }

    @Test func alertsAreCheckedAddedListedTestedAndRemoved() async throws {
        try await withFixtureServer { server in
            let receiver = try WebhookReceiver()
            let store = makeStoreDir()
            try await addCars(server, store: store)
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)

            // Refused clearly, with the position and what was expected.
            let syntax = try await strata(["alert", "add", "cars", "x", "--when", "price <", "--webhook", receiver.url], store: store)
            #expect(syntax.status == 64 && syntax.stderr.contains("--when \"price <\" is not valid at 8: expected a value"), "\(syntax.stderr)")
            let type = try await strata(["alert", "add", "cars", "x", "--when", "price < \"cheap\"", "--webhook", receiver.url], store: store)
            #expect(type.status == 64 && type.stderr.contains("is not valid at"), "\(type.stderr)")
            let both = try await strata(["alert", "add", "cars", "x", "--webhook", receiver.url, "--exec", "true"], store: store)
            #expect(both.status == 64 && both.stderr.contains("exactly one of --webhook URL or --exec COMMAND"))
            let kind = try await strata(["alert", "add", "cars", "x", "--on", "changed,moved", "--webhook", receiver.url], store: store)
            #expect(kind.status == 64 && kind.stderr.contains("unknown change kind \"moved\""), "\(kind.stderr)")
            let scheme = try await strata(["alert", "add", "cars", "x", "--webhook", "ftp://example.com/"], store: store)
            #expect(scheme.status == 64 && scheme.stderr.contains("--webhook must be an http:// or https:// URL"))
            let unknown = try await strata(["alert", "add", "boats", "x", "--webhook", receiver.url], store: store)
            #expect(unknown.status == 3 && unknown.stderr.contains("boats"), "\(unknown.stderr)")
            let name = try await strata(["alert", "add", "cars", "a b", "--webhook", receiver.url], store: store)
            #expect(name.status == 64 && name.stderr.contains("an alert's name"), "\(name.stderr)")

            let add = try await strata(
                ["alert", "add", "cars", "cheaper", "--on", "changed", "--field", "price", "--when", "price < old.price", "--webhook", receiver.url],
                store: store)
            #expect(add.status == 0 && add.stdout.contains("added alert cars/cheaper: changed of price when price < old.price"), "\(add.stderr)")
            let again = try await strata(["alert", "add", "cars", "cheaper", "--webhook", receiver.url], store: store)
            #expect(again.status != 0 && again.stderr.contains("already has an alert named cheaper"), "\(again.stderr)")
            let list = try await alerts(store)
            #expect(list.count == 1 && list[0]["when"] as? String == "price < old.price" && list[0]["pending"] as? Int == 0)
            #expect(try await strata(["alert", "list"], store: store).stdout.contains("cheaper"))

            // A sample reaches the receiver, marked as a test, and queues nothing.
            let test = try await strata(["alert", "test", "cars", "cheaper"], store: store)
            #expect(test.status == 0 && test.stdout.contains("delivered a sample notification test-"), "\(test.stderr)")
            let sample = try #require(receiver.requests.first)
            #expect(sample.method == "POST" && sample.idempotencyKey?.hasPrefix("test-") == true)
            #expect((sample.json as? [String: Any])?["alert"] as? String == "cars/cheaper")
            #expect(try await pending(store) == 0)
            receiver.status = 500
            let down = try await strata(["alert", "test", "cars", "cheaper"], store: store)
            #expect(down.status == 1 && down.stderr.contains("the receiver answered 500"), "\(down.stderr)")

            #expect(try await strata(["alert", "remove", "cars", "cheaper"], store: store).status == 0)
            #expect(try await alerts(store).isEmpty)
            let gone = try await strata(["alert", "remove", "cars", "cheaper"], store: store)
            #expect(gone.status == 3 && gone.stderr.contains("no alert cheaper on cars"))
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    @Test func aChangeNotifiesEachMatchingAlertOnceWithItsPayload() async throws {
        try await withFixtureServer { server in
            let receiver = try WebhookReceiver()
            let store = makeStoreDir()
            let scratch = TestScratch.path("exec")
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            try await addCars(server, store: store)
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            // Added after the first pass: its items are not news.
            for args in [
                ["cheaper", "--on", "changed", "--field", "price", "--when", "price < old.price", "--webhook", receiver.url],
                [
                    "added", "--on", "added", "--exec",
                    "cat > \(scratch)/$STRATA_NOTIFICATION_ID.json; env | grep ^STRATA_ | sort > \(scratch)/$STRATA_NOTIFICATION_ID.env"
                ]
            ] {
                #expect(try await strata(["alert", "add", "cars"] + args, store: store).status == 0)
            }
            #expect(try await strata(["alert", "deliver"], store: store).stdout.contains("queued 0, delivered 0"))
            server.version = 2
            let fetch = try await strata(["fetch", "cars"], store: store)
            #expect(fetch.status == 0)
            #expect(try await pending(store) == 6, "3 cheaper, 3 added")
            let deliver = try await strata(["alert", "deliver"], store: store)
            #expect(deliver.status == 0 && deliver.stdout.contains("delivered 6, not delivered 0, pending 0"), "\(deliver.stdout)\(deliver.stderr)")

            // The webhook: one POST per match, its id the Idempotency-Key, the documented payload.
            let posts = receiver.accepted
            #expect(posts.count == 3)
            let bodies = posts.compactMap { $0.json as? [String: Any] }
            #expect(Set(bodies.compactMap { $0["item"] as? String }) == ["3", "7", "14"] || bodies.count == 3)
            for (post, body) in zip(posts, bodies) {
                #expect(post.headers["content-type"] == "application/json")
                #expect(post.idempotencyKey == body["id"] as? String && (post.idempotencyKey ?? "").hasPrefix("ntf-"))
                #expect(Set(body.keys) == ["id", "alert", "source", "item", "kind", "seq", "observedAt", "title", "changes", "url"])
                #expect(body["alert"] as? String == "cars/cheaper" && body["kind"] as? String == "changed" && body["source"] as? String == "cars")
                let change = try #require((body["changes"] as? [[String: Any]])?.first)
                #expect(change["path"] as? String == "/price" && (change["new"] as? Int ?? 0) < (change["old"] as? Int ?? 0))
                #expect((body["url"] as? String)?.hasSuffix("/_strata/sources/cars/items/\(body["item"] as? String ?? "")") == true)
            }
            let rav4 = try #require(bodies.first { $0["item"] as? String == "3" })
            #expect(rav4["title"] as? String == "RAV4 (3) changed: price 12300 → 11900")
            // The command: the same JSON on stdin, the facts in its environment.
            let files = try FileManager.default.contentsOfDirectory(atPath: scratch).filter { $0.hasSuffix(".env") }
            #expect(files.count == 3)
            for f in files {
                let env = try String(contentsOfFile: scratch + "/" + f, encoding: .utf8)
                let id = String(f.dropLast(4))
                #expect(env.contains("STRATA_NOTIFICATION_ID=\(id)") && env.contains("STRATA_ALERT=cars/added") && env.contains("STRATA_KIND=added"))
                #expect(env.contains("STRATA_SOURCE=cars") && env.contains("STRATA_ITEM="))
                let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: scratch + "/" + id + ".json"))) as? [String: Any]
                #expect(json?["id"] as? String == id && json?["kind"] as? String == "added")
            }

            // Nothing new: nothing sent. Counts and every attempt are in the log.
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            #expect(try await strata(["alert", "deliver"], store: store).stdout.contains("queued 0, delivered 0"))
            #expect(receiver.requests.count == 3)
            let list = try await alerts(store)
            #expect(list.map { $0["delivered"] as? Int } == [3, 3])
            let log = try await strata(["log", "--type", "NotificationDelivered", "--format", "ndjson", "--limit", "100"], store: store)
            #expect(log.stdout.split(separator: "\n").count == 6)
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    @Test func aReceiverDownForAWhileGetsEverythingLateAndInOrder() async throws {
        try await withFixtureServer { server in
            let receiver = try WebhookReceiver()
            receiver.status = 503
            let store = makeStoreDir()
            try await addCars(server, store: store, every: "1s")
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            #expect(try await strata(["alert", "add", "cars", "all", "--webhook", receiver.url], store: store).status == 0)
            let (p, _, err) = try startStrata(["watch"], store: store)
            defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
            server.version = 2
            // Polling goes on while the receiver refuses: v3 is fetched behind the failures.
            try await waitUntil { receiver.requests.count >= 2 }
            server.version = 3
            try await waitUntil {
                let log = try await strata(["log", "--type", "NotificationQueued", "--format", "ndjson", "--limit", "1000"], store: store).stdout
                return log.split(separator: "\n").count >= 12
            }
            #expect(receiver.accepted.isEmpty)
            receiver.status = 200
            try await waitUntil(seconds: 60) { try await pending(store) == 0 }
            kill(p.processIdentifier, SIGTERM)
            try await waitForExit(p)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(p.terminationStatus == 0, "\(stderr)")
            #expect(stderr.contains("notification not delivered") && stderr.contains("outcome=retry") && stderr.contains(" notified"))

            // Each notification accepted once, in the order queued; the refused attempts carried
            // the same ids.
            let accepted = receiver.accepted.compactMap { $0.json as? [String: Any] }
            let ids = accepted.compactMap { $0["id"] as? String }
            #expect(Set(ids).count == ids.count)
            let queued = try await strata(["log", "--type", "NotificationQueued", "--format", "ndjson", "--limit", "1000"], store: store).stdout
                .split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .sorted { ($0["seq"] as? Int ?? 0) < ($1["seq"] as? Int ?? 0) }.compactMap { $0["id"] as? String }
            #expect(ids == queued, "delivered in the order queued")
            #expect(Set(receiver.requests.compactMap(\.idempotencyKey)) == Set(queued))
            let seqs = accepted.compactMap { $0["seq"] as? Int }
            #expect(seqs == seqs.sorted() && Set(seqs).count == 2, "two passes, v2 and v3")
        }
    }

    /// `watch` SIGKILLed at random points while the fixture moves between versions (20 kills here;
    /// `STRATA_ALERT_KILLS=500` in `make stress`). Afterwards every change recorded after the
    /// alert was added reaches the receiver under exactly one id: none lost, none under two ids
    /// (a resend after a kill carries the same Idempotency-Key).
    @Test func watchKilledAtRandomPointsDeliversEveryChangeUnderOneID() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["STRATA_ALERT_KILLS"] ?? "") ?? 20
        try await withFixtureServer { server in
            let receiver = try WebhookReceiver()
            let store = makeStoreDir()
            try await addCars(server, store: store, every: "1s")
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            #expect(try await strata(["alert", "add", "cars", "all", "--webhook", receiver.url], store: store).status == 0)
            var rng = SystemRandomNumberGenerator()
            for k in 0..<kills {
                if k % 2 == 0 { server.version = server.version % 3 + 1 }
                // A flaky receiver too: some attempts fail and are retried under the same id.
                receiver.status = Int.random(in: 0..<5, using: &rng) == 0 ? 503 : 200
                // Slow answers: kills land between a receiver having a notification and the
                // watcher recording it delivered.
                receiver.delay = Int.random(in: 0..<2, using: &rng) == 0 ? 200 : 0
                let (p, _, _) = try startStrata(["watch"], store: store)
                try await Task.sleep(for: .milliseconds(Int.random(in: 150...1_500, using: &rng)))
                kill(p.processIdentifier, SIGKILL)
                try await waitForExit(p)
            }
            receiver.status = 200
            receiver.delay = 0
            // The last version fetched and everything delivered.
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            for _ in 0..<5 where try await pending(store) > 0 { _ = try await strata(["alert", "deliver"], store: store) }
            #expect(try await pending(store) == 0)
            #expect(try await strata(["verify"], store: store).status == 0)

            // What should have been notified: each pass after the alert against the pass before.
            let added = try #require(try await alerts(store).first?["addedSeq"] as? Int)
            let passes = try await strata(["log", "--stream", "cars", "--type", "FetchCompleted", "--format", "ndjson", "--limit", "100000"], store: store)
                .stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .compactMap { $0["seq"] as? Int }.sorted()
            var expected = Set<String>()
            for (before, pass) in zip(passes, passes.dropFirst()) where pass > added {
                let diff = try await strata(["diff", "cars", "--from", String(before), "--to", String(pass), "--format", "json"], store: store)
                let items = (try? JSONSerialization.jsonObject(with: Data(diff.stdout.utf8)) as? [String: Any])?["items"] as? [[String: Any]] ?? []
                for i in items { expected.insert("\(pass)/\(i["id"] as? String ?? "")") }
            }
            var idsOfChange: [String: Set<String>] = [:]
            for r in receiver.accepted {
                guard let b = r.json as? [String: Any], let id = r.idempotencyKey, let seq = b["seq"] as? Int, let item = b["item"] as? String else { continue }
                #expect(b["id"] as? String == id)
                idsOfChange["\(seq)/\(item)", default: []].insert(id)
            }
            // How many versions a watcher saw before its kill depends on the machine's load (a
            // loaded CI run saw 27 changes where an idle one sees 60): the bar only proves the
            // versions changed under the watcher; the checks below are the test.
            #expect(expected.count >= kills / 2, "the versions changed under the watcher: \(expected.count) changes")
            #expect(Set(idsOfChange.keys) == expected, "every change notified, nothing else")
            #expect(idsOfChange.values.allSatisfy { $0.count == 1 }, "one id per change")
            let resent = receiver.accepted.count - Set(receiver.accepted.compactMap(\.idempotencyKey)).count
            print("alert kills: \(kills) kills, \(expected.count) changes notified, \(resent) resent under the same id")
        }
    }
}

/// Polls `condition` every 100 ms for at most `seconds`.
func waitUntil(seconds: Double = 30, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    Issue.record("timed out after \(seconds) s")
}
