import Benchmark
import EventStore
import FixtureServer
import Foundation
import GRDB
import LMDBFloor

// One workload for all three: `events` DocumentRecorded-style events with ~256-byte JSON bodies
// spread over `objects` objects (every event changes its object, so every event writes a history
// version), `batch` events per durable transaction (fsync on every commit).
let events = 20_000
let objects = 2_000
let batch = 1_000

let bodies: [[UInt8]] = {
    var rng = SplitMix64(seed: 7)
    let filler = String(repeating: "x", count: 196)
    return (0..<events).map { i in
        Array("{\"id\":\(i % objects),\"n\":\(i),\"price\":\(rng.next() % 100_000),\"f\":\"\(filler)\"}".utf8)
    }
}()

func scratch() -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .milliseconds, warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(120), maxIterations: 7
    )

    // The workload at 1,000 events per transaction ("Ingest/…"), and at 100 and 10,000
    // ("IngestB100/…", "IngestB10000/…"): the floor commits as often as Strata does.
    for size in [batch, 100, 10_000] {
        let name = size == batch ? "Ingest" : "IngestB\(size)"
        Benchmark("\(name)/floor (C, raw LMDB, \(size) per transaction)") { benchmark in
            for _ in benchmark.scaledIterations {
                let dir = scratch()
                defer { try? FileManager.default.removeItem(atPath: dir) }
                benchmark.startMeasurement()
                let rc = floorIngest(dir, nosync: false, batch: size)
                benchmark.stopMeasurement()
                precondition(rc == 0, "floor failed: \(rc)")
            }
        }
        Benchmark("\(name)/Strata (EventStore + history projection, \(size) per append)") { benchmark in
            for _ in benchmark.scaledIterations {
                let dir = scratch()
                defer { try? FileManager.default.removeItem(atPath: dir) }
                let store = try await openStore(dir, durability: .full)
                let batches = ingestBatches(batch: size)
                benchmark.startMeasurement()
                // As a bulk load appends: each batch is prepared while the one before it commits.
                _ = try await store.append(batches: batches)
                benchmark.stopMeasurement()
            }
        }
    }

    // The 1,000-per-append workload into an encrypted store (values sealed, keys digested).
    Benchmark("IngestEncrypted/Strata (encrypted store, \(batch) per append)") { benchmark in
        for _ in benchmark.scaledIterations {
            let dir = scratch()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try await openStore(dir, durability: .full, key: StoreKey.generate())
            let batches = ingestBatches(batch: batch)
            benchmark.startMeasurement()
            _ = try await store.append(batches: batches)
            benchmark.stopMeasurement()
        }
    }

    Benchmark("Ingest/GRDB peer (SQLite WAL, same projection)") { benchmark in
        for _ in benchmark.scaledIterations {
            let dir = scratch()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var config = Configuration()
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            let pool = try DatabasePool(path: dir + "/peer.sqlite", configuration: config)
            try await pool.write { db in
                try db.execute(sql: """
                    CREATE TABLE event (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
                                        stream TEXT NOT NULL, recordedAt INTEGER NOT NULL, payload BLOB NOT NULL);
                    CREATE TABLE current (collection TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
                                          firstSeq INTEGER NOT NULL, lastSeq INTEGER NOT NULL, document BLOB NOT NULL,
                                          PRIMARY KEY (collection, key)) WITHOUT ROWID;
                    CREATE TABLE history (collection TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, version INTEGER NOT NULL,
                                          document BLOB NOT NULL, changes BLOB NOT NULL, PRIMARY KEY (collection, key, seq)) WITHOUT ROWID;
                    """)
            }
            benchmark.startMeasurement()
            var seq = 0
            for start in stride(from: 0, to: events, by: batch) {
                let range = start..<min(events, start + batch)
                let first = seq
                try await pool.write { db in
                    let insertEvent = try db.cachedStatement(sql: "INSERT INTO event (seq, id, type, stream, recordedAt, payload) VALUES (?, ?, ?, ?, ?, ?)")
                    let selectCurrent = try db.cachedStatement(sql: "SELECT version, firstSeq, document FROM current WHERE collection = ? AND key = ?")
                    let upsert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO current (collection, key, version, firstSeq, lastSeq, document) VALUES (?, ?, ?, ?, ?, ?)")
                    let insertHistory = try db.cachedStatement(sql: "INSERT INTO history (collection, key, seq, version, document, changes) VALUES (?, ?, ?, ?, ?, ?)")
                    var s = first
                    for i in range {
                        s += 1
                        let key = "o\(i % objects)"
                        try insertEvent.execute(arguments: [s, "e\(i)", DocumentEvents.recorded, "bench", Int(Date().timeIntervalSince1970 * 1e6), Data(bodies[i])])
                        let doc = try JSONValue(parsing: bodies[i])
                        let canonical = Data(doc.canonicalBytes)
                        var version = 1, firstSeq = s
                        // Like Strata, field-level changes are derived on read, not stored.
                        let changes = Data()
                        if let row = try Row.fetchOne(selectCurrent, arguments: ["bench", key]) {
                            let old: Data = row[2]
                            if old == canonical { continue }
                            version = row[0] + 1
                            firstSeq = row[1]
                        }
                        try upsert.execute(arguments: ["bench", key, version, firstSeq, s, canonical])
                        try insertHistory.execute(arguments: ["bench", key, s, version, canonical, changes])
                    }
                }
                seq = first + range.count
            }
            benchmark.stopMeasurement()
        }
    }

    // Rebuild: the documents projection refolded from the log of the ingest workload (built once,
    // unmeasured), in transactions of Strata's catch-up chunk, against the C floor redoing the
    // same puts in transactions of the same size.
    Benchmark("Rebuild/floor (C, raw LMDB)") { benchmark in
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        precondition(floorIngest(dir, nosync: true) == 0)
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            let rc = lmdb_floor_rebuild(dir, UInt64(objects), UInt32(StoreOptions().catchUpChunk))
            benchmark.stopMeasurement()
            precondition(rc == 0, "floor rebuild failed: \(rc)")
        }
    }

    Benchmark("Rebuild/Strata (documents projection from the log)") { benchmark in
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try await strataIngest(dir, durability: .full)  // so the rebuild commits durably, like the floor
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            try await store.rebuild(["documents"])
            benchmark.stopMeasurement()
        }
    }

    // As-of: 20,000 reads of a random object at a random seq on the ingest workload's store, one
    // read transaction; the p50 below is of the whole batch (divide by 20,000 for one read).
    Benchmark("AsOf/floor (C, raw LMDB seek, 20k reads)") { benchmark in
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        precondition(floorIngest(dir, nosync: true) == 0)
        let (keys, seqs) = asOfSamples()
        var nanos = [UInt64](repeating: 0, count: keys.count)
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            let rc = lmdb_floor_asof(dir, keys, seqs, UInt64(keys.count), &nanos)
            benchmark.stopMeasurement()
            precondition(rc == 0, "floor as-of failed: \(rc)")
        }
    }

    Benchmark("AsOf/Strata (DocumentReader.version, 20k reads)") { benchmark in
        let dir = scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try await strataIngest(dir)
        let (keys, seqs) = asOfSamples()
        let names = keys.map { "o\($0)" }
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            let found = try await store.documents { reader in
                var n = 0
                for i in names.indices where try reader.version(collection: "bench", key: names[i], asOf: seqs[i]) != nil { n += 1 }
                return n
            }
            benchmark.stopMeasurement()
            blackHole(found)
        }
    }

    // Real bodies: `realBodies` nested detail documents of about 16 KB each (the shape of the
    // fixture API's details), ingested end to end by Strata, against Foundation's JSONDecoder
    // decoding the same bytes into Codable DTOs and doing nothing else.
    Benchmark("RealBody/Foundation JSONDecoder (decode only)") { benchmark in
        let decoder = JSONDecoder()
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            for body in realBodies { blackHole(try decoder.decode(DetailDto.self, from: Data(body))) }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("RealBody/Strata (events + details projection, durable)") { benchmark in
        for _ in benchmark.scaledIterations {
            let dir = scratch()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try await openStore(dir, durability: .full)
            let batches = stride(from: 0, to: realBodies.count, by: 64).map { start in
                (start..<min(realBodies.count, start + 64)).map { i in
                    NewEvent(id: "d\(i)", type: DocumentEvents.recorded, stream: "bench",
                             metadata: [("collection", "details"), ("key", String(i))], payload: realBodies[i])
                }
            }
            benchmark.startMeasurement()
            _ = try await store.append(batches: batches)
            benchmark.stopMeasurement()
        }
    }
}

