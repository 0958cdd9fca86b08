@testable import EventStore
import Foundation
import LMDB
import Testing

/// Random single-bit changes to stored envelopes (blocks among them) and bodies (delta chains and
/// chunks among them) are all caught by `verify`, and those the keyless chain check covers by it.
@Suite struct TamperTests {
    @Test func everyFlippedByteInAnEnvelopeOrABodyIsReported() async throws {
        let trials = Int(ProcessInfo.processInfo.environment["STRATA_TAMPER_TRIALS"] ?? "") ?? 1_000
        let store = try await openStore()
        try await appendInBatches(generatedEvents(seed: 99, count: 120), to: store, seed: 99)
        // Versions of one URL: delta chains among the stored bodies.
        for v in 0..<8 { _ = try await store.append(DeltaChainTests.page(v)) }
        #expect(try DeltaChainTests.rows(store).values.filter { $0.codec == BlobCodec.delta }.count == 7)
        _ = try await store.append(Self.largeBodies(seed: 99))
        #expect(try await store.verify(checkProjections: false).ok)
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_TAMPER_SEED"] ?? "") ?? 4242)
        let env = store.environment
        let schema = store.schema
        let chunks = try env.write { try env.openDatabase("bodies.chunks", in: $0) }
        // Envelopes, stored bodies, the hash prefix → seq rows that point to them, and the chunks
        // of large bodies; the chain check without the key covers the envelopes.
        try await Self.flipBits(
            store, at: store.path, tables: [schema.events, schema.bodies, schema.bodyIndex.index, chunks], trials: trials, rng: &rng, label: ""
        ) { $0 == schema.events }
        #expect(try await store.verify().ok)
    }

