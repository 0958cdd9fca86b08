import Foundation
import HTTPTypes
import Hummingbird
package import Logging
import NIOCore
import StrataWeb
import Synchronization
import UnixSignals
package import StrataDomain

/// `strata serve`: the mirrored API as it was at any point, over HTTP, read-only. Recorded
/// responses under their original paths (with `/@POINT/`, `Accept-Datetime`, `Strata-As-Of` or
/// the server's default point choosing when), replay sessions under `/s/ID/`, and the read side
/// as JSON under `/_strata/`. Every answer comes from the app's use cases; nothing is written.
package final class StrataServer: Sendable {
    /// What the server reads through: the same use cases as the CLI's commands.
    package struct UseCases: Sendable {
        package var recordings: ServeRecordings
        package var query: QueryItems
        package var loadDetail: LoadItemDetail
        package var history: GetItemHistory
        package var diff: DiffCollection
        package var replay: ReplayLog
        package var sources: ManageSources
        package var feed: ReadChangeFeed
        /// The alerts' feeds (none when nil).
        package var alerts: ManageAlerts?
        /// `/_strata/sources/NAME/changes` (none when nil).
        package var changes: ReadChanges?
        /// The sources with their last fetch (the web UI's front page).
        package var catalog: any SourceRepository
        /// A source's shape and drift (the web UI's schema page; none when nil).
        package var schema: ReadSchema?
        /// Events' bodies and recorded traffic as HAR or WARC (the web UI's exchanges pages;
        /// none when nil).
        package var export: ExportSource?
        package var exportTraffic: ExportTraffic?

        package init(
            recordings: ServeRecordings, query: QueryItems, loadDetail: LoadItemDetail, history: GetItemHistory, diff: DiffCollection,
            replay: ReplayLog, sources: ManageSources, catalog: any SourceRepository, feed: ReadChangeFeed, alerts: ManageAlerts? = nil,
            changes: ReadChanges? = nil, schema: ReadSchema? = nil, export: ExportSource? = nil, exportTraffic: ExportTraffic? = nil
        ) {
            self.schema = schema; self.export = export; self.exportTraffic = exportTraffic
            self.recordings = recordings; self.query = query; self.loadDetail = loadDetail; self.history = history; self.diff = diff
            self.replay = replay; self.sources = sources; self.catalog = catalog; self.feed = feed; self.alerts = alerts; self.changes = changes
        }
    }

    package struct Configuration: Sendable {
        package var host: String
        /// 0 picks a free port.
        package var port: Int
        /// The point recorded responses are served at when a request names none (nil: the head
        /// at each request).
        package var asOf: PointInTime?
        /// Only these sources (all when empty).
        package var sources: [String]
        /// How often the event stream looks for new events.
        package var pollInterval: Duration
        package var logger: Logger
        /// `GET /metrics`: the Prometheus text exposition (nil: no such route).
        package var metrics: (@Sendable () async -> String)?
        /// Serve the recordings and the read side; false serves `/metrics` alone (`strata watch
        /// --metrics-port`).
        package var readSide = true
        /// Capture on miss: a request never recorded is forwarded, recorded and answered through
        /// this (nil: answered 404).
        package var onMiss: TrafficRecorder?

        package init(
            host: String = "127.0.0.1", port: Int = 8080, asOf: PointInTime? = nil, sources: [String] = [],
            pollInterval: Duration = .milliseconds(200), logger: Logger = Logger(label: "strata.serve")
        ) {
            self.host = host; self.port = port; self.asOf = asOf; self.sources = sources; self.pollInterval = pollInterval; self.logger = logger
        }
    }

    let useCases: UseCases
    let configuration: Configuration
    let sessions = ReplaySessions()
    /// The web UI's slider stops per source, and the head they were read at.
    let observationCache = Mutex<[String: (head: UInt64, points: [WebPages.Point])]>([:])
    /// The recordings of the sources this server serves.
    let recordings: ServeRecordings

    package init(useCases: UseCases, configuration: Configuration) {
        self.useCases = useCases
        self.configuration = configuration
        recordings = useCases.recordings.restricted(to: configuration.sources)
    }

    /// Whether `host` is a loopback address (the default; anything else is reachable from
    /// elsewhere).
    package static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: JSONErrorMiddleware())
        router.add(middleware: HostCheck(server: self))
        if let metrics = configuration.metrics {
            router.get("/metrics") { _, _ in
                var h = HTTPFields()
                h[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: await metrics())))
            }
        }
        guard configuration.readSide else { return router }
        addWebRoutes(to: router)
        addReadRoutes(to: router)
        addSessionRoutes(to: router)
        addEventRoutes(to: router)
        router.get("**") { request, _ in try await self.recorded(request) }
        router.head("**") { request, _ in try await self.recorded(request) }
        // Recorded exchanges of any method (`strata proxy`, HAR, WARC).
        for method in [HTTPRequest.Method.post, .put, .patch, .delete, .options] {
            router.on("**", method: method) { request, _ in try await self.recorded(request) }
        }
        return router
    }

    /// Runs until the task is cancelled, or SIGTERM or SIGINT arrives when `stopOnSignals`
    /// (requests in flight finish first). `onRunning` gets the bound port (useful with port 0).
    package func run(stopOnSignals: Bool = false, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let shutdownSignals: [UnixSignal] = stopOnSignals ? [.sigterm, .sigint] : []
        let app = Application(
            router: router(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "strata"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: configuration.logger
        )
        try await app.runService(gracefulShutdownSignals: shutdownSignals)
    }

    /// Runs the server in a task of its own and returns once it listens, with the bound port and
    /// the task (cancel it to stop the server). A server that stops before it listens (its port
    /// is taken) throws here instead of leaving the caller waiting for a port.
    package func start() async throws -> (port: Int, task: Task<Void, any Error>) {
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let task = Task {
            defer { listening.finish() }
            try await run { port in listening.yield(port) }
        }
        for await port in ports { return (port, task) }
        try await task.value
        throw ServerStartError(host: configuration.host, port: configuration.port, reason: "the server stopped before it listened")
    }

    /// Whether the server shows `source`.
    func allows(_ source: String) -> Bool { configuration.sources.isEmpty || configuration.sources.contains(source) }
}

/// Why a server could not start listening.
package struct ServerStartError: Error, CustomStringConvertible {
    package var host: String
    package var port: Int
    package var reason: String
    package var description: String { "cannot listen on \(host):\(port): \(reason)" }
}
