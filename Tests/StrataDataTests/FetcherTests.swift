import EventStore
import FixtureServer
import Foundation
import StrataData
import Testing

/// The fetch pipeline against the real fixture server over loopback.
@Suite struct FetcherTests {
    @Test func mirrorsEveryDatasetAcrossThreeVersions() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var options = fetchOptions()
            options.details = true
            options.images = true
            let sources = [server.cars, server.catalog, server.notes, server.pokedex]
            var v1: [String: FetchSummary] = [:]
            for s in sources { v1[s.name] = try await fetcher.fetch(s, options: options) }
            #expect(v1["cars"]!.pages == 3 && v1["cars"]!.added == 24 && v1["cars"]!.images == 24)
            #expect(v1["catalog"]!.pages == 3 && v1["catalog"]!.added == 40)
            #expect(v1["notes"]!.added == 12)
            #expect(v1["pokedex"]!.added == 12 && v1["pokedex"]!.details == 12 && v1["pokedex"]!.images == 12)
            // The image path lives deep inside the detail, and the detail URL was relative.
            let pika = try await store.documents(projection: "images") { try $0.state(collection: "pokedex", key: "ivysaur") }
            #expect(pika?.document.value(atPath: "url") == .string(server.baseURL + "/pokedex/images/2.png"))
            let noteKeys = try await itemKeys(store, "notes")
            #expect(noteKeys.allSatisfy { $0.hasPrefix("-N") })

            // Unchanged API: only not-modified pages and completions are added, and every stored
            // detail is revalidated with a 304.
            let before = try await store.head().seq
            for s in sources {
                let r = try await fetcher.fetch(s, options: options)
                #expect(r.added + r.changed + r.removed == 0 && r.pagesNotModified == r.pages && r.details == 0 && r.images == 0, "\(r)")
            }
            let added = try await store.events(EventQuery(fromSeq: before + 1))
            // One ListNotModified per source: no page events, nothing re-marked.
            let lists = added.filter { $0.type != DataEvents.detailNotModified }
            #expect(lists.map(\.type) == Array(repeating: DataEvents.listNotModified, count: sources.count))
            #expect(lists.map { $0[metadata: "pages"] } == ["3", "3", "1", "1"])
            #expect(added.count - lists.count == 12)

            server.version = 2
            let cars2 = try await fetcher.fetch(server.cars, options: options)
            #expect(cars2.added == 3 && cars2.removed == 2 && cars2.changed == 4 && cars2.images == 3)
            let notes2 = try await fetcher.fetch(server.notes, options: options)
            #expect(notes2.added == 1 && notes2.changed == 1 && notes2.removed == 1)
            let poke2 = try await fetcher.fetch(server.pokedex, options: options)
            // Two new items' details, and the two details that changed while their list entry did not.
            #expect(poke2.added == 2 && poke2.removed == 1 && poke2.details == 4, "\(poke2)")

