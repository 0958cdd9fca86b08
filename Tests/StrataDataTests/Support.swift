@_exported import StrataTestSupport
import FixtureServer
import Foundation

import EventStore
import LMDB
import Logging
import StrataData

/// Records requested sleeps instead of sleeping.
final class RecordingSleeper: Sleeper, @unchecked Sendable {
    private let lock = NSLock()
    private var _sleeps: [Double] = []
    var sleeps: [Double] { lock.lock(); defer { lock.unlock() }; return _sleeps }
    func sleep(seconds: Double) async throws { lock.withLock { _sleeps.append(seconds) } }
}

func fetchOptions(retries: Int = 0) -> FetchOptions {
    var o = FetchOptions()
    o.retries = retries
    // Long enough for a healthy answer on two cores shared with the rest of the suite; the tests
    // of timeouts set their own.
    o.timeout = 30
    o.environment = [:]
    return o
}

extension FixtureServer {
    var cars: SourceDefinition {
        SourceDefinition(
            name: "cars", url: baseURL + "/cars/offers", items: "results", title: "make", subtitle: ["model"],
            image: "image", pageParam: "page", pageSize: 10, index: ["make", "model"])
    }
    var catalog: SourceDefinition {
        SourceDefinition(name: "catalog", url: baseURL + "/catalog/entries?count=15", title: "text", image: "image")
    }
    var notes: SourceDefinition { SourceDefinition(name: "notes", url: baseURL + "/notes/notes", id: ["@key"], title: "content") }
    var pokedex: SourceDefinition {
        SourceDefinition(
            name: "pokedex", url: baseURL + "/pokedex/pokemon", items: "results", id: ["name"],
            image: "sprites.front_default", detailURLField: "url")
    }
}

func itemKeys(_ store: EventStore, _ source: String, includeRemoved: Bool = false) async throws -> [String] {
    try await store.documents(projection: "items") { try $0.states(collection: source, includeRemoved: includeRemoved) }.map(\.key)
}

func itemStates(_ store: EventStore) async throws -> [DocumentState] {
    try await store.documents(projection: "items") { try $0.states(includeRemoved: true) }
}

/// Every row of the schema projection's `table`, in key order, copied out.
func schemaRows(_ store: EventStore, _ table: String) async throws -> [(key: [UInt8], value: [UInt8])] {
    let db = try store.tables(of: "schema")[table]
    return try await store.read { txn in
        var out: [(key: [UInt8], value: [UInt8])] = []
        let c = try txn.cursor(db)
        var e = try c.first()
        while let entry = e {
            out.append(([UInt8](entry.key), [UInt8](entry.value)))
            e = try c.next()
        }
        return out
    }
}

/// Defines `source` and imports versions 1…`versions` of its file (`body(v)`), `batch` to an
/// import, each import a minute after the one before.
func importVersions(_ store: EventStore, _ source: SourceDefinition, versions: Int, batch: Int, _ body: (Int) -> [UInt8]) async throws {
    try await SourceCatalog(store: store).define(source)
    let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quietLogger())
    let files = (1...versions).map { ("v\($0).json", body($0)) }
    for (i, start) in stride(from: 0, to: files.count, by: batch).enumerated() {
        let chunk = Array(files[start..<min(start + batch, files.count)])
        _ = try await fetcher.importSnapshots(source, files: chunk, recordedAt: Timestamp(microseconds: Int64(i + 1) * 60_000_000))
    }
}
