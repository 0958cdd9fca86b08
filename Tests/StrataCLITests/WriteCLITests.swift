import FixtureServer
import Foundation
import StrataJSON
import StrataTestSupport
import Testing

/// Writes through the real binary against the fixture API on loopback: create, edit and delete
/// round trips, sessions, conflicts, offline pushes, crashes, secrets.
@Suite struct WriteCLITests {
    /// The notes dataset (a Firebase-style map) as a writable source.
    static func addNotes(_ server: FixtureServer, store: String, extra: [String] = []) async throws {
        let b = server.baseURL
        let r = try await strata(
            [
                "source", "add", "notes", "--url", b + "/notes/notes", "--id", "@key", "--title", "content", "--index", "created_by",
                "--create-url", b + "/notes/notes", "--update-url", b + "/notes/notes/{id}", "--delete-url", b + "/notes/notes/{id}",
                "--owner-field", "created_by"
            ] + extra, store: store)
        #expect(r.status == 0, "\(r.stderr)")
    }

    static func objects(_ r: RunResult) throws -> [[String: Any]] { (try jsonObject(r.stdout) as? [[String: Any]]) ?? [] }

    @Test func createEditDeleteRoundTrip() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            try await Self.addNotes(server, store: store)
            #expect(try await strata(["fetch", "notes"], store: store).status == 0)
            // No user yet: a clear error, nothing written.
            let anonymous = try await strata(["create", "notes", "--set", "content=x"], store: store)
            #expect(anonymous.status == 64 && anonymous.stderr.contains("config set user"), "\(anonymous.stderr)")
            #expect(try await strata(["config", "set", "user", "alice"], store: store).status == 0)
            #expect(try await strata(["config", "get", "user"], store: store).stdout == "alice\n")
            let c1 = try await strata(["create", "notes", "--set", "content=first of mine", "--format", "json"], store: store)
            #expect(c1.status == 0, "\(c1.stderr)")
            let localID = try #require(try Self.objects(c1).first?["id"] as? String)
            #expect(try await strata(["create", "notes", "--json", "-"], store: store, stdin: Data(#"{"content":"second of mine"}"#.utf8)).status == 0)
            let edit = try await strata(["edit", "notes", "-N6JWiv7KXjw8LYkx9MZ", "--set", "content=note 1, edited"], store: store)
            #expect(
                edit.status == 0 && edit.stdout.contains("~ /content: note 1: dog orbit cloud lazy quick → note 1, edited"), "\(edit.stdout) \(edit.stderr)")
            #expect(try await strata(["delete", "notes", "-NCPbo0DQcp1ERdq2FSe"], store: store).status == 0)

            // Reads show the writes at once, marked pending; the server has none of them yet.
            let mine = try Self.objects(try await strata(["list", "notes", "--mine", "--format", "json"], store: store))
            #expect(mine.count == 2 && mine.allSatisfy { $0["pending"] as? Bool == true }, "\(mine)")
            #expect(mine.contains { $0["id"] as? String == localID })
            let table = try await strata(["list", "notes"], store: store)
            #expect(table.stdout.contains("note 1, edited [pending]") && !table.stdout.contains("note 11:"), "\(table.stdout)")
            #expect(server.item(list: "/notes/notes", key: "-N6JWiv7KXjw8LYkx9MZ")?.value(atPath: "content") == .string("note 1: dog orbit cloud lazy quick"))
            let outbox = try Self.objects(try await strata(["outbox", "--format", "json"], store: store))
            #expect(outbox.map { $0["state"] as? String } == ["pending", "pending", "pending", "pending"])

            let head = try #require(try Self.objects(try await strata(["log", "--format", "json", "--limit", "1"], store: store)).first?["seq"] as? Int)
            let push = try await strata(["push"], store: store)
            #expect(push.status == 0 && push.stdout.contains("4 acknowledged"), "\(push.stdout) \(push.stderr)")
            // As of before the push, reads show what the user saw then: the edit, pending.
            let then = try #require(
                try jsonObject(
                    try await strata(
                        ["show", "notes", "-N6JWiv7KXjw8LYkx9MZ", "--as-of", String(head), "--format", "json"],
                        store: store
                    ).stdout) as? [String: Any])
            #expect(then["pending"] as? Bool == true && (then["document"] as? [String: Any])?["content"] as? String == "note 1, edited", "\(then)")
            // The server has them, each once.
            #expect(server.item(list: "/notes/notes", key: "-N6JWiv7KXjw8LYkx9MZ")?.value(atPath: "content") == .string("note 1, edited"))
            #expect(server.item(list: "/notes/notes", key: "-NCPbo0DQcp1ERdq2FSe") == nil)
            #expect(server.appliedWrites.count == 4 && server.appliedWrites.values.allSatisfy { $0 == 1 })
            // The created items go by the server's ids now, owned by the user.
            let after = try Self.objects(try await strata(["list", "notes", "--mine", "--format", "json"], store: store))
            #expect(after.count == 2 && after.allSatisfy { ($0["id"] as? String)?.hasPrefix("-S") == true && $0["pending"] as? Bool == false }, "\(after)")
            // A following fetch confirms them: nothing changes.
            let fetch = try await strata(["fetch", "notes"], store: store)
            #expect(fetch.stdout.contains("+0 added, ~0 changed, -0 removed"), "\(fetch.stdout)")
            let history = try await strata(["history", "notes", "-N6JWiv7KXjw8LYkx9MZ"], store: store)
            #expect(history.stdout.contains("local") && history.stdout.contains("by alice · patch · acknowledged 200"), "\(history.stdout)")
            let all = try Self.objects(try await strata(["outbox", "--all", "--format", "json"], store: store))
            #expect(all.count == 4 && all.allSatisfy { $0["state"] as? String == "acknowledged" })
            // Oldest first, as the open writes are listed.
            let seqs = all.compactMap { $0["seq"] as? Int }
            #expect(seqs.count == 4 && seqs == seqs.sorted(), "\(seqs)")
            #expect(try await strata(["outbox"], store: store).stdout.contains("the outbox is empty"))
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    @Test func sessionsAreAcceptedOrCancelledAsOne() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let b = server.baseURL
            #expect(try await strata(["source", "add", "catalog", "--url", b + "/catalog/entries", "--title", "text"], store: store).status == 0)
            // A read-only source says how to make it writable.
            #expect(try await strata(["fetch", "catalog"], store: store).status == 0)
            #expect(try await strata(["config", "set", "user", "bob"], store: store).status == 0)
            let readOnly = try await strata(["edit", "catalog", "1001", "--set", "text=x"], store: store)
            #expect(readOnly.status == 64 && readOnly.stderr.contains("--update-url"), "\(readOnly.stderr)")
            #expect(try await strata(["source", "change", "catalog", "--update-url", b + "/catalog/entries/{id}"], store: store).status == 0)

            for (id, text) in [("1001", "alpha"), ("1002", "beta"), ("1003", "gamma")] {
                #expect(try await strata(["edit", "catalog", id, "--set", "text=\(text)", "--session", "batch"], store: store).status == 0)
            }
            #expect(try await strata(["edit", "catalog", "1001", "--set", "confidence=0.9", "--session", "batch"], store: store).status == 0)
            // Staged only: the items are untouched.
            let before = try await strata(["show", "catalog", "1001", "--offline", "--format", "json"], store: store)
            #expect(before.stdout.contains("river brown quick orbit") && !before.stdout.contains("alpha"))
            let shown = try Self.objects(try await strata(["session", "show", "batch", "--format", "json"], store: store))
            let items = try #require(shown.first?["items"] as? [[String: Any]])
            #expect(items.count == 3 && (items.first?["patch"] as? [Any])?.count == 2, "\(items)")
            let accepted = try await strata(["session", "accept", "batch"], store: store)
            #expect(accepted.status == 0 && accepted.stdout.contains("3 patches"), "\(accepted.stdout) \(accepted.stderr)")
            #expect(try await strata(["session", "accept", "batch"], store: store).status == 64)
            let pending = try Self.objects(try await strata(["list", "catalog", "--format", "json"], store: store)).filter { $0["pending"] as? Bool == true }
            #expect(pending.count == 3)
            // The three patches and the acceptance are one append: consecutive seqs.
            let writes = try Self.objects(try await strata(["outbox", "--format", "json"], store: store))
            let seqs = writes.compactMap { ($0["seq"] as? Int) }
            #expect(writes.allSatisfy { $0["session"] as? String == "batch" } && seqs.count == 3 && seqs.max()! - seqs.min()! == 2)

            let push = try await strata(["push", "catalog", "--concurrency", "3"], store: store)
            #expect(push.status == 0, "\(push.stdout) \(push.stderr)")
            #expect(server.item(list: "/catalog/entries", key: "1001")?.value(atPath: "confidence") == .number("0.9"))
            #expect(server.item(list: "/catalog/entries", key: "1003")?.value(atPath: "text") == .string("gamma"))

            // A cancelled session leaves no trace in the items; the cancellation is in the log.
            #expect(try await strata(["edit", "catalog", "1004", "--set", "text=never", "--session", "oops"], store: store).status == 0)
            let cancel = try await strata(["session", "cancel", "oops"], store: store)
            #expect(cancel.status == 0 && cancel.stdout.contains("1 staged edit"), "\(cancel.stdout)")
            let item = try await strata(["show", "catalog", "1004", "--offline", "--format", "json"], store: store)
            #expect(!item.stdout.contains("never"))
            #expect(try await strata(["log", "--format", "json", "--limit", "3"], store: store).stdout.contains("EditSessionCancelled"))
            #expect(try await strata(["session", "list"], store: store).stdout.contains("cancelled"))
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    @Test func aConflictRebasesWhenItCanAndKeepsBothSidesWhenItCannot() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            try await Self.addNotes(server, store: store)
            #expect(try await strata(["fetch", "notes"], store: store).status == 0)
            #expect(try await strata(["config", "set", "user", "carol"], store: store).status == 0)
            let key = "-NDQcp1ERdq2FSer3GTf"
            // A first write: its answer carries the item's ETag, so the next ones send If-Match.
            #expect(try await strata(["edit", "notes", key, "--set", "content=v1 by carol"], store: store).status == 0)
            #expect(try await strata(["push"], store: store).status == 0)

            // Someone else changes another field: 412, the write is rebased and goes through.
            server.changeItem(list: "/notes/notes", key: key, mergePatch: .object(["owner_id": .string("u7")]))
            #expect(try await strata(["edit", "notes", key, "--set", "content=v2 by carol"], store: store).status == 0)
            let rebased = try await strata(["push", "--format", "json"], store: store)
            #expect(rebased.status == 0, "\(rebased.stdout) \(rebased.stderr)")
            let outcome = try #require(((try Self.objects(rebased)).first?["outcomes"] as? [[String: Any]])?.first)
            #expect(outcome["result"] as? String == "acknowledged" && outcome["rebased"] as? Int == 1, "\(outcome)")
            let doc = server.item(list: "/notes/notes", key: key)
            #expect(doc?.value(atPath: "content") == .string("v2 by carol") && doc?.value(atPath: "owner_id") == .string("u7"))

            // Someone else changes the same field: a conflict, both sides kept.
            server.changeItem(list: "/notes/notes", key: key, mergePatch: .object(["content": .string("theirs")]))
            #expect(try await strata(["edit", "notes", key, "--set", "content=mine"], store: store).status == 0)
            let conflicted = try await strata(["push"], store: store)
            #expect(conflicted.status == 1 && conflicted.stdout.contains("1 conflicted") && conflicted.stdout.contains("/content"), "\(conflicted.stdout)")
            let outbox = try await strata(["outbox", "--format", "json"], store: store)
            let w = try #require(try Self.objects(outbox).first)
            let conflict = try #require(w["conflict"] as? [String: Any])
            #expect((conflict["server"] as? [String: Any])?["content"] as? String == "theirs")
            #expect((conflict["local"] as? [String: Any])?["content"] as? String == "mine")
            #expect(try await strata(["outbox"], store: store).stdout.contains("server: theirs  yours: mine"))
            let listed = try await strata(["list", "notes"], store: store)
            #expect(listed.stdout.contains("mine [conflict]"), "\(listed.stdout)")
            let history = try await strata(["history", "notes", key], store: store)
            #expect(history.stdout.contains("conflicted 412: /content"), "\(history.stdout)")
            #expect(server.item(list: "/notes/notes", key: key)?.value(atPath: "content") == .string("theirs"))

            // Retrying sends it over the server's version.
            let seq = try #require(w["seq"] as? Int)
            #expect(try await strata(["outbox", "retry", String(seq)], store: store).status == 0)
            #expect(try await strata(["push"], store: store).status == 0)
            #expect(server.item(list: "/notes/notes", key: key)?.value(atPath: "content") == .string("mine"))
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    @Test func offlineWritesStayPendingAndGoLater() async throws {
        let server = FixtureServer(root: fixturesRoot)
        let port = try await server.start()
        let store = makeStoreDir()
        try await Self.addNotes(server, store: store)
        #expect(try await strata(["fetch", "notes"], store: store).status == 0)
        #expect(try await strata(["config", "set", "user", "dan"], store: store).status == 0)
        await server.stop()
        #expect(try await strata(["create", "notes", "--set", "content=written offline"], store: store).status == 0)
        #expect(try await strata(["edit", "notes", "-N6JWiv7KXjw8LYkx9MZ", "--set", "content=also offline"], store: store).status == 0)
        let offline = try await strata(["push"], store: store)
        #expect(offline.status == 1 && offline.stderr.contains("could not be reached") && offline.stderr.contains("stay pending"), "\(offline.stderr)")
        let outbox = try Self.objects(try await strata(["outbox", "--format", "json"], store: store))
        #expect(outbox.count == 2 && outbox.allSatisfy { $0["state"] as? String == "pending" })
        #expect(try await strata(["list", "notes", "--mine", "--format", "json"], store: store).stdout.contains("written offline"))
        #expect(try await strata(["log", "--limit", "5"], store: store).stdout.contains("WriteFailed"))
        // Back online on the same port: the next push sends both, once.
        let again = FixtureServer(root: fixturesRoot)
        try await again.start(port: port)
        let push = try await strata(["push"], store: store)
        #expect(push.status == 0 && push.stdout.contains("2 acknowledged"), "\(push.stdout) \(push.stderr)")
        #expect(again.appliedWrites.count == 2)
        await again.stop()
    }

    @Test func secretsNeverEnterTheLog() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            try await Self.addNotes(server, store: store, extra: ["--header", "Authorization: Bearer $NOTES_TOKEN"])
            let env = ["NOTES_TOKEN": "s3cr3t-token-value"]
            #expect(try await strata(["fetch", "notes"], store: store, env: env).status == 0)
            #expect(try await strata(["config", "set", "user", "erin"], store: store).status == 0)
            #expect(try await strata(["create", "notes", "--set", "content=private"], store: store).status == 0)
            let push = try await strata(["push", "--format", "json"], store: store, env: env)
            #expect(push.status == 0 && !push.stdout.contains("s3cr3t"))
            let events = try await strata(["export", "--events", "--payloads"], store: store)
            #expect(events.status == 0 && events.stdout.contains("WriteAcknowledged") && !events.stdout.contains("s3cr3t"))
            for file in try FileManager.default.contentsOfDirectory(atPath: store) {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: store + "/" + file))
                #expect(bytes.range(of: Data("s3cr3t-token-value".utf8)) == nil, "the token is in \(file)")
            }
        }
    }

    /// Writes pass the ingest gate as fetched bodies do: a write that would store a value at a
    /// redacted path is refused with nothing appended, and the server's answers to writes that
    /// were sent are stored redacted.
    @Test func writesPassTheIngestGate() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            try await Self.addNotes(server, store: store, extra: ["--redact", "owner_id"])
            #expect(try await strata(["fetch", "notes"], store: store).status == 0)
            #expect(try await strata(["config", "set", "user", "erin"], store: store).status == 0)
            let head = { try await strata(["log", "--format", "json", "--limit", "1"], store: store).stdout }
            let before = try await head()
            let create = try await strata(["create", "notes", "--set", "content=x", "--set", "owner_id=u-private-77"], store: store)
            #expect(create.status != 0 && create.stderr.contains("notes redacts owner_id"), "\(create.stderr)")
            let edit = try await strata(["edit", "notes", "-N6JWiv7KXjw8LYkx9MZ", "--set", "owner_id=u-private-77"], store: store)
            #expect(edit.status != 0 && edit.stderr.contains("notes redacts owner_id"), "\(edit.stderr)")
            #expect(try await head() == before, "a refused write appends nothing")
            // An edit of another field goes, and the server's answer (the whole item) is stored redacted.
            #expect(try await strata(["edit", "notes", "-N6JWiv7KXjw8LYkx9MZ", "--set", "content=edited"], store: store).status == 0)
            let push = try await strata(["push"], store: store)
            #expect(push.status == 0 && push.stdout.contains("1 acknowledged"), "\(push.stdout) \(push.stderr)")
            let real = try #require(server.item(list: "/notes/notes", key: "-N6JWiv7KXjw8LYkx9MZ")?.value(atPath: "owner_id")?.canonicalString)
            let events = try await strata(["export", "--events", "--payloads"], store: store).stdout
            #expect(events.contains("WriteAcknowledged") && !events.contains("u-private-77"))
            #expect(!events.contains("\"owner_id\":\(real)"), "the item's real owner_id is in the log")
        }
    }
}

