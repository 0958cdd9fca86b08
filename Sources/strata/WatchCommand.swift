import ArgumentParser
import Foundation
import Logging
import StrataApp
import StrataDomain
import StrataPresentation
import StrataServer

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Fetch each scheduled source when it is due, until stopped.",
        discussion: reflowed(
            """
            A source is scheduled with `strata source add|change NAME --every DURATION`; the watcher
            fetches it with its own settings (--watch-details, --watch-images), sources due together
            side by side (--concurrency, --per-host), through the same path as `strata fetch` (the
            team log's lease first). A source never
            fetched is due at once; after a fetch it is due its interval later, moved by its jitter;
            after failures in a row the wait doubles each time, up to an hour (or the interval when
            longer). Each fetch is one log line on stderr. SIGTERM or Ctrl-C stops it after the fetches
            in flight (exit 0); SIGHUP reads the sources' definitions again. A stopped or killed
            watcher loses nothing: the next start plans from the log.

            Alerts (`strata alert add`) are matched against each fetch's changes, and their
            notifications are delivered beside the fetches, in order per alert, retried after 1 s,
            2 s, 4 s… (at most 5 minutes apart); with --once, one round of delivery after the fetches.

            Examples:
              strata source change cars --every 15m
              strata watch                 # every scheduled source, until stopped
              strata watch cars --once     # what is due now, then exit (cron, systemd timers)
            """)
    )

    @OptionGroup var location: StoreLocation
    @Argument(help: "Sources to watch; every scheduled one when omitted.") var names: [String] = []
    @Flag(help: "Fetch what is due now, then exit.") var once = false
    @Option(help: "Fetches in flight at once.") var concurrency = 8
    @Option(help: "Fetches in flight against one host.") var perHost = 4
    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://127.0.0.1:PORT/metrics while watching.", valueName: "port")) var metricsPort: Int?

    func validate() throws {
        if let metricsPort, !(1...65_535).contains(metricsPort) { throw ValidationError("--metrics-port must be 1 to 65535") }
        guard (1...256).contains(concurrency), (1...256).contains(perHost) else { throw ValidationError("--concurrency and --per-host must be 1 to 256") }
    }

    func run() async throws {
        try await reportingErrors {
            let logger = {
                var l = Logger(label: "strata.watch") { StreamLogHandler.standardError(label: $0) }
                l.logLevel = location.verbose ? .debug : .info
                return l
            }()
            let app = try await location.app { config in
                config.requestsSoon = true
                config.logger.logLevel = location.verbose ? .debug : .warning
            }
            let control = WatchControl()
            let stop = StopSignals { control.stop() }
            let reload = ReloadSignal { control.reload() }
            defer {
                stop.cancel()
                reload.cancel()
            }
            let metrics = StrataMetrics()
            let metricsServer = try await serveMetrics(metrics, app: app, logger: logger)
            defer { metricsServer?.cancel() }
            var observer = WatchService.Observer()
            observer.planned = { watching in
                logger.info("watching", metadata: ["sources": .string(watching.map(\.name).joined(separator: ",")), "once": .stringConvertible(once)])
            }
            observer.fetched = { r in
                metrics.record(r)
                for line in WatchLogRenderer.lines(r) { logger.log(line) }
            }
            observer.delivered = { a in
                metrics.notified(alert: a.notification.alert, outcome: a.outcome, willRetry: a.willRetry)
                logger.log(WatchLogRenderer.line(a))
            }
            observer.warning = { what, error in logger.warning("\(what)", metadata: ["error": "\(error)"]) }
            try await app.watchService.run(names, once: once, concurrency: concurrency, perHost: perHost, control: control, observer: observer)
            logger.info("stopped")
        }
    }
}

extension WatchCommand {
    /// With `--metrics-port`, a server of `/metrics` alone on loopback, running until cancelled;
    /// the watcher waits until it listens, and stops with the reason when it cannot.
    func serveMetrics(_ metrics: StrataMetrics, app: StrataApp, logger: Logger) async throws -> Task<Void, any Error>? {
        guard let metricsPort else { return nil }
        var c = StrataServer.Configuration(host: "127.0.0.1", port: metricsPort, logger: logger)
        let useCases = app.useCases
        c.metrics = { await metrics.exposition(useCases) }
        c.readSide = false
        let server = StrataServer(useCases: StrataServer.UseCases(app.useCases), configuration: c)
        let started: (port: Int, task: Task<Void, any Error>)
        do { started = try await server.start() } catch {
            throw CLIError("cannot serve metrics on 127.0.0.1:\(metricsPort) (\(error)); choose another --metrics-port")
        }
        let (port, task) = started
        logger.info("metrics", metadata: ["url": .string("http://127.0.0.1:\(port)/metrics")])
        return task
    }
}

extension StrataMetrics {
    func record(_ r: WatchReport) {
        switch r.outcome {
        case .fetched(let f): fetched(source: r.source, outcome: "ok", seconds: f.seconds, events: f.pages + f.details + f.images)
        case .failed: fetched(source: r.source, outcome: "failed", seconds: 0, events: 0)
        case .leasedElsewhere: fetched(source: r.source, outcome: "leased-elsewhere", seconds: 0, events: 0)
        }
    }
}

extension Logger {
    /// A watcher's line (``WatchLogRenderer``) at its level, its fields as metadata.
    func log(_ line: WatchLogRenderer.Line) {
        let metadata = line.fields.mapValues { Logger.MetadataValue.string($0) }
        switch line.level {
        case .info: info("\(line.message)", metadata: metadata)
        case .warning: warning("\(line.message)", metadata: metadata)
        }
    }
}

/// Runs `handler` on SIGHUP (instead of the default exit) until cancelled.
final class ReloadSignal {
    private let source: any DispatchSourceSignal

    init(_ handler: @escaping @Sendable () -> Void) {
        signal(SIGHUP, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
    }

    func cancel() {
        source.cancel()
        signal(SIGHUP, SIG_DFL)
    }
}
