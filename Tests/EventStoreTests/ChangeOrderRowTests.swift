@testable import EventStore
import Foundation
import LMDB
import Testing

/// `changed` rows of consecutive events are compressed together in blocks; a row of more than a
/// block holds is stored alone, compressed from 64 bytes to 64 KiB when that is smaller: a walk
/// reads every version of them, in natural order, from any point, as it reads a plain row; a
/// damaged row or block is an error, never a trap.
@Suite struct ChangeOrderRowTests {
    /// A projection keeping the change order: an event's payload is a list of numbers, each put
    /// as a key (its document names the event), or removed when negative.
    static let projection = KeyedDocumentProjection(name: "documents", version: 1, keepsChangeOrder: true) { event, ctx in
        guard let body = try ctx.payload(of: event), case .array(let numbers) = try JSONValue(parsing: body) else { return nil }
        return numbers.compactMap { n -> DocumentOperation? in
            guard case .number(let text) = n, let v = Int(text) else { return nil }
            return v < 0
                ? .remove(collection: "c", key: String(-v))
                : .put(collection: "c", key: String(v), document: .object(["seen": .string(event.id)]))
        }
    }

    static func event(_ numbers: [Int]) -> NewEvent {
        NewEvent(type: "Put", stream: "s", payload: bytes("[" + numbers.map(String.init).joined(separator: ",") + "]"))
    }

    /// The (key, kind) pairs of every row, seq by seq.
    static func walk(_ store: EventStore) async throws -> [[String]] {
        try await store.documents { reader in
            var out: [[String]] = []
            var walk = try #require(try reader.changeOrder(collection: "c", after: 0, upTo: .max))
            while var (_, row) = try walk.next() {
                var keys: [String] = []
                while let (key, kind) = try row.next() { keys.append("\(String(decoding: key, as: UTF8.self)):\(kind)") }
                out.append(keys)
            }
            return out
        }
    }

    /// The first byte of every stored row.
    static func marks(_ store: EventStore) async throws -> [UInt8] {
        let tables = try store.tables(of: "documents")
        return try await store.read { txn in
            var out: [UInt8] = []
            let c = try txn.cursor(tables["changed"])
            var e = try c.first()
            while let entry = e { out.append(entry.value.first!); e = try c.next() }
            return out
        }
    }

    @Test func compressedRowsWalkAsPlainOnesDo() async throws {
        let store = try await openStore(projections: [Self.projection])
        // 300 keys sharing their first digits, then 2 keys, then 150 removed: a block of three
        // rows, closed by 9,000 new ones (over 64 KiB: alone and plain).
        let first = Array(3_041_000..<3_041_300)
        let large = Array(5_000_000..<5_009_000)
        _ = try await store.append([Self.event(first.shuffled()), Self.event([7, 3_041_000]), Self.event(first.prefix(150).map { -$0 }), Self.event(large)])
        #expect(try await Self.marks(store) == [KeyedDocumentProjection.changeBlockMark, ChangeKind.added.code])
        // The large row fills whole chunks instead of overflow pages, and reads back whole.
        let tables = try store.tables(of: "documents")
        let chunks = try await store.read { txn in
            let c = try txn.cursor(tables["changed"], raw: true)
            let last = try #require(try c.last())
            return try txn.storedChunks(tables["changed"], storedKey: last.key).count
        }
        #expect(chunks > 10)
        let rows = try await Self.walk(store)
        #expect(rows.count == 4)
        #expect(rows[0] == first.map { "\($0):added" })
        #expect(rows[1] == ["7:added", "3041000:changed"])
        #expect(rows[2] == first.prefix(150).map { "\($0):removed" })
        #expect(rows[3] == large.map { "\($0):added" })
        #expect(try await store.verify().ok)
    }

