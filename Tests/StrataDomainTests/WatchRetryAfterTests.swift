import Foundation
import StrataData
import StrataAdapters
import StrataDomain
import StrataJSON
import Synchronization
import Testing

/// The watcher honours an API's Retry-After over its own shorter back-off, with in-memory
/// repositories behind the protocols and a virtual clock.
@Suite struct WatchRetryAfterTests {
    final class World: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_780_000_000))
        let runs = Mutex<[FetchRun]>([])
        /// What each refresh does, in turn: nil succeeds, a number fails with that Retry-After.
        let answers = Mutex<[Double?]>([])
    }

    struct Clock: WatchClock {
        let world: World
        func now() -> Date { world.now.withLock { $0 } }
        func sleep(seconds: Double) async throws { world.now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    struct Catalog: SourceCatalogRepository {
        func validate(_ spec: SourceSpec, keepingLiteralSecrets: Bool) throws {}
        func define(_ spec: SourceSpec, replace: Bool, keepingLiteralSecrets: Bool) async throws -> UInt64 { 1 }
        func definitions() async throws -> [SourceSpec] {
            var d = SourceSpec(name: "api", url: "http://127.0.0.1:1/items")
            d.schedule = SourceSchedule(every: 60)
            return [d]
        }
        func definition(_ name: String) async throws -> SourceSpec? { try await definitions().first { $0.name == name } }
        func storedForm(_ spec: SourceSpec) -> JSONValue { .null }
        func remove(_ name: String) async throws {}
    }

    struct Sources: SourceRepository {
        let world: World
        func sources() async throws -> [Source] { [try await source(named: "api")] }
        func source(named name: String) async throws -> Source {
            var s = Source(name: "api", url: "http://127.0.0.1:1/items")
            s.lastRun = world.runs.withLock { $0.last }
            return s
        }
    }

    struct Remote: RemoteRepository {
        let world: World
        func refresh(source: String, request: RefreshRequest) async throws -> RefreshResult {
            let answer = world.answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            let at = world.now.withLock { $0 }
            let seq = UInt64(world.runs.withLock { $0.count } + 1)
            if let retryAfter = answer {
                world.runs.withLock { $0.append(FetchRun(id: "r\(seq)", seq: seq, at: at, outcome: .failed("HTTP 429"))) }
                throw RepositoryError(.network, "HTTP 429 for the list", retryAfter: retryAfter)
            }
            world.runs.withLock { $0.append(FetchRun(id: "r\(seq)", seq: seq, at: at, outcome: .completed(complete: true))) }
            return RefreshResult(source: source, run: "r\(seq)")
        }
        func loadDetail(source: String, id: String) async throws {}
    }

    @Test func retryAfterOutlastsTheBackOffAndASuccessResumesTheSchedule() async throws {
        let world = World()
        world.answers.withLock { $0 = [nil, 600, 30, nil, nil] }
        let sources = Sources(world: world)
        let watch = WatchSources(
            sources: sources, catalog: ManageSources(catalog: Catalog()), refresh: RefreshSource(remote: Remote(world: world), sources: sources),
            clock: Clock(world: world))
        let t0 = world.now.withLock { $0 }
        let starts = Mutex<[Double]>([])
        let control = WatchControl()
        try await watch.watch([], once: false, control: control) { r in
            let n = starts.withLock { s in
                s.append(r.started.timeIntervalSince(t0))
                return s.count
            }
            if n == 5 { control.stop() }
        }
        let s = starts.withLock { $0 }.map { ($0 * 4).rounded() / 4 }
        // 0: ok; 60: 429 asking for 600 s (the back-off would be 120); 660: 429 asking for 30 s,
        // less than the back-off after two failures (240); 900: ok; a minute later.
        #expect(s.count == 5)
        #expect(s[0] == 0 && s[1] == 60)
        #expect(abs(s[2] - 660) <= 1, "\(s)")
        #expect(abs(s[3] - 900) <= 1, "\(s)")
        #expect(abs(s[4] - 960) <= 1, "\(s)")
    }
}
