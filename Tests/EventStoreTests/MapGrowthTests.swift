import EventStore
import Foundation
import Testing

/// A store opened with a 1 MiB map grows, doubling on `MDB_MAP_FULL` and retrying whole batches,
/// to `STRATA_MAP_GROWTH_MB` (64 in CI, gigabytes under `make stress`), losing nothing.
@Suite struct MapGrowthTests {
    @Test func aTinyMapGrowsToTheTargetAndEverythingVerifies() async throws {
        let targetMB = Int(ProcessInfo.processInfo.environment["STRATA_MAP_GROWTH_MB"] ?? "") ?? 64
        let dir = makeTempDir("growth")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try await openStore(dir, projections: [], mapSize: 1 << 20)
        var rng = SplitMix64(seed: 77)
        let bodySize = 64 * 1024
        // Incompressible bodies, each distinct (a counter in the first 8 bytes), stored whole in
        // overflow pages.
        var base = [UInt8](repeating: 0, count: bodySize)
        for i in stride(from: 0, to: bodySize, by: 8) { withUnsafeBytes(of: rng.next()) { base.replaceSubrange(i..<i + 8, with: $0) } }
        var appended = 0
        while try await store.stats().mapSize < targetMB << 20 {
            let batch = (0..<16).map { j in
                var body = base
                withUnsafeBytes(of: UInt64(appended + j)) { body.replaceSubrange(0..<8, with: $0) }
                return NewEvent(type: "BlobFetched", stream: "growth", payload: body)
            }
            _ = try await store.append(batch)
            appended += batch.count
        }
        let stats = try await store.stats()
        #expect(stats.events == appended && stats.blobs == appended)
        #expect(stats.blobRawBytes == UInt64(appended * bodySize))
        let report = try await store.verify()
        #expect(report.ok && report.eventsChecked == UInt64(appended))
    }

    /// A fold whose first chunk has its bodies prepared on a helper thread runs out of map: the
    /// helper is stopped and its read transaction ended before the map grows, and the chunk is
    /// folded again. The result equals the append path's.
    @Test func aFoldWithBodiesPreparedAheadGrowsTheMap() async throws {
        let events = (0..<6_000).map { i in
            NewEvent(
                id: "e\(i)", type: DocumentEvents.recorded, stream: "s", metadata: [("collection", "c"), ("key", "k\(i % 500)")],
                payload: Array("{\"i\":\(i),\"f\":\"\(String(repeating: "ab\(i)", count: 700))\"}".utf8))
        }
        // Documents the payloads only contain (here: with a trailing space) are kept inline in
        // history, so the fold writes far more than its versions' keys.
        let inline = KeyedDocumentProjection(
            name: "documents", version: 1, eventTypes: [DocumentEvents.recorded],
            documentTypes: [DocumentEvents.recorded]
        ) { event, ctx in
            guard let body = try ctx.payload(of: event), let key = event[metadata: "key"] else { return nil }
            return [.putJSON(collection: "c", key: key, json: body + [0x20])]
        }
        let reference = try await openStore(projections: [inline])
        for start in stride(from: 0, to: events.count, by: 1_000) { _ = try await reference.append(Array(events[start..<start + 1_000])) }
        let expected = try await allStates(reference)
        let dir = makeTempDir("growth-fold")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let log = try await openStore(dir, projections: [], mapSize: 1 << 20)
            for start in stride(from: 0, to: events.count, by: 1_000) { _ = try await log.append(Array(events[start..<start + 1_000])) }
        }
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: dir + "/data.mdb")[.size] as! Int
        // Opening with the documents projection folds the whole log in one chunk, far past the map.
        let store = try await openStore(dir, projections: [inline], mapSize: 1 << 20)
        #expect(try await store.stats().mapSize > sizeBefore)
        #expect(try await allStates(store) == expected)
        let report = try await store.verify()
        #expect(report.ok, "\(report)")
    }
}
