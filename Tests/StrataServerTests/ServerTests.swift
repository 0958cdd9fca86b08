import EventStore
import FixtureServer
import Foundation
import StrataApp
import StrataData
import StrataDomain
@testable import StrataServer
import StrataTestSupport
import Testing

/// `strata serve` in process on a loopback port, over a real store that fetched the cars fixture
/// through three API versions: recorded responses at every point and by every way of naming it,
/// 304s, what was not fetched yet, recorded failures, hosts that collide, replay sessions, the
/// JSON read side and the live event stream.
@Suite struct ServerTests {
    /// Runs blocking socket work on a thread of its own.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in Thread { c.resume(with: Result { try work() }) }.start() }
    }

    /// The path and query of the first list page the fetcher asked for.
    static func firstPage(_ s: ServedStore) async throws -> String {
        let pages = try await s.app.useCases.replay(LogQuery(type: "CollectionPageFetched", limit: 1, newestFirst: false))
        return try #require(pages.first?[metadata: "url"].flatMap(RecordingIndex.split)?.target)
    }

    @Test func recordedResponsesAreServedByteForByteAtEveryPoint() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            let page = try await Self.firstPage(s)
            try await s.serving { (base: String) async throws in
                for (i, version) in [1, 2, 3].enumerated() {
                    fixture.version = version
                    for path in [page, "/cars/offers/3", "/cars/offers/6", "/cars/images/3.png"] {
                        let direct = try await s.get(fixture.baseURL, path)
                        let served = try await s.get(base, "/@\(s.passes[i])" + path)
                        #expect(served.status == 200 && served.body == direct.body, "\(path) as of pass \(i + 1): \(served.status) \(served.text.prefix(200))")
                        #expect(served.header("ETag") == direct.header("ETag"), "\(path)")
                        #expect(served.header("Content-Type")?.split(separator: ";").first == direct.header("Content-Type")?.split(separator: ";").first)
                        #expect((served.seq ?? .max) <= s.passes[i] && served.header("Strata-Source") == "cars")
                        #expect(served.header("Memento-Datetime") != nil && served.header("Vary")?.contains("Accept-Datetime") == true)
                    }
                }
                // No point: the latest recording.
                let latest = try await s.get(base, "/cars/offers/3")
                #expect(latest.body == (try await s.get(fixture.baseURL, "/cars/offers/3")).body)
                // The Link header names the original and walks the recordings.
                let links = latest.links
                #expect(links["original"] == fixture.baseURL + "/cars/offers/3")
                let first = try #require(links["first memento"])
                let oldest = try await s.get(base, first)
                #expect(oldest.status == 200 && oldest.links["prev memento"] == nil && oldest.links["next memento"] != nil)
                fixture.version = 1
                #expect(oldest.body == (try await s.get(fixture.baseURL, "/cars/offers/3")).body)
            }
        }
    }

    @Test func thePointComesFromThePathThenAcceptDatetimeThenStrataAsOfThenTheServersDefault() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            let (p0, p1, p2) = (s.passes[0], s.passes[1], s.passes[2])
            try await s.serving { (base: String) async throws in
                let at0 = try await s.get(base, "/@\(p0)/cars/offers/3")
                let at1 = try await s.get(base, "/@\(p1)/cars/offers/3")
                let at2 = try await s.get(base, "/@\(p2)/cars/offers/3")
                #expect(at0.seq != at1.seq && at1.seq != at2.seq, "the detail changed at every version")
                let date0 = try #require(at0.header("Memento-Datetime"))
                let date2 = try #require(at2.header("Memento-Datetime"))
                // Each form alone.
                #expect(try await s.get(base, "/cars/offers/3", [("Accept-Datetime", date0)]).seq == at0.seq)
                #expect(try await s.get(base, "/cars/offers/3", [("Strata-As-Of", String(p1))]).seq == at1.seq)
                let iso = ISO8601DateFormatter().string(from: try #require(HTTPDate.parse(date0)))
                #expect(try await s.get(base, "/@\(iso)/cars/offers/3").seq == at0.seq)
                // First match wins.
                #expect(try await s.get(base, "/@\(p0)/cars/offers/3", [("Accept-Datetime", date2), ("Strata-As-Of", String(p2))]).seq == at0.seq)
                #expect(try await s.get(base, "/cars/offers/3", [("Accept-Datetime", date0), ("Strata-As-Of", String(p2))]).seq == at0.seq)
                // Points that are no points.
                #expect(try await s.get(base, "/@yesterday/cars/offers/3").status == 400)
                #expect(try await s.get(base, "/cars/offers/3", [("Accept-Datetime", "last Tuesday")]).status == 400)
                #expect(try await s.get(base, "/cars/offers/3", [("Strata-As-Of", "soon")]).status == 400)
                let future = try await s.get(base, "/@\(p2 + 1000)/cars/offers/3")
                #expect(future.status == 400 && (future.json["message"] as? String)?.contains("after the newest event") == true, "\(future.text)")
            }
            // The server's --as-of, which any named point overrides.
            try await s.serving(asOf: .seq(p0)) { (base: String) async throws in
                let at0 = try await s.get(base, "/@\(p0)/cars/offers/3")
                #expect(try await s.get(base, "/cars/offers/3").seq == at0.seq)
                #expect(try await s.get(base, "/cars/offers/3", [("Strata-As-Of", String(p2))]).seq == (try await s.get(base, "/@\(p2)/cars/offers/3")).seq)
            }
        }
    }

    /// Events a few milliseconds apart: a Memento-Datetime (whole seconds) sent back as
    /// Accept-Datetime still names its memento.
    @Test func aMementoDatetimeSentBackNamesItsMemento() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture, clockStep: 7_000)
            try await s.serving { (base: String) async throws in
                for i in 0..<3 {
                    let r = try await s.get(base, "/@\(s.passes[i])/cars/offers/3")
                    let again = try await s.get(base, "/cars/offers/3", [("Accept-Datetime", try #require(r.header("Memento-Datetime")))])
                    #expect(again.status == 200 && again.seq != nil, "pass \(i + 1): \(again.status) \(again.text)")
                    // Within the second, the last recording of it: this one, or a later one in the same second.
                    #expect((again.seq ?? 0) >= (r.seq ?? .max))
                }
            }
        }
    }

    @Test func conditionalRequestsAnswer304AndHeadHasNoBody() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await s.serving { (base: String) async throws in
                let full = try await s.get(base, "/cars/offers/3")
                let etag = try #require(full.header("ETag"))
                for tag in [etag, "W/" + etag, "\"other\", " + etag, "*"] {
                    let r = try await s.get(base, "/cars/offers/3", [("If-None-Match", tag)])
                    #expect(r.status == 304 && r.body.isEmpty && r.header("ETag") == etag && r.seq == full.seq, "If-None-Match: \(tag)")
                }
                #expect(try await s.get(base, "/cars/offers/3", [("If-None-Match", "\"other\"")]).status == 200)
                let head = try await s.get(base, "/cars/offers/3", method: "HEAD")
                #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == String(full.body.count))
            }
        }
    }

    @Test func aURLNotFetchedYetSaysWhenItFirstWasAndOneNeverFetchedSaysSo() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await s.serving { (base: String) async throws in
                let first = try #require(try await s.get(base, "/cars/offers/3").links["first memento"])
                let firstSeq = try #require(UInt64(first.dropFirst(2).prefix { $0.isNumber }))
                let early = try await s.get(base, "/@1/cars/offers/3")
                #expect(early.status == 404 && early.json["error"] as? String == "not recorded")
                #expect((early.json["firstFetched"] as? [String: Any])?["seq"] as? Int == Int(firstSeq), "\(early.text)")
                let never = try await s.get(base, "/cars/offers/999")
                #expect(never.status == 404 && never.json["firstFetched"] is NSNull)
                #expect(try await s.get(base, "/_strata/nothing").status == 404)
            }
        }
    }

    @Test func aRecordedFailureIsServedAsTheFailure() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture, retries: 0)
            fixture.setFault(.serverError, for: "/cars/offers/5")
            _ = try? await s.app.useCases.refresh("cars", details: true, images: false)
            let head = try await s.app.useCases.replay.resolve(.now)
            try await s.serving { (base: String) async throws in
                let failed = try await s.get(base, "/cars/offers/5")
                #expect(failed.status == 500, "\(failed.status) \(failed.text)")
                #expect(failed.json["recorded"] as? Bool == true && failed.json["status"] as? Int == 500)
                #expect((failed.seq ?? 0) > s.passes[2] && (failed.seq ?? .max) <= head)
                // Before the failure, the detail as it was.
                let before = try await s.get(base, "/@\(s.passes[2])/cars/offers/5")
                #expect(before.status == 200 && before.json["id"] as? Int == 5)
            }
        }
    }

    /// Two sources recording the same request: a server of one of them answers from that
    /// source's newest recording, with its own first/previous/next/last, however many times the
    /// other source recorded the request since.
    @Test func aServerOfOneSourceAnswersFromItsRecordingsWhenAnotherRecordedLater() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await SourceCatalog(store: s.store).define(
                SourceDefinition(
                    name: "twin", url: fixture.baseURL + "/cars/offers", items: "results", detailURL: fixture.baseURL + "/cars/offers/{id}",
                    pageParam: "page", pageSize: 10))
            _ = try await s.app.useCases.refresh("twin", details: true, images: false)
            let twinSeq = try await s.app.useCases.replay.resolve(.now)
            try await s.serving(sources: ["cars"]) { (base: String) async throws in
                let r = try await s.get(base, "/cars/offers/3")
                #expect(r.status == 200 && r.header("Strata-Source") == "cars", "\(r.status) \(r.text)")
                #expect((r.seq ?? .max) <= s.passes[2] && r.links["next memento"] == nil)
                let asOf = try await s.get(base, "/@\(twinSeq)/cars/offers/3")
                #expect(asOf.status == 200 && asOf.seq == r.seq)
            }
            try await s.serving(sources: ["twin"]) { (base: String) async throws in
                let r = try await s.get(base, "/cars/offers/3")
                #expect(r.status == 200 && r.header("Strata-Source") == "twin" && (r.seq ?? 0) > s.passes[2])
                // Before twin recorded it, twin has nothing to answer with.
                #expect(try await s.get(base, "/@\(s.passes[2])/cars/offers/3").status == 404)
            }
        }
    }

    @Test func hostsThatCollideAreNamedAndOtherSourcesStayHidden() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await withFixtureServer { other in
                try await SourceCatalog(store: s.store).define(
                    SourceDefinition(
                        name: "more", url: other.baseURL + "/cars/offers", items: "results", detailURL: other.baseURL + "/cars/offers/{id}",
                        pageParam: "page", pageSize: 10))
                _ = try await s.app.useCases.refresh("more", details: true, images: false)
                let host1 = String(fixture.baseURL.dropFirst("http://".count)), host2 = String(other.baseURL.dropFirst("http://".count))
                try await s.serving { (base: String) async throws in
                    let both = try await s.get(base, "/cars/offers/3")
                    #expect(both.status == 300)
                    #expect(Set((both.json["choices"] as? [String]) ?? []) == ["/_host/\(host1)/cars/offers/3", "/_host/\(host2)/cars/offers/3"])
                    let one = try await s.get(base, "/_host/\(host2)/cars/offers/3")
                    #expect(one.status == 200 && one.header("Strata-Source") == "more")
                    #expect(one.links["first memento"]?.hasPrefix("/@") == true && one.links["first memento"]?.contains("/_host/\(host2)/") == true)
                }
                try await s.serving(sources: ["more"]) { (base: String) async throws in
                    #expect(try await s.get(base, "/_host/\(host1)/cars/offers/3").status == 404)
                    #expect(try await s.get(base, "/_host/\(host2)/cars/offers/3").status == 200)
                    #expect(try await s.get(base, "/_strata/sources").jsonArray.map { $0["name"] as? String } == ["more"])
                    #expect(try await s.get(base, "/_strata/sources/cars/items").status == 404)
                }
            }
        }
    }

    @Test func sessionsReplayPerRequestAndStepByRun() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await s.serving { (base: String) async throws in
                // Every recording of the detail, oldest first, through the Link chain.
                var chain: [UInt64] = []
                var next: String? = try await s.get(base, "/cars/offers/3").links["first memento"]
                while let path = next, chain.count < 20 {
                    let r = try await s.get(base, path)
                    chain.append(try #require(r.seq))
                    next = r.links["next memento"]
                }
                #expect(chain.count >= 3 && chain == chain.sorted())
                let created = try await s.get(base, "/_strata/sessions", method: "POST", body: #"{"from": 1, "advance": "per-request"}"#)
                #expect(created.status == 201, "\(created.text)")
                let path = try #require(created.json["path"] as? String)
                var served: [UInt64] = []
                for _ in 0...chain.count { served.append(try #require(try await s.get(base, path + "cars/offers/3").seq)) }
                #expect(served == chain + [chain.last!], "each request the next recording, then the last again")
                // Manual: every URL as of the session's point, stepped one fetch run at a time.
                let manual = try await s.get(base, "/_strata/sessions", method: "POST", body: "{\"from\": \(s.passes[0]), \"advance\": \"manual\"}")
                let m = try #require(manual.json["path"] as? String)
                let id = try #require(manual.json["id"] as? String)
                for i in 0..<3 {
                    let expected = try await s.get(base, "/@\(s.passes[i])/cars/offers/3").seq
                    #expect(try await s.get(base, m + "cars/offers/3").seq == expected, "run \(i + 1)")
                    let step = try await s.get(base, "/_strata/sessions/\(id)/step", method: "POST")
                    #expect(step.json["moved"] as? Bool == (i < 2), "\(step.text)")
                    #expect(step.json["point"] as? Int == Int(s.passes[min(i + 1, 2)]), "\(step.text)")
                }
                // What sessions refuse.
                let perRequestID = try #require(created.json["id"] as? String)
                #expect(try await s.get(base, "/_strata/sessions/\(perRequestID)/step", method: "POST").status == 409)
                #expect(try await s.get(base, "/s/nope/cars/offers/3").status == 404)
                #expect(try await s.get(base, "/_strata/sessions", method: "POST", body: #"{"advance": "sideways"}"#).status == 400)
                #expect(try await s.get(base, "/_strata/sessions", method: "POST", body: #"{"from": "last week"}"#).status == 400)
            }
        }
    }

    @Test func theReadSideAnswersInTheCLIsShapes() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await s.serving { (base: String) async throws in
                #expect(try await s.get(base, "/_strata/sources").jsonArray.map { $0["name"] as? String } == ["cars"])
                let toyotas = try await s.get(base, "/_strata/sources/cars/items?where=make=Toyota&limit=50")
                #expect(toyotas.status == 200 && !toyotas.jsonArray.isEmpty)
                // A bad filter is worded in the API's own terms: its parameters, not the CLI's flags.
                for (query, words) in [
                    ("where=make", "where=make names a field but no condition on it"), ("sort=-", "sort= needs a path"),
                    ("where=price%20%3C%20%22cheap%22", "where=price < \"cheap\" is not valid at 7: < compares numbers")
                ] {
                    let bad = try await s.get(base, "/_strata/sources/cars/items?" + query)
                    let message = bad.json["message"] as? String ?? ""
                    #expect(bad.status == 400 && message.hasPrefix(words) && !message.contains("--"), "\(bad.text)")
                }
                #expect(toyotas.jsonArray.allSatisfy { ($0["document"] as? [String: Any])?["make"] as? String == "Toyota" })
                let old = try await s.get(base, "/_strata/sources/cars/items?limit=2&offset=1&as_of=\(s.passes[0])")
                #expect(old.jsonArray.map { $0["id"] as? String } == ["2", "3"])
                let item = try await s.get(base, "/_strata/sources/cars/items/3?as_of=\(s.passes[0])")
                #expect(item.json["id"] as? String == "3" && item.json["detail"] is [String: Any], "\(item.text)")
                let history = try await s.get(base, "/_strata/sources/cars/items/3/history")
                #expect(history.jsonArray.count >= 2 && history.jsonArray.first?["version"] as? Int == 1)
                let diff = try await s.get(base, "/_strata/sources/cars/diff?from=\(s.passes[0])&to=\(s.passes[2])")
                #expect(diff.json["fromSeq"] as? Int == Int(s.passes[0]) && !((diff.json["items"] as? [Any]) ?? []).isEmpty)
                let log = try await s.get(base, "/_strata/log?since=2&limit=3")
                #expect(log.jsonArray.map { $0["seq"] as? Int } == [3, 4, 5])
                #expect(try await s.get(base, "/_strata/sources/nope/items").status == 404)
                #expect(try await s.get(base, "/_strata/sources/cars/items?limit=0").status == 400)
                #expect(try await s.get(base, "/_strata/sources/cars/diff").status == 400)
                #expect(try await s.get(base, "/_strata/sources/cars/items/999").status == 404)
            }
        }
    }

    /// Generated requests, odd and hostile, against the read side and the recordings: every one
    /// is answered (never a dropped connection or a 5xx), a 4xx with a JSON body that says what was
    /// wrong. `STRATA_INPUT_FUZZ_ITERATIONS` / 10 requests (500 in `make test`), `STRATA_FUZZ_SEED`.
    @Test func malformedRequestsGetAClearAnswer() async throws {
        let n = (Int(ProcessInfo.processInfo.environment["STRATA_INPUT_FUZZ_ITERATIONS"] ?? "") ?? 5_000) / 10
        let seed = UInt64(ProcessInfo.processInfo.environment["STRATA_FUZZ_SEED"] ?? "") ?? 400
        let paths = [
            "/_strata/sources/cars/items", "/_strata/sources/cars/items/3", "/_strata/sources/cars/items/3/history", "/_strata/sources/cars/diff",
            "/_strata/log", "/_strata/sources", "/cars/offers/3", "/@1/cars/offers", "/_strata/sessions", "/_strata/sources/%ff/items", "/@/x",
            "/@99999999999999999999/cars/offers"
        ]
        let params = ["limit", "offset", "as_of", "where", "sort", "search", "from", "to", "since", "type", "stream"]
        let values = ["-1", "0", "1", "99999999999999999999", "1e3", "", "%00", "a=b", "make=", "=x", "2026-13-45", "labels.name", "-price", "%E2%82", "\u{1B}"]
        var rng = SplitMix64(seed: seed)
        func next(_ bound: Int) -> Int { rng.below(bound) }
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await s.serving { (base: String) async throws in
                for i in 0..<n {
                    var query: [String] = []
                    for _ in 0..<next(4) {
                        query.append(
                            params[next(params.count)] + "=" + values[next(values.count)].addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
                    }
                    let path = paths[next(paths.count)] + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
                    let headers: [(String, String)] = next(4) == 0 ? [(["Accept-Datetime", "Strata-As-Of", "If-None-Match"][next(3)], "soon \(i)")] : []
                    let method = ["GET", "GET", "HEAD", "POST", "DELETE"][next(5)]
                    let body = next(3) == 0 ? "{\"from\": \(values[next(values.count)].debugDescription)}" : ""
                    let r = try await s.get(base, path, headers, method: method, body: body)
                    #expect(r.status < 500, "seed \(seed) case \(i): \(method) \(path) → \(r.status) \(r.text.prefix(200))")
                    if (400..<500).contains(r.status), method != "HEAD", path.hasPrefix("/_strata") {
                        #expect(r.json["message"] is String || r.json["error"] is String, "seed \(seed) case \(i): \(method) \(path) → \(r.text.prefix(200))")
                    }
                }
            }
        }
    }

    @Test func theEventStreamDeliversAnEventAppendedWhileConnected() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            let head = s.passes[2]
            try await s.serving { (base: String) async throws in
                let port = Int(base.split(separator: ":").last!)!
                let conn = try RawConnection(port: port)
                let opened = try await Self.blocking {
                    try conn.send("GET", "/_strata/events")
                    let (status, headers) = try conn.readHead()
                    return (status, headers["content-type"] ?? "", try conn.read(until: "strata events after seq \(head)"))
                }
                #expect(opened.0 == 200 && opened.1 == "text/event-stream" && opened.2.contains("after seq \(head)"), "\(opened)")
                try await SourceCatalog(store: s.store).define(SourceDefinition(name: "later", url: fixture.baseURL + "/catalog/entries"))
                let text = try await Self.blocking { try conn.read(until: "id: \(head + 1)\n") + (try conn.read(until: "\n\n", seconds: 2)) }
                #expect(text.contains("id: \(head + 1)\nevent: SourceDefined\ndata: {"), "\(text)")
                // A reconnecting client resumes after its Last-Event-ID.
                let again = try RawConnection(port: port)
                let resumed = try await Self.blocking {
                    try again.send("GET", "/_strata/events", headers: [("Last-Event-ID", String(head))])
                    _ = try again.readHead()
                    return try again.read(until: "id: \(head + 1)\n")
                }
                #expect(resumed.contains("event: SourceDefined"))
            }
        }
    }
}
