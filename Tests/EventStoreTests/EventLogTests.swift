@testable import EventStore
import Foundation
import LMDB
import Testing

@Suite struct EventLogTests {
    @Test func appendAssignsGaplessSeqsAndChainsHashes() async throws {
        let store = try await openStore()
        let outcomes = try await store.append((0..<25).map { NewEvent(type: "Noted", stream: "s\($0 % 3)", payload: bytes("body \($0)")) })
        #expect(outcomes.map(\.seq) == Array(1...25))
        #expect(outcomes.allSatisfy { $0.appended })
        let events = try await store.events(EventQuery())
        #expect(events.map(\.seq) == Array(1...25))
        #expect(events[0].previousHash == [UInt8](repeating: 0, count: 32))
        for (a, b) in zip(events, events.dropFirst()) { #expect(b.previousHash == a.hash) }
        #expect(Set(events.map(\.hash)).count == 25)
    }

    @Test func sameIdIsAppendedOnceAndReturnsTheOriginalSeq() async throws {
        let store = try await openStore()
        let first = try await store.append(NewEvent(id: "fetch-1", type: "Noted", stream: "s"))
        _ = try await store.append(NewEvent(type: "Noted", stream: "s"))
        let again = try await store.append(NewEvent(id: "fetch-1", type: "Different", stream: "other"))
        #expect(first.seq == 1 && first.appended)
        #expect(again.seq == 1 && !again.appended)
        // Duplicates inside one batch too.
        let batch = try await store.append([NewEvent(id: "x", type: "T", stream: "s"), NewEvent(id: "x", type: "T", stream: "s")])
        #expect(batch.map(\.seq) == [3, 3])
        #expect(batch.map(\.appended) == [true, false])
        #expect(try await store.head().seq == 3)
        #expect(try await store.event(id: "fetch-1")?.type == "Noted")
    }

    /// An append claims each id and body hash as it goes; a batch that fails part-way must leave
    /// no claim behind, so the same events append in full afterwards.
    @Test func aFailedBatchClaimsNoIdAndNoBody() async throws {
        let store = try await openStore()
        let body = Array("{\"a\":1}".utf8)
        let missing = PayloadReference(hash: [UInt8](repeating: 7, count: 32), size: 3)
        await #expect(throws: EventStoreError.self) {
            try await store.append([
                NewEvent(id: "k1", type: "T", stream: "s", payload: body),
                NewEvent(id: "k2", type: "T", stream: "s", payloadReference: missing)
            ])
        }
        #expect(try await store.head().seq == 0)
        #expect(try await store.stats().blobs == 0)
        let again = try await store.append([NewEvent(id: "k1", type: "T", stream: "s", payload: body)])
        #expect(again.map(\.seq) == [1] && again[0].appended)
        #expect(try await store.body(sha256: Hashing.sha256(body).hex) == body)
        #expect(try await store.stats().blobs == 1)
    }

    /// A batch large enough for the helper thread to prepare bodies while the transaction runs,
    /// mixing ids already in the log, ids repeated in the batch, repeated and already-stored
    /// bodies and events without one, and outgrowing its map part-way, ends exactly as the same
    /// events appended one at a time (no helper): the same outcomes, log, bodies and documents.
    @Test func aLargeBatchPreparedOnTwoThreadsEndsAsOneEventAtATime() async throws {
        let (early, batch) = mixedLargeBatch()
        #expect(batch.reduce(0) { $0 + ($1.payload?.count ?? 0) } >= 64 << 10)
        let together = try await openStore(mapSize: 1 << 20)
        let single = try await openStore()
        _ = try await together.append(early)
        _ = try await single.append(early)
        let outcomes = try await together.append(batch)
        var expected: [AppendOutcome] = []
        for e in batch { expected.append(try await single.append(e)) }
        #expect(outcomes.map(\.seq) == expected.map(\.seq) && outcomes.map(\.appended) == expected.map(\.appended))
        try await expectSameContents(together, single)
        // The batch outgrew the 1 MiB map part-way (the transaction ran again, with the helper's
        // bodies kept, after the helper let go of its snapshot).
        let grown = try await together.stats()
        #expect(grown.mapSize > 1 << 20, "\(grown)")
    }

