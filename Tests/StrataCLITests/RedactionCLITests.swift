import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Redaction at ingest through the real binary: a source's `--redact` paths never reach the
/// store's files or an export, in lists, details, file imports and recorded traffic, while the
/// redacted fields still show their changes and equal values stay equal.
@Suite struct RedactionCLITests {
    /// Item 3 of the fixture's cars, as the API's write side is told to serve it: a contact
    /// e-mail and a seller that change with each version.
    static func car(version v: Int, email: String, seller: String, model: String = "RAV4") -> String {
        #"{"id":3,"make":"Toyota","model":"\#(model)","price":\#(20_000 + v),"contact":{"email":"\#(email)","phone":"+49 30 1234"},"seller":{"name":"\#(seller)","city":"Gent"},"notes":[{"text":"\#(seller) calls back"}]}"#
    }

    @Test func redactedValuesNeverReachTheStoreYetStillShowAsChanges() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                    "--page-size", "10", "--detail-url", fixture.baseURL + "/cars/offers/{id}", "--redact", "contact.email,seller.name",
                    "--redact", "notes.text"
                ], store: store)
            #expect(add.status == 0, "\(add.stderr)")
            var secrets: [String] = []
            // A value of a field not redacted: found where the secrets are looked for, so the
            // search can see a value when it is there.
            let control = "Model \(UUID().uuidString)"
            for v in 1...3 {
                fixture.version = v
                let email = "person-\(v)-\(UUID().uuidString)@example.com"
                let seller = "Seller \(UUID().uuidString)"
                secrets += [email, seller]
                let put = try await curl(
                    [
                        "-X", "PUT", "-H", "Content-Type: application/json", "-d", Self.car(version: v, email: email, seller: seller, model: control),
                        fixture.baseURL + "/cars/offers/3"
                    ])
                #expect(String(decoding: put, as: UTF8.self).contains(email), "the API took version \(v)")
                let fetch = try await strata(["fetch", "cars", "--details"], store: store)
                #expect(fetch.status == 0, "\(fetch.stdout) \(fetch.stderr)")
            }
            // Unchanged values give the same placeholders: a fetch of the same data is no change.
            let again = try await strata(["fetch", "cars", "--details"], store: store)
            #expect(again.status == 0 && again.stdout.contains("~0 changed"), "\(again.stdout)")

            let show = try jsonObject(try await strata(["show", "cars", "3", "--format", "json"], store: store).stdout) as? [String: Any]
            let contact = try #require((show?["document"] as? [String: Any])?["contact"] as? [String: Any])
            let placeholder = try #require(contact["email"] as? String)
            #expect(placeholder.hasPrefix("[redacted:") && placeholder.count == 23, "\(placeholder)")
            #expect(contact["phone"] as? String == "+49 30 1234", "a field not named stays")
            // The detail (the fixture's own file for item 3) has its seller's name redacted too.
            let seller = try #require((show?["detail"] as? [String: Any])?["seller"] as? [String: Any])
            #expect((seller["name"] as? String)?.hasPrefix("[redacted:") == true, "\(seller)")
            let history = try await strata(["history", "cars", "3", "--format", "json"], store: store)
            #expect(history.status == 0)
            let changes = history.stdout.components(separatedBy: "\"/contact/email\"").count - 1
            #expect(changes >= 2, "the redacted field still shows its changes: \(history.stdout.prefix(600))")

            #expect(try await strata(["verify"], store: store).status == 0)
            let events = try await strata(["export", "--events", "--payloads"], store: store)
            let har = TestScratch.path("redact") + ".har"
            #expect(try await strata(["export", "cars", "--har", har], store: store).status == 0)
            let harBytes = [UInt8](FileManager.default.contents(atPath: har) ?? Data())
            let files = try storeBytes(store)
            // Bodies are stored compressed, so the files are searched for what is stored whole
            // (metadata, short bodies, index values) and the decoded export for every body.
            #expect(events.stdout.contains(control), "the event export holds the fields not redacted")
            let harHasControl = harBytes.contains(bytes: Array(control.utf8))
            #expect(harHasControl, "the HAR export holds the fields not redacted")
            for secret in secrets {
                #expect(secret.utf8.count >= 16)
                let (inFiles, inHAR) = (files.contains(bytes: Array(secret.utf8)), harBytes.contains(bytes: Array(secret.utf8)))
                #expect(!inFiles, "\(secret) in the store's files")
                #expect(!events.stdout.contains(secret), "\(secret) in the event export")
                #expect(!inHAR, "\(secret) in the HAR export")
            }
            // The fixture's own values of the redacted fields are gone too (a seller of item 17).
            // A compaction keeps the key: the same values give the same placeholders after it.
            #expect(try await strata(["compact"], store: store).status == 0)
            let afterCompact = try await strata(["fetch", "cars", "--details"], store: store)
            #expect(afterCompact.status == 0 && afterCompact.stdout.contains("~0 changed"), "\(afterCompact.stdout) \(afterCompact.stderr)")
            let fixtureSeller = files.contains(bytes: Array("Garage Martin".utf8)) || events.stdout.contains("Garage Martin")
            #expect(!fixtureSeller)
        }
    }

    /// Naming a path later: the next fetch asks for every page and detail whole (a 304 would
    /// keep the body stored before), so the current item holds the placeholder.
    @Test func aPathNamedLaterAppliesFromTheNextFetch() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let email = "later-\(UUID().uuidString)@example.com"
            _ = try await curl(
                [
                    "-X", "PUT", "-H", "Content-Type: application/json", "-d", Self.car(version: 1, email: email, seller: "Seller"),
                    fixture.baseURL + "/cars/offers/3"
                ])
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                    "--page-size", "10", "--detail-url", fixture.baseURL + "/cars/offers/{id}"
                ], store: store)
            #expect(add.status == 0)
            #expect(try await strata(["fetch", "cars", "--details"], store: store).status == 0)
            #expect(try await strata(["show", "cars", "3", "--format", "json"], store: store).stdout.contains(email))
            let before = try await strata(["log", "--limit", "1", "--format", "ndjson"], store: store).stdout
            let beforeSeq = try #require((try JSONSerialization.jsonObject(with: Data(before.utf8)) as? [String: Any])?["seq"] as? Int)
            #expect(try await strata(["alert", "add", "cars", "any", "--on", "changed", "--exec", "true"], store: store).status == 0)
            #expect(try await strata(["source", "change", "cars", "--redact", "contact.email"], store: store).status == 0)
            let fetch = try await strata(["fetch", "cars", "--details"], store: store)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            // Re-storing the values redacted is no change of the API's data: counted apart, no
            // diff entry, no alert, and history says what happened.
            #expect(fetch.stdout.contains("~0 changed") && fetch.stdout.contains("item re-stored with contact.email redacted"), "\(fetch.stdout)")
            let diff = try await strata(["diff", "cars", "--from", "\(beforeSeq)", "--format", "json"], store: store).stdout
            #expect(!diff.contains("\"id\": \"3\""), "\(diff)")
            let alerts = try await strata(["alert", "list", "--format", "json"], store: store).stdout
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(alerts.utf8)) as? [[String: Any]])
            #expect(listed.count == 1 && listed.allSatisfy { ($0["pending"] as? Int) == 0 }, "\(alerts)")
            let history = try await strata(["history", "cars", "3"], store: store).stdout
            #expect(history.contains("(values re-stored with contact.email redacted)"), "\(history)")
            let verified = try await strata(["verify"], store: store)
            #expect(verified.status == 0, "\(verified.stdout)")
            let show = try await strata(["show", "cars", "3", "--format", "json"], store: store).stdout
            #expect(!show.contains(email) && show.contains("[redacted:"), "\(show.prefix(400))")
            // Unchanged since: conditional requests again, nothing new stored.
            let again = try await strata(["fetch", "cars", "--details"], store: store)
            #expect(again.stdout.contains("~0 changed"), "\(again.stdout)")
        }
    }

    /// Rotating the redaction key is a recorded step: the next fetch stores every redacted value
    /// again under the new key, reported as re-stored, not changed; a real change after it is a
    /// change again, and the store still matches its own rebuild.
    @Test func aRotatedKeyReStoresValuesWithoutChanges() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let add = try await strata(
                [
                    "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                    "--page-size", "10", "--redact", "description"
                ], store: store)
            #expect(add.status == 0)
            #expect(try await strata(["fetch", "cars"], store: store).status == 0)
            let placeholder = try await strata(["show", "cars", "3", "--offline", "--format", "json"], store: store).stdout
            let rotated = try await strata(["key", "redaction", "rotate"], store: store)
            #expect(rotated.status == 0 && rotated.stdout.contains("rotated the redaction key (check "), "\(rotated.stdout)\(rotated.stderr)")
            let again = try await strata(["fetch", "cars"], store: store)
            #expect(
                again.stdout.contains("+0 added, ~0 changed, -0 removed") && again.stdout.contains("re-stored under the rotated redaction key"),
                "\(again.stdout)")
            let now = try await strata(["show", "cars", "3", "--offline", "--format", "json"], store: store).stdout
            #expect(now != placeholder && now.contains("[redacted:"), "the value is stored under the new key")
            let third = try await strata(["fetch", "cars"], store: store)
            #expect(third.stdout.contains("~0 changed") && !third.stdout.contains("re-stored"), "\(third.stdout)")
            fixture.version = 2
            let changed = try await strata(["fetch", "cars"], store: store)
            #expect(!changed.stdout.contains("~0 changed") && !changed.stdout.contains("re-stored"), "\(changed.stdout)")
            let shown = try await strata(["key", "redaction"], store: store)
            #expect(shown.stdout.contains("(rotated, seq"), "\(shown.stdout)")
            let verified = try await strata(["verify"], store: store)
            #expect(verified.status == 0, "\(verified.stdout)")
        }
    }

    @Test func fileImportsAndRecordedTrafficAreRedactedToo() async throws {
        let store = makeStoreDir()
        let secret = "token-\(UUID().uuidString)"
        let file = TestScratch.path("redact") + ".json"
        try Data(#"{"results":[{"id":1,"apiToken":"\#(secret)","name":"one"}]}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(
            try await strata(["source", "add", "keys", "--url", "file://" + file, "--items", "results", "--redact", "apiToken"], store: store).status == 0)
        let imported = try await strata(["import", "keys", file], store: store)
        #expect(imported.status == 0, "\(imported.stderr)")
        let show = try await strata(["show", "keys", "1", "--format", "json"], store: store)
        #expect(show.stdout.contains("[redacted:") && !show.stdout.contains(secret), "\(show.stdout)")

        // A HAR into a recorded source that redacts a JSON field and a header.
        let har = TestScratch.path("redact") + ".har"
        func write(_ entries: [(url: String, body: String, header: String, post: String?)]) throws {
            let list = try entries.map { e in
                let request =
                    try e.post.map {
                        let text = String(decoding: try JSONSerialization.data(withJSONObject: $0, options: .fragmentsAllowed), as: UTF8.self)
                        return #""method":"POST","postData":{"mimeType":"application/json","text":\#(text)}"#
                    } ?? #""method":"GET""#
                return
                    #"{"startedDateTime":"2026-11-28T10:00:00.000Z","time":1,"request":{\#(request),"url":"\#(e.url)","httpVersion":"HTTP/1.1","headers":[{"name":"X-Trace","value":"\#(e.header)"}],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","headers":[{"name":"Content-Type","value":"application/json"}],"cookies":[],"content":{"size":\#(e.body.utf8.count),"mimeType":"application/json","text":\#(String(decoding: try JSONSerialization.data(withJSONObject: e.body, options: .fragmentsAllowed), as: UTF8.self))},"redirectURL":"","headersSize":-1,"bodySize":-1},"cache":{},"timings":{"send":0,"wait":1,"receive":0}}"#
            }
            try Data(#"{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":[\#(list.joined(separator: ","))]}}"#.utf8).write(
                to: URL(fileURLWithPath: har))
        }
        try write([("http://api.test/first", #"{"ok":true}"#, "first", nil)])
        #expect(try await strata(["import", "shop", "--har", har], store: store).status == 0)
        let change = try await strata(["source", "change", "shop", "--redact", "user.password", "--redact-header", "X-Trace"], store: store)
        #expect(change.status == 0, "\(change.stderr)")
        let password = "pw-\(UUID().uuidString)"
        let trace = "trace-\(UUID().uuidString)"
        // A login whose request body carries the password: stored redacted, and replayed to the
        // same request, whose body the server redacts the same way to find it.
        let login = #"{"user":{"name":"ann","password":"\#(password)"}}"#
        try write([
            ("http://api.test/me", #"{"user":{"name":"ann","password":"\#(password)"}}"#, trace, nil),
            ("http://api.test/login", #"{"session":"s-1"}"#, trace, login)
        ])
        let second = try await strata(["import", "shop", "--har", har], store: store)
        #expect(second.status == 0, "\(second.stderr)")
        let files = try storeBytes(store)
        let events = try await strata(["export", "--events", "--payloads"], store: store).stdout
        for s in [secret, password, trace] {
            let found = files.contains(bytes: Array(s.utf8)) || events.contains(s)
            #expect(!found, "\(s) in the store")
        }
        let served = try await Listening.start(["serve", "--port", "0", "--source", "shop"], store: store)
        let body = try await curl([served.base + "/me"])
        #expect(String(decoding: body, as: UTF8.self).contains(#""name":"ann","password":"[redacted:"#), "\(String(decoding: body, as: UTF8.self))")
        let session = try await curl(["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", login, served.base + "/login"])
        #expect(String(decoding: session, as: UTF8.self) == #"{"session":"s-1"}"#, "\(String(decoding: session, as: UTF8.self))")
        let other = try await curl([
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "--data-binary", #"{"user":{"name":"bob"}}"#, served.base + "/login"
        ])
        #expect(String(decoding: other, as: UTF8.self) == "404", "another body was never recorded")
        _ = try await served.stop()
        #expect(try await strata(["verify"], store: store).status == 0)
    }

    @Test func badRedactionsAreRefusedClearly() async throws {
        let store = makeStoreDir()
        let r = try await strata(["source", "add", "x", "--url", "http://127.0.0.1:1/x", "--redact", "a..b"], store: store)
        #expect(r.status == 64 && r.stderr.contains("--redact"), "\(r.stderr)")
        let h = try await strata(["source", "add", "x", "--url", "http://127.0.0.1:1/x", "--redact-header", "Bad Name"], store: store)
        #expect(h.status == 64 && h.stderr.contains("--redact-header"), "\(h.stderr)")
        // One rule for a header name everywhere one is named: an RFC 9110 token.
        for bad in ["X:Token", "Bad Name", "Über", "X(1)"] {
            for args in [
                ["source", "add", "x", "--url", "http://127.0.0.1:1/x", "--redact-header", bad],
                ["proxy", "x", "--upstream", "http://127.0.0.1:1", "--redact-header", bad],
                ["import", "x", "--har", fixturesRoot + "/har/mitmproxy-11.har", "--redact-header", bad]
            ] {
                let r = try await strata(args, store: store)
                #expect(r.status == 64 && r.stderr.contains("--redact-header"), "\(args): \(r.stderr)")
            }
        }
        let fine = try await strata(["source", "add", "y", "--url", "http://127.0.0.1:1/y", "--redact-header", "X-Session_Id.v2"], store: store)
        #expect(fine.status == 0, "\(fine.stderr)")
    }
}
