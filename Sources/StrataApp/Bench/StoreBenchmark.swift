package import EventStore
import Foundation
import LMDB
import Logging
import StrataData
package import StrataJSON

/// What `strata bench` measures on the user's own machine, with nothing but a scratch store
/// (docs/benchmarks.md names each; the fixture-server workloads are the lab's, `strata-lab bench`).
package enum BenchmarkWorkload: String, Sendable, CaseIterable { case ingest, rebuild, asof, bodies }

/// A benchmark that could not run, or whose workload failed.
package struct BenchmarkError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// The engine's speed, measured on a scratch store (or `store`) through the real code: the
/// appends, projections and reads the commands use.
package struct StoreBenchmark: Sendable {
    /// What fills the bodies: one letter repeated, or each object's own random letters.
    package enum BodyFill: String, Sendable, CaseIterable { case filler, text }

    package var events = 100_000
    package var noGrowth = false
    package var payloadBytes = 256
    package var objects = 10_000
    package var bodies: BodyFill = .filler
    package var batch = 1_000
    package var samples = 100_000
    package var durability = "full"
    /// A store directory to use instead of a temporary one.
    package var store: String?
    package var encrypt = false

    package init() {}

    /// Whether `name` is a durability a store can be opened with.
    package static func isDurability(_ name: String) -> Bool { StoreOptions.Durability(rawValue: name) != nil }

    /// Runs `workload` and returns its figures.
    package func run(_ workload: BenchmarkWorkload) async throws -> [String: JSONValue] {
        try await withScratchStore(workload.rawValue) { s, result in
            switch workload {
            case .ingest: try await measureIngest(s, &result)
            case .rebuild: try await measureRebuild(s, &result)
            case .asof: try await measureAsOf(s, &result)
            case .bodies: try await measureBodies(s, &result)
            }
        }
    }

    /// Opens the scratch store (or ``store``), hands it to `body` with the figures every run
    /// reports, adds the store's size, and removes a scratch store after.
    package func withScratchStore(
        _ workload: String, _ body: (EventStore, inout [String: JSONValue]) async throws -> Void
    ) async throws -> [String: JSONValue] {
        let dir = store ?? FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(UUID().uuidString)").path
        defer { if store == nil { try? FileManager.default.removeItem(atPath: dir) } }
        var options = StoreOptions()
        options.durability = StoreOptions.Durability(rawValue: durability)!
        options.logger.logLevel = .error
        if encrypt { options.key = StoreKey.generate() }
        let s = try await EventStore.open(at: dir, projections: StoreAccess.projections, options: options)
        var result: [String: JSONValue] = [
            "workload": .string(workload), "events": .int(events), "payloadBytes": .int(payloadBytes),
            "objects": .int(objects), "batch": .int(batch), "durability": .string(durability), "encrypted": .bool(encrypt),
            "machine": .string("\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB")
        ]
        try await body(s, &result)
        let stats = try await s.stats()
        result["storeBytes"] = .int(stats.fileBytes)
        return result
    }

    private func measureIngest(_ s: EventStore, _ result: inout [String: JSONValue]) async throws {
        let (elapsed, latencies, bytes) = try await ingest(into: s)
        result["seconds"] = .double(elapsed)
        result["eventsPerSecond"] = .int(Int(Double(events) / elapsed))
        result["bytesPerSecond"] = .int(Int(Double(bytes) / elapsed))
        result["batchP50Micros"] = .int(percentile(latencies, 0.50))
        result["batchP95Micros"] = .int(percentile(latencies, 0.95))
        result["batchP99Micros"] = .int(percentile(latencies, 0.99))
    }

    private func measureRebuild(_ s: EventStore, _ result: inout [String: JSONValue]) async throws {
        _ = try await ingest(into: s)
        let clock = ContinuousClock()
        let start = clock.now
        try await s.rebuild()
        let elapsed = seconds(clock.now - start)
        result["seconds"] = .double(elapsed)
        result["eventsPerSecond"] = .int(Int(Double(events) / elapsed))
    }

    private func measureAsOf(_ s: EventStore, _ result: inout [String: JSONValue]) async throws {
        _ = try await ingest(into: s)
        let nanos = try await asOfLatencies(s)
        result["samples"] = .int(samples)
        result["p50Micros"] = .double(Double(percentile(nanos, 0.50)) / 1000)
        result["p95Micros"] = .double(Double(percentile(nanos, 0.95)) / 1000)
        result["p99Micros"] = .double(Double(percentile(nanos, 0.99)) / 1000)
        if !noGrowth {
            // Nine more logs' worth of events over the same objects: 10× the history.
            for round in 1...9 { _ = try await ingest(into: s, idPrefix: "bench\(round)-") }
            let grown = try await asOfLatencies(s)
            result["events10x"] = .int(events * 10)
            result["p50Micros10x"] = .double(Double(percentile(grown, 0.50)) / 1000)
            result["p99Micros10x"] = .double(Double(percentile(grown, 0.99)) / 1000)
            result["p99Growth10x"] = .double(Double(percentile(grown, 0.99)) / Double(max(1, percentile(nanos, 0.99))))
        }
    }

    private func measureBodies(_ s: EventStore, _ result: inout [String: JSONValue]) async throws {
        guard store != nil else { throw BenchmarkError("bodies reads the bodies of an existing store") }
        let nanos = try await bodyReadLatencies(s)
        result["samples"] = .int(nanos.count)
        result["p50Micros"] = .double(Double(percentile(nanos, 0.50)) / 1000)
        result["p99Micros"] = .double(Double(percentile(nanos, 0.99)) / 1000)
        result["maxMicros"] = .double(Double(nanos.max() ?? 0) / 1000)
    }

    /// Every body of the log (up to --samples) read in random order, one snapshot, nanoseconds
    /// each: a delta-encoded body decodes its chain back to its keyframe.
    private func bodyReadLatencies(_ s: EventStore) async throws -> [Int] {
        let limit = samples
        return try await s.snapshot { snap in
            var seqs: [UInt64] = []
            let head = try snap.head()
            var seq: UInt64 = 1
            while seq <= head {
                if try snap.event(seq: seq)?.payload != nil { seqs.append(seq) }
                seq += 1
            }
            seqs.shuffle()
            let clock = ContinuousClock()
            var nanos: [Int] = []
            for seq in seqs.prefix(limit) {
                guard let e = try snap.event(seq: seq) else { continue }
                let start = clock.now
                _ = try snap.payload(of: e)
                let d = clock.now - start
                nanos.append(Int(d.components.attoseconds / 1_000_000_000) + Int(d.components.seconds) * 1_000_000_000)
            }
            return nanos
        }
    }

    /// Random objects at random seqs: nanoseconds per as-of read on a warm store, after 1,000
    /// warm-up reads. Warm means every page of the documents projection is in memory and mapped:
    /// a pass over its tables touches each page once first. Otherwise the first read of each of
    /// the (at 2 M events, about 400,000) pages pays a page fault, and the p99 measures the
    /// virtual machine's fault cost, which moves between 1 and 10 µs here from run to run.
    private func asOfLatencies(_ s: EventStore) async throws -> [Int] {
        let head = try await s.head().seq
        let tables = try s.tables(of: "documents")
        let touched = try await s.read { txn -> Int in
            var sum = 0
            for name in ["current", "history"] {
                let c = try txn.cursor(tables[name])
                var entry = try c.first()
                while let e = entry {
                    sum &+= Int(e.key.last ?? 0) &+ Int(e.value.first ?? 0) &+ Int(e.value.last ?? 0)
                    entry = try c.next()
                }
            }
            return sum
        }
        withExtendedLifetime(touched) {}
        let (objects, samples) = (self.objects, self.samples)
        return try await s.documents { reader -> [Int] in
            var rng = SystemRandomNumberGenerator()
            var out: [Int] = []
            out.reserveCapacity(samples)
            let clock = ContinuousClock()
            for i in 0..<(samples + 1_000) {
                let key = "o\(Int.random(in: 0..<objects, using: &rng))"
                let seq = UInt64.random(in: 1...head, using: &rng)
                let t0 = clock.now
                _ = try reader.version(collection: "bench", key: key, asOf: seq)
                if i >= 1_000 { out.append(Int(seconds(clock.now - t0) * 1e9)) }
            }
            return out
        }
    }

    /// Appends `events` synthetic DocumentRecorded events in batches; returns the elapsed seconds,
    /// per-batch latencies in µs and the body bytes written. Bodies are generated before timing.
    package func ingest(into store: EventStore, idPrefix: String = "bench-") async throws -> (Double, [Int], Int) {
        var rng = SystemRandomNumberGenerator()
        let filler = String(repeating: "x", count: max(0, payloadBytes - 60))
        // `text`: each object's own letters (seeded by the object), so versions differ in `n`
        // and `price` only.
        func text(_ object: Int) -> String {
            var g = SplitMix64(seed: UInt64(object) &+ 0x5EED)
            return String(decoding: (0..<max(0, payloadBytes - 60)).map { _ in UInt8(97 + g.next() % 26) }, as: UTF8.self)
        }
        var texts: [Int: String] = [:]
        var batches: [[NewEvent]] = []
        var bytes = 0
        var i = 0
        while i < events {
            var b: [NewEvent] = []
            b.reserveCapacity(batch)
            for _ in 0..<min(batch, events - i) {
                let fill: String
                if bodies == .text {
                    if texts[i % objects] == nil { texts[i % objects] = text(i % objects) }
                    fill = texts[i % objects]!
                } else {
                    fill = filler
                }
                let body = Array("{\"id\":\(i % objects),\"n\":\(i),\"price\":\(UInt32.random(in: 0...99_999, using: &rng)),\"f\":\"\(fill)\"}".utf8)
                bytes += body.count
                b.append(
                    NewEvent(
                        id: "\(idPrefix)\(i)", type: DocumentEvents.recorded, stream: "bench",
                        metadata: [("collection", "bench"), ("key", "o\(i % objects)")], payload: body))
                i += 1
            }
            batches.append(b)
        }
        let clock = ContinuousClock()
        var latencies: [Int] = []
        let start = clock.now
        // As a bulk load does: each batch is prepared while the one before it commits.
        var next = batches.first.map(store.prepare)
        for i in batches.indices {
            let t0 = clock.now
            let current = next!
            next = i + 1 < batches.count ? store.prepare(batches[i + 1]) : nil
            _ = try await store.append(current)
            latencies.append(Int(seconds(clock.now - t0) * 1_000_000))
        }
        return (seconds(clock.now - start), latencies, bytes)
    }
}

package func seconds(_ d: Duration) -> Double {
    d.inSeconds
}

/// The value at fraction `p` of the sorted values (0 for none).
package func percentile(_ values: [Int], _ p: Double) -> Int {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