    /// Batches prepared ahead of their appends — every one of them before the first commits, so
    /// each helper reads a snapshot that misses the batches before it — including a last batch that
    /// repeats the first one's ids, and a batch prepared but never appended, end exactly as the same
    /// events appended one at a time; and so do the same batches through `append(batches:)`, while
    /// the map grows from 1 MiB under them.
    @Test func batchesPreparedAheadOfTheirAppendsEndAsOneEventAtATime() async throws {
        let (early, batch) = mixedLargeBatch()
        var chunks = stride(from: 0, to: batch.count, by: 100).map { Array(batch[$0..<min($0 + 100, batch.count)]) }
        chunks.append(chunks[0])
        #expect(chunks.allSatisfy { $0.reduce(0) { $0 + ($1.payload?.count ?? 0) } >= 64 << 10 })
        let single = try await openStore()
        _ = try await single.append(early)
        var expected: [[AppendOutcome]] = []
        for chunk in chunks {
            var outcomes: [AppendOutcome] = []
            for e in chunk { outcomes.append(try await single.append(e)) }
            expected.append(outcomes)
        }
        #expect(expected.last!.allSatisfy { !$0.appended })

        let ahead = try await openStore(mapSize: 1 << 20)
        _ = try await ahead.append(early)
        // One batch is prepared and dropped: its helper prepares it in full on the same thread,
        // queued between the others, and nothing of it reaches the store.
        let abandoned = (0..<40).map { i in
            NewEvent(
                id: "never\(i)", type: DocumentEvents.recorded, stream: "s", metadata: [("collection", "c"), ("key", "z\(i)")],
                payload: bytes("{\"never\":\(i),\"f\":\"\(String(repeating: "w", count: 4_000))\"}"))
        }
        var prepared: [PreparedBatch] = []
        for (i, chunk) in chunks.enumerated() {
            if i == 2 { _ = ahead.prepare(abandoned) }
            prepared.append(ahead.prepare(chunk))
        }
        #expect(prepared.map(\.events.count) == chunks.map(\.count))
        var outcomes: [[AppendOutcome]] = []
        for p in prepared { outcomes.append(try await ahead.append(p)) }
        #expect(outcomes.map { $0.map(\.seq) } == expected.map { $0.map(\.seq) })
        #expect(outcomes.map { $0.map(\.appended) } == expected.map { $0.map(\.appended) })
        try await expectSameContents(ahead, single)
        #expect(try await ahead.event(id: "never0") == nil)
        #expect(try await ahead.stats().mapSize > 1 << 20)

        let sequenced = try await openStore(mapSize: 1 << 20)
        _ = try await sequenced.append(early)
        let all = try await sequenced.append(batches: chunks)
        #expect(all.map { $0.map(\.seq) } == expected.map { $0.map(\.seq) })
        #expect(all.map { $0.map(\.appended) } == expected.map { $0.map(\.appended) })
        try await expectSameContents(sequenced, single)
    }

    /// `append(batches:)` stops at the first batch that fails: the batches before it stay
    /// appended, that one leaves nothing, and the ones after it are not appended.
    @Test func appendingBatchesStopsAtTheFirstFailure() async throws {
        let store = try await openStore()
        let missing = PayloadReference(hash: [UInt8](repeating: 7, count: 32), size: 3)
        let batches = [
            [NewEvent(id: "a1", type: "T", stream: "s", payload: bytes("one")), NewEvent(id: "a2", type: "T", stream: "s")],
            [NewEvent(id: "b1", type: "T", stream: "s", payload: bytes("two")), NewEvent(id: "b2", type: "T", stream: "s", payloadReference: missing)],
            [NewEvent(id: "c1", type: "T", stream: "s", payload: bytes("three"))]
        ]
        await #expect(throws: EventStoreError.self) { try await store.append(batches: batches) }
        #expect(try await store.events(EventQuery()).map(\.id) == ["a1", "a2"])
        #expect(try await store.stats().blobs == 1)
        #expect(try await store.append(batches: [[NewEvent]]()).isEmpty)
    }

