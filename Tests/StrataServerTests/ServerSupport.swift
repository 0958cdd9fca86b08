import EventStore
import FixtureServer
import Foundation
import Logging
import StrataApp
import StrataData
import StrataDomain
import StrataServer
import StrataTestSupport

/// A store that fetched the cars fixture at its versions 1, 2 and 3 (list, details, images), with
/// a stepping clock (events one second apart from 2026-01-01), and `strata serve` over it in this
/// process on an ephemeral loopback port.
struct ServedStore {
    let fixture: FixtureServer
    let store: EventStore
    let app: StrataApp
    /// The head after each fetch pass.
    let passes: [UInt64]

    static func make(_ fixture: FixtureServer, retries: Int = 3, clockStep: Int64 = 1_000_000) async throws -> ServedStore {
        let store = try await makeStore(clock: SteppingClock(stepMicroseconds: clockStep))
        var configuration = AppConfiguration(userAgent: "Strata/test", logger: quietLogger())
        configuration.fetch.retries = retries
        configuration.fetch.baseBackoff = 0.01
        let app = StrataApp(store: store, configuration: configuration)
        try await SourceCatalog(store: store).define(
            SourceDefinition(
                name: "cars", url: fixture.baseURL + "/cars/offers", items: "results", title: "model", image: "image",
                detailURL: fixture.baseURL + "/cars/offers/{id}", pageParam: "page", pageSize: 10))
        var passes: [UInt64] = []
        for v in 1...3 {
            fixture.version = v
            _ = try await app.useCases.refresh("cars", details: true, images: true)
            passes.append(try await app.useCases.replay.resolve(.now))
        }
        return ServedStore(fixture: fixture, store: store, app: app, passes: passes)
    }

    var useCases: StrataServer.UseCases {
        let u = app.useCases
        return .init(
            recordings: u.serve, query: u.query, loadDetail: u.loadDetail, history: u.history, diff: u.diff, replay: u.replay,
            sources: u.manageSources, catalog: u.sources, feed: u.feed, alerts: u.alerts, changes: u.changes)
    }

    /// Runs `body` with a server over the store, then stops it.
    func serving<T>(
        asOf: PointInTime? = nil, sources: [String] = [], metrics: StrataMetrics? = nil, readSide: Bool = true, _ body: (_ base: String) async throws -> T
    ) async throws -> T {
        var configuration = StrataServer.Configuration(port: 0, asOf: asOf, sources: sources, pollInterval: .milliseconds(20), logger: quietLogger())
        if let metrics {
            let useCases = app.useCases
            configuration.metrics = { await metrics.exposition(useCases, sources: sources) }
        }
        configuration.readSide = readSide
        let server = StrataServer(useCases: useCases, configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            try await server.run { port in
                continuation.yield(port); continuation.finish()
            }
        }
        var port = 0
        for await p in ports { port = p }
        defer { task.cancel() }
        return try await body("http://127.0.0.1:\(port)")
    }

    func get(_ base: String, _ path: String, _ headers: [(String, String)] = [], method: String = "GET", body: String = "") async throws -> RawResponse {
        try await RawHTTP.request(base, path, method: method, headers: headers, body: body)
    }
}
