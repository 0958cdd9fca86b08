@testable import EventStore
import Foundation
import LMDB
import Testing

/// The stream, type and time indexes as blocks of entries (``IndexBlocks``): every query answers
/// as a filter of the whole log does, a store with a row per event (before format 6) reads and
/// grows the same, and `verify` finds a damaged or missing entry.
@Suite struct IndexBlockTests {
    struct Logged {
        var seq: UInt64
        var stream: String
        var type: String
        var effective: Int64
    }

    /// Appends `count` events in batches of 1–60, over three streams and four types, at times
    /// that go forward, repeat and go back (the effective time then stays).
    static func fill(_ store: EventStore, count: Int, seed: UInt64, after logged: [Logged] = []) async throws -> [Logged] {
        var rng = SplitMix64(seed: seed)
        var out = logged
        var time: Int64 = logged.last?.effective ?? 1_700_000_000_000_000
        var effective = logged.last?.effective ?? .min
        var left = count
        while left > 0 {
            let n = min(left, 1 + Int(rng.next() % 60))
            left -= n
            var batch: [NewEvent] = []
            var meta: [(String, String, Int64)] = []
            for _ in 0..<n {
                switch rng.next() % 4 {
                case 0: time -= Int64(rng.next() % 5_000_000)
                case 1: break
                default: time += Int64(rng.next() % 90_000_000)
                }
                let stream = "s\(rng.next() % 3)", type = "T\(rng.next() % 4)"
                batch.append(NewEvent(type: type, recordedAt: Timestamp(microseconds: time), stream: stream))
                meta.append((stream, type, time))
            }
            let outcomes = try await store.append(batch)
            for (o, m) in zip(outcomes, meta) {
                effective = max(effective, m.2)
                out.append(Logged(seq: o.seq, stream: m.0, type: m.1, effective: effective))
            }
        }
        return out
    }

