import Benchmark
import CurlFloor
import EventStore
import FixtureServer
import Foundation
import Logging
import StrataData

// One workload for both: the synthetic fixture API's list of `details` items and their details
// (about `detailBytes` of nested JSON each), served in this process on 127.0.0.1, fetched with 8
// transfers in flight. The floor only downloads; Strata also validates, hashes, compresses,
// appends events and runs the projections, with durable commits.
let details = 500
let detailBytes = 4_096
let concurrency = 8
/// The FetchRemote pair's server latency in ms: each response is answered this late, as a remote
/// API would answer, without using the CPU meanwhile (`STRATA_BENCH_LATENCY_MS` overrides it).
let remoteLatencyMs = ProcessInfo.processInfo.environment["STRATA_BENCH_LATENCY_MS"].flatMap(Int.init) ?? 5

final class ServerBox: @unchecked Sendable {
    var server: FixtureServer?
    func start() async throws -> FixtureServer {
        if let server { return server }
        let s = FixtureServer(root: FileManager.default.currentDirectoryPath)
        try await s.start()
        server = s
        return s
    }
}
let box = ServerBox()

/// Runs the C floor over `urls` (blocking).
func floorFetch(_ urls: [String]) -> Int64 {
    let cStrings = urls.map { UnsafePointer(strdup($0)) }
    defer { cStrings.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
    return cStrings.withUnsafeBufferPointer { curl_floor_fetch($0.baseAddress, Int32(urls.count), Int32(concurrency)) }
}

func scratch() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("strata-fetch-bench-\(UUID().uuidString)").path
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .milliseconds, warmupIterations: 1, scalingFactor: .one,
        maxDuration: .seconds(120), maxIterations: 7
    )
    // The server on loopback answers at once: the client's CPU is what the pair compares.
    fetchPair(prefix: "Fetch", latencyMs: 0, label: "")
    // The same requests from a server that answers `remoteLatencyMs` late: what a remote API's
    // round trips leave of the difference.
    fetchPair(prefix: "FetchRemote", latencyMs: remoteLatencyMs, label: ", server answering in \(remoteLatencyMs) ms")
}

/// The floor and Strata over the same list and details, the server answering `latencyMs` late.
func fetchPair(prefix: String, latencyMs: Int, label: String) {
    let query = FixtureServer.syntheticQuery(bytes: detailBytes, latencyMs: latencyMs)

    Benchmark("\(prefix)/floor (C, raw libcurl multi, 8 in flight\(label))") { benchmark in
        let server = try await box.start()
        let list = server.baseURL + "/synthetic/items?n=\(details)&\(query)"
        let urls = [list] + (0..<details).map { server.baseURL + "/synthetic/items/\($0)?\(query)" }
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            // Blocking C: run it on a thread of its own, off the cooperative pool.
            let bytes = await withCheckedContinuation { c in
                Thread { c.resume(returning: floorFetch(urls)) }.start()
            }
            benchmark.stopMeasurement()
            precondition(bytes > 0, "the floor fetch failed")
        }
    }

    Benchmark("\(prefix)/Strata (list + details into a durable store, 8 in flight\(label))") { benchmark in
        let server = try await box.start()
        let source = SourceDefinition(name: "bench", url: server.baseURL + "/synthetic/items?n=\(details)&\(query)",
                                      items: "results", title: "title", detailURLField: "url")
        var quiet = Logger(label: "bench")
        quiet.logLevel = .critical
        for _ in benchmark.scaledIterations {
            let dir = scratch()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var options = StoreOptions()
            options.logger.logLevel = .error
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()] + DataProjections.all, options: options)
            try await SourceCatalog(store: store).define(source)
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quiet)
            var fetch = FetchOptions()
            fetch.details = true
            fetch.concurrency = concurrency
            fetch.retries = 0
            benchmark.startMeasurement()
            let summary = try await fetcher.fetch(source, options: fetch)
            benchmark.stopMeasurement()
            precondition(summary.details == details && summary.failures.isEmpty, "the Strata fetch failed: \(summary.failures.first ?? "")")
        }
    }
}
