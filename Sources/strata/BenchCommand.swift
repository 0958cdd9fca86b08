import ArgumentParser
import Foundation
import StrataApp
import StrataJSON
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
              strata bench watch --objects 200 --events 10000
              strata bench alerts --events 30 --objects 2000

            ingest: synthetic DocumentRecorded events (bodies of about B bytes over K objects, every event a change) appended in batches, each batch one transaction with every projection.

            rebuild: every projection folded again from a log of N such events.

            asof: random objects at random seqs on a log of N events, warm (every page of the documents projection read once first); also on a log 10× as long (same objects), to show how latency grows with history (--no-growth skips it).

            browse: a source of N items (fetched twice from the fixture server's synthetic list), then the browser's view model, view and frame encoder at 80×24 through the app's composition root: the first frame, keypress to encoded frame for --samples scroll steps (capped at 2,000), pages and slider steps, and bytes per frame against the cells that changed.

            push: N local creates pushed to the fixture API through the real push path (a WriteSent append before each round, the answers appended after it, Idempotency-Key on every request), at concurrency 1 and at --concurrency, each on N new writes; beside the floor: the same N POSTs through the same libcurl client with nothing recorded.

            bodies: every stored body of an existing store (--store), in random order, timed one read at a time (a delta decodes its chain).

            teamlog: N ingested events pushed to a team log (--pg-url, a scratch database: its strata tables are dropped) in transactions of --batch, then pulled into a new store; beside the floor: the same rows by plain INSERT … SELECT unnest(…) with postgres-nio, and read back by one SELECT. Medians of 5 runs.

            watch: --objects sources due every second, polled by the real watcher (at --concurrency) until N polls, against the fixture server answering 304: polls per second, schedule lateness p50/p99/max, CPU per poll, RSS after the first tenth of the polls and at the end; beside the floor: N conditional GETs through the same libcurl client, nothing recorded.

            alerts: a source of --objects items (pages of 500) whose list changes on every pass (2% of the prices move, a few items come and go), fetched N times in a store with no alert and in one with an alert (a kind, a field and a condition), three runs of each alternating: the median time of a pass with and without, and the overhead.

            fetch: a list of N items (pages of 100) and their N details (about B bytes each) from the fixture server, started in this process on 127.0.0.1, through the real fetch path (libcurl multi, events, projections); then 50 unchanged re-fetches, to measure how little they add. --server-latency-ms L has the server answer every request L ms late, as a remote API would.
            """)
    )

    @Argument(help: "ingest, rebuild, asof, fetch, browse, push, bodies, teamlog, watch or alerts.") var workload: BenchmarkWorkload
    @Option(help: "Events in the log (fetch: details).") var events = 100_000
    @Option(help: "fetch: requests in flight.") var concurrency = 8
    @Option(help: "fetch: the fixture server answers each request this many ms late, as a remote API would (0 to 10000).") var serverLatencyMs = 0
    @Flag(help: "asof: skip the second log 10× as long.") var noGrowth = false
    @Option(help: "Approximate bytes of each event's JSON body.") var payloadBytes = 256
    @Option(help: "Distinct objects the events are spread over.") var objects = 10_000
    @Option(
        help:
            "What fills the bodies: filler (one letter repeated: compresses to almost nothing) or text (each object's own random letters, the same in every version: its versions are deltas of each other)."
    ) var bodies: StoreBenchmark.BodyFill = .filler
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
        guard StoreBenchmark.isDurability(durability) else {
            throw ValidationError("--durability must be full, nometasync or nosync")
        }
        if workload == .teamlog, pgURL == nil { throw ValidationError("teamlog needs --pg-url postgres://… of a scratch database") }
        if workload == .bodies, store == nil { throw ValidationError("bodies reads the bodies of an existing store: give --store") }
    }

    func run() async throws {
        try await reportingErrors {
            var bench = StoreBenchmark()
            (bench.events, bench.concurrency, bench.serverLatencyMs, bench.noGrowth) = (events, concurrency, serverLatencyMs, noGrowth)
            (bench.payloadBytes, bench.objects, bench.bodies, bench.batch, bench.samples) = (payloadBytes, objects, bodies, batch, samples)
            (bench.durability, bench.store, bench.encrypt, bench.pgURL) = (durability, store, encrypt, pgURL)
            let steps = min(samples, 2_000)
            let result = try await bench.run(workload) { app in
                var figures = try await BrowseBenchmark.measure(app: app, steps: steps, size: Size(columns: 80, rows: 24))
                figures["screen"] = .string("80x24")
                return figures
            }
            if format == .table {
                emit(JSONValue.sortedDisplay(result))
            } else {
                emit(JSONValue.object(result).prettyString)
            }
        }
    }
}

extension BenchmarkWorkload: ExpressibleByArgument {}
extension StoreBenchmark.BodyFill: ExpressibleByArgument {}

extension JSONValue {
    /// `key  value` lines, sorted by key.
    static func sortedDisplay(_ o: [String: JSONValue]) -> String {
        let width = (o.keys.map(\.count).max() ?? 0) + 2
        return o.keys.sorted().map { $0.padding(toLength: width, withPad: " ", startingAt: 0) + o[$0]!.displayText }.joined(separator: "\n")
    }
}
