@testable import EventStore
import Foundation
import LMDB
import Testing

/// A compaction packs the log's envelopes against a dictionary trained on them, runs of them in
/// blocks (``EnvelopeBlock``): every event reads back the same (ids, hashes, the chain) through
/// every path, the log takes fewer pages, appends after it chain on, a second compaction packs
/// again, and damage to a block, a packed envelope or the dictionary is reported. An encrypted
/// store packs under its seals.
@Suite struct PackedEnvelopeTests {
    /// Document events with the metadata a fetch writes (run ids, URLs, statuses): what a
    /// dictionary learns from.
    static func events(_ count: Int, seed: UInt64) -> [NewEvent] {
        let run = "c295e186-c12b-4ec8-a1d0-7933c11105e1"
        return generatedEvents(seed: seed, count: count).enumerated().map { i, e in
            var e = e
            e.metadata += [("run", run), ("url", "https://api.example.test/\(e.stream)/\(i % 40)"), ("status", "200")]
            return e
        }
    }

    /// The first byte of every `events` row, in seq order (opened in an encrypted store).
    static func marks(_ store: EventStore) async throws -> [UInt8] {
        try await rows(store).map { $0.value.first! }
    }

    /// Every `events` row: its key's seq and its value (opened in an encrypted store).
    static func rows(_ store: EventStore) async throws -> [(seq: UInt64, value: [UInt8])] {
        let schema = store.schema
        return try await store.read { txn in
            var out: [(seq: UInt64, value: [UInt8])] = []
            let c = try txn.cursor(schema.events)
            var e = try c.first()
            while let row = e {
                out.append((UInt64(bigEndianBytes: row.key), [UInt8](row.value)))
                e = try c.next()
            }
            return out
        }
    }

    /// Changes the plain envelope stored under `seq` by hand.
    static func change(_ store: EventStore, seq: UInt64, _ edit: (inout [UInt8]) -> Void) throws {
        try store.environment.write { txn in
            var value = try txn.get(store.schema.events, key: seq.bigEndianBytes)!
            edit(&value)
            try txn.put(store.schema.events, key: seq.bigEndianBytes, value: value)
        }
    }

    /// Rows a compaction wrote: blocks, or envelopes packed alone.
    static func isPacked(_ mark: UInt8) -> Bool { EnvelopeBlock.isBlock(mark) || mark == Envelope.packedMark }

    static func logBytes(_ store: EventStore) async throws -> Int {
        let schema = store.schema
        return try await store.read { txn in try txn.stat(schema.events).bytes }
    }