    /// The newest event of a stream among some types: found through the type indexes, past any
    /// number of later events of other types in that stream and of those types in other streams.
    @Test func newestEventOfSomeTypesInAStream() async throws {
        let store = try await openStore()
        _ = try await store.append([
            NewEvent(type: "A", stream: "s1"), NewEvent(type: "A", stream: "s2"), NewEvent(type: "B", stream: "s1"),
            NewEvent(type: "B", stream: "s2"), NewEvent(type: "C", stream: "s1")
        ])
        _ = try await store.append((0..<600).map { i in NewEvent(type: i % 2 == 0 ? "D" : "A", stream: i % 2 == 0 ? "s1" : "s2") })
        #expect(try await store.newestEvent(inStream: "s1", ofTypes: ["A", "B"])?.seq == 3)
        #expect(try await store.newestEvent(inStream: "s1", ofTypes: ["B", "A"])?.seq == 3)
        #expect(try await store.newestEvent(inStream: "s1", ofTypes: ["C", "A", "B"])?.seq == 5)
        #expect(try await store.newestEvent(inStream: "s2", ofTypes: ["B"])?.seq == 4)
        #expect(try await store.newestEvent(inStream: "s2", ofTypes: ["A", "B"])?.seq == 605)
        #expect(try await store.newestEvent(inStream: "s3", ofTypes: ["A", "B"]) == nil)
        #expect(try await store.newestEvent(inStream: "s1", ofTypes: ["Z"]) == nil)
    }

    /// Ids made for events given none are version-7 UUIDs in lower case: distinct across threads
    /// and across the generator's 4 KiB refills, led by the current Unix time in milliseconds,
    /// and never sorting before an id made earlier (so they land at the right edge of `ids`).
    @Test func generatedIdsAreDistinctTimeOrderedVersionSevenUUIDs() async throws {
        let before = UInt64(Date().timeIntervalSince1970 * 1000)
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 { group.addTask { (0..<3_000).map { _ in NewEvent(type: "T", stream: "s").id } } }
            var all: [String] = []
            for await part in group { all += part }
            return all
        }
        let after = UInt64(Date().timeIntervalSince1970 * 1000)
        #expect(Set(ids).count == ids.count)
        func milliseconds(_ id: String) -> UInt64 { UInt64(id.replacingOccurrences(of: "-", with: "").prefix(12), radix: 16)! }
        for id in ids.prefix(500) {
            let parsed = UUID(uuidString: id)
            #expect(parsed != nil && parsed!.uuidString.lowercased() == id, "\(id)")
            let bytes = Array(id.utf8)
            #expect(bytes[14] == UInt8(ascii: "7") && "89ab".utf8.contains(bytes[19]), "\(id)")
            #expect((before...after).contains(milliseconds(id)), "\(id)")
        }
        // One after another, each id's time is at least the one before's, so ids made in
        // different milliseconds sort in the order they were made.
        let sequential = (0..<2_000).map { _ in NewEvent(type: "T", stream: "s").id }
        for (a, b) in zip(sequential, sequential.dropFirst()) {
            #expect(milliseconds(a) <= milliseconds(b))
            if milliseconds(a) < milliseconds(b) { #expect(a < b) }
        }
    }

    @Test func queriesByStreamTypeRangeOrderAndLimit() async throws {
        let store = try await openStore()
        for i in 1...30 {
            try await store.append(NewEvent(type: i % 2 == 0 ? "Even" : "Odd", stream: i % 3 == 0 ? "three" : "other"))
        }
        let three = try await store.events(EventQuery(stream: "three"))
        #expect(three.map(\.seq) == [3, 6, 9, 12, 15, 18, 21, 24, 27, 30])
        let evenThreeNewest = try await store.events(EventQuery(stream: "three", type: "Even", limit: 2, descending: true))
        #expect(evenThreeNewest.map(\.seq) == [30, 24])
        let odd = try await store.events(EventQuery(type: "Odd", fromSeq: 10, toSeq: 20))
        #expect(odd.map(\.seq) == [11, 13, 15, 17, 19])
        let newest = try await store.events(EventQuery(toSeq: 12, limit: 3, descending: true))
        #expect(newest.map(\.seq) == [12, 11, 10])
        #expect(try await store.events(EventQuery(stream: "nope")).isEmpty)
        #expect(try await store.event(seq: 31) == nil)
    }