    /// A walk from any point reads what a walk from the start reads past it, across blocks,
    /// rows waiting for theirs and rows stored alone; the rows are the same whether the events
    /// came one at a time or together.
    @Test func walksFromAnyPointAcrossBlocks() async throws {
        var rng = SplitMix64(seed: 11)
        var events: [NewEvent] = []
        for i in 0..<150 {
            let n = i % 37 == 5 ? 1_200 : Int(1 + rng.next() % 40)
            events.append(Self.event((0..<n).map { _ in Int(1_000_000 + rng.next() % 3_000) } + [i % 3 == 0 ? -Int(1_000_000 + rng.next() % 3_000) : 1]))
        }
        let together = try await openStore(projections: [Self.projection])
        _ = try await together.append(events)
        let single = try await openStore(projections: [Self.projection])
        for e in events { _ = try await single.append([e]) }
        let table = { (store: EventStore) in
            try await store.read { txn in
                var out: [[UInt8]] = []
                let c = try txn.cursor(try store.tables(of: "documents")["changed"])
                var e = try c.first()
                while let entry = e { out.append([UInt8](entry.key) + [0xEE] + [UInt8](entry.value)); e = try c.next() }
                return out
            }
        }
        #expect(try await table(together) == table(single))
        let marks = try await Self.marks(together)
        #expect(marks.contains(KeyedDocumentProjection.changeBlockMark) && marks.contains(KeyedDocumentProjection.compressedChangeRowMark))
        let all: [(UInt64, [String])] = try await together.documents { reader in
            var out: [(UInt64, [String])] = []
            var walk = try #require(try reader.changeOrder(collection: "c", after: 0, upTo: .max))
            while case (let seq, var row)? = try walk.next() {
                var keys: [String] = []
                while let (key, kind) = try row.next() { keys.append("\(String(decoding: key, as: UTF8.self)):\(kind)") }
                out.append((seq, keys))
            }
            return out
        }
        #expect(all.map(\.0) == Array(1...150))
        for after in [0, 1, 2, 5, 40, 63, 64, 65, 99, 128, 149, 150] as [UInt64] {
            for upTo in [after + 1, after + 30, .max] {
                let part: [(UInt64, [String])] = try await together.documents { reader in
                    var out: [(UInt64, [String])] = []
                    var walk = try #require(try reader.changeOrder(collection: "c", after: after, upTo: upTo))
                    while case (let seq, var row)? = try walk.next() {
                        var keys: [String] = []
                        while let (key, kind) = try row.next() { keys.append("\(String(decoding: key, as: UTF8.self)):\(kind)") }
                        out.append((seq, keys))
                    }
                    return out
                }
                let expected = all.filter { $0.0 > after && $0.0 <= upTo }
                #expect(part.map(\.0) == expected.map(\.0), "after \(after) up to \(upTo)")
                #expect(part.map(\.1) == expected.map(\.1), "after \(after) up to \(upTo)")
            }
        }
        #expect(try await together.verify().ok)
    }

    @Test func aDamagedBlockIsAnError() async throws {
        let store = try await openStore(projections: [Self.projection])
        // Three rows of 2.7 KB wait; the fourth closes them into a block.
        for i in 0..<4 { _ = try await store.append([Self.event(Array((3_041_000 + 300 * i)..<(3_041_300 + 300 * i)))]) }
        // Seq 0 counts the fourth, waiting; the block is under seq 1.
        #expect(try await Self.marks(store) == [1, KeyedDocumentProjection.changeBlockMark, ChangeKind.added.code])
        try Self.damageRow(1, store)
        await #expect(throws: EventStoreError.self) { _ = try await Self.walk(store) }
    }

    @Test func aDamagedCompressedRowIsAnError() async throws {
        let store = try await openStore(projections: [Self.projection])
        // 1,000 keys: more than a block holds, compressed alone.
        _ = try await store.append(Self.event(Array(3_041_000..<3_042_000)))
        #expect(try await Self.marks(store) == [KeyedDocumentProjection.compressedChangeRowMark])
        try Self.damageRow(0, store)
        await #expect(throws: EventStoreError.self) { _ = try await Self.walk(store) }
    }

    /// Flips bits near the end of the `index`-th stored row.
    static func damageRow(_ index: Int, _ store: EventStore) throws {
        let db = try store.tables(of: "documents")["changed"]
        try store.environment.write { txn in
            let c = try txn.cursor(db)
            var e = try c.first()
            for _ in 0..<index { e = try c.next() }
            let entry = try #require(e)
            var value = [UInt8](entry.value)
            value[value.count - 3] ^= 0x5A
            let key = [UInt8](entry.key)
            _ = try txn.put(db, key: key, value: value)
        }
    }
}
