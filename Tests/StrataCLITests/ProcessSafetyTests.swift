import Foundation
import StrataTestSupport
import LMDB
import Testing

/// Several processes against one store: LMDB serializes writers across processes; readers see
/// consistent snapshots; a writer killed at any point loses at most its uncommitted batch.
@Suite(.serialized) struct ProcessSafetyTests {
    @Test func twoWriterProcessesAtOnceBothSucceedSerialized() async throws {
        let store = makeStoreDir()
        let a = try startStrata(["_append-loop", "--count", "300", "--batch", "7", "--id-prefix", "A", "--seed", "1"], store: store)
        let b = try startStrata(["_append-loop", "--count", "300", "--batch", "5", "--id-prefix", "B", "--seed", "2"], store: store)
        try await waitForExit(a.0); try await waitForExit(b.0)
        #expect(a.0.terminationStatus == 0 && b.0.terminationStatus == 0)
        let v = try await strata(["verify", "--format", "json"], store: store)
        let o = try #require(try jsonObject(v.stdout) as? [String: Any])
        #expect(v.status == 0 && o["headSeq"] as? Int == 600, "\(v.stdout)")
        let ids = try await strata(["log", "--limit", "1000", "--format", "ndjson"], store: store).stdout
        #expect(ids.components(separatedBy: "\"id\":\"A-").count - 1 == 300)
        #expect(ids.components(separatedBy: "\"id\":\"B-").count - 1 == 300)
    }

    @Test func readerProcessesSeeConsistentSnapshotsWhileAWriterAppends() async throws {
        let store = makeStoreDir()
        try await strata(["_append-loop", "--count", "10"], store: store)
        let writer = try startStrata(["_append-loop", "--count", "3000", "--batch", "3", "--id-prefix", "w"], store: store)
        var reads = 0
        while writer.0.isRunning || reads < 4 {
            // verify without projections checks the chain of whatever snapshot it gets.
            let v = try await strata(["verify", "--skip-projections", "--format", "json"], store: store)
            #expect(v.status == 0, "\(v.stdout) \(v.stderr)")
            let log = try await strata(["log", "--limit", "3", "--format", "json"], store: store)
            #expect(log.status == 0)
            reads += 1
            if reads > 200 { break }
        }
        try await waitForExit(writer.0)
        #expect(writer.0.terminationStatus == 0)
        #expect(reads >= 4)
        #expect(try await strata(["verify"], store: store).status == 0)
    }

    /// A child appending in a loop is killed with SIGKILL at random points. After every kill the
    /// store opens, `verify` passes (gapless seqs, intact chain, projections equal a rebuild), no
    /// batch is partial, and a re-run completes the job without duplicating anything.
    @Test func killedWritersLeaveAnIntactStore() async throws {
        let iterations = Int(ProcessInfo.processInfo.environment["STRATA_CRASH_ITERATIONS"] ?? "") ?? 20
        // A new store every 50 kills, so `verify` after each kill stays cheap at any scale.
        for chunk in stride(from: 0, to: iterations, by: 50) {
            try await killAppendLoops(count: min(50, iterations - chunk), first: chunk)
        }
    }

    /// `count` kills of an appending child on one new store, then a re-run that completes the job.
    private func killAppendLoops(count: Int, first: Int) async throws {
        let store = makeStoreDir()
        let batch = 6
        let total = 1_000_000
        var rng = SystemRandomNumberGenerator()
        var lastHead = 0
        for i in first..<(first + count) {
            let (p, _, _) = try startStrata(["_append-loop", "--count", "\(total)", "--batch", "\(batch)", "--id-prefix", "crash"], store: store)
            try await Task.sleep(for: .milliseconds(Int.random(in: 40...400, using: &rng)))
            kill(p.processIdentifier, SIGKILL)
            try await waitForExit(p)
            #expect(p.terminationReason == .uncaughtSignal || p.terminationStatus == 0)
            let v = try await strata(["verify", "--format", "json"], store: store)
            // Killed before it made the store: a read makes none, and says there is none.
            if !FileManager.default.fileExists(atPath: store) {
                #expect(v.status == 3 && v.stderr.contains("no store at \(store)"), "iteration \(i): \(v.stderr)")
                continue
            }
            let o = try #require(try jsonObject(v.stdout) as? [String: Any], "iteration \(i): \(v.stderr)")
            #expect(v.status == 0 && o["ok"] as? Bool == true, "iteration \(i): \(v.stdout)")
            let head = o["headSeq"] as? Int ?? -1
            #expect(head % batch == 0, "iteration \(i): a partial batch survived (head \(head))")
            #expect(head >= lastHead)
            lastHead = head
        }
        // Re-running the same job completes it: ids already stored are skipped.
        let target = lastHead + 60
        let rerun = try await strata(["_append-loop", "--count", "\(target)", "--batch", "\(batch)", "--id-prefix", "crash"], store: store)
        #expect(rerun.status == 0)
        let final = try await strata(["verify", "--format", "json"], store: store)
        #expect((try jsonObject(final.stdout) as? [String: Any])?["headSeq"] as? Int == target)
        #expect(final.status == 0)
    }

