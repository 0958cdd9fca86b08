import EventStore
import FixtureServer
import Foundation
import Logging
import StrataData
import StrataDomain

/// The repository's fixtures directory, found from this source file.
let fixturesRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("fixtures/cars").path) { return url.appendingPathComponent("fixtures").path }
    }
    return "fixtures"
}()

func fixture(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixturesRoot + "/" + path)))
}

/// A real store in a temp directory with Strata's projections.
func makeStore() async throws -> EventStore {
    var o = StoreOptions()
    o.durability = .noSync
    o.mapSize = 256 << 20
    o.logger.logLevel = .critical
    o.clock = SteppingClock()  // from 2026-01-01, one second per event: dates are repeatable
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-domain-\(UUID().uuidString)").path
    return try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()] + DataProjections.all, options: o)
}

let carsDefinition = SourceDefinition(name: "cars", url: "http://127.0.0.1:1/cars/offers", items: "results", title: "model",
                                      subtitle: ["make", "price"], image: "image", index: ["make", "model"])

/// The repositories over a real store, wired as the app wires them.
struct Repositories {
    let store: EventStore
    let tables: ItemTables
    let log: LMDBEventLogRepository
    let sources: LMDBSourceRepository
    let items: LMDBItemRepository

    init(store: EventStore) {
        self.store = store
        tables = ItemTables(store: store)
        log = LMDBEventLogRepository(store: store)
        sources = LMDBSourceRepository(tables: tables)
        items = LMDBItemRepository(tables: tables, sources: sources, log: log)
    }
}

/// A store holding the cars source with its three fixture versions imported, one per day.
/// Returns the seq of each version's `FetchCompleted`.
func carsStore(definition: SourceDefinition = carsDefinition) async throws -> (Repositories, [UInt64]) {
    let store = try await makeStore()
    try await SourceCatalog(store: store).define(definition)
    let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quiet())
    var ends: [UInt64] = []
    for v in 1...3 {
        _ = try await fetcher.importSnapshots(definition, files: [("cars-v\(v).json", try fixture("cars/v\(v)/offers.json"))],
                                              recordedAt: Timestamp(iso8601: "2026-01-0\(v)T00:00:00Z"))
        ends.append(try await store.head().seq)
    }
    return (Repositories(store: store), ends)
}

func quiet() -> Logger {
    var l = Logger(label: "test")
    l.logLevel = .critical
    return l
}

/// Starts a fixture server on an ephemeral loopback port for the duration of `body`.
func withFixtureServer<T>(version: Int = 1, _ body: (FixtureServer) async throws -> T) async throws -> T {
    let server = FixtureServer(root: fixturesRoot, version: version)
    try await server.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
