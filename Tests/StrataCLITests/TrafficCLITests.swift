import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata proxy` and the replay of what it recorded, through the real binary: curl and Strata's
/// own libcurl client against the fixture server over three versions, replayed byte for byte as
/// of each; POSTs and repeated requests in order; credentials never stored; an upstream that
/// fails or cuts its answer; capture on miss; a HAR written by mitmproxy in and out.
@Suite struct TrafficCLITests {
    static let paths = ["/cars/offers?page=1&size=10", "/cars/offers/3", "/cars/offers/7", "/cars/images/3.png"]

    @Test func aClientThroughTheProxyIsReplayedByteForByteAsOfEachVersion() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let token = "Bearer tok-" + UUID().uuidString
            let cookie = "sid=" + UUID().uuidString
            let proxy = try await Listening.start(
                ["proxy", "shop", "--upstream", fixture.baseURL, "--port", "0", "--redact-header", "X-Session"], store: store)
            var recorded = 0
            var points: [(seq: Int, bodies: [String: [UInt8]])] = []
            for v in 1...3 {
                fixture.version = v
                var bodies: [String: [UInt8]] = [:]
                for path in Self.paths {
                    let direct = try await curl([fixture.baseURL + path])
                    let proxied = try await curl([
                        "-H", "Authorization: \(token)", "-H", "Cookie: \(cookie)", "-H", "X-Session: s3cr3t-\(cookie)", proxy.base + path
                    ])
                    #expect(!direct.isEmpty && proxied == direct, "v\(v) \(path) through the proxy")
                    bodies[path] = direct
                    recorded += 1
                }
                _ = try await waitForEvents(store, type: "ExchangeRecorded", count: recorded)
                points.append((try await headSeq(store), bodies))
            }
            // Strata's own libcurl client through the proxy: another store fetches the API from it.
            let other = makeStoreDir()
            #expect(
                try await strata(
                    ["source", "add", "cars", "--url", proxy.base + "/cars/offers", "--items", "results", "--page-param", "page", "--page-size", "10"],
                    store: other
                ).status == 0)
            let fetched = try await strata(["fetch", "cars"], store: other)
            #expect(fetched.status == 0 && fetched.stdout.contains("+25 added"), "\(fetched.stdout) \(fetched.stderr)")
            // Two identical POSTs (the API answers each with a new id) and a PUT.
            let post = #"{"make":"Dacia","model":"Spring","price":9900}"#
            var created: [[UInt8]] = []
            for _ in 0..<2 {
                created.append(try await curl(["-X", "POST", "-H", "Content-Type: application/json", "-d", post, proxy.base + "/cars/offers"]))
            }
            #expect(created[0] != created[1], "the API made two items")
            let stopped = try await proxy.stop()
            #expect(stopped.status == 0 && stopped.stdout.contains("exchanges recorded"), "\(stopped.stdout) \(stopped.stderr)")

            let served = try await Listening.start(["serve", "--port", "0", "--source", "shop"], store: store)
            for (v, point) in points.enumerated() {
                for (path, body) in point.bodies {
                    let r = try await RawHTTP.request(served.base, "/@\(point.seq)\(path)")
                    #expect(r.status == 200 && r.body == body, "v\(v + 1) \(path) replayed as of seq \(point.seq)")
                    #expect(r.header("Strata-Event") == "ExchangeRecorded")
                }
            }
            // A POST is found by its body; repeated ones get their answers in recorded order in a session.
            let session = try await RawHTTP.request(served.base, "/_strata/sessions", method: "POST", body: #"{"from": 1}"#)
            let path = try #require(session.json["path"] as? String)
            for answer in created {
                let r = try await RawHTTP.request(served.base, path.dropLast() + "/cars/offers", method: "POST", body: post)
                #expect(r.status == 201 && r.body == answer, "\(r.status) \(r.text)")
            }
            // …and a GET of one URL walks its versions.
            for point in points {
                let r = try await RawHTTP.request(served.base, path.dropLast() + "/cars/offers/3")
                #expect(r.body == point.bodies["/cars/offers/3"])
            }
            let unknown = try await RawHTTP.request(served.base, "/cars/offers", method: "POST", body: #"{"other": true}"#)
            #expect(unknown.status == 404 && unknown.text.contains("never recorded"), "\(unknown.text)")
            #expect(try await served.stop().status == 0)

            // Credentials: never in the store's files, the log or an export; equal ones stay equal.
            let files = try storeBytes(store)
            for secret in [token, cookie, "s3cr3t-"] {
                #expect(!files.contains(bytes: Array(secret.utf8)), "\(secret) is in the store's files")
            }
            let har = TestScratch.path("shop") + ".har"
            #expect(try await strata(["export", "shop", "--har", har], store: store).status == 0)
            let text = try String(contentsOfFile: har, encoding: .utf8)
            #expect(!text.contains(token) && !text.contains(cookie) && !text.contains("s3cr3t"))
            let entries = try #require(((try jsonObject(text) as? [String: Any])?["log"] as? [String: Any])?["entries"] as? [[String: Any]])
            let auth = Set(
                entries.flatMap { (($0["request"] as? [String: Any])?["headers"] as? [[String: String]]) ?? [] }.filter { $0["name"] == "Authorization" }
                    .compactMap { $0["value"] })
            #expect(auth.count == 1 && auth.first!.hasPrefix("[redacted:"), "\(auth)")
            let events = try await strata(["export", "--events", "--payloads"], store: store)
            #expect(!events.stdout.contains(token) && !events.stdout.contains(cookie))
            #expect(try await strata(["verify"], store: store).status == 0)
        }
    }

    @Test func anUpstreamThatFailsOrCutsItsAnswerIsRecordedAndAnswered502() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            fixture.setFault(.truncated, for: "/cars/offers/5")
            let proxy = try await Listening.start(["proxy", "shop", "--upstream", fixture.baseURL, "--port", "0"], store: store)
            let cut = try await RawHTTP.request(proxy.base, "/cars/offers/5")
            #expect(cut.status == 502 && cut.json["error"] as? String == "upstream failed", "\(cut.status) \(cut.text)")
            #expect((cut.json["code"] as? String) == "truncated", "\(cut.text)")
            // Many clients at once on one proxy.
            let answers = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<16 { group.addTask { try await RawHTTP.request(proxy.base, "/cars/offers/\(1 + i % 4)").status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0 == 200 } && answers.count == 16)
            _ = try await waitForEvents(store, type: "ExchangeRecorded", count: 16)
            #expect(try await proxy.stop().status == 0)
            // An upstream nobody listens on.
            let dead = try await Listening.start(["proxy", "gone", "--upstream", "http://127.0.0.1:9", "--port", "0"], store: store)
            let refused = try await RawHTTP.request(dead.base, "/anything?x=1")
            #expect(refused.status == 502 && (refused.json["message"] as? String ?? "").contains("did not answer"), "\(refused.text)")
            #expect(try await dead.stop().status == 0)
            let failed = try await logEvents(store, type: "ExchangeFailed")
            #expect(failed.count == 2, "\(failed)")
            // Replayed as the failure it was.
            let served = try await Listening.start(["serve", "--port", "0"], store: store)
            let replay = try await RawHTTP.request(served.base, "/cars/offers/5")
            #expect(replay.status == 502 && replay.json["error"] as? String == "recorded failure", "\(replay.text)")
            #expect(try await served.stop().status == 0)
            // A list source cannot take traffic, and bad flags say why.
            #expect(try await strata(["source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results"], store: store).status == 0)
            let list = try await strata(["proxy", "cars", "--upstream", fixture.baseURL, "--port", "0"], store: store)
            #expect(list.status == 64 && list.stderr.contains("list source"), "\(list.stderr)")
            let bad = try await strata(["proxy", "x", "--upstream", "ftp://example.com"], store: store)
            #expect(bad.status == 64 && bad.stderr.contains("--upstream"), "\(bad.stderr)")
            let fetchRecorded = try await strata(["fetch", "shop"], store: store)
            #expect(fetchRecorded.status != 0 && fetchRecorded.stderr.contains("recorded source"), "\(fetchRecorded.stderr)")
        }
    }

    @Test func serveCapturesWhatItNeverRecordedOnAMiss() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let served = try await Listening.start(
                ["serve", "--port", "0", "--on-miss", "proxy", "--upstream", fixture.baseURL, "--record-into", "api"], store: store)
            let direct = try await curl([fixture.baseURL + "/cars/offers/3"])
            let first = try await RawHTTP.request(served.base, "/cars/offers/3")
            #expect(first.status == 200 && first.body == direct && first.header("Strata-Recorded") == "miss", "\(first.headers)")
            _ = try await waitForEvents(store, type: "ExchangeRecorded", count: 1)
            fixture.version = 3
            let again = try await RawHTTP.request(served.base, "/cars/offers/3")
            #expect(again.status == 200 && again.body == direct && again.header("Strata-Recorded") == nil && again.seq != nil, "\(again.headers)")
            #expect(try await served.stop().status == 0)
            let usage = try await strata(["serve", "--on-miss", "proxy"], store: store)
            #expect(usage.status == 64 && usage.stderr.contains("--upstream"), "\(usage.stderr)")
        }
    }

    /// `fixtures/har/mitmproxy-11.har` was written by mitmproxy 11 (see fixtures/har/README.md).
    @Test func aHARFromMitmproxyIsImportedExportedAndImportedAgainUnchanged() async throws {
        let original = fixturesRoot + "/har/mitmproxy-11.har"
        let a = makeStoreDir()
        let first = try await strata(["import", "shop", "--har", original], store: a)
        #expect(first.status == 0 && first.stdout.contains("9 exchanges imported"), "\(first.stdout) \(first.stderr)")
        let again = try await strata(["import", "shop", "--har", original], store: a)
        #expect(again.stdout.contains("0 exchanges imported from HAR, 9 already recorded"), "\(again.stdout)")
        let b = TestScratch.path("b") + ".har", c = TestScratch.path("c") + ".har"
        #expect(try await strata(["export", "shop", "--har", b], store: a).status == 0)
        let other = makeStoreDir()
        #expect(try await strata(["import", "shop", "--har", b], store: other).status == 0)
        #expect(try await strata(["export", "shop", "--har", c], store: other).status == 0)
        #expect(FileManager.default.contents(atPath: b) == FileManager.default.contents(atPath: c), "the export of the re-import is the export")
        #expect(!(try String(contentsOfFile: b, encoding: .utf8)).contains("fixture-token"), "the HAR's token was masked on import")
        // Every entry replays its recorded body, at the time mitmproxy saw it.
        let har = try #require(try jsonObject(String(contentsOfFile: original, encoding: .utf8)) as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let served = try await Listening.start(["serve", "--port", "0"], store: a)
        var seenGET: Set<String> = []
        for e in entries {
            let request = try #require(e["request"] as? [String: Any]), response = try #require(e["response"] as? [String: Any])
            let urlText = try #require(request["url"] as? String)
            let url = try #require(URLComponents(string: urlText))
            let target = url.percentEncodedPath + (url.percentEncodedQuery.map { "?" + $0 } ?? "")
            let content = try #require(response["content"] as? [String: Any])
            let text = content["text"] as? String ?? ""
            let body = content["encoding"] as? String == "base64" ? [UInt8](Data(base64Encoded: text)!) : Array(text.utf8)
            let method = try #require(request["method"] as? String)
            let sent = ((request["postData"] as? [String: Any])?["text"] as? String) ?? ""
            // A URL asked twice answers the later recording; compare the last of each.
            if method == "GET" && !seenGET.insert(target).inserted { continue }
            let r = try await RawHTTP.request(served.base, target, method: method, body: sent)
            #expect(r.status == response["status"] as? Int && r.body == body, "\(method) \(target): \(r.status)")
        }
        #expect(try await served.stop().status == 0)
        let broken = try writeTemp(#"{"log": {"entries": [{"startedDateTime": "yesterday"}]}}"#)
        let refused = try await strata(["import", "bad", "--har", broken], store: a)
        #expect(refused.status == 64 && refused.stderr.contains("HAR"), "\(refused.stderr)")
    }
}
