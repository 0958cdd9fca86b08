import ArgumentParser
import Foundation
import Logging
import StrataApp
import StrataDomain
import StrataPresentation
import StrataServer

/// `strata serve`: the mirrored API as it was at any point, over HTTP, read-only, through the
/// same use cases as every command.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the mirrored API as it was at any point over HTTP (read-only), and the store's reads as JSON.",
        discussion: reflowed(
            """
            Every URL Strata fetched (list pages, details, images) is served under its own path and
            query, byte for byte, with its ETag (304 for If-None-Match). The point: a /@SEQ/ or
            /@DATE/ path prefix, else Accept-Datetime (RFC 7089), else a Strata-As-Of header, else
            --as-of, else the latest. Responses say where they came from (Memento-Datetime,
            Strata-Seq, Link to the first, previous, next and last recordings). /_strata/ has the
            reads as JSON, replay sessions and a live event stream (docs/cli.md).

            Examples:
              strata serve --as-of 2026-03-01T09:00:00Z
              curl -H 'Accept-Datetime: Sun, 01 Mar 2026 09:00:00 GMT' localhost:8080/cars/offers
              curl localhost:8080/@42/cars/offers/3
              strata serve --on-miss proxy --upstream https://api.example.com

            Recorded exchanges (strata proxy, HAR and WARC imports) are answered for any method by
            method, path, query and the request body's digest, with their recorded status and
            headers. With --on-miss proxy, a request never recorded is forwarded to --upstream,
            recorded (into --record-into) and answered: capture on miss.
            """)
    )
    @OptionGroup var location: StoreLocation
    @Option(help: "The address to listen on (loopback unless told otherwise).") var host = "127.0.0.1"
    @Option(help: "The port (0 picks a free one, printed on the first line).") var port = 8080
    @Option(help: "Serve recorded responses as of this seq or ISO 8601 date when a request names no point.") var asOf: PointArgument?
    @Option(name: .customLong("source"), help: ArgumentHelp("Serve only this source (repeatable).", valueName: "name")) var sources: [String] = []
    @Option(
        help: ArgumentHelp("What to do with a request never recorded: 404 (default) or proxy (forward to --upstream and record it).", valueName: "404|proxy"))
    var onMiss: OnMiss = .notFound
    @Option(help: ArgumentHelp("With --on-miss proxy: the API's base URL.", valueName: "url")) var upstream: String?
    @Option(help: ArgumentHelp("With --on-miss proxy: the recorded source misses go into (default: the upstream's host).", valueName: "name"))
    var recordInto: String?

    enum OnMiss: String, ExpressibleByArgument, CaseIterable {
        case notFound = "404"
        case proxy
    }

    func validate() throws {
        if onMiss == .proxy {
            guard let upstream else { throw ValidationError("--on-miss proxy needs --upstream URL, the API to forward misses to") }
            try ProxyCommand.validateUpstream(upstream)
        } else if upstream != nil || recordInto != nil {
            throw ValidationError("--upstream and --record-into go with --on-miss proxy")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard !host.isEmpty else { throw ValidationError("--host must name an address, e.g. 127.0.0.1") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            let u = app.useCases
            for s in sources { _ = try await useCase { try await u.sources.source(named: s) } }
            let point = asOf.flatMap { PointInTime(text: $0.text) }
            let seq = try await useCase { try await u.replay.resolve(point ?? .now) }
            if !StrataServer.isLoopback(host) {
                warn(
                    "Warning: listening on \(host): anyone who can reach it can read \(sources.isEmpty ? "every source" : sources.joined(separator: ", ")) and its whole recorded history (read-only). The default, 127.0.0.1, keeps it to this machine."
                )
            }
            var logger = location.logger()
            logger.logLevel = location.verbose ? .debug : .warning
            var configuration = Self.configuration(host: host, port: port, asOf: point, sources: sources, logger: logger, app: app)
            if onMiss == .proxy, let upstream {
                let name = recordInto ?? Self.sourceName(upstream)
                configuration.onMiss = try await useCase { try await u.recordTraffic.start(source: name, upstream: upstream, redacting: []) }
                if !sources.isEmpty && !sources.contains(name) { configuration.sources.append(name) }
            }
            let server = StrataServer(useCases: StrataServer.UseCases(u), configuration: configuration)
            let host = self.host.contains(":") ? "[\(self.host)]" : self.host
            let store = location.path
            let misses = configuration.onMiss.map { "; misses go to \($0.base) and are recorded in \($0.source)" } ?? ""
            try await server.run(stopOnSignals: true) { bound in
                let when = point.map { _ in "as of seq \(seq)" } ?? "the latest recordings"
                emit("serving http://\(host):\(bound) — \(store), \(when)\(misses); Ctrl-C stops")
            }
            await configuration.onMiss?.flush()
        }
    }
}

extension ServeCommand {
    /// A source name from an upstream URL: its host, and port when it has one (`api.example.com`,
    /// `127.0.0.1_8080`).
    static func sourceName(_ upstream: String) -> String {
        guard let u = URLComponents(string: upstream), let host = u.host else { return "misses" }
        let name = host + (u.port.map { "_\($0)" } ?? "")
        return String(name.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) ? Character($0) : "_" }.prefix(64))
    }

    /// The server's settings, with `/metrics` over the app's use cases (the sources served only).
    static func configuration(host: String, port: Int, asOf: PointInTime?, sources: [String], logger: Logger, app: StrataApp) -> StrataServer.Configuration {
        var c = StrataServer.Configuration(host: host, port: port, asOf: asOf, sources: sources, logger: logger)
        let metrics = StrataMetrics()
        let useCases = app.useCases
        c.metrics = { await metrics.exposition(useCases, sources: sources) }
        return c
    }
}

extension StrataServer.UseCases {
    /// The server's use cases from the app's.
    init(_ u: UseCases) {
        self.init(
            recordings: u.serve, query: u.query, loadDetail: u.loadDetail, history: u.history, diff: u.diff, replay: u.replay, sources: u.manageSources,
            catalog: u.sources, feed: u.feed, alerts: u.alerts, changes: u.changes, schema: u.schema, export: u.export,
            exportTraffic: u.exportTraffic)
    }
}
