@testable import EventStore
import Foundation
import LMDB
import Testing

/// Bodies that are the next version of one URL are stored as zstd deltas with a keyframe every K
/// versions; document versions as deltas against their keyframe; old stores migrate on open.
@Suite struct DeltaChainTests {
    /// Version `v` of a list of 200 items (about 20 KB): three items change per version.
    static func list(_ v: Int, salt: String = "") -> [UInt8] {
        var items: [String] = []
        for i in 0..<200 {
            let changed = (0...v).filter { ($0 * 7 + 3 * ($0 % 5)) % 200 == i || ($0 * 13) % 200 == i || ($0 * 31 + 1) % 200 == i }.count
            items.append(
                "{\"id\":\(i),\"name\":\"item \(i)\(salt)\",\"price\":\(100 + i * 3 + changed),\"stock\":\(changed * 2),\"status\":\"\(changed % 2 == 0 ? "available" : "sold")\"}"
            )
        }
        return Array(("[" + items.joined(separator: ",") + "]").utf8)
    }

    static func page(_ v: Int, url: String = "http://api.test/items", salt: String = "") -> NewEvent {
        NewEvent(id: "\(url)#\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", url)], payload: list(v, salt: salt))
    }

    static func options(keyframeInterval: Int) -> StoreOptions {
        var o = testOptions()
        o.deltaKeyframeInterval = keyframeInterval
        return o
    }

    /// The `bodies` rows as stored: seq → row.
    static func bodyRows(_ store: EventStore) throws -> [UInt64: [UInt8]] {
        try store.environment.read { txn in
            var out: [UInt64: [UInt8]] = [:]
            let c = try txn.cursor(store.schema.bodies)
            var e = try c.first()
            while let row = e {
                out[UInt64(bigEndianBytes: row.key)] = [UInt8](row.value)
                e = try c.next()
            }
            return out
        }
    }

    /// The `bodies` rows: seq → (codec, base, depth).
    static func rows(_ store: EventStore) throws -> [UInt64: (codec: UInt8, base: UInt64?, depth: Int)] {
        try store.environment.read { txn in
            var out: [UInt64: (UInt8, UInt64?, Int)] = [:]
            let c = try txn.cursor(store.schema.bodies)
            var e = try c.first()
            while let row = e {
                let seq = UInt64(bigEndianBytes: row.key)
                if row.value.first == BlobCodec.delta {
                    let h = try DeltaHeader(row.value, checkSeal: true)
                    out[seq] = (BlobCodec.delta, h.base, h.depth)
                } else {
                    out[seq] = (row.value.first!, nil, 0)
                }
                e = try c.next()
            }
            return out
        }
    }

    @Test func versionsOfOneURLAreDeltasWithAChainStartEveryK() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 8))
        // Two URLs interleaved: each chains to its own previous version only.
        for v in 0..<20 {
            _ = try await store.append([Self.page(v), Self.page(v, url: "http://api.test/other", salt: "-other")])
        }
        let rows = try Self.rows(store)
        let events = try await store.events(EventQuery())
        #expect(rows.count == 40)
        for e in events {
            let row = try #require(rows[e.seq])
            let url = e[metadata: "url"]
            let v = Int(e.id.split(separator: "#").last!)!
            // The first version is stored whole: the URL's anchor (seq 1 and 2). A chain is at
            // most 7 deltas deep; each new one starts from the anchor (these versions differ from
            // it by a few items: far less than a keyframe), the rest from the version before.
            let expected = v == 0 ? 0 : (v - 1) % 7 + 1
            #expect(row.depth == expected, "seq \(e.seq): depth \(row.depth)")
            if let base = row.base {
                #expect(base == (row.depth == 1 ? (url == "http://api.test/items" ? 1 : 2) : e.seq - 2), "seq \(e.seq)")
                #expect(events[Int(base) - 1][metadata: "url"] == url)
                #expect(row.depth == rows[base]!.depth + 1)
            }
            #expect(try await store.payload(of: e) == Self.list(v, salt: url == "http://api.test/items" ? "" : "-other"))
        }
        // Against the same history stored whole.
        let whole = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 1))
        for v in 0..<20 { _ = try await whole.append([Self.page(v), Self.page(v, url: "http://api.test/other", salt: "-other")]) }
        #expect(try Self.rows(whole).values.allSatisfy { $0.codec == BlobCodec.sealedZstd })
        let (deltaBytes, wholeBytes) = (try await store.stats().blobStoredBytes, try await whole.stats().blobStoredBytes)
        #expect(deltaBytes * 3 < wholeBytes, "\(deltaBytes) bytes as deltas, \(wholeBytes) whole")
        #expect(try await store.verify().ok)
    }

    /// A reader that keeps checkpoints (``DeltaBases/keepsCheckpoints``: the one slices are read
    /// through) gives every version of a long chain exactly, newest first, in random order and
    /// again, walking from the checkpoints it kept on the way up instead of from the keyframe.
    @Test func checkpointsOnTheWayUpReadEveryVersionTheSame() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 128))
        for v in 0..<90 { _ = try await store.append([Self.page(v)]) }
        let rows = try Self.rows(store)
        #expect(rows.values.map(\.depth).max() ?? 0 > 3 * DeltaBases.checkpointEvery)
        let events = try await store.events(EventQuery())
        let expected = Dictionary(uniqueKeysWithValues: events.enumerated().map { ($1.seq, Self.list($0)) })
        let schema = store.schema
        var rng = SplitMix64(seed: 5)
        let orders = [events.map(\.seq).reversed(), events.map(\.seq).shuffled(using: &rng), events.map(\.seq).reversed()]
        let (read, kept) = try await store.read { txn -> ([[UInt64: [UInt8]]], Int) in
            let bases = DeltaBases(bodies: schema.bodies, txn: txn, keepsCheckpoints: true)
            let context = ZstdContext()
            var out: [[UInt64: [UInt8]]] = []
            for order in orders {
                var bodies: [UInt64: [UInt8]] = [:]
                for seq in order {
                    let row = try #require(try BlobCodec.stored(seq: seq, bodies: schema.bodies, in: txn))
                    bodies[seq] = try bases.decode(row, seq: seq, context: context, checkSeal: true)
                }
                out.append(bodies)
            }
            return (out, bases.checkpointCount)
        }
        for bodies in read { #expect(bodies == expected) }
        #expect(kept >= 4, "\(kept) checkpoints kept")
        // A reader for one body keeps none.
        let single = try await store.read { txn in
            let bases = DeltaBases(bodies: schema.bodies, txn: txn)
            let row = try #require(try BlobCodec.stored(seq: events.last!.seq, bodies: schema.bodies, in: txn))
            #expect(try bases.decode(row, seq: events.last!.seq, context: ZstdContext()) == Self.list(89))
            return bases.checkpointCount
        }
        #expect(single == 0)
    }

    /// A batch's versions of one URL have their deltas compressed off the writer, against the
    /// version before them in the batch: the rows are byte for byte those of the same versions
    /// appended one at a time, also where the guess is wrong (a version that repeats an older one
    /// stores nothing, so the next one follows another body than the batch says).
    @Test func deltasWorkedOutAheadAreTheRowsTheWriterWouldStore() async throws {
        let versions = [0, 1, 2, 0, 3, 4, 5, 6, 7, 8]
        func events(_ k: Int) -> [NewEvent] {
            [
                NewEvent(
                    id: "a\(k)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/items")], payload: Self.list(versions[k])),
                NewEvent(
                    id: "b\(k)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/other")],
                    payload: Self.list(versions[k], salt: "-b"))
            ]
        }
        let batched = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 6))
        _ = try await batched.append(versions.indices.flatMap(events))
        let single = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 6))
        for k in versions.indices { _ = try await single.append(events(k)) }
        let (a, b) = (try Self.bodyRows(batched), try Self.bodyRows(single))
        #expect(a.count == 18, "two repeated versions store nothing")
        #expect(a.keys.sorted() == b.keys.sorted())
        for seq in a.keys.sorted() {
            let same = a[seq] == b[seq]
            #expect(same, "seq \(seq): \(a[seq]?.count ?? 0) bytes batched, \(b[seq]?.count ?? 0) one at a time")
        }
        #expect(try Self.rows(batched).values.filter { $0.codec == BlobCodec.delta }.count >= 12)
        #expect(try await batched.verify().ok)
    }

    /// A rewrite of the bottom of a chain (a retention dropping the oldest version) stores the
    /// rows above it whole again; the next version then starts a new chain instead of claiming a
    /// depth on a base that is a keyframe now, and every version reads back.
    @Test func aVersionAfterARewriteBelowItsChainReadsBack() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 8))
        for v in 0..<4 { _ = try await store.append([Self.page(v)]) }
        let by = try await store.append(NewEvent(type: "Dropped", stream: "src")).seq
        #expect(try await store.rewriteBodies([BodyRewrite(original: Hashing.sha256(Self.list(0)), content: Array("{}".utf8))], by: by) == 1)
        _ = try await store.append([Self.page(4)])
        _ = try await store.append([Self.page(5)])
        for e in try await store.events(EventQuery()) where e.type == "CollectionPageFetched" {
            let v = Int(e.id.split(separator: "#").last!)!
            let same = try await store.payload(of: e) == (v == 0 ? Array("{}".utf8) : Self.list(v))
            #expect(same, "version \(v)")
        }
        // Every delta is exactly one deeper than its base.
        let rows = try Self.rows(store)
        for (seq, row) in rows { if let base = row.base { #expect(rows[base]?.depth == row.depth - 1, "seq \(seq)") } }
        #expect(rows.values.contains { $0.codec == BlobCodec.delta }, "the versions after the rewrite chain again")
    }

    /// A keyframe that restarts a chain is compressed at ``DeltaChains/keyframeLevel`` (when that
    /// is smaller); the first body of a URL at the usual level, so a first fetch is not slower.
    @Test func aKeyframeThatRestartsAChainIsDenser() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 2))
        var rng = SplitMix64(seed: 29)
        func word() -> String { String((0..<(3 + Int(rng.next() % 6))).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) }) }
        let items = (0..<300).map { i in
            "{\"id\":\(i),\"name\":\"\(word()) \(word())\",\"tags\":[\"\(word())\",\"\(word())\"],\"price\":\(rng.next() % 10_000)}"
        }
        // The third version shares nothing with the first: its chain cannot start from the
        // anchor for less than half a keyframe, so it is a keyframe.
        let others = (0..<300).map { i in "{\"id\":\(i + 1000),\"label\":\"\(word()) \(word()) \(word())\",\"n\":\(rng.next() % 100_000)}" }
        func body(_ v: Int) -> [UInt8] {
            if v == 2 { return Array(("[" + others.joined(separator: ",") + "]").utf8) }
            return Array(
                ("["
                    + items.enumerated().map { $0.offset == v ? $0.element.replacingOccurrences(of: "{", with: "{\"v\":\(v),") : $0.element }.joined(
                        separator: ",") + "]").utf8)
        }
        for v in 0..<3 {
            _ = try await store.append(
                NewEvent(id: "v\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/items")], payload: body(v)))
        }
        let rows = try Self.rows(store)
        #expect(rows[1]!.depth == 0 && rows[2]!.depth == 1 && rows[3]!.depth == 0)
        let stored: [Int] = try store.environment.read { txn in
            try [1, 3].map { seq in try #require(try BlobCodec.stored(seq: UInt64(seq), bodies: store.schema.bodies, in: txn)).count }
        }
        for (seq, v) in [(0, 0), (1, 2)] {
            let usual = ZstdContext.pooled { BlobCodec.encode(body(v), context: $0) }.count
            let dense = ZstdContext.pooled { BlobCodec.encode(body(v), context: $0, level: DeltaChains.keyframeLevel) }.count
            #expect(dense < usual)
            #expect(
                stored[seq] == (v == 0 ? usual : dense), "v \(v): \(stored[seq]) bytes stored, \(usual) at level 3, \(dense) at \(DeltaChains.keyframeLevel)")
        }
        for e in try await store.events(EventQuery()) {
            #expect(try await store.payload(of: e) == body(Int(e.id.dropFirst())!))
        }
        #expect(try await store.verify().ok)
    }

    /// A body of `n` items, version `v`: item `v` changed; `reversed` lists them the other way
    /// round (a version whose keys or items were reordered, as scraped files sometimes are).
    static func big(_ v: Int, reversed: Bool = false, n: Int = 1_500) -> [UInt8] {
        var rng = SplitMix64(seed: 3)
        var items = (0..<n).map { i in
            "{\"id\":\(i),\"name\":\"\(rng.next() % 1_000_000) \(rng.next() % 1_000_000)\",\"price\":\(i == v ? 1 : Int(rng.next() % 10_000))}"
        }
        if reversed { items.reverse() }
        return Array(("[" + items.joined(separator: ",") + "]").utf8)
    }

    /// The version after an odd one (reordered) is stored against the version before the odd
    /// one, at the odd one's depth, when that is smaller: returning costs what a usual version
    /// costs, not what the departure did, and the chain does not grow.
    @Test func theWayBackFromAnOddVersionIsADeltaOnTheOneBefore() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 48))
        let bodies = [Self.big(0), Self.big(1), Self.big(2), Self.big(2, reversed: true), Self.big(3), Self.big(4)]
        for (v, body) in bodies.enumerated() {
            _ = try await store.append(
                NewEvent(id: "v\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/big")], payload: body))
        }
        let rows = try Self.rows(store)
        let sizes: [UInt64: Int] = try store.environment.read { txn in
            var out: [UInt64: Int] = [:]
            for seq in 1...6 { out[UInt64(seq)] = try #require(try BlobCodec.stored(seq: UInt64(seq), bodies: store.schema.bodies, in: txn)).count }
            return out
        }
        #expect(rows[4]!.base == 3 && rows[4]!.depth == 3, "the odd version follows the one before it")
        #expect(sizes[4]! >= DeltaChains.retryAbove, "the odd version is a large delta: \(sizes[4]!) bytes")
        #expect(rows[5]!.base == 3 && rows[5]!.depth == 3, "the way back is a delta on the version before the odd one")
        #expect(sizes[5]! < 1_024, "\(sizes[5]!) bytes")
        #expect(rows[6]!.base == 5 && rows[6]!.depth == 4)
        for e in try await store.events(EventQuery()) {
            #expect(try await store.payload(of: e) == bodies[Int(e.id.dropFirst())!])
        }
        #expect(try await store.verify().ok)
    }

    /// A chain of large bodies ends sooner: a read decodes at most about
    /// ``DeltaChains/chainBytes`` along it. 1.4 MB versions chain about 17 deep, not 48, and
    /// the next chain starts from the anchor.
    @Test func chainsOfLargeBodiesAreShorter() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 48))
        var bodies: [[UInt8]] = []
        for v in 0..<20 {
            let body = Self.big(v, n: 30_000)
            _ = try await store.append(
                NewEvent(id: "v\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/large")], payload: body))
            bodies.append(body)
        }
        let chains = DeltaChains(keyframeInterval: 48)
        let length = chains.chainLength(bodies[0].count)
        #expect((14...18).contains(length), "\(bodies[0].count) bytes: chains of \(length)")
        #expect(chains.chainLength(300_000) == 48 && chains.chainLength(1 << 30) == 8)
        let rows = try Self.rows(store)
        // Depths 0…length−1, then the next chain: a delta against the anchor (seq 1), 1, 2, …
        #expect((1...20).map { rows[UInt64($0)]!.depth } == (0..<20).map { $0 < length ? $0 : $0 - length + 1 })
        #expect(rows[UInt64(length + 1)]!.base == 1)
        for e in try await store.events(EventQuery()) { #expect(try await store.payload(of: e) == bodies[Int(e.id.dropFirst())!]) }
        #expect(try await store.verify().ok)
    }

    /// A chain starts from the lineage's anchor (its last body stored whole) when that costs less
    /// than half a keyframe. Erasing the anchor stores every body that depends on it whole again
    /// (each reads back as it was), and the next chain starts without it.
    @Test func chainsStartFromTheAnchorUntilItIsErased() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: Self.options(keyframeInterval: 4))
        var bodies: [[UInt8]] = []
        func add(_ body: [UInt8]) async throws {
            _ = try await store.append(
                NewEvent(
                    id: "v\(bodies.count)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/big")], payload: body))
            bodies.append(body)
        }
        for v in 0..<10 { try await add(Self.big(v)) }
        var rows = try Self.rows(store)
        #expect(rows[1]!.depth == 0)
        // Chains of 3 deltas; seqs 5 and 8 start from the anchor, seq 1.
        #expect([2, 3, 4, 5, 6, 7, 8, 9, 10].map { rows[UInt64($0)]!.depth } == [1, 2, 3, 1, 2, 3, 1, 2, 3])
        #expect(rows[5]!.base == 1 && rows[8]!.base == 1)
        #expect(try await store.verify().ok)
        let by = try await store.append(NewEvent(type: "Forgotten", stream: "src")).seq
        #expect(try await store.rewriteBodies([BodyRewrite(original: Hashing.sha256(bodies[0]), content: Array("{}".utf8))], by: by) == 1)
        bodies[0] = Array("{}".utf8)
        rows = try Self.rows(store)
        #expect((2...10).allSatisfy { rows[UInt64($0)]!.codec != BlobCodec.delta }, "every body on the erased anchor is whole again")
        for v in 10..<13 { try await add(Self.big(v)) }
        rows = try Self.rows(store)
        #expect(rows[12]!.depth == 0, "the next chain starts whole: the anchor is gone")
        #expect(rows[13]!.base == 12 && rows[14]!.base == 13)
        for e in try await store.events(EventQuery()) where e.type == "CollectionPageFetched" {
            #expect(try await store.payload(of: e) == bodies[Int(e.id.dropFirst())!], "\(e.id)")
        }
    }

    /// A delta of a body of 64 KiB or more is compressed at ``DeltaChains/denseDeltaLevel``; a
    /// smaller body's at the usual level (its fetch pays for every millisecond). Both read back.
    @Test func aDeltaOfALargeBodyIsDenser() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: testOptions())
        var rng = SplitMix64(seed: 31)
        func word() -> String { String((0..<(3 + Int(rng.next() % 6))).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) }) }
        let items = (0..<1_400).map { i in
            "{\"id\":\(i),\"name\":\"\(word()) \(word())\",\"tags\":[\"\(word())\",\"\(word())\"],\"price\":\(rng.next() % 10_000)}"
        }
        func body(_ v: Int, count: Int) -> [UInt8] {
            Array(
                ("["
                    + items.prefix(count).enumerated().map { i, item in
                        i % 97 == v % 97 || i % 89 == v ? item.replacingOccurrences(of: "{", with: "{\"v\":\(v),") : item
                    }.joined(separator: ",") + "]").utf8)
        }
        let large = (0..<3).map { body($0, count: 1_400) }, small = (0..<3).map { body($0, count: 300) }
        #expect(large[0].count >= DeltaChains.denseDeltaMinimum && small[0].count < DeltaChains.denseDeltaMinimum)
        for v in 0..<3 {
            _ = try await store.append([
                NewEvent(id: "large\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/large")], payload: large[v]),
                NewEvent(id: "small\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", "http://api.test/small")], payload: small[v])
            ])
        }
        let rows = try Self.rows(store)
        // Seqs 1, 3, 5 hold the large bodies, 2, 4, 6 the small ones; each v ≥ 1 a delta against v − 1.
        #expect([3, 4, 5, 6].allSatisfy { rows[UInt64($0)]!.codec == BlobCodec.delta })
        let stored: [Int] = try store.environment.read { txn in
            try [3, 5, 4, 6].map { seq in try #require(try BlobCodec.stored(seq: UInt64(seq), bodies: store.schema.bodies, in: txn)).count }
        }
        for (i, (bodies, v)) in [(large, 1), (large, 2), (small, 1), (small, 2)].enumerated() {
            // The row the writer would store at `level`: against v − 1 (seq 2v − 1 for the
            // large list, 2v for the small one), at depth v.
            func delta(_ level: Int32) -> Int {
                ZstdContext.pooled {
                    BlobCodec.encodeDelta(bodies[v], base: bodies[v - 1], baseSeq: UInt64(i < 2 ? 2 * v - 1 : 2 * v), depth: v, context: $0, level: level)!
                }.count
            }
            let usual = delta(BlobCodec.level), dense = delta(DeltaChains.denseDeltaLevel)
            if i < 2 {
                #expect(dense < usual && stored[i] == dense, "large v\(v): \(stored[i]) stored, \(usual) at level 3, \(dense) dense")
            } else {
                #expect(stored[i] == usual, "small v\(v): \(stored[i]) stored, \(usual) at level 3")
            }
        }
        for e in try await store.events(EventQuery()) {
            let v = Int(e.id.last!.wholeNumberValue!)
            #expect(try await store.payload(of: e) == (e.id.hasPrefix("large") ? large[v] : small[v]))
        }
        #expect(try await store.verify().ok)
    }

    /// A body of another stream, type or URL, a small body and an unchanged body (deduplicated)
    /// start or continue no chain of the wrong lineage.
    @Test func onlyTheSameStreamTypeAndURLChain() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: testOptions())
        var other = Self.page(1)
        other.type = "DetailFetched"
        var elsewhere = Self.page(2)
        elsewhere.stream = "another"
        _ = try await store.append([
            Self.page(0), other, elsewhere, NewEvent(type: "T", stream: "src", metadata: [("url", "http://api.test/items")], payload: bytes("{\"small\":1}"))
        ])
        _ = try await store.append([Self.page(0, url: "http://api.test/items?again")])  // same body: stored once
        _ = try await store.append([Self.page(3)])
        let rows = try Self.rows(store)
        #expect(rows[1]?.codec == BlobCodec.sealedZstd && rows[2]?.codec == BlobCodec.sealedZstd && rows[3]?.codec == BlobCodec.sealedZstd)
        #expect(rows[4]?.codec == BlobCodec.raw)
        #expect(rows[5] == nil)
        #expect(rows[6]?.base == 1 && rows[6]?.depth == 1)
        #expect(try await store.verify().ok)
    }

    /// Versions of one URL that do not compress (an image's) are stored whole, outside any
    /// chain (no lineage row), prepared by the helper (a batch large enough for it) or by the
    /// writer: the helper's deltas of them are not small, so each is compressed alone, found
    /// incompressible and left raw; so is an image that repeats an earlier one but for a byte.
    @Test func versionsThatDoNotCompressStayWhole() async throws {
        var rng = SplitMix64(seed: 3)
        let image = (0..<40_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        func versions(_ salt: UInt8) -> [NewEvent] {
            (0..<4).map { v in
                var body = (0..<20_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                if v == 3 { body = image + [salt] }
                return NewEvent(type: "ImageFetched", stream: "src", metadata: [("url", "http://api.test/a.png")], payload: body)
            }
        }
        let batched = try await EventStore.open(at: makeTempDir(), projections: [], options: testOptions())
        _ = try await batched.append(versions(1) + versions(2) + versions(3))
        let single = try await EventStore.open(at: makeTempDir(), projections: [], options: testOptions())
        rng = SplitMix64(seed: 3)
        _ = (0..<40_000).map { _ in rng.next() }
        for e in versions(1) + versions(2) + versions(3) { _ = try await single.append(e) }
        for store in [batched, single] {
            let rows = try Self.rows(store)
            #expect(rows.count == 12 && rows.values.allSatisfy { $0.codec == BlobCodec.raw })
            #expect(try store.environment.read { txn in try txn.stat(store.schema.lineage).entries } == 0)
            #expect(try await store.verify().ok)
        }
    }

    /// Imports from git before format 4 named each version's commit in its URL; the lineage
    /// takes it out (when it is the event's `commit`), so such a store's file versions chain
    /// when it migrates, as new imports (one URL, the commit in the metadata) do.
    @Test func anOldImportsCommitURLsAreOneLineage() {
        func event(_ url: String, commit: String?) -> NewEvent {
            NewEvent(type: "CollectionPageFetched", stream: "src", metadata: [("url", url)] + (commit.map { [("commit", $0)] } ?? []))
        }
        let now = DeltaChains.lineage(of: event("git:/r:items.json", commit: "c1"))
        #expect(DeltaChains.lineage(of: event("git:/r@c1:items.json", commit: "c1")) == now)
        #expect(DeltaChains.lineage(of: event("git:/r@c2:items.json", commit: "c2")) == now)
        // Not the event's commit, or no commit: the URL as it is.
        #expect(DeltaChains.lineage(of: event("git:/r@c2:items.json", commit: "c1")) != now)
        #expect(DeltaChains.lineage(of: event("https://api.test/a@b:c", commit: nil)) != DeltaChains.lineage(of: event("https://api.test/a:c", commit: nil)))
    }

    /// Every flipped bit of a delta row (its seal, base, depth or frame; and for a pretty-printed
    /// body's codec 5 row, its layout and size too) is reported by `verify`, and a read of it
    /// fails instead of returning other bytes.
    @Test(arguments: [false, true])
    func everyFlippedByteOfADeltaIsReported(pretty: Bool) async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: testOptions())
        for v in 0..<3 {
            _ = try await store.append(
                pretty ? JSONLayoutTests.event("v\(v)", JSONLayoutTests.bytes(JSONLayoutTests.version(v).pretty())) : Self.page(v))
        }
        let env = store.environment, bodies = store.schema.bodies
        let original = try env.read { txn in [UInt8](try #require(try txn.get(bodies, key: UInt64(3).bigEndianBytes))) }
        #expect(original.first == (pretty ? BlobCodec.laidOut : BlobCodec.delta))
        var rng = SplitMix64(seed: 7)
        for index in 0..<original.count {
            var damaged = original
            damaged[index] ^= UInt8(1 << (rng.next() % 8))
            try env.write { txn in _ = try txn.put(bodies, key: UInt64(3).bigEndianBytes, value: damaged) }
            let report = try await store.verify(checkProjections: false)
            #expect(!report.ok, "byte \(index) of \(original.count)")
        }
        try env.write { txn in _ = try txn.put(bodies, key: UInt64(3).bigEndianBytes, value: original) }
        #expect(try await store.verify().ok)
    }

    /// A store written before delta chains (format 3: every body whole) is rewritten on open;
    /// a migration killed part-way resumes after the last seq it committed. Every body, the
    /// projections (rebuilt) and `verify` come out as they were.
    @Test(arguments: [nil, 10] as [UInt64?])
    func aFormatThreeStoreMigratesResumably(killedAfter: UInt64?) async throws {
        let dir = makeTempDir()
        let projections: [any Projection] = [KeyedDocumentProjection()]
        var before: [[UInt8]?] = []
        var states: [DocumentState] = []
        do {
            let old = try await EventStore.open(at: dir, projections: projections, options: Self.options(keyframeInterval: 1))
            for v in 0..<30 {
                var e = Self.page(v)
                e.type = DocumentEvents.recorded
                e.metadata += [("collection", "lists"), ("key", "all")]
                _ = try await old.append([e])
            }
            for e in try await old.events(EventQuery()) { before.append(try await old.payload(of: e)) }
            states = try await allStates(old)
            #expect(try Self.rows(old).values.allSatisfy { $0.base == nil })
            try old.environment.write { txn in
                try txn.clear(old.schema.lineage)
                if let killedAfter {
                    // A migration killed after committing seqs 1...killedAfter (left whole here).
                    _ = try txn.put(old.schema.meta, key: LogSchema.deltaMigrationKey, value: killedAfter.bigEndianBytes)
                } else {
                    _ = try txn.put(old.schema.meta, key: Array("format".utf8), value: UInt64(3).bigEndianBytes)
                }
            }
        }
        let store = try await EventStore.open(at: dir, projections: projections, options: testOptions())
        let rows = try Self.rows(store)
        let first = (killedAfter ?? 0) + 1
        #expect((1...first).allSatisfy { rows[$0]?.base == nil })
        #expect(((first + 1)...30).allSatisfy { rows[$0]?.base == $0 - 1 })
        #expect(try store.environment.read { txn in try txn.get(store.schema.meta, key: LogSchema.deltaMigrationKey) } == nil)
        var after: [[UInt8]?] = []
        for e in try await store.events(EventQuery()) { after.append(try await store.payload(of: e)) }
        #expect(after == before)
        #expect(try await allStates(store) == states)
        #expect(try await store.verify().ok)
        let stats = try await store.stats()
        #expect(stats.blobStoredBytes * 3 < stats.blobRawBytes)
    }

    /// Document versions that are not a stored payload are deltas against their keyframe: a
    /// read decodes at most two frames, the history reads back every version, and a rebuild
    /// writes the same rows. (Documents of more than
    /// ``KeyedDocumentProjection/HistoryRow/openKeyframeLimit``: an open row of smaller ones is
    /// solid, below.)
    @Test func documentVersionsAreDeltasAgainstTheirKeyframe() async throws {
        let store = try await openStore()
        var rng = SplitMix64(seed: 11)
        let text = String((0..<2_060).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) })
        func doc(_ v: Int) -> String { "{\"id\":1,\"description\":\"\(text)\",\"price\":\(100 + v),\"stock\":\(v * 3)}" }
        // Snapshot members are documents the projection builds: never a stored payload.
        // Two rows of K versions and an open row of 8.
        let k = KeyedDocumentProjection.keyframeInterval, count = 2 * k + 8
        for v in 0..<count {
            _ = try await store.append(
                NewEvent(
                    type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")],
                    payload: bytes("{\"k\":\(doc(v))}")))
        }
        let tables = try store.tables(of: "documents")
        // Each keyframe starts a row of `history`; its deltas are entries of that row.
        let (rows, sizes): ([Int], [Int]) = try await store.read { txn in
            let c = try txn.cursor(tables["history"])
            var rows: [Int] = [], out: [Int] = []
            var e = try c.first()
            while let entry = e {
                let row = try KeyedDocumentProjection.HistoryRow(key: entry.key, value: entry.value, txn, tables)
                var n = 0
                try row.forEach { _, record in
                    out.append(record.count); n += 1; return true
                }
                rows.append(n)
                e = try c.next()
            }
            return (rows, out)
        }
        #expect(rows == [k, k, 8])
        // The two closed rows were moved to `history-packed` (numbered in the order they closed,
        // after number 0, the count of the rows waiting for a block); `history` points at them
        // and holds the open one.
        let (packed, pointers): (Int, [Bool]) = try await store.read { txn in
            var n = -1, marks: [Bool] = []
            let p = try txn.cursor(tables["history-packed"])
            var e = try p.first()
            while let entry = e { n += 1; #expect(UInt64(bigEndianBytes: entry.key) == UInt64(n)); e = try p.next() }
            let h = try txn.cursor(tables["history"])
            e = try h.first()
            while let entry = e { marks.append(entry.value.first == KeyedDocumentProjection.HistoryRow.pointerMark); e = try h.next() }
            return (n, marks)
        }
        #expect(packed == 2 && pointers == [true, true, false])
        #expect(sizes.count == count)
        // The open row's records as stored: a keyframe, then deltas of a few dozen bytes.
        let open = sizes[(2 * k)...]
        #expect(open.first! > 300 && open.dropFirst().allSatisfy { $0 < 80 }, "\(sizes)")
        // The closed rows are solid (``HistoryRow/solidColumns(_:seq:)``): each reads back with every
        // document whole, and stores K versions in less than K deltas took.
        #expect(sizes[..<(2 * k)].allSatisfy { $0 > 600 }, "\(sizes)")
        let packedSizes: [Int] = try await store.read { txn in
            var out: [Int] = []
            let p = try txn.cursor(tables["history-packed"])
            var e = try p.seek(atLeast: UInt64(1).bigEndianBytes)
            while let entry = e {
                // Both wait for their block, each compressed alone.
                #expect(entry.value.first == KeyedDocumentProjection.HistoryRow.solidMark)
                out.append(entry.value.count)
                e = try p.next()
            }
            return out
        }
        #expect(packedSizes.count == 2 && packedSizes.allSatisfy { $0 < 1_600 + k * 30 }, "\(packedSizes)")
        let history = try await store.documents { try $0.history(collection: "c", key: "k") }
        #expect(history.count == count)
        for (v, version) in history.enumerated() {
            #expect(version.document == (try JSONValue(parsing: bytes(doc(v)))))
            if v > 0 { #expect(version.changes.count == 2) }
            let asOf = try await store.documents { try $0.state(collection: "c", key: "k", asOf: version.seq) }
            #expect(asOf?.document == version.document)
        }
        #expect(try await store.verify().ok)
    }

    /// The stored values of the documents projection's `table` (`history` or `history-packed`)
    /// in key order: every row, after `history-packed`'s number 0 (its waiting rows' count) and
    /// before its blocks' stream.
    static func storedRows(_ store: EventStore, _ table: String) async throws -> [[UInt8]] {
        let tables = try store.tables(of: "documents")
        return try await store.read { txn in
            var out: [[UInt8]] = []
            let c = try txn.cursor(tables[table])
            var e = try c.seek(atLeast: UInt64(1).bigEndianBytes)
            while let entry = e, entry.key.first != KeyedDocumentProjection.HistoryRow.streamMark {
                out.append([UInt8](entry.value))
                e = try c.next()
            }
            return out
        }
    }

    /// A row closes before its versions' texts, added up, pass
    /// ``KeyedDocumentProjection/HistoryRow/solidTextLimit``, however they grow and shrink, so
    /// every closed row is solid. (Counted as the versions times the larger of the keyframe and
    /// the newest, a row whose middle versions were the largest passed it and stayed plain.)
    @Test func aRowClosesBeforeItsTextPassesTheSolidLimit() async throws {
        var rng = SplitMix64(seed: 13)
        let base = String((0..<220_000).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) })
        let sizes = [100_000, 200_000, 200_000, 100_000, 100_000, 100_000, 100_000, 150_000]
        let store = try await openStore()
        for (v, size) in sizes.enumerated() {
            _ = try await store.append([
                NewEvent(
                    type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")],
                    payload: bytes("{\"k\":{\"t\":\"\(base.prefix(size))\",\"v\":\(v)}}"))
            ])
        }
        let marks = try await Self.storedRows(store, "history-packed").map { $0.first! }
        // The first row closes at the fourth version (100 + 200 + 200 KB, then 100 more would
        // pass 512 KiB), the second at the eighth (four of 100 KB, then 150): both blocks of
        // their own. (Counted the old way, the first row took five versions, 700 KB, plain.)
        #expect(marks == [KeyedDocumentProjection.HistoryRow.blockMark, KeyedDocumentProjection.HistoryRow.blockMark], "\(marks)")
        let history = try await store.documents { try $0.history(collection: "c", key: "k") }
        let versions = history.map { version -> JSONValue? in
            guard case .object(let o) = version.document else { return nil }
            return o["v"]
        }
        #expect(versions == sizes.indices.map { JSONValue.number(String($0)) })
        #expect(try await store.verify().ok)
    }

    /// An open row of small documents (a keyframe of at most
    /// ``KeyedDocumentProjection/HistoryRow/openKeyframeLimit``) is stored solid, compressed
    /// alone: far less than its keyframe and a frame per delta. Every version reads back, now and
    /// as of its seq; one batch stores the bytes that one event per batch stores (the fold holds
    /// rows in memory, plain, and writes them solid); a removal closes the row, which then waits
    /// for its block in the very bytes it was stored in.
    @Test func anOpenRowOfSmallDocumentsIsSolid() async throws {
        var rng = SplitMix64(seed: 12)
        let text = String((0..<300).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) })
        func doc(_ v: Int) -> String { "{\"id\":1,\"description\":\"\(text)\",\"price\":\(100 + v),\"stock\":\(v * 3)}" }
        let count = KeyedDocumentProjection.keyframeInterval - 4
        let events = (0..<count).map { v in
            NewEvent(type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")], payload: bytes("{\"k\":\(doc(v))}"))
        }
        let single = try await openStore()
        for e in events { _ = try await single.append([e]) }
        let batch = try await openStore()
        _ = try await batch.append(events)
        let open = try await Self.storedRows(single, "history")
        #expect(open.count == 1 && open[0].first == KeyedDocumentProjection.HistoryRow.solidMark)
        // Plain, its keyframe (about 200 bytes compressed) and 35–40 bytes a delta.
        #expect(open[0].count < 200 + 12 * count, "\(open[0].count) bytes")
        #expect(try await Self.storedRows(batch, "history") == open)
        for store in [single, batch] {
            let history = try await store.documents { try $0.history(collection: "c", key: "k") }
            #expect(history.count == count)
            for (v, version) in history.enumerated() {
                #expect(version.document == (try JSONValue(parsing: bytes(doc(v)))))
                let asOf = try await store.documents { try $0.state(collection: "c", key: "k", asOf: version.seq) }
                #expect(asOf?.document == version.document)
            }
            #expect(try await store.verify().ok)
        }
        _ = try await single.append([
            NewEvent(type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")], payload: bytes("{}"))
        ])
        #expect(try await Self.storedRows(single, "history").isEmpty)
        let waiting = try await Self.storedRows(single, "history-packed")
        #expect(waiting.count == 1 && waiting[0].first == KeyedDocumentProjection.HistoryRow.solidMark && waiting[0].count < open[0].count + 40)
        let history = try await single.documents { try $0.history(collection: "c", key: "k") }
        #expect(history.count == count + 1 && history.last?.kind == .removed)
        #expect(try await single.verify().ok)

        // A damaged open row is never a trap: damage to its frame's bytes is found by `verify`
        // (zstd frames carry no checksum; a rebuild's bytes differ), damage to its size is an
        // error for a read, and the next version of the key is quarantined instead of being
        // built on it.
        let db = try batch.tables(of: "documents")["history"]
        let (key, original): ([UInt8], [UInt8]) = try await batch.read { txn in
            let e = try #require(try txn.cursor(db, raw: true).first())
            return ([UInt8](e.key), [UInt8](e.value))
        }
        func damage(at offset: Int) async throws -> [UInt8] {
            var damaged = original
            damaged[offset] ^= 0x5A
            try batch.environment.write { txn in
                _ = try key.withUnsafeBytes { k in try damaged.withUnsafeBytes { try txn.putRaw(db, key: k, value: $0) } }
            }
            _ = try? await batch.documents { try $0.history(collection: "c", key: "k") }
            #expect(try await batch.verify().ok == false)
            return damaged
        }
        _ = try await damage(at: original.count / 2)
        let damaged = try await damage(at: 1)
        await #expect(throws: (any Error).self) { _ = try await batch.documents { try $0.history(collection: "c", key: "k") } }
        _ = try await batch.append([events[1]])
        let stored = try await batch.read { txn in try #require(try txn.cursor(db, raw: true).first()).value.map { $0 } }
        #expect(stored == damaged)
    }
}