    /// Every stream, type and pair of them, over random ranges, both ways, with and without a
    /// limit; and the seq as of every effective time, a microsecond either side, and before and
    /// after all of them.
    static func expectAnswers(_ store: EventStore, _ logged: [Logged], seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed)
        let head = UInt64(logged.count)
        for _ in 0..<60 {
            let stream: String? = rng.next() % 3 == 0 ? nil : "s\(rng.next() % 3)"
            let type: String? = stream == nil || rng.next() % 2 == 0 ? "T\(rng.next() % 4)" : nil
            let a = 1 + rng.next() % head, b = 1 + rng.next() % head
            let (from, to) = rng.next() % 4 == 0 ? (1, UInt64.max) : (min(a, b), max(a, b))
            let descending = rng.next() % 2 == 0
            let limit = rng.next() % 3 == 0 ? 1 + Int(rng.next() % 20) : Int.max
            let q = EventQuery(stream: stream, type: type, fromSeq: from, toSeq: to, limit: limit, descending: descending)
            var expected = logged.filter { e in
                e.seq >= from && e.seq <= to && (stream == nil || e.stream == stream) && (type == nil || e.type == type)
            }.map(\.seq)
            if descending { expected.reverse() }
            let got = try await store.events(q).map(\.seq)
            #expect(got == Array(expected.prefix(limit)), "\(q)")
        }
        var times = Set<Int64>([logged[0].effective - 1, logged.last!.effective + 1])
        for e in logged { times.formUnion([e.effective - 1, e.effective, e.effective + 1]) }
        for t in times {
            let expected = logged.last { $0.effective <= t }?.seq ?? 0
            #expect(try await store.seq(asOf: Timestamp(microseconds: t)) == expected, "as of \(t)")
        }
    }

    static func rows(_ store: EventStore) throws -> (stream: Int, type: Int, time: Int) {
        let schema = store.schema
        return try store.environment.read { txn in
            (try txn.stat(schema.byStream).entries, try txn.stat(schema.byType).entries, try txn.stat(schema.byTime).entries)
        }
    }

    @Test func theIndexesAnswerAsAFilterOfTheLog() async throws {
        let store = try await openStore()
        let logged = try await Self.fill(store, count: 900, seed: 7)
        try await Self.expectAnswers(store, logged, seed: 7)
        // A row per 128 entries of each name (each append extends the last row), not one per event.
        func blocks(_ names: [String]) -> Int { names.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }.values.reduce(0) { $0 + ($1 + 127) / 128 } }
        let n = try Self.rows(store)
        #expect(n.stream == blocks(logged.map(\.stream)) && n.type == blocks(logged.map(\.type)) && n.time == (900 + 127) / 128, "\(n)")
        #expect(try await store.verify().ok)
        // The head's time is the last row's last entry: an event recorded earlier keeps it.
        let earlier = Timestamp(microseconds: logged.last!.effective - 10)
        let seq = try await store.append(NewEvent(type: "T0", recordedAt: earlier, stream: "s0")).seq
        #expect(try await store.seq(asOf: Timestamp(microseconds: logged.last!.effective)) == seq)
        #expect(try await store.seq(asOf: earlier) == logged.last { $0.effective <= earlier.microseconds }?.seq ?? 0)
        #expect(try await store.verify(checkProjections: false).ok)
    }

    /// A store written with a row per event (as before format 6) reads the same and appends
    /// extend its last rows into blocks; opened again, its rows are rewritten in blocks and it is
    /// marked format 6; `verify` holds throughout.
    @Test func aStoreWithARowPerEventReadsAndGrowsTheSame() async throws {
        let dir = makeTempDir()
        var logged: [Logged] = []
        do {
            let store = try await openStore(dir)
            logged = try await Self.fill(store, count: 300, seed: 11)
            try Self.explode(store, logged)
            #expect(try Self.rows(store).time == 300)
            // Read as they are: rows of one entry; appends extend each name's last row.
            try await Self.expectAnswers(store, logged, seed: 10)
            logged = try await Self.fill(store, count: 100, seed: 9, after: logged)
            try await Self.expectAnswers(store, logged, seed: 8)
            #expect(try await store.verify().ok)
            #expect(try Self.rows(store).time < 300 + 100 / 64)
            _ = try store.environment.write { txn in try txn.put(store.schema.meta, key: LogSchema.formatKey, value: UInt64(4).bigEndianBytes) }
        }
        let store = try await openStore(dir)
        let schema = store.schema
        let format = try store.environment.read { txn in try txn.get(schema.meta, key: LogSchema.formatKey)! }
        #expect(format == LogSchema.formatVersion.bigEndianBytes && LogSchema.formatVersion == 11)
        try await Self.expectAnswers(store, logged, seed: 12)
        #expect(try await store.verify().ok)
        // Rewritten in blocks as it opened.
        #expect(try Self.rows(store).time == (400 + 127) / 128)
        let more = try await Self.fill(store, count: 400, seed: 13, after: logged)
        try await Self.expectAnswers(store, more, seed: 14)
        #expect(try await store.verify().ok)
        #expect(try Self.rows(store).time == (800 + 127) / 128)
    }

    /// Rewrites the store's indexes as a row per event, as stores before format 6 hold them, and
    /// marks it format 4.
    static func explode(_ store: EventStore, _ logged: [Logged]) throws {
        let schema = store.schema
        try store.environment.write { txn in
            for db in [schema.byStream, schema.byType] {
                var rows: [([UInt8], [UInt64])] = []
                let c = try txn.cursor(db)
                var e = try c.first()
                while let r = e {
                    let first = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: r.key[(r.key.count - 8)...]))
                    rows.append(([UInt8](r.key.prefix(r.key.count - 8)), try IndexBlocks.seqs(first: first, r.value)))
                    e = try c.next()
                }
                try txn.clear(db)
                for (name, seqs) in rows { for s in seqs { _ = try txn.put(db, key: name + s.bigEndianBytes, value: []) } }
            }
            try txn.clear(schema.byTime)
            for e in logged { _ = try txn.put(schema.byTime, key: LogSchema.timeKey(Timestamp(microseconds: e.effective), e.seq), value: []) }
            _ = try txn.put(schema.meta, key: LogSchema.formatKey, value: UInt64(4).bigEndianBytes)
        }
    }

    /// A seq taken out of a stream's row, a time moved, a row cut short, or a row of another
    /// name's seqs: each is a finding of `verify`, and none stops it.
    @Test func verifyFindsADamagedOrMissingEntry() async throws {
        let store = try await openStore()
        _ = try await Self.fill(store, count: 300, seed: 21)
        let schema = store.schema
        let env = store.environment
        func damage(_ db: Database, _ change: ([UInt8]) -> [UInt8], expect needle: String) async throws {
            let (key, original) = try env.read { txn in
                let c = try txn.cursor(db)
                var e = try c.first()
                // A row of several entries.
                while let r = e, r.value.count < 8 { e = try c.next() }
                return ([UInt8](e!.key), [UInt8](e!.value))
            }
            _ = try env.write { txn in try txn.put(db, key: key, value: change(original)) }
            let report = try await store.verify(checkProjections: false)
            #expect(!report.ok && report.problems.contains { $0.contains(needle) }, "\(report.problems)")
            _ = try env.write { txn in try txn.put(db, key: key, value: original) }
        }
        // A seq in the middle of a row taken out (its gap joins the next).
        try await damage(
            schema.byStream,
            { v in
                var gaps: [UInt64] = []
                v.withUnsafeBytes { raw in
                    var r = ByteReader(raw)
                    while !r.isAtEnd { gaps.append(try! r.varint()) }
                }
                gaps[1] += gaps.remove(at: 2)
                var w = ByteWriter(capacity: v.count)
                for g in gaps { w.varint(g) }
                return w.bytes
            }, expect: "missing from the stream index")
        try await damage(schema.byType, { $0 + [0x80] }, expect: "type index")
        try await damage(schema.byTime, { v in v.map { $0 == 0 ? 1 : $0 } }, expect: "the time index has seq")
        try await damage(schema.byTime, { $0 + [5] }, expect: "the time index has 301 entries")
        #expect(try await store.verify().ok)
    }

    /// Lowercase UUID ids are keyed by their 16 bytes; any other id by its text. Either way an
    /// id appended again is found, `event(id:)` finds it, and a store that keyed them by text
    /// (before format 6) has them rewritten as it opens.
    @Test func uuidIdsAreKeyedByTheirBytes() async throws {
        let ids = [
            "adf46dc3-749a-e6fb-cbc6-41a74e944f9c", "ADF46DC3-749A-E6FB-CBC6-41A74E944F9C", "fetch-1",
            "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", "adf46dc3-749a-e6fb-cbc6-41a74e944f9", "adf46dc3x749a-e6fb-cbc6-41a74e944f9c"
        ]
        let dir = makeTempDir()
        func expectFound(_ store: EventStore, _ all: [(id: String, seq: UInt64)]) async throws {
            for (id, seq) in all { #expect(try await store.event(id: id)?.seq == seq, "\(id)") }
            let again = try await store.append(all.map { NewEvent(id: $0.id, type: "T", stream: "s") })
            #expect(again.map(\.seq) == all.map(\.seq) && again.allSatisfy { !$0.appended })
            #expect(try await store.verify(checkProjections: false).ok)
        }
        func compactKeys(_ store: EventStore) throws -> Int {
            try store.environment.read { txn in
                let c = try txn.cursor(store.schema.ids)
                var n = 0
                var e = try c.first()
                while let r = e {
                    if r.key.count == 17 && r.key[0] == 0 { n += 1 }
                    e = try c.next()
                }
                return n
            }
        }
        var all: [(id: String, seq: UInt64)] = []
        do {
            let store = try await openStore(dir)
            let made = try await store.append((0..<5).map { _ in NewEvent(type: "T", stream: "s") })
            let given = try await store.append(ids.map { NewEvent(id: $0, type: "T", stream: "s") })
            all = made.map { ($0.id, $0.seq) } + given.map { ($0.id, $0.seq) }
            #expect(try compactKeys(store) == 6)
            try await expectFound(store, all)
            // As a store before format 6 keyed them: by text.
            try store.environment.write { txn in
                try txn.clear(store.schema.ids)
                for (id, seq) in all { _ = try txn.put(store.schema.ids, key: Array(id.utf8), value: seq.bigEndianBytes) }
                _ = try txn.put(store.schema.meta, key: LogSchema.formatKey, value: UInt64(5).bigEndianBytes)
            }
            #expect(try compactKeys(store) == 0)
        }
        let store = try await openStore(dir)
        #expect(try compactKeys(store) == 6)
        try await expectFound(store, all)
    }
}

