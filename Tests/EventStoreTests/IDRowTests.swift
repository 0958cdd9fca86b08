@testable import EventStore
import Foundation
import LMDB
import Testing

/// `ids` rows hold the seq without its leading zero bytes; rows of 8 bytes, written before,
/// read the same.
@Suite struct IDRowTests {
    @Test func seqsOfEveryWidthAndOldRowsFindTheirEvents() async throws {
        let store = try await openStore()
        let ids = (0..<300).map { i in i % 2 == 0 ? "0190a1b2-c3d4-7e5f-8a9b-\(String(format: "%012x", i))" : "caller-id-\(i)" }
        let outcomes = try await store.append(ids.map { NewEvent(id: $0, type: "T", stream: "s") })
        #expect(outcomes.map(\.seq) == Array(1...300))
        let db = store.schema.ids
        // Seqs of one and two bytes are stored as such; the first 50 rewritten as 8-byte rows.
        let widths = try await store.read { txn in
            try [1, 255, 256, 300].map { seq in try store.schema.withIDKey(ids[seq - 1]) { try txn.get(db, key: $0)?.count } }
        }
        #expect(widths == [1, 1, 2, 2])
        try store.environment.write { txn in
            for (i, id) in ids.prefix(50).enumerated() {
                let key = store.schema.withIDKey(id) { [UInt8]($0) }
                try txn.put(db, key: key, value: UInt64(i + 1).bigEndianBytes)
            }
        }
        for (i, id) in ids.enumerated() { #expect(try await store.event(id: id)?.seq == UInt64(i + 1)) }
        // Appending any of them again is a no-op that names the stored seq.
        let again = try await store.append([ids[0], ids[1], ids[299]].map { NewEvent(id: $0, type: "T", stream: "s") })
        #expect(again.map(\.seq) == [1, 2, 300] && again.allSatisfy { !$0.appended })
        #expect(try await store.verify().ok)
    }
}