    /// A stream and a type together are answered by joining both indexes on their seqs; every
    /// range, direction and limit gives what filtering the whole log would.
    @Test func streamAndTypeJoinMatchesAFilterOfTheLog() async throws {
        let store = try await openStore()
        var random = SplitMix64(seed: 7)
        // Names that prefix one another ("s", "s1") and a type rarer than its stream.
        let streams = ["s", "s1", "s10", "t"], types = ["A", "B", "Rare"]
        var batch: [NewEvent] = []
        for _ in 1...600 {
            batch.append(NewEvent(type: random.chance(2) ? "Rare" : random.pick(["A", "B"]), stream: random.pick(streams)))
        }
        _ = try await store.append(batch)
        let all = try await store.events(EventQuery())
        for _ in 0..<200 {
            let stream = random.pick(streams + ["none"]), type = random.pick(types + ["None"])
            let a = UInt64(random.below(620)), b = UInt64(random.below(620))
            let q = EventQuery(
                stream: stream, type: type, fromSeq: min(a, b), toSeq: max(a, b), limit: random.chance(50) ? .max : random.below(4),
                descending: random.chance(50))
            var expected = all.filter { $0.stream == stream && $0.type == type && (q.fromSeq...q.toSeq).contains($0.seq) }.map(\.seq)
            if q.descending { expected.reverse() }
            #expect(try await store.events(q).map(\.seq) == Array(expected.prefix(q.limit)), "\(q)")
        }
    }

    @Test func envelopeRoundTripsMetadataAndTimes() async throws {
        let store = try await openStore()
        let at = Timestamp(iso8601: "2020-05-06T07:08:09.123Z")!
        try await store.append(
            NewEvent(
                id: "a", type: "CollectionPageFetched", schemaVersion: 3, recordedAt: at, stream: "cars",
                metadata: [("url", "http://127.0.0.1:8080/cars?page=2"), ("status", "200"), ("etag", "\"abc\"")]))
        let e = try #require(try await store.event(seq: 1))
        #expect(e.id == "a" && e.type == "CollectionPageFetched" && e.schemaVersion == 3 && e.stream == "cars")
        #expect(e.recordedAt == at)
        #expect(e[metadata: "etag"] == "\"abc\"")
        #expect(e.metadata.map(\.key) == ["url", "status", "etag"])
        #expect(e.payload == nil)
    }

    /// A body lives in `bodies` under the seq that stored it, found by a prefix of its hash; a
    /// format 1 store (the body inline in `blobs`, keyed by its whole hash) still reads, verifies
    /// and dedupes after it is opened (and marked format 3), and its new bodies take the new layout.
    @Test func bodiesLiveUnderTheirSeqAndFormatOneRowsStillRead() async throws {
        let dir = makeTempDir()
        let hash = try await oneBodyStore(dir) { txn, schema, hash in
            // As format 1 wrote it.
            let seq = try #require(try txn.get(schema.bodyIndex.index, key: Array(hash.prefix(8))))
            #expect(seq == [1])
            #expect(try txn.stat(schema.blobs).entries == 0)
            let stored = try #require(try txn.get(schema.bodies, key: UInt64(1).bigEndianBytes))
            try txn.put(schema.blobs, key: hash, value: stored)
            try txn.delete(schema.bodyIndex.index, key: Array(hash.prefix(8)))
            try txn.delete(schema.bodies, key: UInt64(1).bigEndianBytes)
            return 1
        }
        let (bodies, indexed) = try await checkOlderFormatStore(dir, hash: hash)
        #expect(bodies == 1 && indexed == 1)  // the new body only
    }

    /// A format 2 store (each hash → a pointer to the seq in `bodies`, in `blobs`) reads, verifies
    /// and dedupes after it is opened as format 3; its new bodies go to the prefix index.
    @Test func formatTwoPointersStillReadAndDedupe() async throws {
        let dir = makeTempDir()
        let hash = try await oneBodyStore(dir) { txn, schema, hash in
            // As format 2 wrote it.
            try txn.delete(schema.bodyIndex.index, key: Array(hash.prefix(8)))
            try txn.put(schema.blobs, key: hash, value: [BlobCodec.pointer] + UInt64(1).bigEndianBytes)
            return 2
        }
        let (bodies, indexed) = try await checkOlderFormatStore(dir, hash: hash)
        #expect(bodies == 2 && indexed == 1)
    }

    private static let olderFormatBody = bytes(String(repeating: "{\"make\":\"Ford\"},", count: 50))

    /// A store in `dir` holding one event ("a") with ``olderFormatBody``, then rewritten by
    /// `rewrite` as an older format wrote it (`rewrite` returns that format); the body's hash.
    private func oneBodyStore(_ dir: String, rewrite: (Transaction, LogSchema, [UInt8]) throws -> UInt64) async throws -> [UInt8] {
        let store = try await openStore(dir)
        try await store.append(NewEvent(id: "a", type: "Fetched", stream: "s", payload: Self.olderFormatBody))
        let hash = try #require(try await store.event(seq: 1)?.payload?.hash)
        let schema = store.schema
        try store.environment.write { txn in
            let format = try rewrite(txn, schema, hash)
            try txn.put(schema.meta, key: Array("format".utf8), value: format.bigEndianBytes)
            try txn.delete(schema.meta, key: Array("body-prefix".utf8))
        }
        return hash
    }