@Suite(.serialized) struct PushCrashTests {
    /// `strata push` SIGKILLed at random points, again and again, while new writes keep coming:
    /// at the end every write reached the server exactly once (idempotency keys), the store
    /// verifies and the outbox is empty.
    @Test func killedPushesDeliverEveryWriteExactlyOnce() async throws {
        let iterations = Int(ProcessInfo.processInfo.environment["STRATA_PUSH_CRASH_ITERATIONS"] ?? "") ?? 20
        try await withFixtureServer { server in
            let store = makeStoreDir()
            try await WriteCLITests.addNotes(server, store: store)
            #expect(try await strata(["fetch", "notes"], store: store).status == 0)
            #expect(try await strata(["config", "set", "user", "crash"], store: store).status == 0)
            var rng = SystemRandomNumberGenerator()
            var creates = 0, edits = 0
            let existing = ["-N5IVhu6JWiv7KXjw8LY", "-N6JWiv7KXjw8LYkx9MZ", "-NDQcp1ERdq2FSer3GTf", "-NJWiv7KXjw8LYkx9MZl"]
            func resentWrites() async throws -> Int {
                try WriteCLITests.objects(try await strata(["outbox", "--all", "--format", "json"], store: store)).count { ($0["attempts"] as? Int ?? 0) > 1 }
            }
            // Kills land between a write reaching the server and its answer being recorded only
            // if they come while a push runs, and how long one takes to get there depends on the
            // machine's load: every other kill waits for the server to have answered a write of
            // that push. Once the planned kills are done without any such landing, up to twice as
            // many more follow, the random ones spread over a four times longer range, until one
            // has landed.
            var i = 0
            while true {
                if i >= iterations {
                    // Past the plan: go on only while nothing was sent twice (checked every 25).
                    guard iterations >= 100, i < 3 * iterations else { break }
                    if i % 25 == 0, try await resentWrites() > 0 { break }
                }
                // Every iteration adds a write: mostly creates, every fourth an edit.
                if i % 4 == 3 {
                    let r = try await strata(["edit", "notes", existing[(i / 4) % existing.count], "--set", "content=edit \(i)"], store: store)
                    #expect(r.status == 0, "\(r.stderr)")
                    edits += 1
                } else {
                    let r = try await strata(["create", "notes", "--set", "content=crash \(i)"], store: store)
                    #expect(r.status == 0, "\(r.stderr)")
                    creates += 1
                }
                let answered = server.appliedWrites.count + server.replayedWrites
                let (p, _, _) = try startStrata(["push", "--concurrency", String(Int.random(in: 1...8, using: &rng))], store: store)
                if i % 2 == 0 {
                    // At a random moment of the push.
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...(i < iterations ? 60 : 240), using: &rng)))
                } else {
                    // Just after the server has applied (or answered again) a write of this push:
                    // its answer is on the way or being recorded, whatever the machine's load.
                    let deadline = ContinuousClock.now + .seconds(5)
                    while server.appliedWrites.count + server.replayedWrites == answered, p.isRunning, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .microseconds(200))
                    }
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...3_000, using: &rng)))
                }
                kill(p.processIdentifier, SIGKILL)
                try await waitForExit(p)
                if i % 50 == 49 {
                    let v = try await strata(["verify"], store: store)
                    #expect(v.status == 0, "iteration \(i): \(v.stdout) \(v.stderr)")
                }
                i += 1
            }
            let kills = i
            let final = try await strata(["push"], store: store)
            #expect(final.status == 0, "\(final.stdout) \(final.stderr)")
            #expect(try await strata(["outbox"], store: store).stdout.contains("the outbox is empty"))
            // Exactly once: every write's key applied once, and each created note is there once.
            let applied = server.appliedWrites
            #expect(applied.count == creates + edits, "\(applied.count) writes applied of \(creates + edits)")
            #expect(applied.values.allSatisfy { $0 == 1 })
            // The kills did land between a write reaching the server and its answer being
            // recorded: those writes were sent again and answered from their key.
            let resent = try await resentWrites()
            print(
                "push crash: \(kills) kills, \(creates + edits) writes, \(resent) sent more than once, \(server.replayedWrites) answered from their idempotency key"
            )
            if iterations >= 100 { #expect(resent > 0) }
            guard case .object(let notes)? = server.list("/notes/notes") else { Issue.record("the notes list is not a map"); return }
            let contents = notes.values.compactMap { if case .string(let c)? = $0.value(atPath: "content") { c } else { nil } }
            for i in 0..<kills where i % 4 != 3 {
                #expect(contents.count { $0 == "crash \(i)" } == 1, "note crash \(i) is on the server \(contents.count { $0 == "crash \(i)" }) times")
            }
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }
}