    enum Tamper: String, CaseIterable, Sendable {
        case envelopeByte, payloadByte, deletedEvent, projectionRow
    }

    @Test(arguments: Tamper.allCases)
    func verifyReportsTampering(_ tamper: Tamper) async throws {
        let store = makeStoreDir()
        #expect(try await strata(["_append-loop", "--count", "40", "--batch", "4"], store: store).status == 0)
        #expect(try await strata(["verify"], store: store).status == 0)
        do {
            var options = EnvironmentOptions()
            options.maxDatabases = 64
            let env = try Environment(path: store, options: options)
            let name =
                switch tamper {
                case .envelopeByte, .deletedEvent: "events"
                case .payloadByte: "bodies"
                case .projectionRow: "p/documents/current"
                }
            let db = try env.write { try env.openDatabase(name, in: $0, create: false) }
            try env.write { txn in
                let c = try txn.cursor(db)
                _ = try c.first()
                let e = try #require(try c.next())  // the second entry
                let key = [UInt8](e.key)
                var value = [UInt8](e.value)
                switch tamper {
                case .deletedEvent:
                    try txn.delete(db, key: key)
                case .payloadByte:
                    value[value.count - 1] ^= 0x01
                    try txn.put(db, key: key, value: value)
                default:
                    value[value.count / 2] ^= 0x20
                    try txn.put(db, key: key, value: value)
                }
            }
        }
        let v = try await strata(["verify"], store: store)
        #expect(v.status == 2, "\(tamper): \(v.stdout)")
        #expect(v.stdout.contains("verify: FAILED"))
        switch tamper {
        case .envelopeByte: #expect(v.stdout.contains("event 2: stored bytes do not match their hash"))
        case .deletedEvent: #expect(v.stdout.contains("seq gap: expected 2, found 3"))
        case .payloadByte: #expect(v.stdout.contains("content does not match its hash") || v.stdout.contains("does not decode"))
        case .projectionRow: #expect(v.stdout.contains("DIFFERS from a rebuild"))
        }
    }
}

@Suite struct ResourceLimitTests {
    /// A full disk (the process's file size limit) fails the append cleanly and keeps the store
    /// intact: the store opens, verifies, and holds only whole batches.
    @Test func aFullDiskGivesACleanErrorAndAnIntactStore() async throws {
        let store = makeStoreDir()
        #expect(try await strata(["_append-loop", "--count", "50", "--batch", "5"], store: store).status == 0)
        let result = try await offPool { () -> RunResult in
            var env = ProcessInfo.processInfo.environment
            env["STRATA_STORE"] = store
            let err = Pipe()
            // Ignore SIGXFSZ so the write fails with EFBIG instead of killing the process.
            let p = try Spawned(
                executable: "/bin/bash",
                arguments: ["-c", "trap '' XFSZ; ulimit -f 2048; exec \"$0\" append-loop --count 200000 --batch 50 --id-prefix big --keys 5000", testAidBinary],
                environment: env, stdin: nil, stdout: nil, stderr: err)
            let e = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return RunResult(status: p.terminationStatus, stdout: "", stderr: String(decoding: e, as: UTF8.self))
        }
        #expect(result.status == 1, "\(result.stderr)")
        // EFBIG at a write says the limit; EIO at the commit's flush says as much as it knows.
        #expect(
            result.stderr.contains("file size limit")
                && (result.stderr.contains("nothing was written") || result.stderr.contains("nothing of this transaction was committed")), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
        let v = try await strata(["verify", "--format", "json"], store: store)
        #expect(v.status == 0, "\(v.stdout)")
        let o = try #require(try jsonObject(v.stdout) as? [String: Any])
        let head = o["headSeq"] as? Int ?? -1
        #expect(head > 50 && (head - 50) % 50 == 0, "head \(head)")
    }
}

extension ResourceLimitTests {
    /// A process killed while holding a read transaction leaves its reader slot behind while other
    /// processes keep the store open (the first opener after everyone closed resets the table
    /// anyway); the next open reclaims it.
    @Test func aStaleReaderSlotFromAKilledProcessIsReclaimed() async throws {
        let store = makeStoreDir()
        #expect(try await strata(["_append-loop", "--count", "20"], store: store).status == 0)
        let (survivor, survivorOut, _) = try startStrata(["_hold-read", "--seconds", "30"], store: store)
        let (victim, victimOut, _) = try startStrata(["_hold-read", "--seconds", "30"], store: store)
        for out in [survivorOut, victimOut] {
            let line = try await offPool { String(decoding: out.fileHandleForReading.availableData, as: UTF8.self) }
            #expect(line.contains("holding"))
        }
        kill(victim.processIdentifier, SIGKILL)
        try await waitForExit(victim)
        let stats = try await strata(["stats", "--format", "json"], store: store)
        let o = try #require(try jsonObject(stats.stdout) as? [String: Any])
        #expect(o["staleReadersCleared"] as? Int == 1)
        let again = try await strata(["stats", "--format", "json"], store: store)
        #expect((try jsonObject(again.stdout) as? [String: Any])?["staleReadersCleared"] as? Int == 0)
        kill(survivor.processIdentifier, SIGKILL)
        try await waitForExit(survivor)
    }
}