    /// The same in an encrypted store, on the stored (sealed) rows: every flipped bit in a sealed
    /// envelope, a sealed body, a body-index row or a link of the sealed chain is reported by
    /// `verify` with the key, and those in envelopes, bodies and links also by the chain check
    /// without it.
    @Test func everyFlippedByteInAnEncryptedStoreIsReported() async throws {
        let trials = (Int(ProcessInfo.processInfo.environment["STRATA_TAMPER_TRIALS"] ?? "") ?? 1_000) / 2
        let dir = makeTempDir()
        var options = testOptions()
        options.key = StoreKey.generate()
        let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
        try await appendInBatches(generatedEvents(seed: 98, count: 80), to: store, seed: 98)
        for v in 0..<6 { _ = try await store.append(DeltaChainTests.page(v)) }
        _ = try await store.append(Self.largeBodies(seed: 98))
        #expect(try await store.verify(checkProjections: false).ok)
        #expect(try EventStore.verifyChain(at: dir).problemCount == 0)
        var rng = SplitMix64(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_TAMPER_SEED"] ?? "") ?? 4343)
        let env = store.environment
        let schema = store.schema
        let chain = try #require(schema.sealedChain)
        let chunks = try env.write { try env.openDatabase("bodies.chunks", in: $0) }
        #expect(try env.read { try $0.stat(chunks).entries } > 0)
        try await Self.flipBits(
            store, at: dir, tables: [schema.events, schema.bodies, schema.bodyIndex.index, chain, chunks], trials: trials, rng: &rng, label: ""
        ) { $0 != schema.bodyIndex.index }
        #expect(try await store.verify().ok)
    }

    /// The same in compacted stores, plain and encrypted, whose envelopes are blocks and packed
    /// envelopes (``EnvelopeBlock``): every flipped bit in a stored `events` row (a block among
    /// them, the head's too), a body, a body-index row, a chunk or a link is reported by `verify`,
    /// and those in envelopes, bodies, chunks and links also by the chain check without the key.
    @Test func everyFlippedByteInACompactedStoreIsReported() async throws {
        let trials = (Int(ProcessInfo.processInfo.environment["STRATA_TAMPER_TRIALS"] ?? "") ?? 1_000) / 4
        // Blocks by column (format 11), sealed or not, and the row-wise blocks of a store from before.
        for (encrypted, byColumn) in [(false, true), (true, true), (false, false)] {
            var options = testOptions()
            if encrypted { options.key = StoreKey.generate() }
            let source = try await EventStore.open(at: makeTempDir(), projections: [KeyedDocumentProjection()], options: options)
            try await appendInBatches(PackedEnvelopeTests.events(300, seed: 97), to: source, seed: 97)
            for v in 0..<6 { _ = try await source.append(DeltaChainTests.page(v)) }
            _ = try await source.append(Self.largeBodies(seed: 97))
            let dir = makeTempDir("compacted")
            let store = try await source.compactedCopy(into: dir, envelopesByColumn: byColumn)
            #expect(try await PackedEnvelopeTests.marks(store).contains(byColumn ? EnvelopeBlock.columnsMark : EnvelopeBlock.mark))
            #expect(try await store.verify(checkProjections: false).ok)
            #expect(try EventStore.verifyChain(at: dir).ok)
            var rng = SplitMix64(seed: encrypted ? 4545 : byColumn ? 4444 : 4646)
            let env = store.environment
            let schema = store.schema
            let chunks = try env.write { try env.openDatabase("bodies.chunks", in: $0) }
            let tables = [schema.events, schema.bodies, schema.bodyIndex.index, chunks] + (schema.sealedChain.map { [$0] } ?? [])
            // The chain check without the key covers a plain store's envelopes only.
            try await Self.flipBits(
                store, at: dir, tables: tables, trials: trials, rng: &rng, label: encrypted ? ", encrypted" : byColumn ? "" : ", row-wise blocks"
            ) {
                $0 != schema.bodyIndex.index && (encrypted || $0 == schema.events)
            }
            #expect(try await store.verify().ok)
        }
    }

    /// Flips one bit of a stored row per trial, the tables in turn (every `events` row once
    /// first: those that others depend on, such as a block or an envelope whose body later
    /// events share, then random rows), restoring each after: `verify` must report every flip
    /// and never stop at one with an error, and so must the chain check without the key for the
    /// tables it covers (`chainCovers`).
    static func flipBits(
        _ store: EventStore, at dir: String, tables: [Database], trials: Int, rng: inout SplitMix64, label: String,
        chainCovers: (Database) -> Bool
    ) async throws {
        let env = store.environment
        for trial in 0..<trials {
            let table = trial % tables.count
            let db = tables[table]
            let round = trial / tables.count
            let pick = rng.next()
            let (key, original) = try env.read { txn -> ([UInt8], [UInt8]) in
                let n = try txn.stat(db).entries
                let c = try txn.cursor(db, raw: true)
                var e = try c.first()
                let row = table == 0 && round < n ? round : Int(pick % UInt64(n))
                for _ in 0..<row { e = try c.next() }
                return ([UInt8](e!.key), [UInt8](e!.value))
            }
            let at = Int(rng.next() % UInt64(original.count))
            var damaged = original
            damaged[at] ^= UInt8(1 << (rng.next() % 8))
            func putRaw(_ value: [UInt8]) throws {
                try env.write { txn in
                    _ = try key.withUnsafeBytes { k in try value.withUnsafeBytes { try txn.putRaw(db, key: k, value: $0) } }
                }
            }
            try putRaw(damaged)
            let what = "a flipped bit at byte \(at) of table \(table) (key \(key))\(label)"
            do {
                let report = try await store.verify(checkProjections: false)
                if report.ok || report.problemCount == 0 { Issue.record("trial \(trial): \(what) went unreported by verify") }
            } catch {
                Issue.record("trial \(trial): verify stopped at \(what): \(error)")
            }
            do {
                if chainCovers(db), try EventStore.verifyChain(at: dir).problemCount == 0 {
                    Issue.record("trial \(trial): \(what) went unreported by the chain check")
                }
            } catch {
                Issue.record("trial \(trial): the chain check stopped at \(what): \(error)")
            }
            try putRaw(original)
        }
    }

    /// Large bodies read back whole from their chunks, before and after a compaction, and a
    /// chunk left under no stored body is reported.
    @Test func largeBodiesReadBackAndALeftOverChunkIsReported() async throws {
        let store = try await openStore()
        let events = Self.largeBodies(seed: 7)
        let outcomes = try await store.append(events)
        let chunks = try store.environment.write { try store.environment.openDatabase("bodies.chunks", in: $0) }
        #expect(try store.environment.read { try $0.stat(chunks).entries } == 1 + 4 + 19)
        for (o, e) in zip(outcomes, events) {
            let recorded = try #require(try await store.event(seq: o.seq))
            #expect(try await store.payload(of: recorded) == e.payload)
        }
        let compacted = try await store.compactedCopy(into: makeTempDir())
        for (o, e) in zip(outcomes, events) {
            let recorded = try #require(try await compacted.event(seq: o.seq))
            #expect(try await compacted.payload(of: recorded) == e.payload)
        }
        #expect(try await compacted.verify().ok)
        _ = try store.environment.write { txn in try txn.put(chunks, key: UInt64(99).bigEndianBytes + [0, 0, 0, 0], value: [1]) }
        let report = try await store.verify(checkProjections: false)
        #expect(!report.ok && report.problems.contains { $0.contains("under no stored body") })
    }

    /// Events with bodies that do not compress, of 3 to 40 KB: stored as chunks and a head.
    static func largeBodies(seed: UInt64) -> [NewEvent] {
        var rng = SplitMix64(seed: seed)
        return [3_000, 9_000, 40_000].map { size in
            NewEvent(type: "Blob", stream: "blobs", payload: (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
    }

    /// A zstd frame has a header bit decoders ignore: flipping it leaves the body intact, so only
    /// the seal over the stored frame can tell. `verify` must report it.
    @Test func aFlipThatDecodesToTheSameBodyIsStillReported() async throws {
        let store = try await openStore()
        let body = Array(String(repeating: "{\"make\":\"Toyota\",\"model\":\"Corolla\"} ", count: 20).utf8)
        try await store.append(NewEvent(type: "DocumentRecorded", stream: "s", metadata: [("collection", "c"), ("key", "k")], payload: body))
        let env = store.environment, blobs = store.schema.bodies
        let (key, stored) = try env.read { txn -> ([UInt8], [UInt8]) in
            let e = try #require(try txn.cursor(blobs).first())
            return ([UInt8](e.key), [UInt8](e.value))
        }
        #expect(stored[0] == BlobCodec.sealedZstd)
        let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
        let at = try #require((0...(stored.count - 4)).first { Array(stored[$0..<$0 + 4]) == magic })
        var damaged = stored
        damaged[at + 4] ^= 0x10  // Frame_Header_Descriptor bit 4: "unused", ignored by decoders
        #expect(try damaged.withUnsafeBytes { try BlobCodec.decode($0) } == body)
        _ = try env.write { txn in try txn.put(blobs, key: key, value: damaged) }
        let report = try await store.verify(checkProjections: false)
        #expect(!report.ok && report.problems.contains { $0.contains("damaged") })
    }
}