/// ``CompressedValue``: what goes in comes out; a damaged value is an error, never a trap.
@Suite struct CompressedValueTests {
    @Test func valuesReadBackAndDamageIsReported() throws {
        var rng = SplitMix64(seed: 5)
        let texts: [[UInt8]] = [
            [], bytes("short"), [UInt8](repeating: 0x41, count: 63), [UInt8](repeating: 0x41, count: 64),
            Array((0..<40).map { "\"items[].field\($0)\tstring\"," }.joined().utf8),
            (0..<2_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        ]
        for t in texts {
            let stored = CompressedValue.encode(t)
            #expect(try stored.withUnsafeBytes { try CompressedValue.decode($0) } == t)
            // Compressed only when smaller.
            #expect(stored.count <= t.count + 1)
        }
        let json = CompressedValue.encode(texts[4])
        #expect(json.first == 1 && json.count * 2 < texts[4].count)
        let damages: [[UInt8]] = [[2] + json.dropFirst(), Array(json.dropLast(3)), [1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], [], [1]]
        for damaged in damages {
            #expect(throws: EventStoreError.self) { try damaged.withUnsafeBytes { try CompressedValue.decode($0) } }
        }
    }

    /// A value compressed against an anchor: read back with it, the form alone when that is
    /// smaller, damage (of the value, its anchor, or an anchor that names one) an error.
    @Test func valuesAgainstAnAnchorReadBack() throws {
        func shape(_ extra: Int) -> [UInt8] { Array(((0..<40).map { "\"items[].field\($0)\tstring\"," } + ["\"extra\(extra)\""]).joined().utf8) }
        let anchor = CompressedValue.encode(shape(0))
        let name = bytes("first")
        let lookup: ([UInt8]) -> [UInt8]? = { $0 == name ? anchor : nil }
        let value = CompressedValue.encode(shape(1), against: (name, shape(0)))
        #expect(value.first == 2 && value.count * 4 < anchor.count)
        #expect(try value.withUnsafeBytes { try CompressedValue.decode($0, anchor: lookup) } == shape(1))
        #expect(try value.withUnsafeBytes { try CompressedValue.size($0) } == shape(1).count)
        // Unlike the anchor: as if alone.
        var rng = SplitMix64(seed: 9)
        let noise = (0..<300).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        #expect(CompressedValue.encode(noise, against: (name, shape(0))) == CompressedValue.encode(noise))
        // Without the anchor, or with a damaged one, or one against an anchor itself.
        #expect(throws: EventStoreError.self) { try value.withUnsafeBytes { try CompressedValue.decode($0) } }
        #expect(throws: EventStoreError.self) { try value.withUnsafeBytes { try CompressedValue.decode($0, anchor: { _ in nil }) } }
        for bad in [Array(anchor.dropLast(2)), value] {
            #expect(throws: EventStoreError.self) { try value.withUnsafeBytes { try CompressedValue.decode($0, anchor: { _ in bad }) } }
        }
        // Every flipped byte of the value: an error or other bytes, never a trap (the frame has
        // bits a decoder ignores; `verify` finds a projection's damage against a rebuild).
        var found = 0
        for i in value.indices {
            var flipped = value
            flipped[i] ^= 0x5A
            if (try? flipped.withUnsafeBytes { try CompressedValue.decode($0, anchor: lookup) }) != shape(1) { found += 1 }
        }
        #expect(found * 10 >= value.count * 8, "\(found) of \(value.count) flipped bytes found")
    }
}

/// ``SharedValues``: what the fold works out once per event and kind, and what an append hands
/// it (``NewEvent/shared``), held within a budget of bytes, the oldest let go first.
@Suite struct SharedValuesTests {
    @Test func valuesAreHeldWithinTheBudget() throws {
        let values = SharedValues()
        let mib = 1 << 20
        var made: [UInt64] = []
        func read(_ seq: UInt64) throws -> String {
            try values.value(SharedValues.Key(seq: seq, kind: "k")) { () -> (value: String, bytes: Int) in
                made.append(seq)
                return ("made \(seq)", mib)
            }
        }
        // Handed twice under one key: the second replaces the first, and counts once.
        values.keep(SharedValues.Key(seq: 1, kind: "k"), "handed", bytes: 40 * mib)
        values.keep(SharedValues.Key(seq: 1, kind: "k"), "handed again", bytes: 40 * mib)
        values.keep(SharedValues.Key(seq: 2, kind: "k"), "second", bytes: 20 * mib)
        #expect(try read(1) == "handed again" && read(2) == "second" && made.isEmpty)
        // Past the budget, the oldest goes and is worked out again when asked for.
        values.keep(SharedValues.Key(seq: 3, kind: "k"), "third", bytes: 10 * mib)
        #expect(try read(3) == "third" && made.isEmpty)
        #expect(try read(1) == "made 1" && made == [1])
        #expect(try read(2) == "second" && made == [1])
    }
}