    /// Opens the rewritten store: it verifies, finds the old body by hash and by event, dedupes
    /// it, stores a new one, is marked format 3 and counts two bodies. Returns its `bodies` and
    /// `body-index` rows.
    private func checkOlderFormatStore(_ dir: String, hash: [UInt8]) async throws -> (bodies: Int, indexed: Int) {
        let store = try await openStore(dir)
        #expect(try await store.verify().ok)
        #expect(try await store.body(sha256: hash.hex) == Self.olderFormatBody)
        _ = try await store.append([
            NewEvent(id: "b", type: "Fetched", stream: "s", payload: Self.olderFormatBody),  // dedupes to the old row
            NewEvent(id: "c", type: "Fetched", stream: "s", payload: bytes("{\"new\":1}"))  // takes the new layout
        ])
        let events = try await store.events(EventQuery())
        #expect(try await store.payload(of: events[1]) == Self.olderFormatBody)
        #expect(try await store.payload(of: events[2]) == bytes("{\"new\":1}"))
        let (bodies, indexed, format) = try store.environment.read { txn in
            (
                try txn.stat(store.schema.bodies).entries, try txn.stat(store.schema.bodyIndex.index).entries,
                try txn.get(store.schema.meta, key: Array("format".utf8)).map { $0.withUnsafeBytes { UInt64(bigEndianBytes: $0) } }
            )
        }
        #expect(format == LogSchema.formatVersion)
        #expect(try await store.stats().blobs == 2)
        #expect(try await store.verify().ok)
        return (bodies, indexed)
    }

    /// With a 1-byte prefix, hundreds of distinct bodies share prefixes: every one is still stored
    /// once, read back by its event and by its hash, deduped when it comes again, verified, and
    /// refolded the same by a rebuild. (With the 8-byte default such a collision is a 1 in 2^64
    /// chance per pair, so it has to be forced to be tested.)
    @Test func bodiesWhosePrefixesCollideAreStoredOnceAndFound() async throws {
        var options = testOptions(mapSize: 64 << 20)
        options.bodyPrefix = 1
        let dir = makeTempDir()
        let docs = (0..<600).map { bytes("{\"n\":\($0),\"pad\":\"\(String(repeating: "x", count: $0 % 300))\"}") }
        func batch(_ round: Int) -> [NewEvent] {
            docs.indices.map {
                NewEvent(
                    id: "r\(round)-\($0)", type: DocumentEvents.recorded, stream: "s",
                    metadata: [("collection", "c"), ("key", "k\($0 % 150)")], payload: docs[$0])
            }
        }
        let events: [RecordedEvent]
        do {
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
            for chunk in stride(from: 0, to: 600, by: 100) { _ = try await store.append(Array(batch(0)[chunk..<chunk + 100])) }
            _ = try await store.append(batch(1))  // every body again: nothing new is stored
            let (indexed, spilled) = try store.environment.read { txn in
                (try txn.stat(store.schema.bodyIndex.index).entries, try txn.stat(store.schema.blobs).entries)
            }
            #expect(indexed + spilled == 600 && spilled > 100)  // about 230 distinct first bytes
            let stats = try await store.stats()
            #expect(stats.blobs == 600 && stats.payloadCount == 1_200)
            events = try await store.events(EventQuery(limit: 1_200))
            for (i, e) in events.enumerated() {
                #expect(try await store.payload(of: e) == docs[i % 600])
            }
            for d in docs.prefix(50) { #expect(try await store.body(sha256: Hashing.sha256(d).hex) == d) }
            #expect(try await store.verify().ok)
            let before = try await store.documents { try $0.history(collection: "c", key: "k7") }
            #expect(before.count == 8)  // four documents, twice
            try await store.rebuild()
            #expect(try await store.documents { try $0.history(collection: "c", key: "k7") } == before)
        }
        // Opened again without the option: the prefix length is the store's own.
        let reopened = try await openStore(dir)
        #expect(reopened.schema.bodyIndex.prefix == 1)
        #expect(try await reopened.payload(of: events[599]) == docs[599])
        #expect(try await reopened.verify().ok)
    }

    @Test func bodiesAreContentAddressedCompressedAndStoredOnce() async throws {
        let store = try await openStore()
        let big = bytes(String(repeating: "{\"make\":\"Ford\",\"model\":\"Fiesta\"},", count: 400))
        let small = bytes("{}")
        for i in 0..<10 { try await store.append(NewEvent(type: "Fetched", stream: "s", payload: i % 2 == 0 ? big : small)) }
        let stats = try await store.stats()
        #expect(stats.blobs == 2)
        #expect(stats.payloadCount == 10)
        #expect(stats.payloadBytes == UInt64(5 * big.count + 5 * small.count))
        #expect(stats.dedupeRatio > 4.9)
        #expect(stats.blobStoredBytes < UInt64(big.count / 10))
        let events = try await store.events(EventQuery())
        #expect(try await store.payload(of: events[0]) == big)
        #expect(try await store.payload(of: events[1]) == small)
        #expect(events[0].payload?.size == big.count)
    }

    @Test func incompressibleBodiesAreStoredRaw() async throws {
        let store = try await openStore()
        var rng = SplitMix64(seed: 9)
        let noise = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }
        try await store.append(NewEvent(type: "Fetched", stream: "s", payload: noise))
        let s = try await store.stats()
        #expect(s.blobStoredBytes == UInt64(noise.count + 3))  // codec byte + 2-byte varint size
        #expect(try await store.payload(of: try #require(try await store.event(seq: 1))) == noise)
    }