    @Test func aCompactionPacksEnvelopesAndEveryEventReadsTheSame() async throws {
        let store = try await openStore()
        try await appendInBatches(Self.events(700, seed: 11), to: store, seed: 11)
        let before = try await store.events(EventQuery())
        let head = try await store.head()
        let states = try await allStates(store)
        #expect(try await Self.marks(store).allSatisfy { $0 == Envelope.format })

        let dir = makeTempDir("packed")
        let packed = try await store.compactedCopy(into: dir)
        let rows = try await Self.rows(packed)
        #expect(rows.allSatisfy { Self.isPacked($0.value[0]) }, "\(rows.filter { !Self.isPacked($0.value[0]) }.count) left plain")
        // Blocks of tens of envelopes, each in a leaf page of its own share (no overflow pages).
        #expect(rows.count * 10 < 700, "\(rows.count) rows for 700 envelopes")
        let inline = packed.environment.largestInlineValue(packed.schema.events, keyCount: 8)
        #expect(rows.allSatisfy { $0.value.count <= inline })
        #expect(rows.last?.seq == 700)
        #expect(packed.schema.envelopeDictionary != nil)
        // Format 5 for the packed copy only: a strata reading format 4 refuses it with a message.
        func format(_ s: EventStore) throws -> UInt64 {
            try s.environment.read { txn in try txn.get(s.schema.meta, key: LogSchema.formatKey)!.withUnsafeBytes { UInt64(bigEndianBytes: $0) } }
        }
        #expect(try format(store) == LogSchema.formatVersion && format(packed) == LogSchema.packedFormat)
        let (plainBytes, packedBytes) = (try await Self.logBytes(store), try await Self.logBytes(packed))
        #expect(packedBytes * 2 < plainBytes, "\(packedBytes) bytes of envelopes packed, \(plainBytes) plain")

        // The same events through every read path: the whole log, by stream, by type, one seq,
        // newest first; the same head, states, and a verify that folds every projection again.
        #expect(try await packed.events(EventQuery()) == before)
        #expect(try await packed.head() == head)
        #expect(try await allStates(packed) == states)
        for q in [EventQuery(stream: "cars"), EventQuery(type: DocumentEvents.removed), EventQuery(fromSeq: 300, toSeq: 320, descending: true)] {
            #expect(try await packed.events(q) == store.events(q))
        }
        #expect(try await packed.event(seq: 123) == before[122])
        // Every seq on its own (each a block's first, last or middle), and each walk start.
        for seq in 1...700 { #expect(try await packed.event(seq: UInt64(seq)) == before[seq - 1]) }
        #expect(try await packed.event(seq: 701) == nil)
        for (seq, _) in rows.prefix(6) {
            for s in [seq - 1, seq, seq + 1] where s >= 1 && s <= 700 {
                #expect(try await packed.events(EventQuery(fromSeq: s, limit: 3)) == Array(before[Int(s - 1)..<min(700, Int(s) + 2)]))
                #expect(try await packed.events(EventQuery(toSeq: s, limit: 3, descending: true)) == Array(before[max(0, Int(s) - 3)..<Int(s)].reversed()))
            }
        }
        #expect(try await packed.stats().events == 700)
        #expect(try await packed.verify().ok)
        #expect(try EventStore.verifyChain(at: dir).ok)

        // A replay (a copy of the log up to a seq) reads the packed envelopes into plain ones.
        let replayed = try await packed.replay(upTo: 400)
        #expect(try await replayed.events(EventQuery()) == Array(before.prefix(400)))
        #expect(try await Self.marks(replayed).allSatisfy { $0 == Envelope.format })
        // So does a rekey's copy: encrypted, the same events.
        let encrypted = try await packed.copy(into: makeTempDir("rekeyed"), key: StoreKey.generate())
        #expect(try await encrypted.events(EventQuery()) == before)
        #expect(try await encrypted.verify(checkProjections: false).ok)

        // Appends after the compaction store plain envelopes that chain on to the packed ones.
        let more = Self.events(60, seed: 12).map {
            var e = $0; e.id = "more-" + e.id; return e
        }
        _ = try await packed.append(more)
        let after = try await packed.events(EventQuery(fromSeq: head.seq + 1))
        #expect(after.count == 60 && after[0].previousHash.hex == head.hash)
        #expect(try await Self.marks(packed).suffix(60).allSatisfy { $0 == Envelope.format })
        #expect(try await packed.verify().ok)

        // A second compaction trains a new dictionary and packs every envelope against it.
        let all = try await packed.events(EventQuery())
        let again = try await packed.compactedCopy(into: makeTempDir("packed-again"))
        #expect(try await Self.marks(again).allSatisfy(Self.isPacked))
        #expect(try await Self.rows(again).count * 10 < 760)
        #expect(try await again.events(EventQuery()) == all)
        #expect(try await again.verify().ok)
    }

    @Test func aDamagedPackedEnvelopeOrDictionaryIsReported() async throws {
        let store = try await openStore()
        try await appendInBatches(Self.events(400, seed: 21), to: store, seed: 21)
        let dir = makeTempDir("packed")
        let packed = try await store.compactedCopy(into: dir)
        let env = packed.environment
        let schema = packed.schema
        let keys = try await Self.rows(packed).map(\.seq)
        var rng = SplitMix64(seed: 2121)
        for trial in 0..<150 {
            // Any byte of a block, the last one (the head: no event after it to chain) among them.
            let seq = trial % 10 == 0 ? keys.last! : keys[Int(rng.next() % UInt64(keys.count))]
            let key = seq.bigEndianBytes
            let original = try env.read { txn in try txn.get(schema.events, key: key)! }
            var damaged = original
            let index = Int(rng.next() % UInt64(original.count))
            damaged[index] ^= UInt8(1 << (rng.next() % 8))
            _ = try env.write { txn in try txn.put(schema.events, key: key, value: damaged) }
            let report = try await packed.verify(checkProjections: false)
            #expect(!report.ok && report.problemCount > 0, "trial \(trial): a flipped bit at byte \(index) of the row of event \(seq) went unreported")
            // The keyless check reads the blocks too.
            if trial % 15 == 0 { #expect(!(try EventStore.verifyChain(at: dir).ok)) }
            _ = try env.write { txn in try txn.put(schema.events, key: key, value: original) }
        }
        #expect(try await packed.verify(checkProjections: false).ok)

        // The dictionary itself: the chain check reports it, and the store does not open.
        let dictionary = try env.read { txn in try txn.get(schema.meta, key: EnvelopeDictionary.metaKey)! }
        var damaged = dictionary
        damaged[damaged.count / 2] ^= 0x10
        _ = try env.write { txn in try txn.put(schema.meta, key: EnvelopeDictionary.metaKey, value: damaged) }
        #expect(!(try EventStore.verifyChain(at: dir).ok))
        let copy = makeTempDir("damaged-copy")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir + "/data.mdb", toPath: copy + "/data.mdb")
        let error = await #expect(throws: EventStoreError.self) { _ = try await openStore(copy) }
        #expect(error?.message.contains("envelope dictionary") == true, "\(String(describing: error))")
    }

    /// A plain envelope already damaged stays plain in the packed copy (packed, its hash would be
    /// computed again from the damaged bytes), so `verify` still reports it where it is.
    @Test func aDamagedEnvelopeIsNotPackedOver() async throws {
        let store = try await openStore()
        try await appendInBatches(Self.events(400, seed: 51), to: store, seed: 51)
        try Self.change(store, seq: 200) { $0[20] ^= 0x01 }
        let packed = try await store.compactedCopy(into: makeTempDir("packed"))
        let rows = try await Self.rows(packed)
        #expect(rows.contains { $0.seq == 199 } && rows.first { $0.seq == 200 }?.value.first == Envelope.format)
        #expect(rows.filter { $0.seq != 200 }.allSatisfy { Self.isPacked($0.value[0]) })
        let report = try await packed.verify(checkProjections: false)
        #expect(report.problems.contains { $0.hasPrefix("event 200: stored bytes do not match their hash") }, "\(report.problems)")
    }

    /// A block never hides a broken link: an envelope that hashes to its hash but does not name
    /// the hash before it (the chain cut and mended by hand) opens a block of its own, so the
    /// packed copy reports the same broken links as the store it was made of.
    @Test func aBrokenLinkIsNotPackedOver() async throws {
        let store = try await openStore()
        try await appendInBatches(Self.events(400, seed: 61), to: store, seed: 61)
        try Self.change(store, seq: 150) { value in
            value[value.count - 40] ^= 0x01
            let hash = value.withUnsafeBytes { Hashing.sha256(UnsafeRawBufferPointer(rebasing: $0[0..<(value.count - 32)])) }
            value.replaceSubrange((value.count - 32)..., with: hash)
        }
        let broken = try await store.verify(checkProjections: false).problems.filter { $0.contains("hash chain broken") }
        #expect(broken.count == 2, "\(broken)")
        let dir = makeTempDir("packed")
        let packed = try await store.compactedCopy(into: dir)
        let keys = try await Self.rows(packed).map(\.seq)
        #expect(keys.contains(149) && keys.contains(150))
        #expect(try await packed.verify(checkProjections: false).problems.filter { $0.contains("hash chain broken") } == broken)
        #expect(try EventStore.verifyChain(at: dir).problems.filter { $0.contains("hash chain broken") } == broken)
        #expect(try await packed.events(EventQuery()) == store.events(EventQuery()))
    }

    /// An encrypted store packs too: each envelope opened, packed, sealed again; the sealed
    /// chain computed again over the new rows (checked without the key); the dictionary, trained
    /// on plaintext, sealed in `meta`: no text of the envelopes is left in the file.
    @Test func anEncryptedStorePacksUnderItsSeals() async throws {
        var options = testOptions()
        options.key = StoreKey.generate()
        let store = try await EventStore.open(at: makeTempDir(), projections: [KeyedDocumentProjection()], options: options)
        try await appendInBatches(Self.events(300, seed: 31), to: store, seed: 31)
        let before = try await store.events(EventQuery())
        let dir = makeTempDir("packed")
        let copy = try await store.compactedCopy(into: dir)
        #expect(copy.schema.envelopeDictionary != nil)
        let rows = try await Self.rows(copy)
        #expect(rows.allSatisfy { Self.isPacked($0.value[0]) } && rows.count * 10 < 300 && rows.last?.seq == 300)
        #expect(try await copy.events(EventQuery()) == before)
        for seq in stride(from: 1, through: 300, by: 7) { #expect(try await copy.event(seq: UInt64(seq)) == before[seq - 1]) }
        #expect(try await copy.verify().ok)
        #expect(try EventStore.verifyChain(at: dir).ok)
        #expect(try await Self.logBytes(copy) < Self.logBytes(store))

        // No text of the envelopes in the file: not the run id, not a URL, not the dictionary.
        let file = try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb"))
        for text in ["c295e186-c12b-4ec8", "api.example.test", "collection"] {
            #expect(file.range(of: Data(text.utf8)) == nil, "\(text) in data.mdb")
        }
        // Event types and streams are readable by design (`by-type` and `by-stream` keys): a
        // stretch of the dictionary that is one of them is found in the file as such.
        let readable = Set(before.flatMap { [Data($0.type.utf8), Data($0.stream.utf8)] })
        let dictionary = try #require(copy.schema.envelopeDictionary).bytes
        for start in stride(from: 0, to: dictionary.count - 16, by: 97) {
            let stretch = Data(dictionary[start..<start + 16])
            guard !readable.contains(where: { $0.range(of: stretch) != nil }) else { continue }
            #expect(file.range(of: stretch) == nil, "dictionary bytes at \(start) in data.mdb")
        }

        // Appends chain on, sealed chain included; the copy reopens under its key only.
        _ = try await copy.append(
            Self.events(20, seed: 32).map {
                var e = $0; e.id = "more-" + e.id; return e
            })
        #expect(try await copy.verify(checkProjections: false).ok)
        #expect(try EventStore.verifyChain(at: dir).ok)
        let again = makeTempDir("packed-reopened")
        try FileManager.default.createDirectory(atPath: again, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir + "/data.mdb", toPath: again + "/data.mdb")
        let reopened = try await EventStore.open(at: again, projections: [KeyedDocumentProjection()], options: options)
        #expect(try await reopened.events(EventQuery()).count == 320)
        var wrong = testOptions()
        wrong.key = StoreKey.generate()
        await #expect(throws: EventStoreError.self) {
            _ = try await EventStore.open(at: again, projections: [KeyedDocumentProjection()], options: wrong)
        }
    }

    @Test func aShortLogStaysPlain() async throws {
        let store = try await openStore()
        try await appendInBatches(Self.events(EnvelopePacker.minimumEnvelopes - 1, seed: 41), to: store, seed: 41)
        let copy = try await store.compactedCopy(into: makeTempDir("packed"))
        #expect(copy.schema.envelopeDictionary == nil)
        #expect(try await Self.marks(copy).allSatisfy { $0 == Envelope.format })
    }
}