/// The synthetic fixture API's detail shape (`FixtureServer.syntheticDetail`).
struct DetailDto: Decodable {
    struct Owner: Decodable { var name: String; var city: String }
    struct Specs: Decodable { var km: Int; var year: Int; var owner: Owner }
    struct Part: Decodable { var n: Int; var code: String; var qty: Int }
    var id: Int
    var version: Int
    var title: String
    var price: Int
    var tags: [String]
    var specs: Specs
    var parts: [Part]
}

let realBodyBytes = 16_384
let realBodies: [[UInt8]] = (0..<400).map { FixtureServer.syntheticDetail(id: $0, version: 1, bytes: realBodyBytes) }

/// The ingest workload written by the C floor into `dir` (`nosync` for the rebuild and as-of
/// floors' setup). The body pointers are built once, outside any measurement.
func floorIngest(_ dir: String, nosync: Bool, batch: Int = batch) -> Int32 {
    bodyPointers.withUnsafeBufferPointer { p in
        p.withMemoryRebound(to: Optional<UnsafePointer<UInt8>>.self) { opt in
            lmdb_floor_ingest(dir, opt.baseAddress, bodySizes, UInt64(events), UInt64(objects), UInt32(batch), nosync ? 1 : 0)
        }
    }
}
// Read-only after initialization; the pointers address the immutable global `bodies`.
nonisolated(unsafe) let bodyPointers = bodies.map { UnsafePointer<UInt8>($0.withUnsafeBufferPointer { UnsafeMutablePointer(mutating: $0.baseAddress!) }) }
let bodySizes = bodies.map { UInt32($0.count) }

