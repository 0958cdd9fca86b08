import EventStore
import Logging
import Foundation
import TestScratch

func makeTempDir(_ name: String = "store") -> String {
    TestScratch.path(name)
}

func testOptions(mapSize: Int = 64 << 20) -> StoreOptions {
    var o = StoreOptions()
    o.durability = .noSync
    o.mapSize = mapSize
    o.clock = SteppingClock()
    o.logger.logLevel = .critical
    return o
}

func openStore(_ dir: String = makeTempDir(), projections: [any Projection] = [KeyedDocumentProjection()], mapSize: Int = 64 << 20) async throws -> EventStore {
    try await EventStore.open(at: dir, projections: projections, options: testOptions(mapSize: mapSize))
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// A random sequence of built-in document events over a few collections and keys: puts that
/// change or repeat documents, removals, complete snapshots, and now and then a malformed body.
func generatedEvents(seed: UInt64, count: Int, malformedEvery: Int = 0) -> [NewEvent] {
    var rng = SplitMix64(seed: seed)
    let collections = ["cars", "bikes"]
    var out: [NewEvent] = []
    func doc(_ key: String) -> String {
        let price = Int.random(in: 1...4, using: &rng) * 100
        let tags = (0..<Int.random(in: 0...3, using: &rng)).map { "\"t\($0)\"" }.joined(separator: ",")
        let extra = Bool.random(using: &rng) ? ",\"note\":\"n\(Int.random(in: 0...2, using: &rng))\"" : ""
        return "{\"key\":\"\(key)\",\"price\":\(price),\"tags\":[\(tags)],\"spec\":{\"hp\":\(Int.random(in: 1...3, using: &rng))}\(extra)}"
    }
    for i in 0..<count {
        let c = collections.randomElement(using: &rng)!
        let key = "k\(Int.random(in: 0..<12, using: &rng))"
        let roll = Int.random(in: 0..<100, using: &rng)
        if malformedEvery > 0, i % malformedEvery == malformedEvery - 1 {
            out.append(
                NewEvent(
                    id: "e\(i)", type: DocumentEvents.recorded, stream: c,
                    metadata: [("collection", c), ("key", key)], payload: bytes("{\"broken\": ")))
        } else if roll < 60 {
            out.append(
                NewEvent(
                    id: "e\(i)", type: DocumentEvents.recorded, stream: c,
                    metadata: [("collection", c), ("key", key)], payload: bytes(doc(key))))
        } else if roll < 75 {
            out.append(NewEvent(id: "e\(i)", type: DocumentEvents.removed, stream: c, metadata: [("collection", c), ("key", key)]))
        } else if roll < 90 {
            let keys = Set((0..<Int.random(in: 0...8, using: &rng)).map { _ in "k\(Int.random(in: 0..<12, using: &rng))" })
            let body = "{" + keys.sorted().map { "\"\($0)\":\(doc($0))" }.joined(separator: ",") + "}"
            out.append(NewEvent(id: "e\(i)", type: DocumentEvents.snapshotRecorded, stream: c, metadata: [("collection", c)], payload: bytes(body)))
        } else {
            // An event no projection cares about.
            out.append(NewEvent(id: "e\(i)", type: "FetchFailed", stream: c, metadata: [("url", "http://127.0.0.1/\(c)"), ("status", "500")]))
        }
    }
    return out
}

/// Appends in randomly sized batches.
func appendInBatches(_ events: [NewEvent], to store: EventStore, seed: UInt64) async throws {
    var rng = SplitMix64(seed: seed ^ 0xABCD)
    var i = 0
    while i < events.count {
        let n = Int.random(in: 1...17, using: &rng)
        _ = try await store.append(Array(events[i..<min(events.count, i + n)]))
        i += n
    }
}

func allStates(_ store: EventStore, asOf: UInt64? = nil) async throws -> [DocumentState] {
    try await store.documents { try $0.states(asOf: asOf, includeRemoved: true) }
}

extension DocumentState {
    /// The state without last-seen, which as-of reads do not reconstruct.
    var comparable: DocumentState { var s = self; s.lastSeenSeq = nil; return s }
}
