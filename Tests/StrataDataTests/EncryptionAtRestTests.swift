import EventStore
import FixtureServer
import Foundation
import StrataData
import TestScratch
import Testing

/// Issue 29's test of encryption at rest: the fixture datasets fetched through all their versions
/// (lists, details, images) into an encrypted store leave no 16 bytes of any fetched body, stored
/// document, URL or id in `data.mdb`. The same fetches into a store without a key are scanned
/// the same way and do show them, so the check can fail.
@Suite struct EncryptionAtRestTests {
    /// Each dataset with the versions it has (`fixtures/D/vN`; none: served the same at every version).
    func sources(_ server: FixtureServer) -> [(SourceDefinition, dataset: String)] {
        [
            (server.cars, "cars"), (server.catalog, "catalog"), (server.notes, "notes"), (server.pokedex, "pokedex"),
            (SourceDefinition(name: "species", url: server.baseURL + "/species/all", items: "results", id: ["name"], detailURLField: "url"), "species")
        ]
    }

    func has(_ dataset: String, version v: Int) -> Bool {
        let fm = FileManager.default
        return fm.fileExists(atPath: "\(fixturesRoot)/\(dataset)/v\(v)") || (v == 1 && !fm.fileExists(atPath: "\(fixturesRoot)/\(dataset)/v1"))
    }

    /// Fetches every source at every fixture version; returns the store's file and the needles.
    func fetchEverything(key: StoreKey?) async throws -> (file: [UInt8], scan: PlaintextScan, events: Int) {
        let dir = TestScratch.path("store")
        let store = try await makeStore(key: key, at: dir)
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
        var options = fetchOptions()
        options.details = true
        options.images = true
        try await withFixtureServer { server in
            for v in 1...9 {
                server.version = v
                for (source, dataset) in sources(server) where has(dataset, version: v) { _ = try await fetcher.fetch(source, options: options) }
            }
        }
        var scan = PlaintextScan()
        let events = try await store.events(EventQuery())
        for e in events {
            scan.add(Array(e.id.utf8), name: "id of event \(e.seq)")
            for m in e.metadata where m.key == "url" || m.key == "etag" { scan.add(Array(m.value.utf8), name: "\(m.key) of event \(e.seq)") }
            if e.payload != nil, let body = try await store.payload(of: e) { scan.add(body, name: "body of event \(e.seq)") }
        }
        for projection in ["items", "details", "images", "sources"] {
            for state in try await store.documents(projection: projection, { try $0.states(includeRemoved: true) }) {
                scan.add(Array(state.key.utf8), name: "\(projection) key \(state.key)")
                scan.add(state.document.canonicalBytes, name: "\(projection) document \(state.key)")
            }
        }
        try store.sync()
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb")))
        return (file, scan, events.count)
    }

    @Test func noPlaintextOfAnyFetchedBodyDocumentURLOrIDIsStored() async throws {
        let sealed = try await fetchEverything(key: StoreKey.generate())
        #expect(sealed.events > 100 && sealed.scan.windowCount > 10_000)
        let leaks = sealed.scan.findings(in: sealed.file)
        #expect(leaks.isEmpty, "plaintext in the encrypted store: \(leaks.prefix(5))")

        let plain = try await fetchEverything(key: nil)
        let shown = plain.scan.findings(in: plain.file)
        #expect(
            shown.contains { $0.hasPrefix("url of") } && shown.contains { $0.hasPrefix("body of") } && shown.contains { $0.hasPrefix("items document") },
            "the scan should find the plaintext of a store without a key: \(shown.prefix(5))")
    }
}
