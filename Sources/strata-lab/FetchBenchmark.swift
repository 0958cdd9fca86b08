import EventStore
import FixtureServer
import Foundation
import Logging
import StrataApp
import StrataData
import StrataJSON

/// The fetch path against the fixture server in this process on 127.0.0.1: a list and its
/// details fetched, then unchanged re-fetches; and the set-up of the browse workload.
enum FetchBenchmark {
    /// The fetch workload: list + details from the in-process fixture server, then an unchanged
    /// re-fetch.
    static func run(
        store s: EventStore, items events: Int, payloadBytes: Int, concurrency: Int, latencyMs serverLatencyMs: Int, result: inout [String: JSONValue]
    ) async throws {
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
                throw BenchmarkError("the fetch benchmark failed: \(first.failures.first ?? "\(first.details) of \(n) details")")
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

    /// The app over `s` once a source of `events` items was fetched into it twice, from the
    /// fixture server's synthetic list in pages of 100 (two runs, so the slider has history to
    /// step through). Set-up, not timed.
    static func browseApp(over s: EventStore, items events: Int) async throws -> StrataApp {
        let server = FixtureServer(root: FileManager.default.currentDirectoryPath)
        try await server.start()
        do {
            let source = SourceDefinition(
                name: "bench", url: server.baseURL + "/synthetic/items?n=\(events)&bytes=64",
                items: "results", title: "title", pageParam: "page", pageSize: 100)
            try await SourceCatalog(store: s).define(source)
            var quiet = Logger(label: "bench")
            quiet.logLevel = .critical
            let fetcher = Fetcher(store: s, client: CurlHTTPClient(), logger: quiet)
            var options = FetchOptions()
            options.retries = 0
            for _ in 0..<2 { _ = try await fetcher.fetch(source, options: options) }
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
        var configuration = AppConfiguration(userAgent: "Strata-bench")
        configuration.logger.logLevel = .critical
        return StrataApp(store: s, configuration: configuration)
    }
}
