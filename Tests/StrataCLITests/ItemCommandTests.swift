import FixtureServer
import Foundation
import StrataTestSupport
import Testing

/// The built binary against the fixture server: list, show, history, diff and as-of, their
/// JSON shapes, exit codes and stderr.
@Suite(.serialized) struct ItemCommandTests {
    /// A store with the cars source fetched at v1, v2 and v3 (details and images); returns the
    /// server (at v3), the store and the seq of each fetch's `FetchCompleted`.
    func fetchedCars() async throws -> (FixtureServer, String, [Int]) {
        let server = FixtureServer(root: fixturesRoot)
        try await server.start()
        let store = makeStoreDir()
        let add = try await strata(
            [
                "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results",
                "--title", "model", "--subtitle", "make", "--image", "image", "--page-param", "page", "--page-size", "10",
                "--index", "make,model", "--detail-url", server.baseURL + "/cars/offers/{id}"
            ], store: store)
        #expect(add.status == 0, "\(add.stderr)")
        for v in 1...3 {
            server.version = v
            let f = try await strata(["fetch", "cars", "--details", "--images"], store: store)
            #expect(f.status == 0, "\(f.stderr)")
        }
        let runs =
            try jsonObject(try await strata(["log", "--type", "FetchCompleted", "--oldest-first", "--format", "json"], store: store).stdout) as! [[String: Any]]
        return (server, store, runs.map { $0["seq"] as! Int })
    }