    @Test func datesResolveToTheLastEventAtOrBeforeThem() async throws {
        let store = try await openStore()
        let times = ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"]
        for t in times { try await store.append(NewEvent(type: "T", recordedAt: Timestamp(iso8601: t), stream: "s")) }
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2025-12-31T23:59:59Z")!) == 0)
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-01-01T00:00:00Z")!) == 1)
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-02-15T00:00:00Z")!) == 2)
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-03-01")!) == 3)  // a bare date is the end of that day
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2030-01-01T00:00:00Z")!) == 3)
        // An event recorded earlier than the head counts at the head's time.
        try await store.append(NewEvent(type: "T", recordedAt: Timestamp(iso8601: "2025-06-01T00:00:00Z"), stream: "s"))
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-03-02T00:00:00Z")!) == 4)
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-02-15T00:00:00Z")!) == 2)
        // So does one recorded earlier than the event before it in the same batch.
        _ = try await store.append([
            NewEvent(type: "T", recordedAt: Timestamp(iso8601: "2026-04-01T00:00:00Z"), stream: "s"),
            NewEvent(type: "T", recordedAt: Timestamp(iso8601: "2025-01-01T00:00:00Z"), stream: "s")
        ])
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-03-31T00:00:00Z")!) == 4)
        #expect(try await store.seq(asOf: Timestamp(iso8601: "2026-04-01T00:00:00Z")!) == 6)
        #expect(try await store.verify().ok)
    }

