import EventStore
import Foundation
import StrataData
import Testing

/// The items fold keeps versions of large pages' items, once their rows close, as slices of the
/// pages' bodies (the item history holds no second copy of them): imported pretty-printed
/// snapshots read back every version, `verify` folds the same rows again, and a forget that
/// rewrites the pages leaves every other item's history as it was.
@Suite struct ItemSliceTests {
    /// A list of 30 items, pretty-printed as scrapers write it (about 40 KB): most change every
    /// snapshot, item 7 leaves after snapshot 40, item 12 changes every fifth.
    static func snapshot(_ v: Int) -> [UInt8] {
        let items: [[String: Any]] = (0..<30).compactMap { k in
            if k == 7 && v > 40 { return nil }
            let n = k == 12 ? v / 5 : v
            // A token no other version shares: a copy of a version costs its 32 bytes.
            let token = Hashing.sha256(Array("\(k)-\(n)".utf8)).map { String(format: "%02x", $0) }.joined()
            return ["id": k, "name": "item \(k)", "price": 100 + (n * (k + 3)) % 97, "token": token, "notes": String(repeating: "lorem ipsum ", count: 100)]
        }
        let data = try! JSONSerialization.data(withJSONObject: ["results": items], options: [.prettyPrinted, .sortedKeys])
        // `json.dumps(indent=2)`'s layout (Foundation puts a space before each colon).
        return Array(String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\" : ", with: "\": ").utf8)
    }

    /// What item `k` was at each snapshot (nil: absent).
    static func item(_ k: Int, at v: Int) throws -> JSONValue? {
        guard case .array(let items)? = try JSONValue(parsing: snapshot(v)).value(atPath: "results") else { return nil }
        return items.first { $0.value(atPath: "id") == .number(String(k)) }
    }

    @Test func largePagesKeepTheirItemsOnceAndReadBack() async throws {
        let store = try await makeStore()
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
        let source = SourceDefinition(name: "big", url: "http://127.0.0.1:9/big", items: "results")
        try await SourceCatalog(store: store).define(source)
        let versions = 70
        #expect(Self.snapshot(0).count > 32 << 10)
        for v in 0..<versions {
            let date = Timestamp(microseconds: 1_700_000_000_000_000 + Int64(v) * 3_600_000_000)
            _ = try await fetcher.importSnapshots(source, files: [("/tmp/big.json", Self.snapshot(v))], recordedAt: date)
        }
        func expectHistories(skipping gone: Int? = nil) async throws {
            for k in [0, 7, 12, 29] where k != gone {
                let history = try await ItemTables(store: store).history(source: "big", id: String(k))
                var expected: [JSONValue?] = []
                for v in 0..<versions {
                    let doc = try Self.item(k, at: v)
                    if expected.last.map({ $0 != doc }) ?? (doc != nil) { expected.append(doc) }
                }
                #expect(history.count == expected.count, "item \(k)")
                for (version, want) in zip(history, expected) {
                    if let want { #expect(version.document == want, "item \(k) at \(version.seq)") } else { #expect(version.kind == .removed) }
                }
            }
        }
        try await expectHistories()
        // The closed rows (64 of each item's versions, but item 12's) hold no copy: a copy would
        // cost each version its token, 32 bytes that do not compress.
        let packed = try await store.stats().projections.first { $0.name == "items" }?.tables.first { $0.name == "history-packed" }?.bytes
        #expect(packed.map { $0 < 29 * 64 * 32 / 2 } ?? false, "\(packed.map(String.init) ?? "no") bytes of closed rows")
        #expect(try await store.verify().ok)

        // A forget rewrites every page item 7 was on: the other items' slices are found again.
        _ = try await ItemErasure(store: store).forget(source, keys: ["7"], reason: "test", by: "test")
        try await expectHistories(skipping: 7)
        #expect(try await ItemTables(store: store).history(source: "big", id: "7").allSatisfy { $0.document != (try! Self.item(7, at: 0)) })
        #expect(try await store.verify().ok)
    }
}
