import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Retention through the real binary: `--keep-versions` and `--keep` drop what lies before the
/// horizon at `strata compact`, reads across the horizon answer as before or refuse clearly, the
/// chain verifies, and `stats` shows what was freed.
@Suite struct RetentionCLITests {
    /// Documents of `list --as-of`, by id.
    static func documents(_ store: String, asOf: String) async throws -> [String: NSDictionary] {
        let r = try await strata(["list", "cars", "--as-of", asOf, "--format", "json", "--limit", "100"], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let items = try #require(try jsonObject(r.stdout) as? [[String: Any]])
        var out: [String: NSDictionary] = [:]
        for i in items { if let id = i["id"] as? String, let d = i["document"] as? [String: Any] { out[id] = d as NSDictionary } }
        return out
    }

    @Test func keepVersionsDropsWhatLiesBeforeTheHorizon() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                    "--page-size", "10", "--detail-url", fixture.baseURL + "/cars/offers/{id}"
                ], store: store)
            #expect(add.status == 0)
            var models: [String] = []
            var heads: [Int] = []
            for round in 1...4 {
                let model = "Model-\(round)-\(UUID().uuidString)"
                models.append(model)
                let doc = #"{"id":3,"make":"Toyota","model":"\#(model)","price":\#(20_000 + round)}"#
                _ = try await curl(["-X", "PUT", "-H", "Content-Type: application/json", "-d", doc, fixture.baseURL + "/cars/offers/3"])
                #expect(try await strata(["fetch", "cars", "--details"], store: store).status == 0)
                heads.append(try await headSeq(store))
            }
            let lastKept = try await Self.documents(store, asOf: String(heads[3]))
            let secondKept = try await Self.documents(store, asOf: String(heads[2]))
            #expect(lastKept.count >= 24 && secondKept.count >= 24, "the list reads documents")
            #expect(try await strata(["source", "change", "cars", "--keep-versions", "2"], store: store).status == 0)
            let compact = try await strata(["compact"], store: store)
            #expect(compact.status == 0 && compact.stdout.contains("retention: cars dropped"), "\(compact.stdout) \(compact.stderr)")
            // The two passes kept read as they did; before them, a clear refusal.
            #expect(try await Self.documents(store, asOf: String(heads[3])) == lastKept)
            #expect(try await Self.documents(store, asOf: String(heads[2])) == secondKept)
            let before = try await strata(["list", "cars", "--as-of", String(heads[0])], store: store)
            #expect(before.status == 3 && before.stderr.contains("before the retention horizon (seq"), "\(before.stderr)")
            let history = try await strata(["history", "cars", "3", "--format", "json"], store: store)
            let versions = try #require(try jsonObject(history.stdout) as? [[String: Any]])
            #expect(versions.count == 2, "\(history.stdout.prefix(300))")
            // The raw tables (`strata doc`) refuse the same points and keep the same history.
            for args in [
                ["doc", "show", "--projection", "items", "cars", "3", "--as-of", String(heads[0])],
                ["doc", "list", "--projection", "items", "cars", "--as-of", String(heads[0])],
                ["doc", "diff", "--projection", "items", "cars", "--from", String(heads[0])]
            ] {
                let r = try await strata(args, store: store)
                #expect(r.status == 3 && r.stderr.contains("before the retention horizon (seq"), "\(args): \(r.stderr)")
            }
            #expect(try await strata(["doc", "show", "--projection", "items", "cars", "3", "--as-of", String(heads[2])], store: store).status == 0)
            let raw = try await strata(["doc", "history", "--projection", "items", "cars", "3", "--format", "json"], store: store)
            let rawVersions = try jsonObject(raw.stdout) as? [[String: Any]]
            #expect(raw.status == 0 && rawVersions?.count == 2, "\(raw.stdout.prefix(300))")
            let verify = try await strata(["verify"], store: store)
            #expect(verify.status == 0 && verify.stdout.contains("(retention)"), "\(verify.stdout)")
            let stats = try await strata(["stats"], store: store)
            #expect(stats.stdout.contains("retention    cars:"), "\(stats.stdout)")
            // What only the dropped passes held is gone from the decoded log; what is kept is there.
            let events = try await strata(["export", "--events", "--payloads"], store: store).stdout
            #expect(!events.contains(models[0]) && !events.contains(models[1]))
            #expect(events.contains(models[2]) && events.contains(models[3]))
            // A second compaction with nothing new past the window drops nothing more.
            let again = try await strata(["compact"], store: store)
            #expect(again.status == 0 && !again.stdout.contains("retention:"), "\(again.stdout)")
        }
    }

    /// `strata watch` applies a source's window after its fetches, no compaction needed, and at
    /// most once a day by the log (a retention that moves rewrites bodies and folds again).
    @Test func watchAppliesTheWindowAfterItsFetches() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                    "--page-size", "10", "--every", "1s", "--jitter", "0", "--keep-versions", "2"
                ], store: store)
            #expect(add.status == 0, "\(add.stderr)")
            var models: [String] = []
            var heads: [Int] = []
            var logs: [String] = []
            for round in 1...4 {
                let model = "Watched-\(round)-\(UUID().uuidString)"
                models.append(model)
                let doc = #"{"id":3,"make":"Toyota","model":"\#(model)","price":\#(30_000 + round)}"#
                _ = try await curl(["-X", "PUT", "-H", "Content-Type: application/json", "-d", doc, fixture.baseURL + "/cars/offers/3"])
                if round > 1 { try await Task.sleep(for: .milliseconds(1_100)) }
                let watch = try await strata(["watch", "--once"], store: store)
                #expect(watch.status == 0 && watch.stderr.contains("outcome=ok"), "round \(round): \(watch.stderr)")
                logs.append(watch.stderr)
                heads.append(try await headSeq(store))
            }
            // Two passes are within the window; the third moves the horizon past the first; the
            // fourth would move it again, but the window was applied less than a day ago.
            #expect(!logs[0].contains("retention") && !logs[1].contains("retention"), "\(logs[1])")
            #expect(logs[2].contains("retention") && logs[2].contains("source=cars") && logs[2].contains("bodies="), "\(logs[2])")
            #expect(!logs[3].contains("retention"), "\(logs[3])")
            let applied = try await strata(["log", "--type", "RetentionApplied", "--format", "json"], store: store)
            #expect(applied.stdout.components(separatedBy: "\"RetentionApplied\"").count - 1 == 1, "\(applied.stdout)")
            let before = try await strata(["list", "cars", "--as-of", String(heads[0])], store: store)
            #expect(before.status == 3 && before.stderr.contains("before the retention horizon (seq"), "\(before.stderr)")
            #expect(try await strata(["list", "cars", "--as-of", String(heads[1])], store: store).status == 0)
            let history = try await strata(["history", "cars", "3", "--format", "json"], store: store)
            let versions = try #require(try jsonObject(history.stdout) as? [[String: Any]])
            #expect(versions.count == 3, "the two passes kept and the one after: \(history.stdout.prefix(300))")
            let events = try await strata(["export", "--events", "--payloads"], store: store).stdout
            #expect(!events.contains(models[0]) && events.contains(models[1]) && events.contains(models[3]))
            let verify = try await strata(["verify"], store: store)
            #expect(verify.status == 0 && verify.stdout.contains("(retention)"), "\(verify.stdout)")
        }
    }

    @Test func keepByDurationUsesObservedTimes() async throws {
        let store = makeStoreDir()
        var files: [String] = []
        for (i, model) in ["Old-\(UUID().uuidString)", "Mid-\(UUID().uuidString)", "New-\(UUID().uuidString)"].enumerated() {
            let file = TestScratch.path("retention") + ".json"
            try Data(#"{"results":[{"id":1,"model":"\#(model)","n":\#(i)}]}"#.utf8).write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        #expect(try await strata(["source", "add", "cars", "--url", "file://" + files[0], "--items", "results", "--keep", "30d"], store: store).status == 0)
        for (file, date) in zip(files, ["2025-01-01T00:00:00Z", "2025-06-01T00:00:00Z", ISO8601DateFormatter().string(from: Date())]) {
            #expect(try await strata(["import", "cars", file, "--recorded-at", date], store: store).status == 0)
        }
        let compact = try await strata(["compact"], store: store)
        #expect(compact.status == 0 && compact.stdout.contains("retention: cars dropped 1 bodies"), "\(compact.stdout) \(compact.stderr)")
        // The pass current 30 days ago (June) is kept whole; January is gone.
        let june = try await strata(["show", "cars", "1", "--as-of", "2025-07-01T00:00:00Z", "--format", "json"], store: store)
        #expect(june.status == 0 && june.stdout.contains("Mid-"), "\(june.stderr)")
        let january = try await strata(["show", "cars", "1", "--as-of", "2025-02-01T00:00:00Z"], store: store)
        #expect(january.status == 3 && january.stderr.contains("before the retention horizon"), "\(january.stderr)")
        #expect(try await strata(["verify"], store: store).status == 0)
        let bad = try await strata(["source", "change", "cars", "--keep", "30d", "--keep-versions", "3"], store: store)
        #expect(bad.status == 64, "\(bad.stderr)")
    }
}
