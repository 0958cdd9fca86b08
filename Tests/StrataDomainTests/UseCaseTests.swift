import EventStore
import FixtureServer
import Foundation
import StrataData
import StrataAdapters
import StrataDomain
import Testing

/// Use cases over the real repositories, with the fixture server on loopback for the network.
@Suite struct UseCaseTests {
    func wired(_ store: EventStore, retries: Int = 0) -> (Repositories, CurlRemoteRepository) {
        let r = Repositories(store: store)
        var options = FetchOptions()
        options.retries = retries
        options.timeout = 30  // a healthy answer on two cores shared with the whole suite can take over 5 s
        options.environment = [:]
        let remote = CurlRemoteRepository(
            fetcher: Fetcher(store: store, client: CurlHTTPClient(), logger: quiet()),
            catalog: SourceCatalog(store: store), options: options)
        return (r, remote)
    }

    func define(_ store: EventStore, _ base: String) async throws {
        try await SourceCatalog(store: store).define(
            SourceDefinition(
                name: "cars", url: base + "/cars/offers", items: "results", title: "model", subtitle: ["make"], image: "image",
                detailURL: base + "/cars/offers/{id}", pageParam: "page", pageSize: 10, index: ["make"]))
    }

    @Test func refreshThenDetailThenFailedDetailKeepsTheStoredOne() async throws {
        try await withFixtureServer { server in
            let store = try await makeSteppedStore()
            try await define(store, server.baseURL)
            let (r, remote) = wired(store)
            let refresh = RefreshSource(remote: remote, sources: r.sources)
            let result = try await refresh("cars", details: false, images: true)
            #expect(result.pages == 3 && result.added == 24 && result.images == 24 && result.failures.isEmpty)
            let load = LoadItemDetail(items: r.items, sources: r.sources, remote: remote)
            let first = try await load(source: "cars", id: "3")
            #expect(first.refreshed && first.refreshError == nil)
            #expect(first.item.detail?.value(atPath: "specs.fuel") == .string("hybrid"))
            #expect(first.item.image?.contentType == "image/png")
            #expect(try await r.items.imageData(try #require(first.item.image))?.prefix(4) == [0x89, 0x50, 0x4E, 0x47])
            let head = try await store.head().seq
            server.setFault(.serverError, for: "/cars/offers/3")
            let failed = try await load(source: "cars", id: "3")
            #expect(failed.refreshError?.code == .network)
            #expect(failed.item.detail == first.item.detail)
            let failures = try await store.events(EventQuery(type: DataEvents.fetchFailed, fromSeq: head + 1))
            #expect(failures.count == 1 && failures[0][metadata: "stage"] == "detail")
            // Offline and as-of reads never ask the network.
            let requests = server.requests(to: "/cars/offers/3")
            _ = try await load(source: "cars", id: "3", offline: true)
            _ = try await load(source: "cars", id: "3", at: .seq(head))
            #expect(server.requests(to: "/cars/offers/3") == requests)
            await #expect(throws: RepositoryError.self) { try await load(source: "cars", id: "999", offline: true) }
        }
    }

    @Test func failedRefreshIsANetworkErrorAndKeepsItems() async throws {
        try await withFixtureServer { server in
            let store = try await makeSteppedStore()
            try await define(store, server.baseURL)
            let (r, remote) = wired(store)
            let refresh = RefreshSource(remote: remote, sources: r.sources)
            _ = try await refresh("cars")
            server.setFault(.malformed, for: "/cars/offers")
            await #expect(throws: RepositoryError.self) { try await refresh("cars") }
            let query = QueryItems(items: r.items, sources: r.sources)
            let after = try await query(ItemQuery(source: "cars"))
            #expect(after.page.total == 24)
            #expect(after.source.lastRun?.succeeded == false)
            #expect(after.source.lastSuccess?.succeeded == true)
            await #expect(throws: RepositoryError.self) { try await refresh("boats") }
        }
    }

    @Test func historyAndDiffUseCasesIgnoreChurningFields() async throws {
        let (r, ends) = try await carsStore()
        let history = GetItemHistory(items: r.items, sources: r.sources)
        let full = try await history(source: "cars", id: "3")
        #expect(full.versions.count == 3)
        let quiet = try await history(source: "cars", id: "3", ignoring: ["price", "rating"])
        #expect(quiet.versions.map(\.kind) == [.added])
        await #expect(throws: RepositoryError.self) { try await history(source: "cars", id: "nope") }
        let diff = DiffCollection(items: r.items, sources: r.sources)
        let d = try await diff(source: "cars", from: .seq(ends[0]), to: .seq(ends[1]), ignoring: ["price"])
        #expect(d.count(.changed) == 1)
        await #expect(throws: RepositoryError.self) { try await diff(source: "cars", from: .seq(ends[1]), to: .seq(ends[0])) }
        let query = QueryItems(items: r.items, sources: r.sources)
        await #expect(throws: RepositoryError.self) { try await query(ItemQuery(source: "cars", limit: 0)) }
        await #expect(throws: RepositoryError.self) { try await query(ItemQuery(source: "cars", offset: -1)) }
        let replay = ReplayLog(log: r.log)
        #expect(try await replay(LogQuery(limit: 2)).count == 2)
        await #expect(throws: RepositoryError.self) { try await replay(LogQuery(limit: 0)) }
        await #expect(throws: RepositoryError.self) { try await replay(LogQuery(fromSeq: 5, toSeq: 4)) }
        #expect(try await replay.resolve(.now) == ends[2])
    }
}
