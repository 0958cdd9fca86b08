import FixtureServer
import Foundation

/// The repository's fixtures directory, found from this source file.
let fixturesRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        let candidate = url.appendingPathComponent("fixtures/cars")
        if FileManager.default.fileExists(atPath: candidate.path) { return url.appendingPathComponent("fixtures").path }
    }
    return "fixtures"
}()

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

import EventStore
import Logging
import StrataData

func makeStore() async throws -> EventStore {
    var o = StoreOptions()
    o.durability = .noSync
    o.mapSize = 256 << 20
    o.logger.logLevel = .critical
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-data-\(UUID().uuidString)").path
    return try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()] + DataProjections.all, options: o)
}

/// Records requested sleeps instead of sleeping.
final class RecordingSleeper: Sleeper, @unchecked Sendable {
    private let lock = NSLock()
    private var _sleeps: [Double] = []
    var sleeps: [Double] { lock.lock(); defer { lock.unlock() }; return _sleeps }
    func sleep(seconds: Double) async throws { lock.withLock { _sleeps.append(seconds) } }
}

func quietLogger() -> Logger {
    var l = Logger(label: "test")
    l.logLevel = .critical
    return l
}

func fetchOptions(retries: Int = 0) -> FetchOptions {
    var o = FetchOptions()
    o.retries = retries
    o.timeout = 5
    o.environment = [:]
    return o
}

extension FixtureServer {
    var cars: SourceDefinition {
        SourceDefinition(name: "cars", url: baseURL + "/cars/offers", items: "results", title: "make", subtitle: ["model"],
                         image: "image", pageParam: "page", pageSize: 10, index: ["make", "model"])
    }
    var catalog: SourceDefinition {
        SourceDefinition(name: "catalog", url: baseURL + "/catalog/entries?count=15", title: "text", image: "image")
    }
    var notes: SourceDefinition { SourceDefinition(name: "notes", url: baseURL + "/notes/notes", id: ["@key"], title: "content") }
    var pokedex: SourceDefinition {
        SourceDefinition(name: "pokedex", url: baseURL + "/pokedex/pokemon", items: "results", id: ["name"],
                         image: "sprites.front_default", detailURLField: "url")
    }
}

func itemKeys(_ store: EventStore, _ source: String, includeRemoved: Bool = false) async throws -> [String] {
    try await store.documents(projection: "items") { try $0.states(collection: source, includeRemoved: includeRemoved) }.map(\.key)
}

func itemStates(_ store: EventStore) async throws -> [DocumentState] {
    try await store.documents(projection: "items") { try $0.states(includeRemoved: true) }
}
