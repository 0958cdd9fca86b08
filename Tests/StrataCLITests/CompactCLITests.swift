import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata compact` through the binary: the freed pages leave the file, every event, body and
/// projection row stays (the same reads, the same projection digests, `verify` ok), an encrypted
/// store stays under its key, a store open in another process is left as it is, and a compaction
/// stopped after its swap only cleans up when run again.
@Suite(.serialized) struct CompactCLITests {
    @Test(arguments: [false, true]) func compactingGivesBackTheFreedSpaceAndKeepsEveryRow(encrypted: Bool) async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let env = encrypted ? ["STRATA_KEY_FILE": TestScratch.path("keys") + "/store.key"] : [:]
            if encrypted { #expect(try await strata(["init", "--encrypt"], store: store, env: env).status == 0) }
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                    "--page-param", "page", "--page-size", "10", "--index", "make",
                    "--detail-url", server.baseURL + "/cars/offers/{id}"
                ], store: store, env: env)
            #expect(add.status == 0, "\(add.stderr)")
            for v in 1...3 {
                server.version = v
                #expect(try await strata(["fetch", "cars", "--details"], store: store, env: env).status == 0)
            }
            // A rebuild writes every projection again: the pages it replaced are free afterwards.
            #expect(try await strata(["rebuild"], store: store, env: env).status == 0)
            let reads = [
                ["list", "cars", "--format", "json"], ["history", "cars", "3", "--format", "json"],
                ["list", "cars", "--where", "make=Kia", "--format", "json"], ["log", "--format", "json"]
            ]
            func snapshot() async throws -> [String] {
                var out: [String] = []
                for args in reads {
                    let r = try await strata(args, store: store, env: env)
                    #expect(r.status == 0, "\(args): \(r.stderr)")
                    out.append(r.stdout)
                }
                return out + [try Self.digests(try await strata(["verify", "--format", "json"], store: store, env: env).stdout)]
            }
            let before = try await snapshot()
            let size = Self.size(store)
            let free = try await Self.freeBytes(store, env: env)
            #expect(free > 0)

            let compact = try await strata(["compact", "--format", "json"], store: store, env: env)
            #expect(compact.status == 0, "\(compact.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(compact.stdout.utf8)) as? [String: Any])
            #expect(report["bytesBefore"] as? Int == size)
            #expect(report["bytesAfter"] as? Int == Self.size(store))
            #expect(Self.size(store) < size, "\(Self.size(store)) bytes after, \(size) before")
            #expect((try FileManager.default.attributesOfItem(atPath: store + "/data.mdb")[.posixPermissions] as? Int) == 0o600)
            #expect(try await snapshot() == before)
            #expect(try await Self.freeBytes(store, env: env) < free / 4)
            #expect(!FileManager.default.fileExists(atPath: store + ".compact"))
            #expect(!FileManager.default.fileExists(atPath: store + "/.strata-compact-swapped"))
            if encrypted {
                #expect(try await strata(["list", "cars"], store: store, env: ["STRATA_KEY_FILE": ""]).status == 4)
            }

            // Open in another process: refused, nothing changed, no copy left behind.
            let (holder, holderOut, _) = try startStrata(["_hold-read", "--seconds", "60"], store: store, env: env)
            let line = try await offPool { String(decoding: holderOut.fileHandleForReading.availableData, as: UTF8.self) }
            #expect(line.contains("holding"))
            let file = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
            let refused = try await strata(["compact"], store: store, env: env)
            #expect(refused.status == 1 && refused.stderr.contains("open in another strata process"), "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")) == file)
            #expect(!FileManager.default.fileExists(atPath: store + ".compact"))
            kill(holder.processIdentifier, SIGKILL)
            try await waitForExit(holder)

            // Stopped after its swap: run again, it only removes the old copy.
            try FileManager.default.createDirectory(atPath: store + ".compact", withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: store + "/.strata-compact-swapped", contents: Data())
            let cleanup = try await strata(["compact"], store: store, env: env)
            #expect(cleanup.status == 0 && cleanup.stdout.contains("removed the old one"), "\(cleanup.stderr)")
            #expect(!FileManager.default.fileExists(atPath: store + ".compact"))
            #expect(try await snapshot() == before)
        }
    }

    /// An import ends packed when asked (or after 1,000 snapshots): the store is as small as a
    /// compaction then makes it, reads and projection digests are those of the same import left
    /// unpacked, and a store another process has open is left as it is, with a note.
    @Test func anImportThatEndsPackedIsWhatACompactionWouldLeave() async throws {
        let dir = TestScratch.path("snapshots")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var files: [String] = []
        for v in 1...40 {
            let items = (1...60).map { #"{"id":\#($0),"price":\#(($0 * 7 + v) % 50),"note":"item \#($0) at \#(v)"}"# }
            let file = dir + "/v\(v).json"
            try Data(#"{"results":[\#(items.joined(separator: ","))]}"#.utf8).write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        func imported(_ flags: [String]) async throws -> (store: String, out: String) {
            let store = makeStoreDir()
            #expect(try await strata(["source", "add", "cars", "--url", "file:///cars.json", "--items", "results"], store: store).status == 0)
            let r = try await strata(["import", "cars"] + files + flags, store: store)
            #expect(r.status == 0, "\(r.stderr)")
            return (store, r.stdout + r.stderr)
        }
        let packed = try await imported(["--pack"]), plain = try await imported([]), never = try await imported(["--no-pack"])
        #expect(packed.out.contains("packed the store: "), "\(packed.out)")
        #expect(!plain.out.contains("packed") && !never.out.contains("packed"), "40 snapshots are no long import")
        #expect(Self.size(packed.store) < Self.size(plain.store), "\(Self.size(packed.store)) packed, \(Self.size(plain.store)) not")
        // The same reads (each import has its own run ids and times), and `verify` finds every
        // projection as a rebuild makes it.
        func stable(_ out: String) -> String {
            out.split(separator: "\n").filter { !$0.contains("\"run\"") && !$0.contains("\"recordedAt\"") }.joined(separator: "\n")
        }
        for args in [["list", "cars", "--format", "json"], ["history", "cars", "7", "--format", "json"], ["count", "cars"]] {
            let a = try await strata(args, store: packed.store), b = try await strata(args, store: plain.store)
            #expect(a.status == 0 && stable(a.stdout) == stable(b.stdout), "\(args)")
        }
        _ = try Self.digests(try await strata(["verify", "--format", "json"], store: packed.store).stdout)
        // A compaction now finds nothing to take out.
        let again = try await strata(["compact", "--format", "json"], store: packed.store)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect(report["bytesAfter"] as? Int == report["bytesBefore"] as? Int, "\(report)")
        // Open in another process: the import stands, the store is left unpacked, and says so.
        let (holder, holderOut, _) = try startStrata(["_hold-read", "--seconds", "60"], store: never.store)
        _ = try await offPool { String(decoding: holderOut.fileHandleForReading.availableData, as: UTF8.self) }
        let more = dir + "/v41.json"
        try Data(#"{"results":[{"id":1,"price":1,"note":"back"}]}"#.utf8).write(to: URL(fileURLWithPath: more))
        let held = try await strata(["import", "cars", more, "--pack"], store: never.store)
        #expect(held.status == 0 && held.stderr.contains("the store was not packed: ") && held.stderr.contains("strata compact"), "\(held.stderr)")
        kill(holder.processIdentifier, SIGKILL)
        try await waitForExit(holder)
        #expect(try await strata(["count", "cars"], store: never.store).stdout.hasPrefix("1 "), "the import stands")
        #expect(!FileManager.default.fileExists(atPath: never.store + ".compact"))
    }

    /// `strata compact` SIGKILLed at random points (while it copies, packs, swaps or cleans up),
    /// again and again. After every kill the store opens at the same head; every few kills, and
    /// at the end after a compaction that finishes, `verify` passes with the same projection
    /// digests, and nothing is left beside the store.
    @Test func compactionsKilledAtAnyPointLoseNothing() async throws {
        let kills = Int(ProcessInfo.processInfo.environment["STRATA_COMPACT_KILLS"] ?? "") ?? 10
        let store = makeStoreDir()
        #expect(try await strata(["_append-loop", "--count", "20000", "--batch", "500", "--keys", "2000"], store: store).status == 0)
        #expect(try await strata(["rebuild"], store: store).status == 0)
        func head() async throws -> Int {
            let stats = try await strata(["stats", "--format", "json"], store: store)
            #expect(stats.status == 0, "\(stats.stderr)")
            return try #require((try jsonObject(stats.stdout) as? [String: Any])?["headSeq"] as? Int)
        }
        let digests = try Self.digests(try await strata(["verify", "--format", "json"], store: store).stdout)
        // How long one compaction takes here, so the kills land anywhere inside one. Timed on the
        // second: the first also packs the envelopes, and kills timed by it mostly came after
        // the (faster) later compactions had finished, each costing a whole compaction.
        #expect(try await strata(["compact"], store: store).status == 0)
        let clock = ContinuousClock()
        let started = clock.now
        #expect(try await strata(["compact"], store: store).status == 0)
        let ms = max(50, Int((clock.now - started).components.seconds * 1000 + (clock.now - started).components.attoseconds / 1_000_000_000_000_000))
        var rng = SystemRandomNumberGenerator()
        var interrupted = 0, finished = 0, midCopy = 0, attempts = 0
        while interrupted < kills, attempts < kills * 20 {
            attempts += 1
            let (p, _, _) = try startStrata(["compact"], store: store)
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...ms, using: &rng)))
            if FileManager.default.fileExists(atPath: store + ".compact") { midCopy += 1 }
            if p.isRunning { kill(p.processIdentifier, SIGKILL); interrupted += 1 } else { finished += 1 }
            try await waitForExit(p)
            #expect(try await head() == 20_000)
            if interrupted % 5 == 0 {
                #expect(try Self.digests(try await strata(["verify", "--format", "json"], store: store).stdout) == digests)
            }
        }
        let last = try await strata(["compact"], store: store)
        #expect(last.status == 0, "\(last.stderr)")
        #expect(try Self.digests(try await strata(["verify", "--format", "json"], store: store).stdout) == digests)
        #expect(!FileManager.default.fileExists(atPath: store + ".compact"))
        #expect(!FileManager.default.fileExists(atPath: store + "/.strata-compact-swapped"))
        #expect(interrupted == kills && midCopy > 0, "\(interrupted) kills, \(midCopy) while a copy was there")
        print("compaction kills: \(interrupted) killed (\(midCopy) while a copy was there), \(finished) finished; one compaction \(ms) ms")
    }

    /// `stats`' bytes in LMDB's free list.
    static func freeBytes(_ store: String, env: [String: String]) async throws -> Int {
        let stats = try await strata(["stats", "--format", "json"], store: store, env: env)
        return try #require((try jsonObject(stats.stdout) as? [String: Any])?["freeBytes"] as? Int)
    }

    static func size(_ store: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: store + "/data.mdb"))?[.size] as? Int) ?? -1
    }

    /// Each projection's name and digest, from `verify --format json` (which must say ok).
    static func digests(_ json: String) throws -> String {
        let o = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(o["ok"] as? Bool == true)
        let projections = o["projections"] as? [[String: Any]] ?? []
        return projections.map { "\($0["name"] ?? "") \($0["digest"] ?? "")" }.joined(separator: "\n")
    }
}
