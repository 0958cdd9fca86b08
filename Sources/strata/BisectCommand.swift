import ArgumentParser
import ChildProcess
import Foundation
import Logging
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation
import StrataServer

/// `strata bisect`: the first point of the log where a client's check fails.
struct BisectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bisect",
        abstract: "Find the first point where a command against the served API starts failing (git bisect run over the log).",
        discussion: reflowed(
            """
            Serves the store as of a point on a free loopback port and runs COMMAND with STRATA_URL
            set to that server, like `git bisect run`: exit 0 is good, 125 skips the point, 1–127
            (but 125) is bad, anything else stops the search. --good and --bad are checked first;
            a good point that is already bad, or a bad point that is good, is an error (exit 1).
            The candidates are the points where the recordings changed (fetch runs that brought a
            new answer, recorded exchanges), searched in log2 steps. The command's output goes to
            stderr.

            It prints the first bad point, the last good one, what changed between them (the
            items, and the recorded answers) and the `strata serve` command that reproduces it.

            Examples:
              strata bisect --good 2026-11-01 --bad now --source cars -- ./client-check.sh
              strata bisect --good 12 --bad 80 --format json -- sh -c 'curl -sf "$STRATA_URL/cars/offers" | jq -e ".items[0].price"'
            """)
    )
    @OptionGroup var location: StoreLocation
    @Option(help: "A point where the command passes: a seq or an ISO 8601 date.") var good: PointArgument
    @Option(help: "A point where it fails: a seq, an ISO 8601 date, or now.") var bad: BadPoint
    @Option(name: .customLong("source"), help: ArgumentHelp("Serve and search only this source (repeatable).", valueName: "name"))
    var sources: [String] = []
    @Option(help: "table or json.") var format: OutputFormat = .table
    @Option(help: "Seconds one run of the command may take before it counts as stopped.") var timeout: Double = 300
    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.") var command: [String] = []

    struct BadPoint: ExpressibleByArgument {
        var point: PointInTime
        init?(argument: String) {
            if argument == "now" || argument == "head" {
                point = .now
            } else if let p = PointInTime(text: argument) {
                point = p
            } else {
                return nil
            }
        }
        static var defaultValueDescription: String { "SEQ|DATE|now" }
    }

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the command to run after --, e.g. strata bisect --good 3 --bad now -- ./check.sh") }
        guard format == .table || format == .json else { throw ValidationError("--format must be table or json for bisect") }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            var logger = location.logger()
            // Each point's server is stopped under its connections' feet: nothing to report.
            logger.logLevel = location.verbose ? .debug : .critical
            let probe = ServedPointProbe(app: app, sources: sources, command: command, timeout: timeout, logger: logger)
            let table = format == .table
            let result: BisectResult
            do {
                result = try await app.useCases.bisect(
                    good: PointInTime(text: good.text)!, bad: bad.point, sources: sources, probe: probe
                ) { seq, verdict in
                    if table { warn("bisect: seq \(seq) is \(BisectRenderer.word(verdict))") }
                }
            } catch let e as BisectHistory.Failure {
                throw CLIError(e.description, exit: .failure)
            } catch {
                throw PresentableError(error).cli
            }
            let reproduce = reproduceCommand(result.firstBad.seq)
            if table {
                emit(BisectRenderer(wording: .cli).render(result, reproduce: reproduce))
            } else {
                emit(JSONValue(bisect: result, reproduce: reproduce).prettyString)
            }
        }
    }

    private func reproduceCommand(_ seq: UInt64) -> String {
        var parts = ["strata serve --as-of \(seq)"]
        for s in sources { parts.append("--source \(s)") }
        if let store = location.store { parts.append("--store \(store)") }
        return parts.joined(separator: " ")
    }
}

/// Runs the user's command against `strata serve` as of a seq, on a free loopback port.
struct ServedPointProbe: PointProbe {
    let app: StrataApp
    let sources: [String]
    let command: [String]
    let timeout: Double
    let logger: Logger

    func check(at seq: UInt64) async throws -> ProbeVerdict {
        var configuration = StrataServer.Configuration(host: "127.0.0.1", port: 0, asOf: .seq(seq), sources: sources, logger: logger)
        configuration.pollInterval = .milliseconds(200)
        let server = StrataServer(useCases: StrataServer.UseCases(app.useCases), configuration: configuration)
        let serving: (port: Int, task: Task<Void, any Error>)
        do { serving = try await server.start() } catch { throw CLIError("the server for seq \(seq) did not start: \(error)") }
        defer { serving.task.cancel() }
        return try await run(url: "http://127.0.0.1:\(serving.port)")
    }

    /// Runs the command with STRATA_URL; its output goes to stderr. A command that hangs is
    /// stopped at the timeout: it then counts as killed (a signal aborts).
    private func run(url: String) async throws -> ProbeVerdict {
        let exit: ChildProcessRunner.Exit
        do {
            exit = try await ChildProcessRunner().interactive(
                .command(command[0]), arguments: Array(command.dropFirst()), environment: ["STRATA_URL": url], output: .standardError,
                timeout: .milliseconds(Int(timeout * 1000)))
        } catch {
            throw CLIError("cannot run \(command[0]): \(error)")
        }
        return ProbeVerdict(exitStatus: exit.status)
    }
}