    @Test func listTableJsonCsvFiltersAndAsOf() async throws {
        let (server, store, runs) = try await fetchedCars()
        defer { Task { await server.stop() } }
        let table = try await strata(["list", "cars"], store: store)
        #expect(table.status == 0 && table.stderr.isEmpty)
        let lines = table.stdout.split(separator: "\n")
        #expect(lines[0].hasPrefix("ID  TITLE") && lines[0].contains("MAKE") && lines[0].contains("IMAGE"))
        #expect(lines.contains { $0 == "25 items" })
        #expect(lines.last?.hasPrefix("cars: last fetched ") == true && lines.last?.hasSuffix("(seq \(runs[2]))") == true)
        #expect(table.stdout.contains(server.baseURL + "/cars/images/3.png"))

        let json = try await strata(["list", "cars", "--where", "make=Toyota", "--sort", "price", "--format", "json"], store: store)
        let rows = try jsonObject(json.stdout) as! [[String: Any]]
        #expect(!rows.isEmpty)
        #expect(
            Set(rows[0].keys) == [
                "source", "id", "title", "subtitle", "fields", "imageURL", "image", "version", "firstSeq", "changedSeq", "removed", "document", "detail",
                "pending", "conflicted"
            ])
        #expect(rows.allSatisfy { ($0["fields"] as! [String: String])["make"] == "Toyota" })
        let prices = rows.map { ($0["document"] as! [String: Any])["price"] as! Int }
        #expect(prices == prices.sorted())
        #expect((rows[0]["image"] as? [String: Any])?["contentType"] as? String == "image/png")
        // Sorting by a field that is not indexed reads every item, and stderr says which --index would not.
        #expect(
            json.stderr.contains("note: `price` is not indexed") && json.stderr.contains("strata source change cars --index make,model,price"),
            "\(json.stderr)")
        let indexedOnly = try await strata(["list", "cars", "--where", "make=Toyota"], store: store)
        #expect(indexedOnly.status == 0 && indexedOnly.stderr.isEmpty, "\(indexedOnly.stderr)")
        let scanned = try await strata(["list", "cars", "--where", "rating=4.5", "--format", "csv"], store: store)
        #expect(scanned.stderr.contains("`rating` is not indexed") && !scanned.stdout.contains("note:"))

        let asOf = try await strata(["list", "cars", "--as-of", String(runs[0]), "--format", "ndjson"], store: store)
        #expect(asOf.stdout.split(separator: "\n").count == 24)
        let asOfTable = try await strata(["list", "cars", "--as-of", String(runs[0]), "--limit", "3", "--offset", "3"], store: store)
        #expect(asOfTable.stdout.contains("4–6 of 24 · as of seq \(runs[0])"))
        let search = try await strata(["list", "cars", "--search", "RAV4", "--format", "csv"], store: store)
        let csv = search.stdout.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(csv[0] == "id,title,subtitle,make,model,image,removed" && csv.count > 1 && csv.dropFirst().allSatisfy { $0.contains(",RAV4,") })
        let narrow = try await strata(["list", "cars", "--limit", "2"], store: store, env: ["COLUMNS": "60"])
        #expect(narrow.stdout.split(separator: "\n").allSatisfy { $0.count <= 60 } && !narrow.stdout.contains("ID  TITLE"))
    }

    @Test func showDownloadsFailsSoftlyAndReadsAsOf() async throws {
        let (server, store, runs) = try await fetchedCars()
        defer { Task { await server.stop() } }
        let before = server.requests(to: "/cars/offers/3")
        let show = try await strata(["show", "cars", "3"], store: store)
        #expect(show.status == 0 && show.stderr.isEmpty)
        #expect(server.requests(to: "/cars/offers/3") == before + 1)
        #expect(show.stdout.hasPrefix("RAV4  (cars/3)") && show.stdout.contains("seller.city") && show.stdout.contains("Wien"))
        let json = try jsonObject(try await strata(["show", "cars", "3", "--offline", "--format", "json"], store: store).stdout) as! [String: Any]
        #expect((json["detail"] as? [String: Any])?["specs"] != nil && json["version"] as? Int == 3)

        server.setFault(.serverError, for: "/cars/offers/3")
        let failed = try await strata(["show", "cars", "3"], store: store)
        #expect(failed.status == 0)
        // The stored detail, still shown; the failure said once, on stderr, with the detail's URL.
        #expect(failed.stdout.contains("seller.city") && !failed.stdout.contains("could not download"))
        #expect(failed.stderr.hasPrefix("warning: could not download the detail of 3: HTTP 500"), "\(failed.stderr)")
        #expect(failed.stderr.contains("/cars/offers/3") && failed.stderr.split(separator: "\n").count == 1, "\(failed.stderr)")
        let fresh = try await strata(["show", "cars", "3", "--fresh"], store: store)
        #expect(fresh.status == 1 && fresh.stdout.isEmpty && fresh.stderr.hasPrefix("Error: could not download the detail of 3: HTTP 500"), "\(fresh.stderr)")
        let log = try await strata(["log", "--type", "FetchFailed", "--limit", "1", "--format", "json"], store: store)
        #expect(log.stdout.contains("\"stage\": \"detail\""))

        let requests = server.requests(to: "/cars/offers/3")
        // As of the v2 list the detail stored was v1's (details follow their list): Gent, not Wien.
        let old = try await strata(["show", "cars", "3", "--as-of", String(runs[1])], store: store)
        #expect(old.status == 0 && server.requests(to: "/cars/offers/3") == requests)
        #expect(old.stdout.contains("as of seq \(runs[1])") && old.stdout.contains("Gent") && !old.stdout.contains("Wien"))
        let beforeDetails = try await strata(["show", "cars", "3", "--as-of", String(runs[0])], store: store)
        #expect(beforeDetails.status == 0 && !beforeDetails.stdout.contains("seller.city"))
        let missing = try await strata(["show", "cars", "999", "--offline"], store: store)
        #expect(missing.status == 3 && missing.stderr.hasPrefix("Error: no item 999 in cars"))
    }

    @Test func historyAndDiff() async throws {
        let (server, store, runs) = try await fetchedCars()
        defer { Task { await server.stop() } }
        let h = try await strata(["history", "cars", "9"], store: store)
        #expect(h.status == 0)
        let kinds = h.stdout.split(separator: "\n").filter { $0.contains("  list ") }.compactMap { line in
            ["added", "removed", "reappeared", "changed"].first { line.hasPrefix("v") && line.contains("  \($0)") }
        }
        #expect(kinds == ["added", "removed", "reappeared"])
        #expect(h.stdout.contains("~ /price:"))
        let all = try jsonObject(try await strata(["history", "cars", "3", "--format", "json"], store: store).stdout) as! [[String: Any]]
        // The list entry's versions; the detail's (fetched by `show`) come labelled beside them.
        let json = all.filter { $0["origin"] as? String == "list" }
        #expect(all.contains { $0["origin"] as? String == "detail" })
        #expect(json.map { $0["kind"] as! String } == ["added", "changed", "changed"])
        #expect(Set(json[1].keys) == ["version", "seq", "recordedAt", "kind", "run", "eventType", "changes", "document", "origin", "backfilled"])
        let change = (json[1]["changes"] as! [[String: Any]])[0]
        #expect(change["path"] as? String == "/price" && change["kind"] as? String == "replaced" && change["old"] is Int && change["new"] is Int)
        let ignored =
            try jsonObject(try await strata(["history", "cars", "3", "--ignore", "price", "--ignore", "rating", "--format", "json"], store: store).stdout)
            as! [[String: Any]]
        #expect(ignored.filter { $0["origin"] as? String == "list" }.count == 1)
        let cut =
            try jsonObject(try await strata(["history", "cars", "9", "--as-of", String(runs[1]), "--format", "json"], store: store).stdout) as! [[String: Any]]
        #expect(cut.filter { $0["origin"] as? String == "list" }.count == 2)

        let diff = try await strata(["diff", "cars", "--from", String(runs[0]), "--to", String(runs[1])], store: store)
        #expect(diff.stdout.hasPrefix("cars: seq \(runs[0]) → \(runs[1]): 3 added, 4 changed, 2 removed, 0 reappeared"))
        let dj = try jsonObject(try await strata(["diff", "cars", "--from", String(runs[0]), "--format", "json"], store: store).stdout) as! [String: Any]
        #expect(Set(dj.keys) == ["source", "fromSeq", "toSeq", "items"])
        let items = dj["items"] as! [[String: Any]]
        #expect(Set(items[0].keys) == ["id", "title", "kind", "changes"])
        let backwards = try await strata(["diff", "cars", "--from", String(runs[1]), "--to", String(runs[0])], store: store)
        #expect(backwards.status == 64 && backwards.stderr.contains("swap them"))
    }

    /// What a new user tripped on in the tour: the help's own `--sort -price` works, a
    /// mistyped command gets the command it resembles, and an id the store never held is not
    /// found at once, with nothing asked of the network or written to the log.
    @Test func theToursStumblesGetAnswers() async throws {
        let (_, store, _) = try await fetchedCars()
        let sorted = try await strata(["list", "cars", "--sort", "-price", "--limit", "3", "--format", "json"], store: store)
        let written = try await strata(["list", "cars", "--sort=-price", "--limit", "3", "--format", "json"], store: store)
        #expect(sorted.status == 0 && sorted.stdout == written.stdout && sorted.stdout.contains("\"id\""), "\(sorted.stderr)")
        let typo = try await strata(["lsit", "cars"], store: store)
        #expect(typo.status == 64 && typo.stderr == "Error: `strata lsit` is not a command; did you mean `strata list`?\n", "\(typo.stderr)")
        let nested = try await strata(["source", "shwo", "cars"], store: store)
        #expect(nested.status == 64 && nested.stderr.contains("did you mean `strata source show`?"), "\(nested.stderr)")
        // A word after a command with a default subcommand is that one's argument.
        let outbox = try await strata(["outbox", "cars"], store: store)
        #expect(outbox.status == 0, "\(outbox.stderr)")
        let nothing = try await strata(["frobnicate"], store: store)
        #expect(nothing.status == 64 && nothing.stderr.contains("see `strata --help` for the list"), "\(nothing.stderr)")
        let events = try await strata(["log", "--limit", "100000", "--format", "ndjson"], store: store).stdout
        let unknown = try await strata(["show", "cars", "999"], store: store)
        #expect(unknown.status == 3 && unknown.stderr.contains("no item 999 in cars: the store never held it"), "\(unknown.stderr)")
        #expect(try await strata(["log", "--limit", "100000", "--format", "ndjson"], store: store).stdout == events, "nothing was recorded")
        // A filter on a field no item has names the field and the closest ones, not an index.
        let typoField = try await strata(["list", "cars", "--where", "mkae=Toyota"], store: store)
        #expect(
            typoField.status == 0 && typoField.stderr.contains("no item of cars has a field `mkae`; did you mean `make`?")
                && !typoField.stderr.contains("--index"), "\(typoField.stderr)")
        // Settings as a table like every other show; the definition as JSON on request.
        let shown = try await strata(["source", "show", "cars"], store: store).stdout
        #expect(shown.hasPrefix("cars\n") && shown.contains("  url ") && !shown.contains("\"url\":"), "\(shown)")
        #expect(try await strata(["source", "show", "cars", "--format", "json"], store: store).stdout.contains("\"url\""))
        // A short summary by default, every table with --details.
        let stats = try await strata(["stats"], store: store).stdout
        let detailed = try await strata(["stats", "--details"], store: store).stdout
        #expect(stats.split(separator: "\n").count <= 10 && stats.contains("projections  ") && detailed.contains("projection   items v"), "\(stats)")
        // A read of a store that is not there creates nothing and says where it looked; in the
        // default store, what is not found names that store.
        let home = makeStoreDir()
        let env = ["STRATA_STORE": "", "XDG_DATA_HOME": home]
        let missing = try await strata(["list", "cars"], store: "", env: env)
        #expect(
            missing.status == 3 && missing.stderr.contains("no store at \(home)/strata (the default: STRATA_STORE and --store are not set)"),
            "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/strata"))
        #expect(try await strata(["source", "add", "boats", "--url", "http://127.0.0.1:9/boats"], store: "", env: env).status == 0)
        let noSource = try await strata(["list", "cars"], store: "", env: env)
        #expect(noSource.status == 3 && noSource.stderr.contains("(in the store at \(home)/strata;"), "\(noSource.stderr)")
    }

    @Test func errorsAndExitCodes() async throws {
        let (server, store, _) = try await fetchedCars()
        let unknown = try await strata(["list", "boats"], store: store)
        #expect(unknown.status == 3 && unknown.stderr == "Error: no source named boats; known: cars\n", "\(unknown)")
        let badPoint = try await strata(["list", "cars", "--as-of", "last tuesday"], store: store)
        #expect(badPoint.status == 64)
        let badWhere = try await strata(["list", "cars", "--where", "make"], store: store)
        #expect(badWhere.status == 64 && badWhere.stderr.contains("names a field but no condition on it"), "\(badWhere.stderr)")
        let badExpression = try await strata(["list", "cars", "--where", "price < \"cheap\""], store: store)
        #expect(badExpression.status == 64 && badExpression.stderr.contains("is not valid at 7: < compares numbers, not a text"))
        let future = try await strata(["list", "cars", "--as-of", "999999"], store: store)
        #expect(future.status == 64 && future.stderr.contains("after the newest event"))
        let noHistory = try await strata(["history", "cars", "nope"], store: store)
        #expect(noHistory.status == 3)
        let log = try await strata(["log", "--limit", "3"], store: store)
        #expect(log.status == 0 && log.stdout.hasPrefix("SEQ  TIME"))
        // A refresh against a server that is gone: the stored list, the error on stderr, exit 1.
        await server.stop()
        let refresh = try await strata(["list", "cars", "--refresh", "--limit", "2"], store: store)
        #expect(refresh.status == 1)
        #expect(refresh.stdout.contains("1–2 of 25") && refresh.stdout.contains("refresh failed"))
        #expect(refresh.stderr.hasPrefix("Error: refresh failed:"))
        let stale = try await strata(["list", "cars", "--limit", "1"], store: store)
        #expect(stale.stdout.contains("cars: last fetch failed"))
        for command in ["list", "show", "history", "diff"] {
            let help = try await strata([command, "--help"], store: store)
            #expect(help.status == 0 && help.stdout.contains("Examples:"))
        }
    }

    /// Every screen works against every fixture dataset: a paged list with details in a
    /// template, a bare array, a Firebase-style map keyed by push ids, and relative detail URLs
    /// with the image deep inside 64 KB details.
    @Test func everyCommandWorksOnEveryDataset() async throws {
        try await withFixtureServer { server in
            let store = makeStoreDir()
            let b = server.baseURL
            let definitions: [[String]] = [
                [
                    "cars", "--url", b + "/cars/offers", "--items", "results", "--title", "model", "--image", "image", "--page-param", "page",
                    "--page-size", "10", "--index", "make", "--detail-url", b + "/cars/offers/{id}"
                ],
                ["catalog", "--url", b + "/catalog/entries?count=15", "--title", "text", "--image", "image", "--index", "confidence"],
                ["notes", "--url", b + "/notes/notes", "--id", "@key", "--title", "content", "--subtitle", "created_by", "--index", "owner_id"],
                [
                    "pokedex", "--url", b + "/pokedex/pokemon", "--items", "results", "--id", "name", "--detail-url-field", "url",
                    "--image", "sprites.front_default"
                ]
            ]
            for d in definitions { #expect(try await strata(["source", "add"] + d, store: store).status == 0) }
            var firstRun = 0
            for v in 1...3 {
                server.version = v
                let f = try await strata(["fetch", "--details", "--images"], store: store)
                #expect(f.status == 0, "\(f.stderr)")
                if v == 1 { firstRun = try await headSeq(store) }
            }
            for name in ["cars", "catalog", "notes", "pokedex"] {
                let rows = try jsonObject(try await strata(["list", name, "--format", "json"], store: store).stdout) as! [[String: Any]]
                #expect(!rows.isEmpty, "\(name)")
                let id = rows[0]["id"] as! String
                let table = try await strata(["list", name], store: store)
                #expect(table.status == 0 && table.stdout.contains("items") && table.stdout.contains("\(name): last fetched"), "\(name)")
                // Ids may start with "-" (push ids): they go after "--".
                let show = try await strata(["show", name, "--offline", "--", id], store: store)
                #expect(show.status == 0 && show.stdout.contains("(\(name)/\(id))"), "\(name): \(show.stderr)")
                let history = try await strata(["history", name, "--format", "json", "--", id], store: store)
                let versions = try jsonObject(history.stdout) as! [Any]
                #expect(history.status == 0 && !versions.isEmpty, "\(name)")
                let diff = try await strata(["diff", name, "--from", String(firstRun)], store: store)
                #expect(diff.status == 0 && diff.stdout.hasPrefix("\(name): seq \(firstRun) →"), "\(name)")
                let asOf = try await strata(["list", name, "--as-of", String(firstRun), "--format", "csv"], store: store)
                #expect(asOf.status == 0 && asOf.stdout.hasPrefix("id,title,"), "\(name)")
            }
            // The pokedex detail (relative URL, image deep inside) downloads on show.
            let pika = try await strata(["show", "pokedex", "ivysaur", "--format", "json"], store: store)
            let doc = try jsonObject(pika.stdout) as! [String: Any]
            #expect(pika.status == 0 && doc["detail"] is [String: Any] && (doc["image"] as? [String: Any])?["url"] as? String == b + "/pokedex/images/2.png")
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    private func headSeq(_ store: String) async throws -> Int {
        let events = try jsonObject(try await strata(["log", "--limit", "1", "--format", "json"], store: store).stdout) as! [[String: Any]]
        return events[0]["seq"] as! Int
    }
}
