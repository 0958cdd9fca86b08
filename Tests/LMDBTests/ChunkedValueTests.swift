import Foundation
import LMDB
import Testing

/// A chunked table (``ChunkTable``) keeps values too large for half a page as page-filling
/// chunks in its companion and a head in its own row; every way of reading and writing it sees
/// whole values.
@Suite struct ChunkedValueTests {
    /// Sizes around every edge: inline or not, a chunk's size and its multiples, ± 1.
    static let sizes = [0, 1, 100, 2_000, 2_009, 2_010, 2_011, 2_017, 2_018, 2_019, 2_100, 4_035, 4_036, 4_037, 6_054, 8_000, 40_000, 300_000]

    static func value(_ size: Int, _ seed: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ seed &* 7) % 251) } }

    static func key(_ i: Int) -> [UInt8] { UInt64(i).bigEndianBytesForTests }

    @Test(arguments: [false, true])
    func everySizeReadsBackWhole(sealed: Bool) throws {
        let env = try Environment(path: makeTempDir())
        let protection = sealed ? Protection(sealer: XorSealer()) : nil
        let db = try env.write { try env.openDatabase("t", in: $0, protection: protection, chunked: true) }
        let chunks = try env.write { try env.openDatabase("t.chunks", in: $0) }
        try env.write { txn in
            for (i, size) in Self.sizes.enumerated() { try txn.put(db, key: Self.key(i), value: Self.value(size, i), flags: .append) }
        }
        try env.read { txn in
            for (i, size) in Self.sizes.enumerated() {
                #expect(try txn.get(db, key: Self.key(i)) == Self.value(size, i), "size \(size)")
                // Read twice in one transaction: the same bytes.
                #expect(try txn.get(db, key: Self.key(i)) == Self.value(size, i))
            }
            // A cursor walks whole values, in order, one entry a key.
            let c = try txn.cursor(db)
            var e = try c.first()
            var seen = 0
            while let entry = e {
                #expect([UInt8](entry.value) == Self.value(Self.sizes[seen], seen))
                seen += 1
                e = try c.next()
            }
            #expect(seen == Self.sizes.count)
            #expect(try txn.stat(db).entries == Self.sizes.count)
            // Large values take no overflow page; their chunks fill leaf pages two at a time.
            #expect(try txn.stat(chunks).entries > 0)
            let big = Self.key(Self.sizes.count - 1)
            let raw = try #require(try big.withUnsafeBytes { try txn.getRaw(db, key: $0) })
            #expect(raw.count < 2_040)
            let stored = try big.withUnsafeBytes { try txn.storedChunks(db, storedKey: $0) }
            #expect(stored.count == 300_000 / (2_018 - (sealed ? 2 : 0)))
            #expect(stored.allSatisfy { $0.count == 2_018 })
            // A raw cursor and plainValue: the head as stored, then the whole value.
            let rc = try txn.cursor(db, raw: true)
            let last = try #require(try rc.last())
            #expect(try [UInt8](txn.plainValue(db, key: last.key, stored: last.value)) == Self.value(300_000, Self.sizes.count - 1))
        }
        let stat = try env.read { txn in (try txn.stat(db), try txn.stat(chunks)) }
        #expect(stat.1.pages * 4_096 < 300_000 + 40_000 + 8_000 + 6_054 + 4_037 * 3 + 4_096 * 4)
    }

    @Test func overwritesDeletesAndClearsLeaveNoChunkBehind() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0, chunked: true) }
        let chunks = try env.write { try env.openDatabase("t.chunks", in: $0) }
        func chunkRows() throws -> Int { try env.read { try $0.stat(chunks).entries } }
        _ = try env.write { txn in try txn.put(db, key: Self.key(1), value: Self.value(50_000, 1)) }
        let many = try chunkRows()
        #expect(many == 50_000 / 2_018)
        // Smaller, larger, inline, then gone.
        for (size, seed) in [(9_000, 2), (70_000, 3), (500, 4)] {
            _ = try env.write { txn in try txn.put(db, key: Self.key(1), value: Self.value(size, seed)) }
            #expect(try env.read { try $0.get(db, key: Self.key(1)) } == Self.value(size, seed))
            #expect(try chunkRows() == size / 2_018, "\(size)")
        }
        // Through a cursor: a large value, then a small one in place of it.
        try env.write { txn in
            let c = try txn.cursor(db)
            try Self.value(12_000, 8).withUnsafeBytes { v in try Self.key(6).withUnsafeBytes { try c.put(key: $0, value: v) } }
        }
        #expect(try env.read { try $0.get(db, key: Self.key(6)) } == Self.value(12_000, 8))
        #expect(try chunkRows() == 500 / 2_018 + 12_000 / 2_018)
        try env.write { txn in
            let c = try txn.cursor(db)
            try Self.value(300, 9).withUnsafeBytes { v in try Self.key(6).withUnsafeBytes { try c.put(key: $0, value: v) } }
        }
        #expect(try env.read { try $0.get(db, key: Self.key(6)) } == Self.value(300, 9))
        #expect(try chunkRows() == 0)
        _ = try env.write { txn in try txn.delete(db, key: Self.key(6)) }
        _ = try env.write { txn in try txn.put(db, key: Self.key(2), value: Self.value(30_000, 5)) }
        try env.write { txn in _ = try txn.delete(db, key: Self.key(2)) }
        #expect(try chunkRows() == 0)
        try env.write { txn in
            try txn.put(db, key: Self.key(3), value: Self.value(30_000, 6))
            let c = try txn.cursor(db)
            _ = try c.last()
            try c.deleteCurrent()
        }
        #expect(try chunkRows() == 0)
        _ = try env.write { txn in try txn.put(db, key: Self.key(4), value: Self.value(30_000, 7)) }
        try env.write { txn in try txn.clear(db) }
        #expect(try chunkRows() == 0)
        // A value that starts with the head's mark is refused.
        #expect(throws: StorageError.self) { try env.write { txn in try txn.put(db, key: Self.key(5), value: [0xFF, 1]) } }
    }

    /// A value read, then written in a nested transaction that is aborted or committed: the
    /// parent reads what the log then holds, never an earlier copy.
    @Test func nestedWritesNeverReadStale() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0, chunked: true) }
        try env.write { txn in
            try txn.put(db, key: Self.key(1), value: Self.value(20_000, 1))
            #expect(try txn.get(db, key: Self.key(1)) == Self.value(20_000, 1))
            struct Abort: Error {}
            _ = try? txn.nested { child -> Void in
                try child.put(db, key: Self.key(1), value: Self.value(25_000, 2))
                #expect(try child.get(db, key: Self.key(1)) == Self.value(25_000, 2))
                throw Abort()
            }
            #expect(try txn.get(db, key: Self.key(1)) == Self.value(20_000, 1))
            try txn.nested { child in
                #expect(try child.get(db, key: Self.key(1)) == Self.value(20_000, 1))
                try child.put(db, key: Self.key(1), value: Self.value(22_000, 3))
            }
            #expect(try txn.get(db, key: Self.key(1)) == Self.value(22_000, 3))
        }
        #expect(try env.read { try $0.get(db, key: Self.key(1)) } == Self.value(22_000, 3))
    }

    @Test func aMissingOrDamagedChunkIsAnError() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0, chunked: true) }
        let chunks = try env.write { try env.openDatabase("t.chunks", in: $0) }
        _ = try env.write { txn in try txn.put(db, key: Self.key(1), value: Self.value(10_000, 1)) }
        try env.write { txn in _ = try txn.delete(chunks, key: Self.key(1) + [0, 0, 0, 2]) }
        #expect(throws: StorageError.self) { try env.read { try $0.get(db, key: Self.key(1)) } }
        _ = try env.write { txn in try txn.put(db, key: Self.key(2), value: Self.value(10_000, 2)) }
        _ = try env.write { txn in try txn.put(chunks, key: Self.key(2) + [0, 0, 0, 1], value: [1, 2, 3]) }
        #expect(throws: StorageError.self) { try env.read { try $0.get(db, key: Self.key(2)) } }
    }
}

extension UInt64 {
    fileprivate var bigEndianBytesForTests: [UInt8] { withUnsafeBytes(of: bigEndian) { Array($0) } }
}