            server.version = 3
            let cars3 = try await fetcher.fetch(server.cars, options: options)
            #expect(cars3.reappeared == 1 && cars3.removed == 1)
            let h = try await store.documents(projection: "items") { try $0.history(collection: "cars", key: "9") }
            #expect(h.map(\.kind) == [.added, .removed, .reappeared])
            #expect(h.last!.changes.contains { $0.path == "/price" && $0.op == .replace })
            #expect(try await store.verify().ok)
        }
    }

    @Test(arguments: [
        (Fault.serverError, FetchError.Code.http), (.tooManyRequests, .http), (.malformed, .malformedJSON),
        (.truncated, .truncated), (.wrongType, .wrongType), (.slow, .timeout), (.huge, .tooLarge), (.redirectLoop, .redirects)
    ])
    func everyFaultGivesAClearErrorAFailureEventAndChangesNothing(fault: Fault, code: FetchError.Code) async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let sleeper = RecordingSleeper()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: sleeper, logger: quietLogger())
            var options = fetchOptions(retries: 1)
            options.timeout = 20
            options.maxBytes = 1 << 20
            server.slowSeconds = 4
            server.hugeBytes = 3 << 20
            _ = try await fetcher.fetch(server.cars, options: options)
            let before = try await itemStates(store)
            // Only the faulty pass gets the short timeout: on a loaded machine the healthy first
            // pass can take longer than 1 s.
            if fault == .slow { options.timeout = 1 }
            server.version = 2
            server.setFault(fault, for: "/cars/offers")
            await #expect { _ = try await fetcher.fetch(server.cars, options: options) } throws: { error in
                guard let e = error as? FetchError else { return false }
                return e.code == code && e.url.contains("/cars/offers") && !e.message.isEmpty
            }
            #expect(try await itemStates(store) == before)
            let failures = try await store.events(EventQuery(type: DataEvents.fetchFailed))
            #expect(!failures.isEmpty)
            #expect(failures.last![metadata: "willRetry"] == "false")
            #expect(failures.allSatisfy { $0[metadata: "url"]?.contains("/cars/offers") == true })
            // No page of the failed pass was stored.
            let pages = try await store.events(EventQuery(type: DataEvents.pageFetched))
            #expect(pages.count == 3)
            #expect(try await store.verify().ok)
        }
    }

    @Test func connectionRefusedOnAClosedPort() async throws {
        let store = try await makeStore()
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
        let source = SourceDefinition(name: "gone", url: "http://127.0.0.1:1/items")
        await #expect { _ = try await fetcher.fetch(source, options: fetchOptions(retries: 2)) } throws: {
            ($0 as? FetchError)?.code == .connection
        }
        #expect(try await store.events(EventQuery(type: DataEvents.fetchFailed)).count == 3)
    }

    @Test func retriesBackOffAndHonourRetryAfter() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let sleeper = RecordingSleeper()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: sleeper, logger: quietLogger())
            var options = fetchOptions(retries: 3)
            options.baseBackoff = 0.2
            options.maxBackoff = 1
            server.setFault(.serverError, for: "/cars/offers", times: 2)
            let r = try await fetcher.fetch(server.cars, options: options)
            #expect(r.added == 24)
            #expect(sleeper.sleeps.count == 2)
            #expect(sleeper.sleeps[0] >= 0.1 && sleeper.sleeps[0] <= 0.2)
            #expect(sleeper.sleeps[1] >= 0.2 && sleeper.sleeps[1] <= 0.4)
            let failed = try await store.events(EventQuery(type: DataEvents.fetchFailed))
            #expect(failed.map { $0[metadata: "attempt"] } == ["1", "2"])
            #expect(failed.allSatisfy { $0[metadata: "willRetry"] == "true" && $0[metadata: "status"] == "500" })

            server.setFault(.tooManyRequests, for: "/notes/notes", times: 1)
            _ = try await fetcher.fetch(server.notes, options: options)
            #expect(sleeper.sleeps.last == 1.0)
        }
    }

    /// A detail that takes long does not hold back those that finished: they are committed while
    /// it is still in flight (so a run killed then keeps them), and the slow one after it. Before,
    /// the eleven waited for the twelfth and all twelve appeared at once.
    @Test func finishedDetailsAreCommittedWhileASlowOneIsInFlight() async throws {
        try await withFixtureServer { server in
            // The slow one is held until the eleven are seen, then let go: no fixed window to miss.
            // The hold is long because the whole suite shares two cores and their two cooperative
            // threads: behind the suite's CPU-bound tests, the fetch's tasks have waited 130 s.
            server.slowSeconds = 600
            server.setFault(.slow, for: "/pokedex/pokemon/9")
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var options = fetchOptions()
            options.details = true
            options.concurrency = 4
            options.timeout = 660
            let run = Task { try await fetcher.fetch(server.pokedex, options: options) }
            // The first count of at least eleven, taken every 20 ms: eleven while the slow one is
            // in flight (held until they are seen), twelve only at the end.
            var stored = 0
            let started = ContinuousClock.now
            while stored < 11, ContinuousClock.now - started < .seconds(590) {
                try await Task.sleep(for: .milliseconds(20))
                stored = try await store.documents(projection: "details") { try $0.states(collection: "pokedex") }.count
            }
            #expect(stored == 11, "the eleven fast details were not committed before the slow one")
            server.releaseSlow()
            let summary = try await run.value
            #expect(summary.details == 12 && summary.failures.isEmpty)
            #expect(try await store.documents(projection: "details") { try $0.states(collection: "pokedex") }.count == 12)
        }
    }

    /// Failed detail requests are recorded and retried within the concurrency; one that keeps
    /// failing is given up after the retries and listed.
    @Test func detailFailuresAreRetriedWithinTheConcurrencyAndRecorded() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let sleeper = RecordingSleeper()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: sleeper, logger: quietLogger())
            var options = fetchOptions(retries: 2)
            options.details = true
            options.concurrency = 3
            server.setFault(.serverError, for: "/pokedex/pokemon/", times: 5)
            server.resetPeakInFlight()
            let r = try await fetcher.fetch(server.pokedex, options: options)
            #expect(r.details == 12 && r.failures.isEmpty)
            #expect(server.peakInFlight <= 3)
            let failed = try await store.events(EventQuery(type: DataEvents.fetchFailed))
            #expect(failed.count == 5)
            #expect(failed.allSatisfy { $0[metadata: "stage"] == "detail" && $0[metadata: "willRetry"] == "true" && $0[metadata: "status"] == "500" })
            #expect(sleeper.sleeps.count == 5)
            #expect(try await store.documents(projection: "details") { try $0.states(collection: "pokedex") }.count == 12)

            server.setFault(.serverError, for: "/pokedex/pokemon/2")
            options.retries = 1
            let one = try await fetcher.fetchDetail(server.pokedex, key: "ivysaur", options: options)
            #expect(one.details == 0 && one.failures.count == 1 && one.failures[0].contains("/pokedex/pokemon/2"))
            let last = try await store.events(EventQuery(type: DataEvents.fetchFailed)).suffix(2)
            #expect(last.map { $0[metadata: "attempt"] } == ["1", "2"])
            #expect(last.map { $0[metadata: "willRetry"] } == ["true", "false"])
        }
    }

    @Test func duplicateIdsAndMissingPathsAreRejected() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var dup = server.cars
            dup.id = ["make"]
            await #expect { _ = try await fetcher.fetch(dup, options: fetchOptions()) } throws: {
                ($0 as? FetchError)?.code == .duplicateIds && "\($0)".contains("two items have the id")
            }
            var missing = server.cars
            missing.items = "data.offers"
            await #expect { _ = try await fetcher.fetch(missing, options: fetchOptions()) } throws: {
                ($0 as? FetchError)?.code == .itemsPath && "\($0)".contains("data.offers")
            }
            var noId = server.notes
            noId.id = ["id"]
            await #expect { _ = try await fetcher.fetch(noId, options: fetchOptions()) } throws: { ($0 as? FetchError)?.code == .wrongType }
            #expect(try await itemStates(store).isEmpty)
        }
    }

    @Test func followsNextLinksInTheBodyAndReportsProgress() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            let source = SourceDefinition(name: "cars", url: server.baseURL + "/cars/offers?page=1&size=7", items: "results", next: "next")
            let seen = ProgressLog()
            var options = fetchOptions()
            options.progress = { seen.add($0) }
            let r = try await fetcher.fetch(source, options: options)
            #expect(r.pages == 4 && r.added == 24 && r.complete)
            #expect(seen.values.map(\.done) == [1, 2, 3, 4])
            // A page limit makes the pass incomplete: nothing is removed.
            server.version = 2
            options.pageLimit = 1
            let partial = try await fetcher.fetch(source, options: options)
            #expect(!partial.complete && partial.removed == 0 && partial.pages == 1)
        }
    }

    @Test func detailURLsComeFromThePassOrFromTheStoredItem() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            let source = SourceDefinition(
                name: "syn", url: server.baseURL + "/synthetic/items?n=25&bytes=256", items: "results",
                title: "title", detailURLField: "url", pageParam: "page", pageSize: 10)
            // A complete pass without details: 25 items in three pages, none with a detail.
            let listed = try await fetcher.fetch(source, options: fetchOptions())
            #expect(listed.pages == 3 && listed.added == 25 && listed.details == 0)
            // A partial pass (one page) with details: the ten items it read take their detail URL
            // from that page, the fifteen it did not reach from their stored documents.
            var options = fetchOptions()
            options.details = true
            options.pageLimit = 1
            let partial = try await fetcher.fetch(source, options: options)
            #expect(!partial.complete && partial.pages == 1 && partial.details == 25 && partial.failures.isEmpty, "\(partial)")
            let details = try await store.documents(projection: "details") { try $0.states(collection: "syn") }
            #expect(details.count == 25)
            for d in details {
                #expect(d.document.value(atPath: "id") == .number(d.key), "detail \(d.key) holds \(d.document.value(atPath: "id") ?? .null)")
            }
            // Every detail is there now: another pass fetches none, and revalidates each (a 304).
            let again = try await fetcher.fetch(source, options: options)
            #expect(again.details == 0 && again.detailsNotModified == 25, "\(again)")
            options.detailPolicy = .changed
            let cheap = try await fetcher.fetch(source, options: options)
            #expect(cheap.details == 0 && cheap.detailsNotModified == 0)
            #expect(try await store.verify().ok)
        }
    }

    /// The synthetic dataset's `latencyMs` (the fetch benchmarks' stand-in for a remote API): every
    /// page and detail is answered at least that late, and the list carries the parameter on to
    /// its next pages and detail URLs, so a whole pass runs against the slow server.
    @Test func aSlowSyntheticServerIsSlowForEveryRequestOfThePass() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            let latency = 40
            let source = SourceDefinition(
                name: "slow", url: server.baseURL + "/synthetic/items?n=12&bytes=256&latencyMs=\(latency)",
                items: "results", title: "title", detailURLField: "url", pageParam: "page", pageSize: 5)
            var options = fetchOptions()
            options.details = true
            let summary = try await fetcher.fetch(source, options: options)
            #expect(summary.pages == 3 && summary.added == 12 && summary.details == 12 && summary.failures.isEmpty, "\(summary)")
            let requests =
                try await store.events(EventQuery(type: DataEvents.pageFetched))
                + store.events(EventQuery(type: DataEvents.detailFetched))
            #expect(requests.count == 15)
            for e in requests {
                let url = e[metadata: "url"] ?? ""
                #expect(url.contains("latencyMs=\(latency)"), "\(url) lost the latency")
                let ms = Int(e[metadata: "durationMs"] ?? "") ?? -1
                #expect(ms >= latency, "\(url) was answered in \(ms) ms")
            }
            // Out of range values are clamped, not refused: 0 and below is no latency at all, so
            // the URLs such a list generates carry none.
            let plain = try await CurlHTTPClient().send(HTTPRequest(url: server.baseURL + "/synthetic/items?n=3&size=2&page=1&bytes=256&latencyMs=-5"))
            let text = String(decoding: plain.body, as: UTF8.self)
            #expect(plain.status == 200 && text.contains("/synthetic/items/0?bytes=256") && !text.contains("latencyMs"), "\(text)")
            #expect(try await store.verify().ok)
        }
    }

    /// Details start downloading as soon as the first list page is parsed, while the next pages
    /// are still being asked for; they are appended after the list pass, and a second pass
    /// revalidates each of them once.
    @Test func detailsDownloadWhileTheListPagesAndAreAppendedAfterIt() async throws {
        try await withFixtureServer { server in
            // Six pages (the last one empty), each answered 150 ms late: the list alone takes 900 ms.
            let (store, fetcher, source, options) = try await pagedDetailsFetch(server, latencyMs: 150)
            let run = Task { try await fetcher.fetch(source, options: options) }
            // The list requests made when the first detail request arrived.
            var pagesBeforeDetails: Int?
            let started = ContinuousClock.now
            while pagesBeforeDetails == nil, ContinuousClock.now - started < .seconds(30) {
                if server.requests(to: "/synthetic/items/0") > 0 { pagesBeforeDetails = server.requests(to: "/synthetic/items") }
                try await Task.sleep(for: .milliseconds(5))
            }
            let summary = try await run.value
            #expect(summary.pages == 6 && summary.added == 50 && summary.details == 50 && summary.failures.isEmpty, "\(summary)")
            #expect((pagesBeforeDetails ?? 6) < 6, "the first detail was asked for after every page: \(pagesBeforeDetails ?? -1)")
            // The log holds the list pass, then the details.
            let completed = try #require(try await store.events(EventQuery(type: DataEvents.fetchCompleted)).last)
            let details = try await store.events(EventQuery(type: DataEvents.detailFetched))
            #expect(details.count == 50 && details.allSatisfy { $0.seq > completed.seq })
            #expect(try await store.events(EventQuery(type: DataEvents.pageFetched)).allSatisfy { $0.seq < completed.seq })
            // Again: every detail revalidated once (a 304 each), none fetched twice.
            let again = try await fetcher.fetch(source, options: options)
            #expect(again.details == 0 && again.detailsNotModified == 50 && again.failures.isEmpty, "\(again)")
            #expect(server.requests(to: "/synthetic/items/7") == 2)
            #expect(try await store.verify().ok)
        }
    }

    /// A page's first items start their details by themselves, then the rest of the page: with
    /// two in flight (a first group of four) and a page of 40, every detail is asked for once,
    /// and once more (a 304 with its validators) by a second pass whether it fell in the first
    /// group or the rest. A page smaller than the first group takes one lookup.
    @Test func aPagesFirstItemsAndTheRestAreEachAskedForOnce() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            // Their detail URLs differ (bytes=): no validators are shared between the two.
            for (name, n, bytes) in [("big", 40, 256), ("small", 3, 200)] {
                let source = SourceDefinition(
                    name: name, url: server.baseURL + "/synthetic/items?n=\(n)&bytes=\(bytes)", items: "results",
                    title: "title", detailURLField: "url")
                var options = fetchOptions()
                options.details = true
                options.concurrency = 2
                let first = try await fetcher.fetch(source, options: options)
                #expect(first.pages == 1 && first.details == n && first.failures.isEmpty, "\(first)")
                let again = try await fetcher.fetch(source, options: options)
                #expect(again.details == 0 && again.detailsNotModified == n && again.failures.isEmpty, "\(again)")
                let details = try await store.documents(projection: "details") { try $0.states(collection: name) }
                #expect(details.count == n)
            }
            for k in 0..<40 {
                #expect(
                    server.requests(to: "/synthetic/items/\(k)") == (k < 3 ? 4 : 2), "detail \(k): \(server.requests(to: "/synthetic/items/\(k)")) requests")
            }
            #expect(try await store.verify().ok)
        }
    }

    /// A list that fails after details started downloading appends none of them: the store holds
    /// the list's failure and nothing else, as before details overlapped the paging.
    @Test func aListThatFailsAfterDetailsStartedAppendsNoneOfThem() async throws {
        try await withFixtureServer { server in
            let (store, fetcher, source, options) = try await pagedDetailsFetch(server, latencyMs: 300)
            // Details are answered normally (the longer prefix wins, and waits 0 s) whatever the
            // list's route is switched to.
            server.slowSeconds = 0
            server.setFault(.slow, for: "/synthetic/items/")
            let run = Task { try await fetcher.fetch(source, options: options) }
            // Once details are being downloaded, the list's later pages fail.
            let started = ContinuousClock.now
            while server.requests(to: "/synthetic/items/0") == 0, ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(2))
            }
            server.setFault(.serverError, for: "/synthetic/items")
            #expect(server.requests(to: "/synthetic/items") < 5, "the list ended before the fault was set")
            await #expect { _ = try await run.value } throws: { ($0 as? FetchError)?.status == 500 }
            #expect(server.requests(to: "/synthetic/items/0") == 1)
            #expect(try await store.events(EventQuery(type: DataEvents.detailFetched)).isEmpty)
            #expect(try await store.events(EventQuery(type: DataEvents.detailNotModified)).isEmpty)
            #expect(try await store.documents(projection: "details") { try $0.states(collection: "syn") }.isEmpty)
            #expect(try await itemKeys(store, "syn").isEmpty)
            let failed = try await store.events(EventQuery(type: DataEvents.fetchFailed))
            #expect(failed.count == 1 && failed.first?[metadata: "stage"] == "list", "\(failed.map { $0.metadata })")
        }
    }

    /// A new store, its fetcher, and a fetch with details of 50 synthetic items in pages of 10,
    /// every request answered `latencyMs` late.
    func pagedDetailsFetch(_ server: FixtureServer, latencyMs: Int) async throws -> (EventStore, Fetcher, SourceDefinition, FetchOptions) {
        let store = try await makeStore()
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
        let source = SourceDefinition(
            name: "syn", url: server.baseURL + "/synthetic/items?n=50&bytes=256&latencyMs=\(latencyMs)", items: "results",
            title: "title", detailURLField: "url", pageParam: "page", pageSize: 10)
        var options = fetchOptions()
        options.details = true
        return (store, fetcher, source, options)
    }

    @Test func serverURLsCannotEscapeToFiles() async throws {
        let base = "http://127.0.0.1:8080/pokedex/pokemon"
        #expect(resolve("pokemon/1", against: base) == "http://127.0.0.1:8080/pokedex/pokemon/1")
        #expect(resolve("/images/1.png", against: base) == "http://127.0.0.1:8080/images/1.png")
        #expect(resolve("https://cdn.example/x.png", against: base) == "https://cdn.example/x.png")
        #expect(resolve("file:///etc/passwd", against: base) == nil)
        #expect(resolve("ftp://host/x", against: base) == nil)
        #expect(resolve("gopher://host/x", against: base) == nil)
        #expect(resolve("data.json", against: "file:///srv/api/list.json") == "file:///srv/api/data.json")
    }

    @Test func compositeIdsJoinTheirParts() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var composite = server.cars
            composite.id = ["make", "id"]
            _ = try await fetcher.fetch(composite, options: fetchOptions())
            let keys = try await itemKeys(store, "cars")
            #expect(keys.count == 24 && keys.allSatisfy { $0.contains(":") })
        }
    }

    @Test func importRecordsSnapshotsWithTheirHistoricalDates() async throws {
        let store = try await makeStore()
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
        let source = SourceDefinition(name: "cars", url: "http://127.0.0.1:9/cars", items: "results")
        for (v, date) in [(1, "2025-01-01T00:00:00Z"), (2, "2025-02-01T00:00:00Z")] {
            let path = fixturesRoot + "/cars/v\(v)/offers.json"
            let body = [UInt8](FileManager.default.contents(atPath: path)!)
            _ = try await fetcher.importSnapshots(source, files: [(path, body)], recordedAt: Timestamp(iso8601: date))
        }
        let mid = try await store.seq(asOf: Timestamp(iso8601: "2025-01-15")!)
        let then = try await store.documents(projection: "items") { try $0.states(collection: "cars", asOf: mid) }
        #expect(then.count == 24)
        let now = try await itemKeys(store, "cars")
        #expect(now.count == 25 && !now.contains("9") && now.contains("27"))
        let bad = [UInt8]("{\"results\": 5}".utf8)
        await #expect { _ = try await fetcher.importSnapshots(source, files: [("/tmp/bad.json", bad)], recordedAt: nil) } throws: {
            ($0 as? FetchError)?.code == .wrongType
        }
        #expect(try await itemKeys(store, "cars").count == 25)
        #expect(try await store.verify().ok)
    }

    /// An import works out each snapshot's items beside its reads of the history and hands them
    /// to the fold (`NewEvent.shared`), which takes them instead of reading the body again: what
    /// it is handed is what it stores. So a page handed other items than its body's folds them,
    /// and `verify`, which folds the log again without them, finds the difference.
    @Test func importedItemsAreHandedToTheFold() async throws {
        let store = try await makeStore()
        let source = SourceDefinition(name: "cars", url: "http://127.0.0.1:9/cars", items: "results")
        try await SourceCatalog(store: store).define(source)
        let extraction = ItemExtraction(source)
        let body = [UInt8](FileManager.default.contents(atPath: fixturesRoot + "/cars/v1/offers.json")!)
        let items = try extraction.canonicalItems(in: body, url: "u")
        #expect(items.count == 24)
        var page = NewEvent(
            type: DataEvents.pageFetched, stream: "cars",
            metadata: [("source", "cars"), ("run", "r"), ("page", "1"), ("url", "u"), ("status", "200")] + extraction.metadata, payload: body)
        page.shared = [extraction.shared(Array(items.prefix(3)))]
        _ = try await store.append([page])
        #expect(try await itemKeys(store, "cars").count == 3)
        #expect(try await !store.verify().ok)
    }

    /// An import (or a source change) between two fetches of an unchanged API: every page answers
    /// 304, but the items are no longer what those pages say, so the pass is written out in full
    /// and the items come back to the API's. Only a pass that follows a complete fetch of the same
    /// pages is compacted into one ListNotModified.
    @Test func anUnchangedAPIAfterAnImportStillRestoresTheItems() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            _ = try await fetcher.fetch(server.cars, options: fetchOptions())
            let fetched = try await itemKeys(store, "cars")
            let path = fixturesRoot + "/cars/v2/offers.json"
            _ = try await fetcher.importSnapshots(server.cars, files: [(path, [UInt8](FileManager.default.contents(atPath: path)!))], recordedAt: nil)
            let imported = try await itemKeys(store, "cars")
            #expect(Set(imported) != Set(fetched))

            let before = try await store.head().seq
            let again = try await fetcher.fetch(server.cars, options: fetchOptions())
            #expect(again.pagesNotModified == again.pages && again.pages == 3, "\(again)")
            #expect(Set(try await itemKeys(store, "cars")) == Set(fetched))
            #expect(again.reappeared == 2 && again.removed == 3, "\(again)")
            let written = try await store.events(EventQuery(fromSeq: before + 1)).map(\.type)
            #expect(written == Array(repeating: DataEvents.pageNotModified, count: 3) + [DataEvents.fetchCompleted])

            // Now the items follow that pass: the next unchanged pass is compact again.
            let head = try await store.head().seq
            _ = try await fetcher.fetch(server.cars, options: fetchOptions())
            #expect(try await store.events(EventQuery(fromSeq: head + 1)).map(\.type) == [DataEvents.listNotModified])

            // A changed definition (a composite id) re-extracts the items from the same pages.
            var composite = server.cars
            composite.id = ["make", "id"]
            _ = try await SourceCatalog(store: store).define(composite, replace: true)
            _ = try await fetcher.fetch(composite, options: fetchOptions())
            let keys = try await itemKeys(store, "cars")
            #expect(keys.count == fetched.count && keys.allSatisfy { $0.contains(":") }, "\(keys)")
            #expect(try await store.verify().ok)
        }
    }

    @Test func secretsNeverReachTheStore() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var source = server.cars
            source.headers = ["Authorization: Bearer $STRATA_TEST_TOKEN", "X-Api-Key: ${STRATA_TEST_KEY}"]
            try await SourceCatalog(store: store).define(source)
            var options = fetchOptions()
            options.environment = ["STRATA_TEST_TOKEN": "tok-5ecret-9f2c", "STRATA_TEST_KEY": "key-5ecret-77aa"]
            options.images = true
            _ = try await fetcher.fetch(source, options: options)
            options.environment = [:]
            await #expect { _ = try await fetcher.fetch(source, options: options) } throws: {
                "\($0)".contains("$STRATA_TEST_TOKEN") && !"\($0)".contains("5ecret")
            }
            let data = try Data(contentsOf: URL(fileURLWithPath: store.path + "/data.mdb"))
            #expect(data.range(of: Data("5ecret".utf8)) == nil)
            #expect(data.range(of: Data("STRATA_TEST_TOKEN".utf8)) != nil)  // the template is stored, not the value
        }
    }

    @Test func sourceDefinitionsAreVersionedAsEvents() async throws {
        let store = try await makeStore()
        let catalog = SourceCatalog(store: store)
        // The rules of a definition are the Domain's (SpecValidationTests): the catalog records
        // what it is given, and refuses only a second source of one name.
        let good = SourceDefinition(name: "cars", url: "http://127.0.0.1:9/cars")
        try await catalog.define(good)
        await #expect { try await catalog.define(good) } throws: { ($0 as? SourceCatalogError) == .exists(good.name) }
        var changed = good
        changed.title = "make"
        try await catalog.define(changed, replace: true)
        #expect(try await catalog.get("cars")?.title == "make")
        try await catalog.remove("cars")
        #expect(try await catalog.get("cars") == nil)
        let types = try await store.events(EventQuery(stream: "cars")).map(\.type)
        #expect(types == [DataEvents.sourceDefined, DataEvents.sourceChanged, DataEvents.sourceRemoved])
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [FetchProgress] = []
    func add(_ p: FetchProgress) { lock.withLock { _values.append(p) } }
    var values: [FetchProgress] { lock.withLock { _values } }
}
