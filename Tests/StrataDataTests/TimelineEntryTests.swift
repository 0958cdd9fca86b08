import LMDB
import StrataTestSupport
import Testing

@testable import EventStore
@testable import StrataData

/// The `observed` table's values name a pass by small differences from the entry's own seq.
@Suite struct TimelineEntryTests {
    typealias Reader = ObservationTimeline.Reader

    @Test func passesReadBackFromTheirDifferences() throws {
        // A complete pass: its FetchCompleted is the entry; 3 pages before it.
        #expect(try [UInt8]([1, 3]).withUnsafeBytes { try Reader.pass($0, seq: 40) } == 37..<40)
        // A ListNotModified at 50 confirming the pass ending at 40 that started at 37.
        #expect(try [UInt8]([2, 10, 3]).withUnsafeBytes { try Reader.pass($0, seq: 50) } == 37..<40)
        // A varint of more than a byte.
        #expect(try [UInt8]([1, 0x80, 0x01]).withUnsafeBytes { try Reader.pass($0, seq: 1_000) } == 872..<1_000)
        // A detail, an image or a partial pass names none.
        #expect(try [UInt8]([0]).withUnsafeBytes { try Reader.pass($0, seq: 9) } == nil)
    }

    @Test(arguments: [[1], [1, 41], [2, 40, 0], [2, 5], [1, 3, 0], [2, 0x80]] as [[UInt8]])
    func aDamagedEntryIsAnError(_ value: [UInt8]) {
        #expect(throws: EventStoreError.self) { try value.withUnsafeBytes { try Reader.pass($0, seq: 40) } }
    }
}

/// The `observed` entries live in blocks (``ObservationTimeline/Blocks``): whatever order entries
/// come in (imports of older data come after newer), every date read finds the newest entry at
/// or before it, the newest pass is found, and a stream is backfilled exactly when an entry came
/// before what it held.
@Suite struct TimelineBlockTests {
    typealias Entry = ObservationTimeline.Entry

    /// Inserts `entries` in order, one transaction each, and checks every read against the
    /// entries sorted.
    func check(_ entries: [Entry], stream: String = "s") async throws {
        let store = try await makeStore()
        let tables = try store.tables(of: "timeline")
        var backfilled = false
        var newest: Entry?
        for e in entries {
            try store.environment.write { txn in try ObservationTimeline.Blocks.insert(e, stream: stream, txn, tables) }
            if let n = newest, e.precedes(n) { backfilled = true }
            if newest.map({ $0.precedes(e) }) ?? true { newest = e }
            let expected = backfilled
            #expect(try await store.timeline { try $0.isBackfilled(stream: stream) } == expected)
        }
        let sorted = entries.sorted { $0.precedes($1) }
        let times = Set(sorted.map(\.time)).sorted()
        for t in [0] + times + times.map({ $0 + 1 }) {
            let want = sorted.last { $0.time <= t }?.seq ?? 0
            #expect(try await store.timeline { try $0.seq(stream: stream, observedAt: Timestamp(sortableBits: t)) } == want, "at \(t)")
        }
        let pass = try await store.timeline { try $0.newestPass(stream: stream) }
        let wantPass = sorted.last { $0.value.first == 1 }
        #expect(pass?.pages.upperBound == wantPass?.seq)
        // Another stream sharing the table is untouched.
        #expect(try await store.timeline { try $0.seq(stream: stream + "x", observedAt: Timestamp(sortableBits: .max)) } == 0)
        let rows = try await store.read { txn in try txn.stat(tables["observed"]).entries }
        #expect(rows >= (entries.count + ObservationTimeline.blockCapacity - 1) / ObservationTimeline.blockCapacity)
        #expect(rows <= max(1, entries.count * 2 / ObservationTimeline.blockCapacity + 1))
    }

    static func entry(_ time: UInt64, _ seq: UInt64, pass: Bool = false) -> Entry {
        Entry(time: 1_000_000 + time * 60_000_000, seq: seq, value: pass ? [1, 1] : [0])
    }

    @Test func inLogOrder() async throws {
        try await check((1...300).map { Self.entry(UInt64($0), UInt64($0) * 2, pass: $0 % 3 == 0) })
    }

    @Test func olderImportsComeAfterNewerOnes() async throws {
        // Three imports of 100 snapshots each, the newest imported first, then the oldest, then
        // the middle; the same time twice at the end.
        var entries: [Entry] = []
        var seq: UInt64 = 0
        for range in [200..<300, 0..<100, 100..<200] {
            for t in range { seq += 2; entries.append(Self.entry(UInt64(t), seq, pass: t % 5 == 0)) }
        }
        seq += 1
        entries.append(Self.entry(150, seq))
        try await check(entries)
    }

    @Test func shuffled() async throws {
        var g = SystemRandomNumberGenerator()
        for _ in 0..<3 {
            let entries = (1...400).map { Self.entry(UInt64.random(in: 0..<100, using: &g), UInt64($0), pass: Bool.random(using: &g)) }
            try await check(entries.shuffled(using: &g))
        }
    }

    @Test func aDamagedBlockIsAnError() async throws {
        let store = try await makeStore()
        let tables = try store.tables(of: "timeline")
        try store.environment.write { txn in
            for i in 1...10 { try ObservationTimeline.Blocks.insert(Self.entry(UInt64(i), UInt64(i)), stream: "s", txn, tables) }
            let c = try txn.cursor(tables["observed"])
            let e = try #require(try c.first())
            var value = [UInt8](e.value)
            value[value.count - 1] = 7
            let key = [UInt8](e.key)
            try txn.put(tables["observed"], key: key, value: value)
        }
        await #expect(throws: EventStoreError.self) { try await store.timeline { try $0.seq(stream: "s", observedAt: Timestamp(sortableBits: .max)) } }
    }
}
