import Foundation
import StrataData
import StrataAdapters
import StrataDomain
import StrataJSON
import Synchronization
import Testing

/// Due sources are fetched side by side, within the watcher's limits: at most `concurrency` in
/// flight, at most `perHost` against one host (in-memory repositories behind the protocols).
@Suite struct WatchConcurrencyTests {
    /// 12 sources: 8 on host a, 4 on host b, every one due.
    static let names = (0..<12).map { "s\($0)" }
    static func host(_ name: String) -> String { Int(name.dropFirst())! < 8 ? "a.example" : "b.example" }

    final class World: Sendable {
        let inFlight = Mutex<[String: Int]>([:])
        let peaks = Mutex<(total: Int, perHost: [String: Int])>((0, [:]))
        let fetched = Mutex<[String]>([])
    }

    struct Catalog: SourceCatalogRepository {
        func validate(_ spec: SourceSpec, keepingLiteralSecrets: Bool) throws {}
        func define(_ spec: SourceSpec, replace: Bool, keepingLiteralSecrets: Bool) async throws -> UInt64 { 1 }
        func definitions() async throws -> [SourceSpec] {
            WatchConcurrencyTests.names.map { n in
                var d = SourceSpec(name: n, url: "http://\(WatchConcurrencyTests.host(n))/\(n)")
                d.schedule = SourceSchedule(every: 3_600)
                return d
            }
        }
        func definition(_ name: String) async throws -> SourceSpec? { try await definitions().first { $0.name == name } }
        func storedForm(_ spec: SourceSpec) -> JSONValue { .null }
        func remove(_ name: String) async throws {}
    }

    struct Sources: SourceRepository {
        func sources() async throws -> [Source] { [] }
        func source(named name: String) async throws -> Source { Source(name: name, url: "http://\(WatchConcurrencyTests.host(name))/\(name)") }
    }

    struct Remote: RemoteRepository {
        let world: World
        func refresh(source: String, request: RefreshRequest) async throws -> RefreshResult {
            let host = WatchConcurrencyTests.host(source)
            world.inFlight.withLock { f in
                f[host, default: 0] += 1
                let total = f.values.reduce(0, +), here = f[host]!
                world.peaks.withLock { p in
                    p.total = max(p.total, total)
                    p.perHost[host] = max(p.perHost[host] ?? 0, here)
                }
            }
            try await Task.sleep(for: .milliseconds(30))
            world.inFlight.withLock { $0[host, default: 1] -= 1 }
            world.fetched.withLock { $0.append(source) }
            return RefreshResult(source: source, run: "r")
        }
        func loadDetail(source: String, id: String) async throws {}
    }

    @Test(arguments: [(5, 3), (8, 4), (1, 1)]) func fetchesSideBySideWithinTheLimits(_ concurrency: Int, _ perHost: Int) async throws {
        let world = World()
        let sources = Sources()
        var watch = WatchSources(
            sources: sources, catalog: ManageSources(catalog: Catalog()), refresh: RefreshSource(remote: Remote(world: world), sources: sources))
        watch.concurrency = concurrency
        watch.perHost = perHost
        let reports = Mutex<[WatchReport]>([])
        try await watch.watch([], once: true) { r in reports.withLock { $0.append(r) } }
        #expect(Set(world.fetched.withLock { $0 }) == Set(Self.names), "every due source fetched once")
        #expect(reports.withLock { $0.count } == 12)
        let peaks = world.peaks.withLock { $0 }
        #expect(peaks.total <= concurrency && peaks.perHost.values.allSatisfy { $0 <= perHost })
        #expect(peaks.total == min(concurrency, 2 * perHost), "as many side by side as the limits allow: \(peaks)")
    }
}
