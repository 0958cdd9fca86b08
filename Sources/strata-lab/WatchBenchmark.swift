import EventStore
import FixtureServer
import Foundation
import StrataApp
import Logging
import StrataData
import StrataDomain
import StrataJSON
import Synchronization

/// `strata-lab bench watch` and `strata-lab bench alerts`, through the app's composition root against the
/// fixture server in this process on 127.0.0.1.
enum WatchBenchmark {
    /// `watch`: `sources` sources due every second, polled by the real watcher (its planning,
    /// `RefreshSource`, the conditional request, the `ListNotModified` append, the alert check)
    /// until `polls` polls; the fixture answers 304. Lateness is when a fetch started after the
    /// source was due; CPU is this process's (the fixture server's share included, as in the
    /// floor); RSS is sampled after the first tenth of the polls and at the end. Beside it the
    /// floor: the same number of conditional GETs through the same libcurl client at the same
    /// concurrency, nothing recorded.
    static func watch(store s: EventStore, sources n: Int, polls: Int, concurrency: Int, result: inout [String: JSONValue]) async throws {
        let server = FixtureServer(root: try fixtureRoot())
        try await server.start()
        defer { Task { await server.stop() } }
        let url = server.baseURL + "/cars/offers"
        for i in 0..<n {
            var d = SourceDefinition(name: "w\(i)", url: url, items: "results", title: "model")
            d.schedule = FetchSchedule(every: 1, jitter: 0)
            try await SourceCatalog(store: s).define(d)
        }
        var configuration = AppConfiguration(userAgent: "Strata-bench")
        configuration.logger.logLevel = .critical
        configuration.requestsSoon = true
        let app = StrataApp(store: s, configuration: configuration)
        var watcher = app.useCases.watch
        watcher.concurrency = concurrency
        watcher.perHost = concurrency
        // Every source fetched once (200s): the polls measured are the 304s that follow.
        for i in 0..<n { _ = try await app.useCases.refresh("w\(i)") }

        struct Tally {
            var polls = 0
            var late: [Double] = []
            var failed = 0
            var rssAfterWarmup = 0
        }
        let tally = Mutex(Tally())
        let control = WatchControl()
        let warmup = max(1, polls / 10)
        let cpuStart = cpuSeconds()
        let clock = ContinuousClock()
        let start = clock.now
        try await watcher.watch([], once: false, control: control) { r in
            let stop = tally.withLock { t -> Bool in
                t.polls += 1
                if r.due != .distantPast { t.late.append(max(0, r.started.timeIntervalSince(r.due))) }
                if case .failed = r.outcome { t.failed += 1 }
                if t.polls == warmup { t.rssAfterWarmup = residentBytes() }
                return t.polls >= polls
            }
            if stop { control.stop() }
        }
        let elapsed = seconds(clock.now - start)
        let cpu = cpuSeconds() - cpuStart
        let t = tally.withLock { $0 }
        guard t.failed == 0 else { throw BenchmarkError("the watch benchmark failed: \(t.failed) of \(t.polls) polls failed") }
        let rssEnd = residentBytes()
        let late = t.late.sorted()
        func ms(_ q: Double) -> Double { late.isEmpty ? 0 : (late[min(late.count - 1, Int(Double(late.count) * q))] * 1000 * 10).rounded() / 10 }
        result["sources"] = .int(n)
        result["polls"] = .int(t.polls)
        result["pollsPerSecond"] = .int(Int(Double(t.polls) / elapsed))
        result["latenessP50Ms"] = .double(ms(0.50))
        result["latenessP99Ms"] = .double(ms(0.99))
        result["latenessMaxMs"] = .double(ms(1.0))
        result["cpuMicrosPerPoll"] = .int(Int(cpu / Double(t.polls) * 1_000_000))
        result["rssAfterWarmupMiB"] = .double((Double(t.rssAfterWarmup) / 1_048_576 * 10).rounded() / 10)
        result["rssEndMiB"] = .double((Double(rssEnd) / 1_048_576 * 10).rounded() / 10)
        result["rssGrowthPercent"] = .double((Double(rssEnd - t.rssAfterWarmup) / Double(max(1, t.rssAfterWarmup)) * 1000).rounded() / 10)

        // The floor: the same conditional GETs, nothing recorded.
        let client = CurlHTTPClient()
        let first = try await client.send(HTTPRequest(url: url))
        let etag = first.headers["etag"] ?? ""
        let requests = (0..<t.polls).map { _ in HTTPRequest(url: url, headers: [("If-None-Match", etag)]) }
        let floorCPU = cpuSeconds()
        let floorStart = clock.now
        var done = 0
        for await batch in client.transfers(requests, concurrency: concurrency) { done += batch.count }
        let floorElapsed = seconds(clock.now - floorStart)
        let floorCPUPerRequest = (cpuSeconds() - floorCPU) / Double(max(1, done))
        result["floorRequestsPerSecond"] = .int(Int(Double(done) / floorElapsed))
        result["floorCPUMicrosPerRequest"] = .int(Int(floorCPUPerRequest * 1_000_000))
        result["cpuPerPollOverFloor"] = .double((cpu / Double(t.polls) / max(floorCPUPerRequest, 1e-9) * 10).rounded() / 10)
    }