    @Test(arguments: [
        NewEvent(id: "", type: "T", stream: "s"),
        NewEvent(type: "", stream: "s"),
        NewEvent(type: "T", stream: ""),
        NewEvent(type: "T\u{0}", stream: "s"),
        NewEvent(type: "T", schemaVersion: 0, stream: "s"),
        NewEvent(type: "T", stream: "s", metadata: [("", "v")]),
        NewEvent(id: String(repeating: "x", count: 300), type: "T", stream: "s")
    ])
    func invalidEventsAreRejectedAndNothingIsWritten(event: NewEvent) async throws {
        let store = try await openStore()
        try await store.append(NewEvent(type: "Good", stream: "s"))
        await #expect {
            _ = try await store.append([NewEvent(type: "Good", stream: "s"), event])
        } throws: { ($0 as? EventStoreError)?.code == .invalidEvent }
        #expect(try await store.head().seq == 1)
    }

    @Test func storeDirectoryIsPrivate() async throws {
        let dir = makeTempDir()
        _ = try await openStore(dir)
        let attrs = try FileManager.default.attributesOfItem(atPath: dir)
        #expect((attrs[.posixPermissions] as? Int) == 0o700)
        for f in ["data.mdb", "lock.mdb"] {
            let a = try FileManager.default.attributesOfItem(atPath: dir + "/" + f)
            #expect((a[.posixPermissions] as? Int) == 0o600)
        }
    }

    @Test func concurrentAppendsFromManyTasksAreSerializedWithoutLoss() async throws {
        let store = try await openStore()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<16 {
                group.addTask {
                    for i in 0..<20 {
                        _ = try await store.append([
                            NewEvent(id: "t\(t)-\(i)", type: "T", stream: "s\(t)"),
                            NewEvent(id: "t\(t)-\(i)b", type: "T", stream: "s\(t)")
                        ])
                    }
                }
            }
            // Readers run alongside and always see a gapless prefix of the log.
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<20 {
                        let events = try await store.events(EventQuery())
                        #expect(events.map(\.seq) == Array(0..<UInt64(events.count)).map { $0 + 1 })
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.head().seq == 640)
        #expect(try await store.verify().ok)
    }

    @Test func mapGrowsFromATinyMapDuringAppends() async throws {
        let store = try await openStore(mapSize: 512 * 1024)
        var rng = SplitMix64(seed: 3)
        for b in 0..<40 {
            let events = (0..<50).map { i in
                NewEvent(
                    id: "b\(b)-\(i)", type: DocumentEvents.recorded, stream: "c",
                    metadata: [("collection", "c"), ("key", "k\(i)")],
                    payload: bytes("{\"s\":\"") + (0..<1500).map { _ in UInt8.random(in: 97...122, using: &rng) } + bytes("\"}"))
            }
            _ = try await store.append(events)
        }
        let s = try await store.stats()
        #expect(s.events == 2_000)
        #expect(try await store.quarantined().isEmpty)
        #expect(s.mapSize >= 4 << 20)
        #expect(try await store.verify().ok)
    }
}

/// Twenty document events, and 400 events after them mixing ids already in the log, ids repeated
/// in the batch, repeated and already-stored bodies and events without one; bodies of hex noise
/// (about 2:1 under zstd), so the 400 outgrow a 1 MiB map.
private func mixedLargeBatch() -> (early: [NewEvent], batch: [NewEvent]) {
    let early = (0..<20).map { i in
        NewEvent(
            id: "d\(i)", type: DocumentEvents.recorded, stream: "s", metadata: [("collection", "c"), ("key", "k\(i % 7)")],
            payload: bytes("{\"i\":\(i),\"f\":\"\(String(repeating: "q", count: 900))\"}"))
    }
    var rng = SplitMix64(seed: 5)
    let noise = (0..<400).map { _ in (0..<320).map { _ in String(rng.next(), radix: 16) }.joined() }
    let batch: [NewEvent] = (0..<400).map { i in
        switch i % 10 {
        case 0: return early[i / 10 % early.count]  // already in the log
        case 1: return NewEvent(id: "n\(i - 1)", type: "Noted", stream: "t")  // repeats the id before it
        case 2: return NewEvent(id: "bare\(i)", type: "Noted", stream: "t")  // no body
        case 3:
            return NewEvent(
                id: "same\(i)", type: DocumentEvents.recorded, stream: "s",  // a body stored already
                metadata: [("collection", "c"), ("key", "k\(i % 13)")], payload: early[3].payload)
        default:
            let key = "k\(i % 13)"
            return NewEvent(
                id: i % 10 == 9 ? "n\(i - 1)" : "n\(i)", type: DocumentEvents.recorded, stream: "s",
                metadata: [("collection", "c"), ("key", key)],
                payload: bytes("{\"i\":\(i / 2),\"f\":\"\(noise[i / 2])\"}"))
        }
    }
    return (early, batch)
}

/// The same log, bodies and documents in both stores, and `a` verifies.
private func expectSameContents(_ a: EventStore, _ b: EventStore) async throws {
    let (sa, sb) = (try await a.stats(), try await b.stats())
    #expect(sa.events == sb.events && sa.blobs == sb.blobs && sa.blobRawBytes == sb.blobRawBytes && sa.payloadCount == sb.payloadCount)
    #expect(try await allStates(a).map(\.comparable) == allStates(b).map(\.comparable))
    let (ea, eb) = (try await a.events(EventQuery()), try await b.events(EventQuery()))
    #expect(ea.map(\.id) == eb.map(\.id) && ea.map(\.type) == eb.map(\.type) && ea.map(\.payload) == eb.map(\.payload))
    for e in ea {
        guard let ref = e.payload else { continue }
        #expect(try await a.body(sha256: ref.hashHex) == b.body(sha256: ref.hashHex))
    }
    #expect(try await a.verify().ok)
}
