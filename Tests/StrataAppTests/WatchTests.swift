import EventStore
import FixtureServer
import Foundation
import StrataApp
import StrataAdapters
import StrataDomain
import StrataTestSupport
import Synchronization
import Testing

/// One virtual time for the store's events and the watcher: sleeping moves it on at once.
final class VirtualTime: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    struct Events: EventClock {
        let time: VirtualTime
        func now() -> Timestamp { Timestamp(time.now) }
    }

    struct Watch: WatchClock {
        let time: VirtualTime
        func now() -> Date { time.now }
        func sleep(seconds: Double) async throws {
            try Task.checkCancellation()
            time.advance(seconds)
            await Task.yield()
        }
    }
}

@Suite struct WatchTests {
    let start = Date(timeIntervalSince1970: 1_780_000_000)

    @Test func aSourceNeverFetchedIsDueAtOnceAndJitterStaysInItsBand() {
        let s = SourceSchedule(every: 600, jitter: 20)
        #expect(WatchedSource.nextDue(name: "cars", schedule: s, lastAttempt: nil, failures: 0) == .distantPast)
        var seen = Set<Double>()
        for i in 0..<200 {
            let last = start.addingTimeInterval(Double(i) * 601)
            let wait = WatchedSource.nextDue(name: "cars", schedule: s, lastAttempt: last, failures: 0).timeIntervalSince(last)
            #expect(wait >= 480 && wait <= 720, "wait \(wait) outside 600 ± 20%")
            // The same source and last fetch give the same time: a restarted watcher plans alike.
            #expect(WatchedSource.nextDue(name: "cars", schedule: s, lastAttempt: last, failures: 0).timeIntervalSince(last) == wait)
            seen.insert(wait)
        }
        #expect(seen.count > 150, "jitter spreads the waits")
        #expect(WatchedSource.nextDue(name: "cars", schedule: SourceSchedule(every: 600), lastAttempt: start, failures: 0) == start.addingTimeInterval(600))
    }

    @Test func failuresInARowBackOffDoublingUpToAnHour() {
        #expect(WatchedSource.backoff(every: 30, failures: 0) == 30)
        #expect(WatchedSource.backoff(every: 30, failures: 1) == 60)
        #expect(WatchedSource.backoff(every: 30, failures: 3) == 240)
        #expect(WatchedSource.backoff(every: 30, failures: 12) == 3_600)
        #expect(WatchedSource.backoff(every: 86_400, failures: 5) == 86_400, "an interval longer than the cap is kept")
        #expect(WatchedSource.backoff(every: 1, failures: 1_000) == 3_600, "no overflow")
    }

    /// A source every 60 s against the fixture server: fetched at once, then every minute of
    /// virtual time; a failing API backs off (120 s, 240 s) and recovers; a watcher started
    /// again plans from the log, not from scratch.
    @Test func watchesOnScheduleBacksOffAndResumesFromTheLog() async throws {
        let time = VirtualTime(start)
        let store = try await makeStore(clock: VirtualTime.Events(time: time))
        try await withFixtureServer { server in
            var configuration = AppConfiguration(userAgent: "Strata/test", logger: quietLogger())
            configuration.fetch.retries = 0
            let app = StrataApp(store: store, configuration: configuration)
            var spec = SourceSpec(name: "cars", url: server.baseURL + "/cars/offers", items: "results", title: "model", pageParam: "page", pageSize: 10)
            spec.schedule = SourceSchedule(every: 60)
            _ = try await app.useCases.manageSources.define(spec)
            let watch = WatchSources(
                sources: app.useCases.sources, catalog: app.useCases.manageSources, refresh: app.useCases.refresh, clock: VirtualTime.Watch(time: time))

            let reports = Mutex<[(at: Double, ok: Bool, next: Double)]>([])
            let control = WatchControl()
            let t0 = time.now
            try await watch.watch([], once: false, control: control) { r in
                let ok = if case .fetched = r.outcome { true } else { false }
                let n = reports.withLock { rs in
                    rs.append((r.started.timeIntervalSince(t0), ok, r.nextDue.timeIntervalSince(r.started)))
                    return rs.count
                }
                // The API fails from the third fetch on, for two fetches.
                if n == 2 { server.setFault(.serverError, for: "/cars/offers", times: 2) }
                if n == 6 { control.stop() }
            }
            let rs = reports.withLock { $0 }
            #expect(rs.map(\.ok) == [true, true, false, false, true, true])
            // At once, a minute later; then the failures wait 120 s and 240 s; then a minute again.
            let starts = rs.map { ($0.at * 10).rounded() / 10 }
            #expect(starts[0] == 0)
            #expect(abs(starts[1] - 60) < 1)
            #expect(abs(rs[2].next - 120) < 1 && abs(rs[3].next - 240) < 1)
            #expect(abs(rs[4].next - 60) < 1)
            #expect(abs((rs[3].at + rs[3].next) - rs[4].at) < 1, "the recovered fetch ran when the back-off said")

            // A new watcher plans from the log: the last pass plus a minute.
            let plan = try await watch.plan([])
            let last = try await app.useCases.sources.source(named: "cars").lastRun!.at
            #expect(abs(plan[0].nextDue.timeIntervalSince(last) - 60) < 0.01)
            #expect(plan[0].nextDue > time.now, "nothing is due right after the last fetch")
        }
    }

    @Test func namesWithoutSchedulesAreRefusedClearly() async throws {
        let store = try await makeStore()
        let app = StrataApp(store: store, configuration: AppConfiguration(userAgent: "Strata/test", logger: quietLogger()))
        _ = try await app.useCases.manageSources.define(SourceSpec(name: "cars", url: "http://127.0.0.1:1/cars"))
        await #expect(throws: RepositoryError.self) { _ = try await app.useCases.watch.plan([]) }
        do { _ = try await app.useCases.watch.plan(["cars"]) } catch let e as RepositoryError {
            #expect(e.code == .invalidQuery && e.next == .changeSource(source: "cars", field: .every))
        }
        do { _ = try await app.useCases.watch.plan(["nope"]) } catch let e as RepositoryError { #expect(e.code == .notFound) }
    }
}
