@testable import EventStore
import LMDB
import Foundation
import Testing

/// Pages in natural key order and counts, read from their own tables, equal a scan of every
/// document sorted and counted, at every point of a generated history.
@Suite struct NaturalOrderTests {
    /// Keys of every kind: numbers (with leading zeros and one past UInt64), text, non-ASCII.
    static let keyNames = ["0", "7", "07", "10", "2", "a", "B", "18446744073709551616", "k8", "9", "100", "é"]

    static func events(seed: UInt64, count: Int) -> [NewEvent] {
        generatedEvents(seed: seed, count: count).map { e in
            var e = e
            func rename(_ s: String) -> String {
                var out = s
                for i in (0..<12).reversed() { out = out.replacingOccurrences(of: "\"k\(i)\"", with: "\"\(keyNames[i])\"") }
                return out
            }
            e.metadata = e.metadata.map { (key: $0.key, value: $0.key == "key" ? keyNames[Int($0.value.dropFirst())!] : $0.value) }
            if let p = e.payload { e.payload = Array(rename(String(decoding: p, as: UTF8.self)).utf8) }
            return e
        }
    }

    static func natural(_ a: String, _ b: String) -> Bool {
        KeyedDocumentProjection.naturalKey(a).lexicographicallyPrecedes(KeyedDocumentProjection.naturalKey(b))
    }

    @Test func theNaturalKeyPutsNumbersByValueFirst() {
        let sorted = Self.keyNames.sorted(by: Self.natural)
        #expect(sorted == ["0", "2", "7", "07", "9", "10", "100", "18446744073709551616", "B", "a", "k8", "é"])
    }

    /// Numbers of every byte length, and the spellings of a number other than its own: each key
    /// reads back from its natural key, numbers by value, the plain spelling first.
    @Test func numbersOfEveryLengthAndSpellingReadBackInOrder() async throws {
        let keys = [
            "65536", "07", "1", "+0", "255", "18446744073709551615", "00", "256", "7", "0", "65535", "+7", "4294967296", "x"
        ]
        let expected = [
            "0", "+0", "00", "1", "7", "+7", "07", "255", "256", "65535", "65536", "4294967296", "18446744073709551615", "x"
        ]
        #expect(keys.sorted(by: Self.natural) == expected)
        #expect(KeyedDocumentProjection.naturalKey("1234567").count == 5)
        let store = try await openStore()
        _ = try await store.append(
            keys.enumerated().map { i, key in
                NewEvent(
                    type: DocumentEvents.recorded, stream: "s", metadata: [("collection", "c"), ("key", key)],
                    payload: Array("{\"n\":\(i)}".utf8))
            })
        let page = try await store.documents { try $0.page(collection: "c", limit: 100) }
        #expect(page.map(\.key) == expected)
        let summaries = try await store.documents { try $0.summaries(collection: "c") }
        #expect(summaries.map(\.key) == keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        for (i, key) in keys.enumerated() {
            let state = try await store.documents { try $0.state(collection: "c", key: key) }
            #expect(state?.document == .object(["n": .number("\(i)")]))
        }
        #expect(try await store.verify().ok)
    }

    /// A store from before `current` was in natural order has an `order` table: opened, the
    /// table is emptied and the projection (its version changed) is rebuilt without it.
    @Test func anOldOrderTableIsEmptiedOnOpen() async throws {
        let dir = makeTempDir()
        let name = TableSet.databaseName(projection: "documents", table: "order")
        do {
            let store = try await openStore(dir)
            _ = try await store.append(Self.events(seed: 3, count: 40))
            try store.environment.write { txn in
                let db = try store.environment.openDatabase(name, in: txn)
                for n in 0..<300 as Range<UInt64> { _ = try txn.put(db, key: Array("cars".utf8) + [0] + n.bigEndianBytes, value: []) }
            }
        }
        let reopened = try await openStore(dir)
        let entries = try reopened.environment.read { txn in
            try txn.stat(try reopened.environment.openDatabase(name, in: txn, create: false)).entries
        }
        #expect(entries == 0)
        let scan = try await reopened.documents { try $0.states(collection: "cars").sorted { Self.natural($0.key, $1.key) } }
        #expect(!scan.isEmpty)
        #expect(try await reopened.documents { try $0.page(collection: "cars", limit: 1000) } == scan)
        #expect(try await reopened.verify().ok)
    }

    @Test(arguments: [31, 32] as [UInt64])
    func pagesAndCountsEqualASortedScanAtEveryPoint(seed: UInt64) async throws {
        let store = try await openStore()
        let events = Self.events(seed: seed, count: 160)
        for chunk in stride(from: 0, to: events.count, by: 16) { _ = try await store.append(Array(events[chunk..<min(events.count, chunk + 16)])) }
        let head = try await store.head().seq
        try await store.documents { reader in
            for k in [nil] + (1...head).map(Optional.some) {
                for c in ["cars", "bikes"] {
                    for removed in [false, true] {
                        let scan = try reader.states(collection: c, asOf: k, includeRemoved: removed).sorted { Self.natural($0.key, $1.key) }
                        if !removed { #expect(try reader.count(collection: c, asOf: k) == scan.count, "count of \(c) at \(k ?? 0)") }
                        let all = try reader.page(collection: c, asOf: k, limit: 1000, includeRemoved: removed)
                        #expect(all == scan, "\(c) at \(k ?? 0), removed \(removed)")
                        // Pages of three by offset and by the last key both walk the same list.
                        var byAfter: [DocumentState] = []
                        var after: String?
                        while true {
                            let page = try reader.page(collection: c, asOf: k, after: after, limit: 3, includeRemoved: removed)
                            if page.isEmpty { break }
                            byAfter += page
                            after = page.last!.key
                        }
                        #expect(byAfter == scan)
                        for offset in stride(from: 0, through: scan.count, by: 3) {
                            let page = try reader.page(collection: c, asOf: k, offset: offset, limit: 3, includeRemoved: removed)
                            #expect(page == Array(scan.dropFirst(offset).prefix(3)))
                        }
                    }
                }
            }
        }
        // A rebuild writes the same order and count tables.
        let before = try await store.documents { r in try ["cars", "bikes"].map { try r.page(collection: $0, limit: 100, includeRemoved: true) } }
        try await store.rebuild()
        let after = try await store.documents { r in try ["cars", "bikes"].map { try r.page(collection: $0, limit: 100, includeRemoved: true) } }
        #expect(before == after)
        #expect(try await store.verify().ok)
    }
}
