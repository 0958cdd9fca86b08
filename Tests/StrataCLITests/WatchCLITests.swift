import FixtureServer
import Foundation
import StrataTestSupport
import Testing

/// `strata watch` through the real binary: schedules given with `source add|change`, `--once`
/// for cron, a long-running watcher that fetches on schedule, logs a line per fetch, reads the
/// definitions again on SIGHUP and stops cleanly on SIGTERM.
@Suite(.serialized) struct WatchCLITests {
    @Test func onceFetchesWhatIsDueAndSchedulesAreEventsInTheDefinition() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let url = server.baseURL + "/cars/offers"
            #expect(
                try await strata(
                    ["source", "add", "cars", "--url", url, "--items", "results", "--page-param", "page", "--page-size", "10", "--every", "1h"], store: store
                )
                .status == 0)
            #expect(try await strata(["source", "add", "manual", "--url", url, "--items", "results"], store: store).status == 0)
            let show = try await strata(["source", "show", "cars", "--format", "json"], store: store)
            #expect(show.stdout.contains("\"every\": 3600") && show.stdout.contains("\"jitter\": 10"), "\(show.stdout)")

            // Due at once (never fetched); `manual` has no schedule and is left alone.
            let first = try await strata(["watch", "--once"], store: store)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stderr.contains("source=cars") && first.stderr.contains("outcome=ok") && first.stderr.contains("added=24"))
            #expect(!first.stderr.contains("source=manual"))
            // Fetched a moment ago: nothing is due for an hour.
            let second = try await strata(["watch", "--once"], store: store)
            #expect(second.status == 0 && !second.stderr.contains("fetched"), "\(second.stderr)")
            let log = try await strata(["log", "--type", "FetchCompleted", "--format", "json"], store: store)
            #expect(log.stdout.components(separatedBy: "\"FetchCompleted\"").count - 1 == 1)

            // Bad schedules are refused with the flag at fault; `--every ''` removes one.
            let bad = try await strata(["source", "change", "cars", "--every", "soon"], store: store)
            #expect(bad.status == 64 && bad.stderr.contains("--every takes a duration"))
            let jitter = try await strata(["source", "change", "cars", "--jitter", "80"], store: store)
            #expect(jitter.status == 64 && jitter.stderr.contains("--jitter must be 0 to 50"), "\(jitter.stderr)")
            #expect(try await strata(["source", "change", "cars", "--every", ""], store: store).status == 0)
            let none = try await strata(["watch", "--once"], store: store)
            #expect(none.status == 64 && none.stderr.contains("no source has a schedule; give one with `strata source change NAME --every 15m`"))
            let named = try await strata(["watch", "manual", "--once"], store: store)
            #expect(named.status == 64 && named.stderr.contains("source manual has no schedule"))
        }
    }

    /// `Cache-Control: max-age` (less `Age`) holds a source back past its schedule: a fresh list
    /// is never polled; without it, or with `no-cache`, the schedule alone decides.
    @Test func aFreshListIsNotPolledBeforeItsMaxAge() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let url = server.baseURL + "/cars/offers"
            #expect(try await strata(["source", "add", "cars", "--url", url, "--items", "results", "--every", "1s", "--jitter", "0"], store: store).status == 0)
            server.cacheControl = "public, max-age=3600"
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            let log = try await strata(["log", "--type", "FetchCompleted", "--format", "json"], store: store)
            #expect(log.stdout.contains("\"maxAge\": \"3600\"") || log.stdout.contains("\"maxAge\":\"3600\""), "\(log.stdout)")
            try await Task.sleep(for: .milliseconds(1_100))
            let held = try await strata(["watch", "--once"], store: store)
            #expect(held.status == 0 && !held.stderr.contains(" fetched"), "fresh for an hour: \(held.stderr)")
            // The API stops saying so: the next poll (a 304, by the schedule) is due again.
            server.cacheControl = "no-cache"
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            try await Task.sleep(for: .milliseconds(1_100))
            let due = try await strata(["watch", "--once"], store: store)
            #expect(due.status == 0 && due.stderr.contains(" fetched"), "\(due.stderr)")
        }
    }

    @Test func aWatcherFetchesOnScheduleSurvivesSIGHUPAndStopsOnSIGTERM() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let url = server.baseURL + "/cars/offers"
            let add = [
                "source", "add", "cars", "--url", url, "--items", "results", "--page-param", "page", "--page-size", "10", "--every", "1s", "--jitter", "0"
            ]
            #expect(try await strata(add, store: store).status == 0)
            let (p, out, err) = try startStrata(["watch"], store: store)
            // Waits (at most 30 s, however loaded the machine) until the log holds `n` passes over the list.
            func passes(atLeast n: Int) async throws -> Int {
                var count = 0
                for _ in 0..<300 {
                    let log = try await strata(["log", "--stream", "cars", "--limit", "1000", "--format", "ndjson"], store: store).stdout
                    count = log.split(separator: "\n").count { $0.contains("\"FetchCompleted\"") || $0.contains("\"ListNotModified\"") }
                    if count >= n { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return count
            }
            #expect(try await passes(atLeast: 2) >= 2)
            kill(p.processIdentifier, SIGHUP)
            #expect(try await passes(atLeast: 4) >= 4, "the watcher goes on fetching after SIGHUP")
            #expect(p.isRunning, "SIGHUP reloads, it does not stop the watcher")
            kill(p.processIdentifier, SIGTERM)
            try await waitForExit(p)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            _ = out.fileHandleForReading.readDataToEndOfFile()
            #expect(p.terminationStatus == 0, "\(stderr)")
            let fetches = stderr.components(separatedBy: "\n").filter { $0.contains(" fetched") }
            #expect(fetches.count >= 4, "one line per fetch: \(stderr)")
            #expect(stderr.contains("stopped"))
            // Every fetch is in the log, and the store verifies.
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    /// `--metrics-port`: the watcher's fetches and the store's gauges in the Prometheus format on
    /// loopback, read with curl while it runs.
    @Test func theWatcherServesItsMetrics() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let add = [
                "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--page-param", "page", "--page-size", "10",
                "--every", "1s", "--jitter", "0"
            ]
            #expect(try await strata(add, store: store).status == 0)
            let port = try freeLoopbackPort()
            let (p, out, err) = try startStrata(["watch", "--metrics-port", String(port)], store: store)
            var text = ""
            for _ in 0..<300 {
                text = try await Self.get("http://127.0.0.1:\(port)/metrics")
                if text.contains("strata_fetch_total{source=\"cars\",outcome=\"ok\"} 2") { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            kill(p.processIdentifier, SIGTERM)
            try await waitForExit(p)
            _ = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(p.terminationStatus == 0, "\(stderr)")
            #expect(text.contains("strata_fetch_total{source=\"cars\",outcome=\"ok\"} 2"), "\(text)")
            #expect(text.contains("# TYPE strata_fetch_duration_seconds histogram") && text.contains("strata_store_head_seq "))
            #expect(stderr.contains("url=http://127.0.0.1:\(port)/metrics"))
            let bad = try await strata(["watch", "--metrics-port", "0"], store: store)
            #expect(bad.status == 64 && bad.stderr.contains("--metrics-port must be 1 to 65535"))
            // A port that is taken (here the fixture server's) stops the watcher with the reason;
            // it once waited forever for a server that had already given up.
            let taken = try await strata(["watch", "--metrics-port", String(server.port)], store: store)
            #expect(taken.status == 1, "\(taken.stderr)")
            #expect(taken.stderr.contains("cannot serve metrics on 127.0.0.1:\(server.port)") && taken.stderr.contains("choose another --metrics-port"))
        }
    }

    /// The body of `url`, or "" when nothing answers yet (curl, off the cooperative pool).
    static func get(_ url: String) async throws -> String {
        String(decoding: try await curl(["-m", "2", url]), as: UTF8.self)
    }
}
