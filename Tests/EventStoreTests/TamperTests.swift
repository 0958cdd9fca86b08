@testable import EventStore
import Foundation
import LMDB
import Testing

/// Random single-byte changes to stored envelopes and bodies are all caught by `verify`.
@Suite struct TamperTests {
    @Test func everyFlippedByteInAnEnvelopeOrABodyIsReported() async throws {
        let trials = Int(ProcessInfo.processInfo.environment["STRATA_TAMPER_TRIALS"] ?? "") ?? 1_000
        let store = try await openStore()
        try await appendInBatches(generatedEvents(seed: 99, count: 120), to: store, seed: 99)
        #expect(try await store.verify(checkProjections: false).ok)
        var rng = SplitMix64(seed: 4242)
        let env = store.environment
        let schema = store.schema
        var caught = 0
        for trial in 0..<trials {
            let inBlobs = trial % 2 == 1
            let db = inBlobs ? schema.blobs : schema.events
            // Pick an entry and a byte, flip one bit, verify, restore.
            let (key, original, index) = try env.read { txn -> ([UInt8], [UInt8], Int) in
                let n = try txn.stat(db).entries
                let c = try txn.cursor(db)
                var e = try c.first()
                for _ in 0..<Int(rng.next() % UInt64(n)) { e = try c.next() }
                let value = [UInt8](e!.value)
                return ([UInt8](e!.key), value, Int(rng.next() % UInt64(value.count)))
            }
            var damaged = original
            damaged[index] ^= UInt8(1 << (rng.next() % 8))
            try env.write { txn in try txn.put(db, key: key, value: damaged) }
            let report = try await store.verify(checkProjections: false)
            if !report.ok && report.problemCount > 0 { caught += 1 }
            else { Issue.record("trial \(trial): a flipped bit at byte \(index) of \(inBlobs ? "a body" : "an envelope") went unreported") }
            try env.write { txn in try txn.put(db, key: key, value: original) }
        }
        #expect(caught == trials)
        #expect(try await store.verify().ok)
    }
}
