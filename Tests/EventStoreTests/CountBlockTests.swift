@testable import EventStore
import Foundation
import LMDB
import Testing

/// Counts as of any seq in blocks (``CountBlocks``): every read equals the last change at or
/// before its seq, across blocks, after rows written before blocks, and a damaged block is an
/// error.
@Suite struct CountBlockTests {
    @Test func everyReadIsTheLastChangeAtOrBeforeIt() async throws {
        let store = try await openStore()
        let db = try store.tables(of: "documents")["counts"]
        let prefix = Array("c".utf8) + [0]
        var rng = SplitMix64(seed: 9)
        // Changes at growing seqs, some seqs changed twice (the second wins), 300 in all: five
        // blocks. Before them, two rows as stores before blocks wrote them.
        var expected: [(seq: UInt64, values: [UInt64])] = [(3, [1, 1]), (5, [2, 2])]
        var seq: UInt64 = 5
        try store.environment.write { txn in
            _ = try txn.put(db, key: prefix + UInt64(3).bigEndianBytes, value: [1, 1])
            _ = try txn.put(db, key: prefix + UInt64(5).bigEndianBytes, value: [2, 2])
            let c = try txn.cursor(db)
            for _ in 0..<300 {
                seq += 1 + rng.next() % 3
                let values = [rng.next() % 1_000, rng.next() % 100_000]
                try CountBlocks.update(prefix, seq: seq, width: 2, c) { _ in [values[0] + 1, 7] }
                try CountBlocks.update(prefix, seq: seq, width: 2, c) { old in
                    #expect(old == [values[0] + 1, 7])
                    return values
                }
                expected.append((seq, values))
            }
        }
        let rows = try store.environment.read { txn in try txn.stat(db).entries }
        #expect(rows == 2 + 5)
        try store.environment.read { txn in
            let c = try txn.cursor(db)
            #expect(try CountBlocks.values(prefix, asOf: 2, width: 2, c) == nil)
            for s in 3...(seq + 2) {
                let want = expected.last { $0.seq <= s }?.values
                #expect(try CountBlocks.values(prefix, asOf: s, width: 2, c) == want, "as of \(s)")
            }
            #expect(try CountBlocks.values(prefix, asOf: .max, width: 2, c) == expected.last?.values)
            // Another name's counts are not these.
            #expect(try CountBlocks.values(Array("b".utf8) + [0], asOf: .max, width: 2, c) == nil)
        }
    }

    @Test func aDamagedBlockIsAnError() async throws {
        let store = try await openStore()
        let db = try store.tables(of: "documents")["counts"]
        let prefix = Array("c".utf8) + [0]
        try store.environment.write { txn in
            let c = try txn.cursor(db)
            for s in 1...10 as ClosedRange<UInt64> { try CountBlocks.update(prefix, seq: s, width: 2, c) { _ in [s, s] } }
            // A change before the last is refused.
            #expect(throws: EventStoreError.self) { try CountBlocks.update(prefix, seq: 4, width: 2, c) { _ in [1, 1] } }
        }
        for damaged in [[0x00, 0x01], [0x00, 0x01, 0x01, 0x00, 0x01, 0x01], [0x05, 0x01, 0x01], [0x00, 0x81]] as [[UInt8]] {
            try store.environment.write { txn in _ = try txn.put(db, key: prefix + UInt64(1).bigEndianBytes + [1], value: damaged) }
            _ = try store.environment.read { txn in
                #expect(throws: EventStoreError.self) { _ = try CountBlocks.values(prefix, asOf: 5, width: 2, try txn.cursor(db)) }
            }
        }
    }
}
