import ArgumentParser
import EventStore
import FixtureServer
import Foundation
import LMDB
import Logging
import StrataData
import TerminalUI

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the real code paths on a scratch store.",
        discussion: reflowed(
            """
            Runs on a new temporary store (removed afterwards) unless --store is given. Build with `swift build -c release` for meaningful numbers.

            Examples:
              strata bench ingest --events 200000 --batch 1000
              strata bench asof --events 1000000 --format json
              strata bench rebuild --events 1000000 --durability nosync
              strata bench fetch --events 2000 --payload-bytes 4096
              strata bench browse --events 100000
              strata bench push --events 2000 --concurrency 8

            ingest: synthetic DocumentRecorded events (bodies of about B bytes over K objects, every event a change) appended in batches, each batch one transaction with every projection.

            rebuild: every projection folded again from a log of N such events.

            asof: random objects at random seqs on a log of N events, warm (every page of the documents projection read once first); also on a log 10× as long (same objects), to show how latency grows with history (--no-growth skips it).

            browse: a source of N items (fetched twice from the fixture server's synthetic list), then the browser's view model, view and frame encoder at 80×24 through the app's composition root: the first frame, keypress to encoded frame for --samples scroll steps (capped at 2,000), pages and slider steps, and bytes per frame against the cells that changed.

            push: N local creates pushed to the fixture API through the real push path (a WriteSent append before each round, the answers appended after it, Idempotency-Key on every request), at concurrency 1 and at --concurrency, each on N new writes; beside the floor: the same N POSTs through the same libcurl client with nothing recorded.

            bodies: every stored body of an existing store (--store), in random order, timed one read at a time (a delta decodes its chain).

            teamlog: N ingested events pushed to a team log (--pg-url, a scratch database: its strata tables are dropped) in transactions of --batch, then pulled into a new store; beside the floor: the same rows by plain INSERT … SELECT unnest(…) with postgres-nio, and read back by one SELECT. Medians of 5 runs.

            fetch: a list of N items (pages of 100) and their N details (about B bytes each) from the fixture server, started in this process on 127.0.0.1, through the real fetch path (libcurl multi, events, projections); then 50 unchanged re-fetches, to measure how little they add. --server-latency-ms L has the server answer every request L ms late, as a remote API would.
            """)
    )

    enum BodyFill: String, ExpressibleByArgument, CaseIterable { case filler, text }

    enum Workload: String, ExpressibleByArgument, CaseIterable { case ingest, rebuild, asof, fetch, browse, push, bodies, teamlog }

    @Argument(help: "ingest, rebuild, asof, fetch, browse, push, bodies or teamlog.") var workload: Workload
    @Option(help: "Events in the log (fetch: details).") var events = 100_000
    @Option(help: "fetch: requests in flight.") var concurrency = 8
    @Option(help: "fetch: the fixture server answers each request this many ms late, as a remote API would (0 to 10000).") var serverLatencyMs = 0
    @Flag(help: "asof: skip the second log 10× as long.") var noGrowth = false
    @Option(help: "Approximate bytes of each event's JSON body.") var payloadBytes = 256
    @Option(help: "Distinct objects the events are spread over.") var objects = 10_000
    @Option(
        help:
            "What fills the bodies: filler (one letter repeated: compresses to almost nothing) or text (each object's own random letters, the same in every version: its versions are deltas of each other)."
    ) var bodies: BodyFill = .filler
    @Option(help: "Events per append (one transaction each).") var batch = 1_000
    @Option(help: "as-of: reads to sample.") var samples = 100_000
    @Option(help: "full, nometasync or nosync.") var durability: String = "full"
    @Option(help: "A store directory to use instead of a temporary one.") var store: String?
    @Flag(help: "Encrypt the scratch store (a new key in memory, never written).") var encrypt = false
    @Option(help: "teamlog: a scratch PostgreSQL database (its strata tables are dropped!), postgres://…") var pgURL: String?
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        guard events > 0, objects > 0, batch > 0, samples > 0, payloadBytes >= 32 else {
            throw ValidationError("--events, --objects, --batch and --samples must be positive; --payload-bytes at least 32")
        }
        guard (0...10_000).contains(serverLatencyMs) else {
            throw ValidationError("--server-latency-ms must be 0 to 10000")
        }
        guard StoreOptions.Durability(rawValue: durability) != nil else {
            throw ValidationError("--durability must be full, nometasync or nosync")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let dir = store ?? FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(UUID().uuidString)").path
            defer { if store == nil { try? FileManager.default.removeItem(atPath: dir) } }
            var options = StoreOptions()
            options.durability = StoreOptions.Durability(rawValue: durability)!
            options.logger.logLevel = .error
            if encrypt { options.key = StoreKey.generate() }
            let s = try await EventStore.open(at: dir, projections: Projections.all, options: options)
            var result: [String: JSONValue] = [
                "workload": .string(workload.rawValue), "events": .int(events), "payloadBytes": .int(payloadBytes),
                "objects": .int(objects), "batch": .int(batch), "durability": .string(durability), "encrypted": .bool(encrypt),
                "machine": .string("\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB")
            ]
            switch workload {
            case .ingest:
                let (elapsed, latencies, bytes) = try await ingest(into: s)
                result["seconds"] = .double(elapsed)
                result["eventsPerSecond"] = .int(Int(Double(events) / elapsed))
                result["bytesPerSecond"] = .int(Int(Double(bytes) / elapsed))
                result["batchP50Micros"] = .int(percentile(latencies, 0.50))
                result["batchP95Micros"] = .int(percentile(latencies, 0.95))
                result["batchP99Micros"] = .int(percentile(latencies, 0.99))
            case .rebuild:
                _ = try await ingest(into: s)
                let clock = ContinuousClock()
                let start = clock.now
                try await s.rebuild()
                let elapsed = seconds(clock.now - start)
                result["seconds"] = .double(elapsed)
                result["eventsPerSecond"] = .int(Int(Double(events) / elapsed))
            case .asof:
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
            case .fetch:
                try await fetch(into: s, result: &result)
            case .teamlog:
                guard let pgURL else { throw ValidationError("teamlog needs --pg-url postgres://… of a scratch database") }
                _ = try await ingest(into: s)
                try await TeamLogBenchmark.run(store: s, url: pgURL, batch: batch, result: &result)
            case .push:
                try await PushBenchmark.run(store: s, writes: events, concurrency: concurrency, result: &result)
            case .browse:
                try await BrowseBenchmark.run(store: s, items: events, steps: min(samples, 2_000), size: Size(columns: 80, rows: 24), result: &result)
            case .bodies:
                guard store != nil else { throw ValidationError("bodies reads the bodies of an existing store: give --store") }
                let nanos = try await bodyReadLatencies(s)
                result["samples"] = .int(nanos.count)
                result["p50Micros"] = .double(Double(percentile(nanos, 0.50)) / 1000)
                result["p99Micros"] = .double(Double(percentile(nanos, 0.99)) / 1000)
                result["maxMicros"] = .double(Double(nanos.max() ?? 0) / 1000)
            }
            let stats = try await s.stats()
            result["storeBytes"] = .int(stats.fileBytes)
            if format == .table {
                emit(JSONValue.sortedDisplay(result))
            } else {
                emit(JSONValue.object(result).prettyString)
            }
        }
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

    /// The fetch workload: list + details from the in-process fixture server, then an unchanged
    /// re-fetch.
    private func fetch(into s: EventStore, result: inout [String: JSONValue]) async throws {
        let server = FixtureServer(root: FileManager.default.currentDirectoryPath)
        try await server.start()
        do {
            let n = events
            // Pages of 100 items, like a typical paged list API.
            let query = FixtureServer.syntheticQuery(bytes: payloadBytes, latencyMs: serverLatencyMs)
            let source = SourceDefinition(
                name: "bench", url: server.baseURL + "/synthetic/items?n=\(n)&\(query)",
                items: "results", title: "title", detailURLField: "url", pageParam: "page", pageSize: 100)
            try await SourceCatalog(store: s).define(source)
            var quiet = Logger(label: "bench")
            quiet.logLevel = .critical
            let fetcher = Fetcher(store: s, client: CurlHTTPClient(), logger: quiet)
            var options = FetchOptions()
            options.details = true
            options.concurrency = concurrency
            options.retries = 0
            let clock = ContinuousClock()
            let start = clock.now
            let first = try await fetcher.fetch(source, options: options)
            let elapsed = seconds(clock.now - start)
            guard first.failures.isEmpty, first.details == n else {
                throw CLIError("the fetch benchmark failed: \(first.failures.first ?? "\(first.details) of \(n) details")")
            }
            let details = try await s.events(EventQuery(type: DataEvents.detailFetched))
            let millis = details.compactMap { $0[metadata: "durationMs"].flatMap(Int.init) }
            result["concurrency"] = .int(concurrency)
            result["serverLatencyMs"] = .int(serverLatencyMs)
            result["details"] = .int(first.details)
            result["seconds"] = .double(elapsed)
            result["eventsPerSecond"] = .int(Int(Double(first.details + first.pages) / elapsed))
            result["detailsPerSecond"] = .int(Int(Double(first.details) / elapsed))
            result["bytesPerSecond"] = .int(Int(Double(first.bytes) / elapsed))
            result["requestP50Micros"] = .int(percentile(millis, 0.50) * 1000)
            result["requestP95Micros"] = .int(percentile(millis, 0.95) * 1000)
            result["requestP99Micros"] = .int(percentile(millis, 0.99) * 1000)
            // Unchanged re-fetches: every page answers 304, recorded as one ListNotModified each.
            // Fifty of them, so LMDB's 4 KiB page granularity averages out.
            let before = try await s.stats()
            var pages = 0
            for _ in 0..<50 { pages += try await fetcher.fetch(source, options: options).pages }
            let after = try await s.stats()
            result["refetchPages"] = .int(pages)
            result["refetchLogBytesPerPage"] = .int((after.logBytes + after.indexBytes - before.logBytes - before.indexBytes) / max(1, pages))
            result["refetchStoreBytesPerPage"] = .int((after.usedBytes - before.usedBytes) / max(1, pages))
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Appends `events` synthetic DocumentRecorded events in batches; returns the elapsed seconds,
    /// per-batch latencies in µs and the body bytes written. Bodies are generated before timing.
    private func ingest(into store: EventStore, idPrefix: String = "bench-") async throws -> (Double, [Int], Int) {
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

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

private func percentile(_ values: [Int], _ p: Double) -> Int {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

extension JSONValue {
    /// `key  value` lines, sorted by key.
    static func sortedDisplay(_ o: [String: JSONValue]) -> String {
        let width = (o.keys.map(\.count).max() ?? 0) + 2
        return o.keys.sorted().map { $0.padding(toLength: width, withPad: " ", startingAt: 0) + o[$0]!.displayText }.joined(separator: "\n")
    }
}
