import FixtureServer
import Foundation
import StrataTestSupport
import Testing

/// `source add|change --ignore`: fields that change on every poll make no version, no diff
/// entry and no alert when they are all that changed; the stored bodies keep them.
@Suite struct IgnoreCLITests {
    private func versions(_ store: String, _ id: String) async throws -> Int {
        let h = try await strata(["history", "cars", id, "--format", "json"], store: store)
        return ((try? JSONSerialization.jsonObject(with: Data(h.stdout.utf8))) as? [Any])?.count ?? -1
    }

    @Test func ignoredChurnLeavesHistoryDiffsAndAlertsAlone() async throws {
        try await withFixtureServer { server in
            let receiver = try WebhookReceiver()
            let store = makeStoreDir()
            let url = server.baseURL + "/cars/offers"
            let bad = try await strata(["source", "add", "cars", "--url", url, "--items", "results", "--ignore", "price..drop"], store: store)
            #expect(bad.status == 64 && bad.stderr.contains("--ignore"), "\(bad.stderr)")
            #expect(
                try await strata(["source", "add", "cars", "--url", url, "--items", "results", "--title", "model", "--ignore", "price"], store: store).status
                    == 0)
            #expect(try await strata(["source", "show", "cars", "--format", "json"], store: store).stdout.contains("\"ignore\""))
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            #expect(try await strata(["alert", "add", "cars", "all", "--webhook", receiver.url], store: store).status == 0)
            server.version = 2
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)

            // Item 3 changed only its price between v1 and v2: no new version, no diff entry, no alert.
            #expect(try await versions(store, "3") == 1)
            #expect(try await strata(["show", "cars", "3", "--format", "json"], store: store).stdout.contains("12300"), "the version as it stands")
            // Item 5 changed another field: a version as ever.
            #expect(try await versions(store, "5") == 2)
            let passes = try await strata(["log", "--type", "FetchCompleted", "--format", "ndjson"], store: store).stdout.split(separator: "\n")
                .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["seq"] as? Int }.sorted()
            #expect(passes.count == 2)
            let diff = try await strata(["diff", "cars", "--from", String(passes.first ?? 0), "--format", "json"], store: store)
            let ids = ((try? JSONSerialization.jsonObject(with: Data(diff.stdout.utf8)) as? [String: Any])?["items"] as? [[String: Any]] ?? []).compactMap {
                $0["id"] as? String
            }
            #expect(!ids.contains("3") && ids.contains("5"), "\(ids)")
            #expect(try await strata(["alert", "deliver"], store: store).status == 0)
            let items = Set(receiver.accepted.compactMap { ($0.json as? [String: Any])?["item"] as? String })
            #expect(!items.contains("3") && items.contains("5"), "\(items)")
            // Cleared with '': the price counts again.
            #expect(try await strata(["source", "change", "cars", "--ignore", ""], store: store).status == 0)
            #expect(!(try await strata(["source", "show", "cars", "--format", "json"], store: store).stdout.contains("\"ignore\"")))
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            #expect(try await versions(store, "3") == 2, "the stored price was behind the API's: now it is a version")
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }
}
