import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Two stores sharing one history through a real PostgreSQL, with the binary: the README's
/// two-node setup.
@Suite(.serialized) struct TeamLogCLITests {
    @Test func twoStoresShareTheirHistoryThroughATeamLog() async throws {
        let pg = try await offPoolThread { try PostgresServer() }
        try await withFixtureServer { server in
            let (a, b) = (makeStoreDir(), makeStoreDir())
            let add = try await strata(["source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                                        "--page-param", "page", "--page-size", "10", "--index", "make"], store: a)
            #expect(add.status == 0)
            for store in [a, b] { #expect(try await strata(["remote", "add", "team", pg.url], store: store).status == 0) }
            #expect(try await strata(["fetch", "cars"], store: a).status == 0)
            let status = try await strata(["remote", "status"], store: a)
            #expect(status.stdout.contains("ahead: 5 event(s) to push"), "\(status.stdout)\(status.stderr)")
            let push = try await strata(["remote", "push"], store: a)
            #expect(push.status == 0 && push.stdout.contains("pushed 5 event(s)"), "\(push.stdout)\(push.stderr)")
            let pull = try await strata(["remote", "pull"], store: b)
            #expect(pull.status == 0 && pull.stdout.contains("pulled 5 event(s)"), "\(pull.stdout)\(pull.stderr)")
            for args in [["list", "cars", "--format", "json"], ["history", "cars", "3", "--format", "json"], ["list", "cars", "--as-of", "3", "--format", "json"]] {
                let x = try await strata(args, store: a), y = try await strata(args, store: b)
                #expect(x.status == 0 && x.stdout == y.stdout, "\(args)")
            }
            // B fetches the next version and syncs; A pulls it.
            server.version = 2
            #expect(try await strata(["fetch", "cars"], store: b).status == 0)
            #expect(try await strata(["remote", "sync"], store: b).status == 0)
            let pulled = try await strata(["remote", "pull"], store: a)
            #expect(pulled.stdout.contains("pulled 4 event(s)"), "\(pulled.stdout)\(pulled.stderr)")
            let x = try await strata(["list", "cars", "--format", "json"], store: a), y = try await strata(["list", "cars", "--format", "json"], store: b)
            #expect(x.stdout == y.stdout && x.stdout.contains("\"id\""))
            let verified = try await strata(["remote", "status", "--verify"], store: a)
            #expect(verified.status == 0 && verified.stdout.contains("chain: ok (9 events, gapless)"), "\(verified.stdout)\(verified.stderr)")
            // No password in the registry, a refused connection is one clear line.
            #expect(try await strata(["remote", "add", "pw", "postgres://strata:secret@db/x"], store: a).status == 64)
            #expect(try await strata(["remote", "add", "down", "postgres://strata@/strata?host=/tmp/strata-pg-none"], store: a).status == 0)
            let down = try await strata(["remote", "push", "down"], store: a)
            #expect(down.status == 1 && down.stderr.hasPrefix("Error: could not connect to the team log"), "\(down.stderr)")
        }
        _ = pg
    }
}
