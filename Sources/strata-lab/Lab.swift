import ArgumentParser
import FixtureServer
import Foundation
import StrataApp
import StrataJSON
import TerminalUI

/// The lab: benchmarks that need what a user's store does not have or must not do: the fixture
/// API server in this process, the browser's view driven without a terminal, a scratch
/// PostgreSQL database whose tables are dropped. `strata bench` keeps the workloads a user runs
/// on their own machine (ingest, rebuild, as-of reads, body reads).
@main
struct Lab: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-lab", abstract: "Strata's lab: benchmarks against the fixture server and scratch databases.",
        subcommands: [LabBench.self])
}

/// What the lab measures (docs/benchmarks.md names each).
enum LabWorkload: String, CaseIterable, ExpressibleByArgument { case fetch, browse, push, teamlog, watch, alerts }

struct LabBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the fetch, browse, push, team-log and watch paths on a scratch store.",
        discussion: """
            Runs on a new temporary store (removed afterwards). Build with `swift build -c release` for meaningful numbers.

            fetch: a list of N items (pages of 100) and their N details (about B bytes each) from the fixture server, started in this process on 127.0.0.1, through the real fetch path (libcurl multi, events, projections); then 50 unchanged re-fetches, to measure how little they add. --server-latency-ms L has the server answer every request L ms late, as a remote API would.

            browse: a source of N items (fetched twice from the fixture server's synthetic list), then the browser's view model, view and frame encoder at 80×24 through the app's composition root: the first frame, keypress to encoded frame for --samples scroll steps (capped at 2,000), pages and slider steps, and bytes per frame against the cells that changed.

            push: N local creates pushed to the fixture API through the real push path (a WriteSent append before each round, the answers appended after it, Idempotency-Key on every request), at concurrency 1 and at --concurrency, each on N new writes; beside the floor: the same N POSTs through the same libcurl client with nothing recorded.

            teamlog: N ingested events pushed to a team log (--pg-url, a scratch database: its strata tables are dropped) in transactions of --batch, then pulled into a new store; beside the floor: the same rows by plain INSERT … SELECT unnest(…) with postgres-nio, and read back by one SELECT. Medians of 5 runs.

            watch: --objects sources due every second, polled by the real watcher (at --concurrency) until N polls, against the fixture server answering 304: polls per second, schedule lateness p50/p99/max, CPU per poll, RSS after the first tenth of the polls and at the end; beside the floor: N conditional GETs through the same libcurl client, nothing recorded.

            alerts: a source of --objects items (pages of 500) whose list changes on every pass (2% of the prices move, a few items come and go), fetched N times in a store with no alert and in one with an alert (a kind, a field and a condition), three runs of each alternating: the median time of a pass with and without, and the overhead.
            """)

    @Argument(help: "fetch, browse, push, teamlog, watch or alerts.") var workload: LabWorkload
    @Option(help: "Events in the log (fetch: details; push: writes; watch and alerts: polls and passes).") var events = 100_000
    @Option(help: "Requests in flight.") var concurrency = 8
    @Option(help: "fetch: the fixture server answers each request this many ms late, as a remote API would (0 to 10000).") var serverLatencyMs = 0
    @Option(help: "Approximate bytes of each event's JSON body.") var payloadBytes = 256
    @Option(help: "Distinct objects (watch: sources; alerts: items).") var objects = 10_000
    @Option(help: "Events per append, and per team-log transaction.") var batch = 1_000
    @Option(help: "browse: steps to sample.") var samples = 100_000
    @Option(help: "full, nometasync or nosync.") var durability: String = "full"
    @Option(help: "teamlog: a scratch PostgreSQL database (its strata tables are dropped!), postgres://…") var pgURL: String?
    @Option(help: "table or json.") var format: String = "table"

    func validate() throws {
        guard events > 0, objects > 0, batch > 0, samples > 0, payloadBytes >= 32 else {
            throw ValidationError("--events, --objects, --batch and --samples must be positive; --payload-bytes at least 32")
        }
        guard (0...10_000).contains(serverLatencyMs) else { throw ValidationError("--server-latency-ms must be 0 to 10000") }
        guard StoreBenchmark.isDurability(durability) else { throw ValidationError("--durability must be full, nometasync or nosync") }
        guard ["table", "json"].contains(format) else { throw ValidationError("--format must be table or json") }
        if workload == .teamlog, pgURL == nil { throw ValidationError("teamlog needs --pg-url postgres://… of a scratch database") }
    }

    func run() async throws {
        var bench = StoreBenchmark()
        (bench.events, bench.payloadBytes, bench.objects, bench.batch, bench.samples, bench.durability) =
            (events, payloadBytes, objects, batch, samples, durability)
        let result = try await bench.withScratchStore(workload.rawValue) { s, result in
            switch workload {
            case .fetch:
                try await FetchBenchmark.run(
                    store: s, items: events, payloadBytes: payloadBytes, concurrency: concurrency, latencyMs: serverLatencyMs, result: &result)
            case .browse:
                let app = try await FetchBenchmark.browseApp(over: s, items: events)
                var figures = try await BrowseBenchmark.measure(app: app, steps: min(samples, 2_000), size: Size(columns: 80, rows: 24))
                figures["screen"] = .string("80x24")
                for (k, v) in figures { result[k] = v }
                result["items"] = .int(events)
            case .push:
                try await PushBenchmark.run(store: s, writes: events, concurrency: concurrency, result: &result)
            case .teamlog:
                _ = try await bench.ingest(into: s)
                try await TeamLogBenchmark.run(store: s, url: pgURL!, batch: batch, result: &result)
            case .watch:
                try await WatchBenchmark.watch(store: s, sources: objects, polls: events, concurrency: concurrency, result: &result)
            case .alerts:
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-lab-alerts-\(UUID().uuidString)").path
                defer { try? FileManager.default.removeItem(atPath: dir) }
                try await WatchBenchmark.alerts(directory: dir, passes: events, items: objects, result: &result)
            }
        }
        if format == "json" {
            print(JSONValue.object(result).prettyString)
        } else {
            let width = (result.keys.map(\.count).max() ?? 0) + 2
            print(result.keys.sorted().map { $0.padding(toLength: width, withPad: " ", startingAt: 0) + result[$0]!.displayText }.joined(separator: "\n"))
        }
    }
}
