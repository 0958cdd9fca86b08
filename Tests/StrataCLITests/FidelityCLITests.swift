import FixtureServer
import Foundation
import StrataTestSupport
import Testing

/// The fidelity flags through the real binary: detail policies, paging flags, date reads.
@Suite struct FidelityCLITests {
    @Test func detailPoliciesAndPagingFlags() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            #expect(
                try await strata(
                    [
                        "source", "add", "species", "--url", server.baseURL + "/species/all", "--items", "results",
                        "--id", "name", "--detail-url-field", "url"
                    ], store: store
                ).status == 0)
            let first = try await strata(["fetch", "species", "--details"], store: store)
            #expect(first.status == 0 && first.stdout.contains("3 details"), "\(first.stdout)")
            server.version = 2
            // The cheaper policy misses details that changed on their own; the default does not.
            let cheap = try await strata(["fetch", "species", "--details=changed"], store: store)
            #expect(cheap.status == 0 && !cheap.stdout.contains("details"), "\(cheap.stdout)")
            let fresh = try await strata(["fetch", "species", "--details", "--detail-max-age", "1h"], store: store)
            #expect(fresh.status == 0 && !fresh.stdout.contains("details"), "\(fresh.stdout)")
            let all = try await strata(["fetch", "species", "--details=all"], store: store)
            #expect(all.status == 0 && all.stdout.contains("3 details"), "\(all.stdout)")
            let history = try await strata(["history", "species", "bulbasaur"], store: store)
            #expect(history.stdout.contains("changed     detail"), "\(history.stdout)")
            // Bad spellings are usage errors naming the flag.
            let bogus = try await strata(["fetch", "species", "--details=sometimes"], store: store)
            #expect(bogus.status == 64 && bogus.stderr.contains("--details"))
            let lonely = try await strata(["fetch", "species", "--detail-max-age", "1h"], store: store)
            #expect(lonely.status == 64 && lonely.stderr.contains("--detail-max-age"))
            let badAge = try await strata(["fetch", "species", "--details", "--detail-max-age", "soon"], store: store)
            #expect(badAge.status == 64 && badAge.stderr.contains("--detail-max-age"))

            // A cursor-paged source through the flags, and a flag that needs its partner.
            server.version = 1
            let add = try await strata(
                [
                    "source", "add", "feed", "--url", server.baseURL + "/cars/offers", "--items", "results",
                    "--cursor-path", "meta.next_cursor", "--cursor-param", "cursor", "--page-size", "7"
                ], store: store)
            #expect(add.status == 0, "\(add.stderr)")
            let feed = try await strata(["fetch", "feed"], store: store)
            #expect(feed.status == 0 && feed.stdout.hasPrefix("feed: 4 pages, +24 added"), "\(feed.stdout)")
            let half = try await strata(["source", "add", "half", "--url", server.baseURL + "/cars/offers", "--cursor-path", "meta.next_cursor"], store: store)
            #expect(half.status == 64 && half.stderr.contains("--cursor-param"))
        }
    }
}
