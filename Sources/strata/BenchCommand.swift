import ArgumentParser
import Foundation
import StrataApp
import StrataJSON

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
              strata bench bodies --store ~/.local/share/strata
              strata bench ui --store ~/.local/share/strata --requests 200

            ingest: synthetic DocumentRecorded events (bodies of about B bytes over K objects, every event a change) appended in batches, each batch one transaction with every projection.

            rebuild: every projection folded again from a log of N such events.

            asof: random objects at random seqs on a log of N events, warm (every page of the documents projection read once first); also on a log 10× as long (same objects), to show how latency grows with history (--no-growth skips it).

            bodies: every stored body of an existing store (--store), in random order, timed one read at a time (a delta decodes its chain).

            ui: the web UI's pages of an existing store (--store), asked of `strata serve` started in this process on 127.0.0.1: the sources page, and for the first five sources their items page, changes page and first item's page (--page adds more), each --requests times one after another; p50 and p99 of the whole exchange, and the page's size.

            The fetch, browse, push, team-log and watch workloads need the fixture API server or a scratch database: they are the lab's (`swift run strata-lab bench --help`).
            """)
    )

    /// The store workloads, and the web UI's pages.
    enum Workload: String, CaseIterable, ExpressibleByArgument { case ingest, rebuild, asof, bodies, ui }

    @Argument(help: "ingest, rebuild, asof, bodies or ui.") var workload: Workload
    @Option(help: "Events in the log.") var events = 100_000
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
    @Option(help: "ui: requests of each page.") var requests = 200
    @Option(name: .customLong("page"), help: ArgumentHelp("ui: one more page to ask (a path under /_strata/ui/); repeatable.", valueName: "path"))
    var pages: [String] = []
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        guard events > 0, objects > 0, batch > 0, samples > 0, payloadBytes >= 32 else {
            throw ValidationError("--events, --objects, --batch and --samples must be positive; --payload-bytes at least 32")
        }
        guard StoreBenchmark.isDurability(durability) else {
            throw ValidationError("--durability must be full, nometasync or nosync")
        }
        if workload == .bodies || workload == .ui, store == nil {
            throw ValidationError("\(workload.rawValue) reads an existing store: give --store")
        }
        guard (1...100_000).contains(requests) else { throw ValidationError("--requests must be 1 to 100000") }
        if let bad = pages.first(where: { !$0.hasPrefix("/_strata/ui/") }) { throw ValidationError("--page \(bad): give a path under /_strata/ui/") }
    }

    func run() async throws {
        try await reportingErrors {
            var bench = StoreBenchmark()
            (bench.events, bench.noGrowth) = (events, noGrowth)
            (bench.payloadBytes, bench.objects, bench.bodies, bench.batch, bench.samples) = (payloadBytes, objects, bodies, batch, samples)
            (bench.durability, bench.store, bench.encrypt) = (durability, store, encrypt)
            let result: [String: JSONValue]
            if let store, workload == .ui {
                let location = try StoreLocation.parse(["--store", store])
                result = try await UIBenchmark(location: location, requests: requests, extraPages: pages).run()
            } else if let storeWorkload = BenchmarkWorkload(rawValue: workload.rawValue) {
                result = try await bench.run(storeWorkload)
            } else {
                throw CLIError("\(workload.rawValue) needs --store")
            }
            if format == .table {
                emit(JSONValue.sortedDisplay(result))
            } else {
                emit(JSONValue.object(result).prettyString)
            }
        }
    }
}

extension StoreBenchmark.BodyFill: ExpressibleByArgument {}

extension JSONValue {
    /// `key  value` lines, sorted by key.
    static func sortedDisplay(_ o: [String: JSONValue]) -> String {
        let width = (o.keys.map(\.count).max() ?? 0) + 2
        return o.keys.sorted().map { $0.padding(toLength: width, withPad: " ", startingAt: 0) + o[$0]!.displayText }.joined(separator: "\n")
    }
}
