import EventStore
import FixtureServer
import Foundation
import Logging
import StrataData
import StrataAdapters
import StrataDomain

@_exported import StrataTestSupport

/// A store whose clock starts at 2026-01-01, one second per event, so dates are repeatable.
func makeSteppedStore() async throws -> EventStore {
    try await StrataTestSupport.makeStore(clock: SteppingClock())
}

let carsDefinition = SourceDefinition(
    name: "cars", url: "http://127.0.0.1:1/cars/offers", items: "results", title: "model",
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
    let store = try await makeSteppedStore()
    try await SourceCatalog(store: store).define(definition)
    let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quiet())
    var ends: [UInt64] = []
    for v in 1...3 {
        _ = try await fetcher.importSnapshots(
            definition, files: [("cars-v\(v).json", try fixture("cars/v\(v)/offers.json"))],
            recordedAt: Timestamp(iso8601: "2026-01-0\(v)T00:00:00Z"))
        ends.append(try await store.head().seq)
    }
    return (Repositories(store: store), ends)
}

func quiet() -> Logger { quietLogger() }