/// A store under `dir` with the documents projection, as every Strata benchmark opens it.
func openStore(_ dir: String, durability: StoreOptions.Durability, key: StoreKey? = nil) async throws -> EventStore {
    var options = StoreOptions()
    options.logger.logLevel = .error
    options.durability = durability
    options.key = key
    return try await EventStore.open(at: dir + "/store", projections: [KeyedDocumentProjection()], options: options)
}

/// The ingest workload as Strata appends it: `batch` events per append.
func ingestBatches(batch: Int = batch) -> [[NewEvent]] {
    stride(from: 0, to: events, by: batch).map { start in
        (start..<min(events, start + batch)).map { i in
            NewEvent(id: "e\(i)", type: DocumentEvents.recorded, stream: "bench",
                     metadata: [("collection", "bench"), ("key", "o\(i % objects)")], payload: bodies[i])
        }
    }
}

/// The ingest workload appended by Strata into a store under `dir` (for rebuild and as-of).
func strataIngest(_ dir: String, durability: StoreOptions.Durability = .noSync) async throws -> EventStore {
    let store = try await openStore(dir, durability: durability)
    for b in ingestBatches() { _ = try await store.append(b) }
    return store
}

/// 20,000 (object, seq) pairs, the same for the floor and Strata.
func asOfSamples() -> ([UInt64], [UInt64]) {
    var rng = SplitMix64(seed: 11)
    let keys = (0..<20_000).map { _ in rng.next() % UInt64(objects) }
    let seqs = (0..<20_000).map { _ in 1 + rng.next() % UInt64(events) }
    return (keys, seqs)
}
