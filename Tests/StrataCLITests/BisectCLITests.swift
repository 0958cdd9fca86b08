import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata bisect` on a fixture history where the API's third version breaks a client script.
@Suite struct BisectCLITests {
    /// A client that fails when the RAV4 (item 3) costs 11,600, as it does in the third version.
    static func script(_ target: String) throws -> String {
        let path = TestScratch.path("client") + ".sh"
        try """
        #!/bin/sh
        test -n "$STRATA_URL" || exit 200
        body=$(curl -sf "$STRATA_URL\(target)") || exit 125
        echo "$body" | grep -q '"price": *11600' && exit 1
        exit 0
        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    @Test func theFirstBadPointIsFoundInLog2StepsWithWhatChanged() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            #expect(
                try await strata(
                    ["source", "add", "cars", "--url", fixture.baseURL + "/cars/offers?size=30", "--items", "results", "--title", "model"], store: store
                ).status == 0)
            // Passes over the versions 1 2 1 2 1 2 3 3: six changes after the first, then the break.
            var heads: [Int] = []
            for v in [1, 2, 1, 2, 1, 2, 3, 3] {
                fixture.version = v
                let f = try await strata(["fetch", "cars"], store: store)
                #expect(f.status == 0, "\(f.stderr)")
                heads.append(try await headSeq(store))
            }
            let client = try Self.script("/cars/offers?size=30")
            let r = try await strata(["bisect", "--good", String(heads[0]), "--bad", "now", "--format", "json", "--", client], store: store)
            #expect(r.status == 0, "\(r.stderr)")
            let o = try #require(try jsonObject(r.stdout) as? [String: Any], "\(r.stdout) \(r.stderr)")
            let firstBad = try #require(o["firstBad"] as? [String: Any]), lastGood = try #require(o["lastGood"] as? [String: Any])
            #expect(firstBad["seq"] as? Int == heads[6], "the pass that fetched version 3")
            #expect(lastGood["seq"] as? Int == heads[5])
            #expect(firstBad["source"] as? String == "cars" && firstBad["kind"] as? String == "fetch run" && firstBad["observedAt"] is String)
            // Six candidates (the repeated version 3 changed nothing): ⌈log2 6⌉ = 3 checks.
            #expect(o["candidates"] as? Int == 6 && o["steps"] as? Int == 3, "\(o)")
            let changes = try #require(o["changes"] as? [[String: Any]])
            let item3 = changes.first { $0["type"] as? String == "item" && $0["id"] as? String == "3" }
            let fields = (item3?["changes"] as? [[String: Any]])?.compactMap { $0["path"] as? String } ?? []
            #expect(fields.contains("/price"), "\(changes)")
            #expect(changes.contains { $0["type"] as? String == "response" }, "the changed list page")
            #expect((o["reproduce"] as? String)?.hasPrefix("strata serve --as-of \(heads[6])") == true)
            // The table says the same.
            let table = try await strata(["bisect", "--good", String(heads[0]), "--bad", String(heads[7]), "--", client], store: store)
            #expect(
                table.status == 0 && table.stdout.contains("first bad: seq \(heads[6])") && table.stdout.contains("reproduce: strata serve --as-of \(heads[6])")
            )

            // A good point that is bad, a bad point that is good, and a command that aborts.
            let goodIsBad = try await strata(["bisect", "--good", String(heads[6]), "--bad", "now", "--", client], store: store)
            #expect(goodIsBad.status == 1 && goodIsBad.stderr.contains("already bad"), "\(goodIsBad.stderr)")
            let badIsGood = try await strata(["bisect", "--good", String(heads[0]), "--bad", String(heads[5]), "--", client], store: store)
            #expect(badIsGood.status == 1 && badIsGood.stderr.contains("is good"), "\(badIsGood.stderr)")
            let aborts = try await strata(["bisect", "--good", String(heads[0]), "--bad", "now", "--", "sh", "-c", "exit 200"], store: store)
            #expect(aborts.status == 1 && aborts.stderr.contains("exited 200"), "\(aborts.stderr)")
            let skipAll = try await strata(["bisect", "--good", String(heads[0]), "--bad", "now", "--", "sh", "-c", "exit 125"], store: store)
            #expect(skipAll.status == 1 && skipAll.stderr.contains("cannot be tested"), "\(skipAll.stderr)")
            let noCommand = try await strata(["bisect", "--good", "1", "--bad", "now"], store: store)
            #expect(noCommand.status == 64 && noCommand.stderr.contains("after --"), "\(noCommand.stderr)")
            let reversed = try await strata(["bisect", "--good", String(heads[5]), "--bad", String(heads[0]), "--", client], store: store)
            #expect(reversed.status == 1 && reversed.stderr.contains("before the bad one"), "\(reversed.stderr)")
        }
    }

    @Test func recordedExchangesAreCandidatesToo() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let proxy = try await Listening.start(["proxy", "api", "--upstream", fixture.baseURL, "--port", "0"], store: store)
            var n = 0
            var heads: [Int] = []
            for v in [1, 2, 3] {
                fixture.version = v
                _ = try await curl([proxy.base + "/cars/offers?page=1&size=30"])
                _ = try await curl([proxy.base + "/cars/offers/1"])
                n += 2
                _ = try await waitForEvents(store, type: "ExchangeRecorded", count: n)
                heads.append(try await headSeq(store))
            }
            #expect(try await proxy.stop().status == 0)
            let r = try await strata(
                [
                    "bisect", "--good", String(heads[0]), "--bad", "now", "--source", "api", "--format", "json", "--",
                    try Self.script("/cars/offers?page=1&size=30")
                ], store: store)
            #expect(r.status == 0, "\(r.stderr)")
            let o = try #require(try jsonObject(r.stdout) as? [String: Any], "\(r.stdout)")
            let firstBad = try #require(o["firstBad"] as? [String: Any])
            #expect(firstBad["kind"] as? String == "exchange" && (firstBad["request"] as? String ?? "").contains("/cars/offers?page=1"), "\(firstBad)")
            let changes = try #require(o["changes"] as? [[String: Any]])
            #expect(changes.count == 1 && changes[0]["bodyChanged"] as? Bool == true, "\(changes)")
        }
    }
}