    /// `alerts`: a source of `items` items (pages of 500) whose list changes on every pass (a
    /// generated dataset with three versions: each moves 2% of the prices, half down, and adds
    /// and removes a few items), fetched `passes` times with no alert, then as many times in
    /// another store with an alert that matches some changes (a kind, a field and a condition):
    /// what matching and queueing add to a pass. Alternating runs, medians of each.
    static func alerts(directory: String, passes: Int, items: Int, result: inout [String: JSONValue]) async throws {
        let root = directory + "/alert-fixture"
        try writeChangingDataset(root: root, items: items)
        let server = FixtureServer(root: root)
        try await server.start()
        defer { Task { await server.stop() } }
        let clock = ContinuousClock()
        var without: [Double] = []
        var with: [Double] = []
        var queued = 0
        for round in 0..<6 {
            let alerted = round % 2 == 1
            let dir = directory + "/alerts-\(round)"
            var options = StoreOptions()
            options.logger.logLevel = .error
            let s = try await EventStore.open(at: dir, projections: StoreAccess.projections, options: options)
            var configuration = AppConfiguration(userAgent: "Strata-bench")
            configuration.logger.logLevel = .critical
            let app = StrataApp(store: s, configuration: configuration)
            try await SourceCatalog(store: s).define(
                SourceDefinition(
                    name: "offers", url: server.baseURL + "/offers/list", items: "results", title: "model", pageParam: "page", sizeParam: "size",
                    pageSize: 500))
            server.version = 1
            _ = try await app.useCases.refresh("offers")
            if alerted {
                try await app.useCases.alerts.add(
                    .init(
                        source: "offers", name: "cheaper", kinds: ["changed"], fields: ["price"], condition: "price < old.price",
                        target: .webhook(URL(string: "http://127.0.0.1:9/unused")!)))
            }
            let start = clock.now
            for p in 0..<passes {
                server.version = (p + 1) % 3 + 1
                let r = try await app.useCases.refresh("offers")
                queued += r.notificationsQueued
            }
            let elapsed = seconds(clock.now - start) / Double(passes)
            if alerted { with.append(elapsed) } else { without.append(elapsed) }
        }
        func median(_ a: [Double]) -> Double { a.sorted()[a.count / 2] }
        result["passes"] = .int(passes)
        result["items"] = .int(items)
        result["passMicrosWithoutAlert"] = .int(Int(median(without) * 1_000_000))
        result["passMicrosWithAlert"] = .int(Int(median(with) * 1_000_000))
        result["alertOverheadPercent"] = .double(((median(with) / median(without) - 1) * 1000).rounded() / 10)
        result["notificationsQueued"] = .int(queued)
    }

    /// `ROOT/offers/v1…v3/list.json`: `items` cars; from one version to the next 2% of the prices
    /// move (half of them down), 0.5% of the items go and as many new ones come.
    static func writeChangingDataset(root: String, items n: Int) throws {
        var rng = SplitMix64(seed: 42)
        var rows: [Int: (model: String, price: Int, km: Int)] = [:]
        for i in 1...n { rows[i] = ("model \(i % 97)", 5_000 + Int(rng.next() % 30_000), Int(rng.next() % 200_000)) }
        var next = n + 1
        for v in 1...3 {
            if v > 1 {
                let ids = Array(rows.keys).sorted()
                for _ in 0..<max(1, n / 50) {
                    let id = ids[Int(rng.next() % UInt64(ids.count))]
                    let delta = 100 + Int(rng.next() % 900)
                    rows[id]!.price += rng.next() % 2 == 0 ? -delta : delta
                }
                for _ in 0..<max(1, n / 200) {
                    rows.removeValue(forKey: ids[Int(rng.next() % UInt64(ids.count))])
                    rows[next] = ("model \(next % 97)", 5_000 + Int(rng.next() % 30_000), 0)
                    next += 1
                }
            }
            let body = rows.keys.sorted().map { id in
                let r = rows[id]!
                return
                    #"{"id":\#(id),"model":"\#(r.model)","price":\#(r.price),"km":\#(r.km),"description":"A car for the benchmark, number \#(id), with a text of some length as listings have."}"#
            }
            try FileManager.default.createDirectory(atPath: "\(root)/offers/v\(v)", withIntermediateDirectories: true)
            try Data((#"{"results":["# + body.joined(separator: ",") + "]}").utf8).write(to: URL(fileURLWithPath: "\(root)/offers/v\(v)/list.json"))
        }
    }

    /// The bundled fixtures: `STRATA_FIXTURES`, else `fixtures` here or next to the binary's
    /// build folder.
    static func fixtureRoot() throws -> String {
        var candidates = [ProcessInfo.processInfo.environment["STRATA_FIXTURES"], "fixtures"].compactMap { $0 }
        if let exe = Bundle.main.executableURL?.deletingLastPathComponent() {
            candidates.append(exe.appendingPathComponent("../../../fixtures").standardized.path)
        }
        guard let root = candidates.first(where: { FileManager.default.fileExists(atPath: $0 + "/cars/v1") }) else {
            throw BenchmarkError("the fixtures were not found: run from the repository's top folder or set STRATA_FIXTURES")
        }
        return root
    }

    static func cpuSeconds() -> Double {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1_000_000
    }

    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
