import Foundation
import LMDB
import TestScratch
import Testing

func makeTempDir(_ name: String = "lmdb") -> String {
    TestScratch.directory(name)
}

@Suite struct EnvironmentTests {
    @Test func putGetDeleteRoundTrip() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0) }
        try env.write { (txn) throws in
            try txn.put(db, key: [1, 2], value: [9, 9, 9])
            #expect(try txn.put(db, key: [1, 2], value: [0], flags: .noOverwrite) == false)
        }
        try env.read { (txn) throws in
            #expect(try txn.get(db, key: [1, 2]) == [9, 9, 9])
            #expect(try txn.get(db, key: [7]) == nil)
        }
        try env.write { (txn) throws in
            #expect(try txn.delete(db, key: [1, 2])); #expect(try txn.delete(db, key: [1, 2]) == false)
        }
        try env.read { (txn) throws in #expect(try txn.get(db, key: [1, 2]) == nil) }
    }

    /// A derived value is made once while it is among the last few a root transaction made
    /// (a nested one shares its root's), then made again; a new transaction starts empty.
    @Test func derivedValuesAreKeptForTheLastFew() throws {
        final class Made {
            let key: Int
            init(_ key: Int) { self.key = key }
        }
        let env = try Environment(path: makeTempDir())
        var makes = 0
        func get(_ key: Int, _ txn: Transaction) throws -> Made {
            try txn.derived(key) {
                makes += 1
                return Made(key)
            }
        }
        try env.write { (txn) throws in
            let first = try get(0, txn)
            #expect(try get(0, txn) === first && makes == 1)
            try txn.nested { (child) throws in #expect(try get(0, child) === first) }
            for k in 1..<Transaction.derivedLimit { _ = try get(k, txn) }
            #expect(try get(0, txn) === first && makes == Transaction.derivedLimit)
            // The one used least lately goes (1, not 0, which was just used).
            _ = try get(Transaction.derivedLimit, txn)
            #expect(try get(0, txn) === first && makes == Transaction.derivedLimit + 1)
            _ = try get(1, txn)
            #expect(makes == Transaction.derivedLimit + 2)
            // 2 went for 1, and 0 stays while it is used.
            for k in Transaction.derivedLimit + 1..<2 * Transaction.derivedLimit {
                _ = try get(k, txn)
                #expect(try get(0, txn) === first)
            }
            _ = try get(2, txn)
            #expect(makes == 2 * Transaction.derivedLimit + 2)
        }
        try env.read { (txn) throws in
            _ = try get(1, txn)
            #expect(makes == 2 * Transaction.derivedLimit + 3)
        }
    }

    @Test func abortedWriteLeavesNothing() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0) }
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try env.write { (txn) throws in
                try txn.put(db, key: [1], value: [1])
                throw Boom()
            }
        }
        try env.read { (txn) throws in #expect(try txn.stat(db).entries == 0) }
    }

    /// A packed copy holds every table with the same entries in the same order (an empty table
    /// included), in fewer pages than a tree filled by inserts in random order, without the
    /// pages freed by deletes and rewrites.
    @Test func aPackedCopyHoldsTheSameEntriesInFullPages() throws {
        let env = try Environment(path: makeTempDir())
        let (a, b) = try env.write { txn in
            _ = try env.openDatabase("empty", in: txn)
            return (try env.openDatabase("a", in: txn), try env.openDatabase("b", in: txn))
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            try env.write { txn in
                for _ in 0..<500 {
                    let k = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    try txn.put(a, key: k, value: [UInt8](repeating: k[0], count: Int(k[1]) % 200 + 1))
                }
                for i in 0..<200 { try txn.put(b, key: Array("k\(i)".utf8), value: [UInt8](repeating: 7, count: 3_000)) }  // overflow values, rewritten
            }
        }
        try env.write { txn in for i in stride(from: 0, to: 200, by: 2) { _ = try txn.delete(b, key: Array("k\(i)".utf8)) } }
        let copy = makeTempDir("packed")
        try env.copyPacked(to: copy)
        #expect(!FileManager.default.fileExists(atPath: copy + "/.packing"))
        #expect((try FileManager.default.attributesOfItem(atPath: copy + "/data.mdb")[.posixPermissions] as? Int) == 0o600)
        let packed = try Environment(path: copy)
        func entries(_ e: Environment, _ name: String) throws -> [[UInt8]] {
            try e.read { txn in
                let c = try txn.cursor(try e.openDatabase(name, in: txn, create: false))
                var out: [[UInt8]] = []
                var entry = try c.first()
                while let x = entry { out.append([UInt8](x.key) + [0xFF] + [UInt8](x.value)); entry = try c.next() }
                return out
            }
        }
        for name in ["a", "b", "empty"] { #expect(try entries(packed, name) == entries(env, name), "table \(name)") }
        let pages = { (e: Environment, db: Database) in try e.read { try $0.stat(db).pages } }
        let packedA = try packed.write { try packed.openDatabase("a", in: $0, create: false) }
        #expect(try pages(packed, packedA) < pages(env, a) * 3 / 4, "a random-order tree is not packed")
        #expect(packed.usedBytes < env.usedBytes)
    }

    @Test func appendRejectsOutOfOrderKeys() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0) }
        _ = try env.write { (txn) throws in try txn.put(db, key: [0, 5], value: [1], flags: .append) }
        #expect {
            try env.write { (txn) throws in try txn.put(db, key: [0, 4], value: [1], flags: .append) }
        } throws: { ($0 as? StorageError)?.code == .keyExists }
    }

    @Test func cursorSeeksAtLeastAndAtMost() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0) }
        try env.write { (txn) throws in for k: UInt8 in [10, 20, 30] { try txn.put(db, key: [k], value: [k]) } }
        try env.read { (txn) throws in
            let c = try txn.cursor(db)
            #expect(try c.seek(atLeast: [15]).map { [UInt8]($0.key) } == [20])
            #expect(try c.seek(atMost: [15]).map { [UInt8]($0.key) } == [10])
            #expect(try c.seek(atMost: [20]).map { [UInt8]($0.key) } == [20])
            #expect(try c.seek(atMost: [99]).map { [UInt8]($0.key) } == [30])
            #expect(try c.seek(atMost: [5]) == nil)
            #expect(try c.seek(atLeast: [31]) == nil)
        }
    }

    /// Puts through a cursor: `.current` replaces the entry under it (a shorter or longer value),
    /// a plain put lands next to it and leaves the cursor on the new entry, `.append` runs keep
    /// their order check; in a sealed database the values are sealed as a transaction's are.
    @Test(arguments: [false, true])
    func cursorPutsReplaceInsertAndAppend(sealed: Bool) throws {
        let env = try Environment(path: makeTempDir())
        let protection = sealed ? Protection(sealer: XorSealer()) : nil
        let db = try env.write { try env.openDatabase("t", in: $0, protection: protection) }
        try env.write { (txn) throws in for k: UInt8 in [10, 20, 30] { try txn.put(db, key: [k], value: [k, k, k]) } }
        try env.write { (txn) throws in
            let c = try txn.cursor(db)
            let at = try #require(try c.seek(atMost: [25] as [UInt8]))
            #expect([UInt8](at.key) == [20])
            try [UInt8]([20]).withUnsafeBytes { k in
                try [UInt8]([1]).withUnsafeBytes { try c.put(key: k, value: $0, flags: .current) }
            }
            try [UInt8]([21]).withUnsafeBytes { k in try c.put(key: k, count: 5) { $0.copyBytes(from: [2, 2, 2, 2, 2]) } }
            #expect(try c.current().map { [UInt8]($0.key) } == [21])
            try [UInt8]([10]).withUnsafeBytes { k in
                _ = try c.seek(atMost: k)
                try c.put(key: k, count: 6, flags: .current) { $0.copyBytes(from: [3, 3, 3, 3, 3, 3]) }
            }
            let end = try txn.cursor(db)
            for k: UInt8 in [40, 50] { try [k].withUnsafeBytes { try end.put(key: $0, value: $0, flags: .append) } }
            #expect {
                try [UInt8]([45]).withUnsafeBytes { try end.put(key: $0, value: $0, flags: .append) }
            } throws: { ($0 as? StorageError)?.code == .keyExists }
        }
        try env.read { (txn) throws in
            var all: [[UInt8]: [UInt8]] = [:]
            let c = try txn.cursor(db)
            var e = try c.first()
            while let entry = e { all[[UInt8](entry.key)] = [UInt8](entry.value); e = try c.next() }
            #expect(all == [[10]: [3, 3, 3, 3, 3, 3], [20]: [1], [21]: [2, 2, 2, 2, 2], [30]: [30, 30, 30], [40]: [40], [50]: [50]])
        }
        if sealed {
            try env.read { (txn) throws in
                let raw = try [UInt8]([21]).withUnsafeBytes { try txn.getRaw(db, key: $0).map { [UInt8]($0) } }
                #expect(raw == XorSealer.sealed([2, 2, 2, 2, 2]))
            }
        }
    }

    @Test func nestedTransactionAbortKeepsParent() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0) }
        struct Boom: Error {}
        try env.write { (txn) throws in
            try txn.put(db, key: [1], value: [1])
            _ = try? txn.nested { child in
                try child.put(db, key: [2], value: [2])
                throw Boom()
            }
            _ = try txn.nested { child in try child.put(db, key: [3], value: [3]) }
        }
        try env.read { (txn) throws in
            #expect(try txn.get(db, key: [1]) == [1])
            #expect(try txn.get(db, key: [2]) == nil)
            #expect(try txn.get(db, key: [3]) == [3])
        }
    }

    @Test func mapGrowsFromTinyMapAndWholeBatchIsRetried() throws {
        var options = EnvironmentOptions()
        options.mapSize = 256 * 1024
        options.durability = .noSync
        let env = try Environment(path: makeTempDir(), options: options)
        let db = try env.write { try env.openDatabase("t", in: $0) }
        let value = [UInt8](repeating: 7, count: 300)
        for batch in 0..<50 {
            try env.write { (txn) throws in
                for i in 0..<400 {
                    let k = UInt64(batch * 400 + i)
                    _ = try withUnsafeBytes(of: k.bigEndian) { kb in
                        try value.withUnsafeBytes { try txn.put(db, key: kb, value: $0, flags: .append) }
                    }
                }
            }
        }
        #expect(env.mapSize > 4 * 1024 * 1024)
        try env.read { (txn) throws in #expect(try txn.stat(db).entries == 20_000) }
    }

    @Test func errorsNameTheRemedyNotTheRawCode() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-\(UUID().uuidString)/x").path
        #expect {
            _ = try Environment(path: missing)
        } throws: { error in
            let e = error as! StorageError
            return e.code == .io && e.message.contains("does not exist")
        }
    }

    @Test func oversizeKeyIsABadValueSize() throws {
        let env = try Environment(path: makeTempDir())
        let db = try env.write { try env.openDatabase("t", in: $0) }
        #expect(env.maxKeySize == 511)
        #expect {
            try env.write { (txn) throws in try txn.put(db, key: [UInt8](repeating: 1, count: 512), value: [1]) }
        } throws: { ($0 as? StorageError)?.code == .badValueSize }
    }
}

/// A sealer for tests of the wrapper: a 2-byte tag, then the bytes XORed (not cryptography; the
/// store's own is tested with the store).
final class XorSealer: ValueSealer {
    var overhead: Int { 2 }
    static func sealed(_ plain: [UInt8]) -> [UInt8] { [0xA5, UInt8(plain.count & 0xFF)] + plain.map { $0 ^ 0x5A } }
    func seal(_ plain: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        out.copyBytes(from: Self.sealed([UInt8](plain)))
    }
    func open(_ sealed: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        struct Tampered: Error {}
        guard sealed.count >= 2, sealed[0] == 0xA5, Int(sealed[1]) == (sealed.count - 2) & 0xFF else { throw Tampered() }
        for i in 0..<out.count { out[i] = sealed[i + 2] ^ 0x5A }
    }
    func digest(_ key: UnsafeRawBufferPointer, domain: UInt64, into out: UnsafeMutableRawBufferPointer) {
        for i in 0..<out.count { out[i] = key.isEmpty ? 0 : key[i % key.count] }
    }
}
