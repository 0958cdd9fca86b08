import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Strata against an API shaped like GitHub's issues (the fixture server's `github` dataset: a
/// bare array, Link paging, ETags, a bearer token, 429s, `labels` arrays), through the real
/// binary. The expected answers are worked out from the fixture files themselves.
@Suite(.serialized) struct GitHubShapeCLITests {
    static let token = FixtureServer.githubToken
    static let env = ["GH_TOKEN": token]

    /// The fixture's issues at `version`, by number.
    static func issues(_ version: Int) throws -> [[String: Any]] {
        let data = try #require(FileManager.default.contents(atPath: fixturesRoot + "/github/v\(version)/issues.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    }

    static func labels(_ issue: [String: Any]) -> [String] {
        ((issue["labels"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
    }

    static func numbers(_ issues: [[String: Any]], where keep: ([String: Any]) -> Bool) -> Set<String> {
        Set(issues.filter(keep).map { String($0["number"] as! Int) })
    }

    func addIssues(_ server: FixtureServer, store: String, name: String = "gh", extra: [String] = []) async throws {
        let add = try await strata(
            [
                "source", "add", name, "--url", server.baseURL + "/github/issues?per_page=10", "--id", "number", "--title", "title",
                "--header", "Authorization: Bearer $GH_TOKEN", "--detail-url-field", "url"
            ] + extra, store: store)
        #expect(add.status == 0, "\(add.stderr)")
    }

    func ids(_ args: [String], store: String) async throws -> (Set<String>, RunResult) {
        let r = try await strata(args + ["--format", "json"], store: store, env: Self.env)
        let items = (try? jsonObject(r.stdout) as? [[String: Any]]) ?? []
        return (Set(items.compactMap { $0["id"] as? String }), r)
    }

    @Test func arrayFieldsAreQueriedElementByElement() async throws {
        let server = FixtureServer(root: fixturesRoot)
        try await server.start()
        defer { Task { await server.stop() } }
        let store = makeStoreDir()
        try await addIssues(server, store: store, extra: ["--index", "state,labels.name"])
        let v1 = try Self.issues(1)
        #expect(try await strata(["fetch", "gh"], store: store, env: Self.env).status == 0)
        let firstSeq = try #require(
            (try jsonObject(try await strata(["log", "--type", "FetchCompleted", "--format", "json"], store: store).stdout) as? [[String: Any]])?.first?["seq"]
                as? Int)
        server.version = 2
        #expect(try await strata(["fetch", "gh"], store: store, env: Self.env).status == 0)
        let v2 = try Self.issues(2)

        // Through the multi-valued index: any label named bug, now and as of the first fetch.
        let bug2 = Self.numbers(v2) { Self.labels($0).contains("bug") }
        let (now, r) = try await ids(["list", "gh", "--where", "labels.name=bug"], store: store)
        #expect(!bug2.isEmpty && now == bug2, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "an indexed array path reads through the index: \(r.stderr)")
        let (then, _) = try await ids(["list", "gh", "--where", "labels.name=bug", "--as-of", String(firstSeq)], store: store)
        #expect(then == Self.numbers(v1) { Self.labels($0).contains("bug") } && then != now)
        let table = try await strata(["list", "gh", "--where", "labels.name=bug"], store: store)
        #expect(table.stdout.contains("read through an index"), "\(table.stdout)")

        // A numeric segment keeps meaning a position: the first label only.
        let (first, _) = try await ids(["list", "gh", "--where", "labels.0.name=bug"], store: store)
        #expect(first == Self.numbers(v2) { Self.labels($0).first == "bug" } && first.isSubset(of: now) && first != now)

        // An unindexed array path scans, and says so once.
        let (hubot, scan) = try await ids(["list", "gh", "--where", "assignees.login=hubot"], store: store)
        #expect(hubot == Self.numbers(v2) { (($0["assignees"] as? [[String: Any]]) ?? []).contains { $0["login"] as? String == "hubot" } } && !hubot.isEmpty)
        #expect(scan.stderr.contains("`assignees.login` is not indexed, so every item of gh was read"), "\(scan.stderr)")

        // Tables join an array's values; a search reaches nested values.
        let withTwo = try #require(v2.first { Self.labels($0).count >= 2 })
        let row = try await strata(["list", "gh", "--where", "number=\(withTwo["number"] as! Int)", "--format", "csv"], store: store)
        #expect(row.stdout.contains(Self.labels(withTwo).joined(separator: ", ")), "\(row.stdout)")
        let (found, _) = try await ids(["list", "gh", "--search", "good first issue"], store: store)
        #expect(found == Self.numbers(v2) { Self.labels($0).contains("good first issue") } && !found.isEmpty)

        // An array field cannot order items.
        let sort = try await strata(["list", "gh", "--sort", "labels.name"], store: store)
        #expect(sort.status == 64 && sort.stderr.contains("reaches into an array") && sort.stderr.contains("labels.0.name"), "\(sort.stderr)")
        let (sorted, ok) = try await ids(["list", "gh", "--sort", "labels.0.name"], store: store)
        #expect(ok.status == 0 && sorted.count == v2.count)
        #expect(try await strata(["verify"], store: store).status == 0)
    }

    @Test func literalTokensAreRefusedAndNeverStored() async throws {
        let server = FixtureServer(root: fixturesRoot)
        try await server.start()
        defer { Task { await server.stop() } }
        let store = makeStoreDir()
        let url = server.baseURL + "/github/issues?per_page=10"

        // What `--header "Authorization: Bearer $GH_TOKEN"` in double quotes becomes.
        let literal = try await strata(["source", "add", "gh", "--url", url, "--id", "number", "--header", "Authorization: Bearer \(Self.token)"], store: store)
        #expect(literal.status == 64, "\(literal.stdout) \(literal.stderr)")
        #expect(literal.stderr.contains("single quotes") && literal.stderr.contains("--header-from-file") && literal.stderr.contains("--allow-literal-secret"))
        #expect(!literal.stderr.contains(Self.token))

        // A template: stored as written, resolved at fetch time.
        try await addIssues(server, store: store)
        let missing = try await strata(["fetch", "gh"], store: store)
        #expect(missing.status == 1 && missing.stderr.contains("GH_TOKEN"), "\(missing.stderr)")
        let fetched = try await strata(["fetch", "gh"], store: store, env: Self.env)
        #expect(fetched.status == 0 && fetched.stdout.contains("+35 added"), "\(fetched.stdout) \(fetched.stderr)")

        // Kept outside the log on request: usable, never printed.
        let kept = try await strata(
            [
                "source", "add", "kept", "--url", url, "--id", "number", "--header", "Authorization: Bearer \(Self.token)",
                "--allow-literal-secret"
            ], store: store)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(try await strata(["fetch", "kept"], store: store).status == 0)
        let show = try await strata(["source", "show", "kept", "--format", "json"], store: store)
        #expect(show.stdout.contains("${secret:Authorization}") && !show.stdout.contains(Self.token))
        let mode = try FileManager.default.attributesOfItem(atPath: store + "/secrets.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // From a file, read at each fetch.
        let file = try writeTemp("Bearer \(Self.token)\n")
        let fromFile = try await strata(["source", "add", "filed", "--url", url, "--id", "number", "--header-from-file", "Authorization=\(file)"], store: store)
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(try await strata(["fetch", "filed"], store: store).status == 0)

        // Nowhere in the log, the outputs or an export.
        for args in [["source", "list", "--format", "json"], ["log", "--format", "json", "--limit", "1000"], ["export", "--events", "--payloads"]] {
            let r = try await strata(args, store: store)
            #expect(r.status == 0 && !r.stdout.contains(Self.token), "\(args)")
        }
        let mdb = try #require(FileManager.default.contents(atPath: store + "/data.mdb"))
        #expect(mdb.range(of: Data(Self.token.utf8)) == nil)

        // A definition from before literals were refused (appended as the engine would have): it
        // stays in the log until forgotten, but is shown and exported as [hidden].
        let legacy = try writeTemp(
            #"{"name":"old","url":"\#(url)","id":["number"],"subtitle":[],"index":[],"sizeParam":"size","headers":["Authorization: Bearer \#(Self.token)"]}"#)
        let recorded = try await strata(["record", "--stream", "old", "--type", "SourceDefined", "--meta", "source=old", "--payload", legacy], store: store)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let old = try await strata(["source", "show", "old", "--format", "json"], store: store)
        #expect(old.status == 0 && old.stdout.contains("Authorization: [hidden]") && !old.stdout.contains(Self.token), "\(old.stdout) \(old.stderr)")
        for args in [["source", "list", "--format", "json"], ["export", "--events", "--payloads"]] {
            let r = try await strata(args, store: store)
            #expect(r.status == 0 && r.stdout.contains("[hidden]") && !r.stdout.contains(Self.token), "\(args)")
        }
    }

    /// Every response the fixture server sends for the list is in the log: a page event each,
    /// a `FetchFailed` per failed attempt, `ListNotModified` standing for its pages, and
    /// `ReadAheadDiscarded` for an answer no page used.
    @Test func everyListResponseIsAnEvent() async throws {
        let server = FixtureServer(root: fixturesRoot)
        try await server.start()
        defer { Task { await server.stop() } }
        let store = makeStoreDir()
        try await addIssues(server, store: store)
        func check(_ what: String) async throws {
            let events = try #require(
                try jsonObject(try await strata(["log", "--stream", "gh", "--limit", "100000", "--format", "json"], store: store).stdout) as? [[String: Any]])
            var answered = 0
            for e in events {
                let meta = e["metadata"] as? [String: String] ?? [:]
                switch e["type"] as? String {
                case "CollectionPageFetched", "PageNotModified", "ReadAheadDiscarded": answered += 1
                case "FetchFailed" where meta["stage"] == "list": answered += 1
                case "ListNotModified": answered += Int(meta["pages"] ?? "") ?? 0
                default: break
                }
            }
            #expect(answered == server.requests(to: "/github/issues"), "\(what): \(answered) events for \(server.requests(to: "/github/issues")) requests")
        }
        #expect(try await strata(["fetch", "gh"], store: store, env: Self.env).status == 0)
        try await check("first fetch")
        let unchanged = try await strata(["fetch", "gh"], store: store, env: Self.env)
        #expect(unchanged.stdout.contains("4 pages (4 not modified)"), "\(unchanged.stdout)")
        try await check("unchanged re-fetch")
        // v2 adds an issue at the top: every page changes.
        server.version = 2
        #expect(try await strata(["fetch", "gh"], store: store, env: Self.env).status == 0)
        try await check("v2")
        #expect(try await strata(["fetch", "gh"], store: store, env: Self.env).status == 0)
        // v3 keeps page 1 and changes the pages after it: the read-ahead's answers are the pages'.
        server.version = 3
        let before = server.requests(to: "/github/issues")
        let v3 = try await strata(["fetch", "gh"], store: store, env: Self.env)
        #expect(v3.status == 0 && v3.stdout.contains("~2 changed, -1 removed"), "\(v3.stdout) \(v3.stderr)")
        #expect(server.requests(to: "/github/issues") - before == 4, "each page asked once")
        try await check("v3 after an unchanged first page")
        // Rate limited twice: each 429 an event, and the summary counts them.
        server.setFault(.tooManyRequests, for: "/github/issues", times: 2)
        let limited = try await strata(["fetch", "gh"], store: store, env: Self.env)
        #expect(limited.status == 0 && limited.stdout.contains("2 retried after 429"), "\(limited.stdout) \(limited.stderr)")
        try await check("429s")
        // Refused credentials: the message says so.
        let refused = try await strata(["fetch", "gh"], store: store, env: ["GH_TOKEN": "wrong"])
        #expect(refused.status == 1 && refused.stderr.contains("HTTP 401") && refused.stderr.contains("credentials"), "\(refused.stderr)")
        try await check("401")
        let footer = try await strata(["list", "gh", "--limit", "1"], store: store)
        #expect(footer.stdout.contains("last fetch failed") && footer.stdout.contains("HTTP 401 (credentials refused)"), "\(footer.stdout)")
        #expect(try await strata(["verify"], store: store).status == 0)
    }
}
