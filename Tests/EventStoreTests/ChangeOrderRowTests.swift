@testable import EventStore
import Foundation
import LMDB
import Testing

/// `changed` rows of 64 bytes to 64 KiB are stored compressed when that is smaller: a walk reads
/// every version of them, in natural order, as it reads a plain row; a row larger than that stays
/// plain; a damaged compressed row is an error, never a trap.
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
        // 300 keys sharing their first digits (compressed), then 2 keys (plain: under 64
        // bytes), then 150 removed (compressed), then 9,000 new ones (over 64 KiB: plain).
        let first = Array(3_041_000..<3_041_300)
        let large = Array(5_000_000..<5_009_000)
        _ = try await store.append([Self.event(first.shuffled()), Self.event([7, 3_041_000]), Self.event(first.prefix(150).map { -$0 }), Self.event(large)])
        #expect(
            try await Self.marks(store) == [
                KeyedDocumentProjection.compressedChangeRowMark, ChangeKind.added.code, KeyedDocumentProjection.compressedChangeRowMark, ChangeKind.added.code
            ])
        let rows = try await Self.walk(store)
        #expect(rows.count == 4)
        #expect(rows[0] == first.map { "\($0):added" })
        #expect(rows[1] == ["7:added", "3041000:changed"])
        #expect(rows[2] == first.prefix(150).map { "\($0):removed" })
        #expect(rows[3] == large.map { "\($0):added" })
        #expect(try await store.verify().ok)
    }

    @Test func aDamagedCompressedRowIsAnError() async throws {
        let store = try await openStore(projections: [Self.projection])
        _ = try await store.append(Self.event(Array(3_041_000..<3_041_300)))
        let db = try store.tables(of: "documents")["changed"]
        try store.environment.write { txn in
            let c = try txn.cursor(db)
            let e = try #require(try c.first())
            var value = [UInt8](e.value)
            value[value.count - 3] ^= 0x5A
            let key = [UInt8](e.key)
            _ = try txn.put(db, key: key, value: value)
        }
        await #expect(throws: EventStoreError.self) { _ = try await Self.walk(store) }
    }
}
