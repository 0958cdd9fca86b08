import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata export`: a SQLite file read back with the sqlite3 command line and checked against
/// `strata history` for every item; CloudEvents checked against the spec's required attributes.
@Suite struct ExportCLITests {
    /// Rows of a query, through `sqlite3 -json`.
    func query(_ db: String, _ sql: String) async throws -> [[String: Any]] {
        let out = try await offPool { try GitImportCLITests.run(["sqlite3", "-json", db, sql]) }
        guard !out.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return [] }
        return try jsonObject(out) as? [[String: Any]] ?? []
    }

    @Test func sqliteExportMatchesHistoryForEveryItem() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            #expect(
                try await strata(
                    [
                        "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results",
                        "--title", "make", "--page-param", "page", "--page-size", "10"
                    ], store: store
                ).status == 0)
            #expect(
                try await strata(
                    [
                        "source", "add", "species", "--url", server.baseURL + "/species/all", "--items", "results",
                        "--id", "name", "--detail-url-field", "url"
                    ], store: store
                ).status == 0)
            for v in 1...3 {
                server.version = v
                let r = try await strata(["fetch", "cars", "species", "--details"], store: store)
                #expect(r.status == 0, "\(r.stderr)")
            }
            for source in ["cars", "species"] {
                let db = TestScratch.path("export") + ".db"
                let r = try await strata(["export", source, "--sqlite", db], store: store)
                #expect(r.status == 0, "\(r.stderr)")
                let items = try await query(db, "SELECT _id, _removed FROM items ORDER BY _id")
                let listed =
                    try jsonObject(try await strata(["list", source, "--format", "json", "--limit", "1000"], store: store).stdout) as? [[String: Any]] ?? []
                #expect(
                    Set(items.filter { ($0["_removed"] as? Int) == 0 }.compactMap { $0["_id"] as? String }) == Set(listed.compactMap { $0["id"] as? String }))
                for row in items {
                    let id = row["_id"] as! String
                    let history = try jsonObject(try await strata(["history", source, id, "--format", "json"], store: store).stdout) as? [[String: Any]] ?? []
                    let versions = try await query(db, "SELECT _origin, _version, _seq, _kind, _document FROM item_versions WHERE _item = '\(id)' ORDER BY _id")
                    #expect(versions.count == history.count, "\(source)/\(id)")
                    for (v, h) in zip(versions, history) {
                        #expect(
                            v["_origin"] as? String == h["origin"] as? String && v["_kind"] as? String == h["kind"] as? String
                                && v["_version"] as? Int == h["version"] as? Int && v["_seq"] as? Int == h["seq"] as? Int, "\(source)/\(id)")
                        let doc = try jsonObject(v["_document"] as! String) as? NSDictionary
                        #expect(doc == (h["document"] as? NSDictionary), "\(source)/\(id)")
                    }
                    let changes = try await query(db, "SELECT count(*) AS n FROM item_changes WHERE _item = '\(id)'")
                    let expected = history.reduce(0) { $0 + (($1["changes"] as? [Any])?.count ?? 0) }
                    #expect(changes.first?["n"] as? Int == expected, "\(source)/\(id)")
                }
            }
            // Field columns carry the values: the price of a car now.
            let db = TestScratch.path("export") + ".db"
            _ = try await strata(["export", "cars", "--sqlite", db], store: store)
            let one = try await query(db, "SELECT make, price FROM items WHERE _id = '1'")
            #expect(one.first?["make"] is String && one.first?["price"] is Int)
            // A detail that changed on its own is a detail version with its changed columns.
            let sdb = TestScratch.path("export") + ".db"
            _ = try await strata(["export", "species", "--sqlite", sdb], store: store)
            let changed = try await query(
                sdb, "SELECT _changed FROM item_versions WHERE _item = 'charmander' AND _origin = 'detail' AND _kind = 'changed' ORDER BY _id")
            #expect(changed.map { $0["_changed"] as? String } == [#"["base_happiness"]"#, #"["habitat"]"#])
            // A missing directory is a clear error, and nothing is left behind.
            let bad = try await strata(["export", "cars", "--sqlite", "/nonexistent-dir/x.db"], store: store)
            #expect(bad.status == 1 && bad.stderr.contains("/nonexistent-dir/x.db"))
        }
    }

    @Test func cloudEventsCarryTheRequiredAttributesAndResumeBySeq() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            #expect(
                try await strata(
                    [
                        "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results",
                        "--page-param", "page", "--page-size", "10"
                    ], store: store
                ).status == 0)
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            let all = try await strata(["export", "--events", "--format", "cloudevents", "--payloads"], store: store)
            #expect(all.status == 0)
            let lines = all.stdout.split(separator: "\n")
            #expect(lines.count >= 5)
            var seqs: [Int] = []
            for line in lines {
                let e = try jsonObject(String(line)) as! [String: Any]
                // Required: id, source (a URI-reference), specversion 1.0, type; all non-empty strings.
                for attr in ["id", "source", "specversion", "type"] { #expect((e[attr] as? String)?.isEmpty == false, "\(attr)") }
                #expect(e["specversion"] as? String == "1.0")
                #expect(URL(string: e["source"] as! String) != nil)
                // time is RFC 3339; extension names are lowercase letters and digits.
                #expect(ISO8601DateFormatter.withFraction.date(from: e["time"] as! String) != nil)
                let core: Set = ["id", "source", "specversion", "type", "time", "subject", "datacontenttype", "data", "dataschema", "data_base64"]
                for key in e.keys where !core.contains(key) {
                    #expect(key.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) } && key.count <= 20, "\(key)")
                }
                seqs.append(e["strataseq"] as! Int)
                if e["type"] as? String == "dev.strata.CollectionPageFetched" {
                    #expect(((e["data"] as? [String: Any])?["payload"] as? [String: Any])?["results"] is [Any])
                }
            }
            #expect(seqs == Array(1...seqs.count))
            // Resumable: after seq N, exactly the events after N.
            let tail = try await strata(["export", "--events", "--format", "cloudevents", "--since", "3"], store: store)
            let tailSeqs = try tail.stdout.split(separator: "\n").map { try jsonObject(String($0)) as! [String: Any] }.map { $0["strataseq"] as! Int }
            #expect(tailSeqs == Array(seqs.dropFirst(3)))
            let nd = try await strata(["export", "--events", "--since", "\(seqs.count - 1)"], store: store)
            #expect(nd.stdout.split(separator: "\n").count == 1)
            #expect((try jsonObject(String(nd.stdout.split(separator: "\n")[0])) as? [String: Any])?["seq"] as? Int == seqs.count)
        }
    }
}

extension ISO8601DateFormatter {
    static var withFraction: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }
}
