import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// The web UI of `strata serve` (`/_strata/ui/`), through the real binary: every page over plain
/// HTTP (status, escaping, the security headers, `as_of`, a foreign `Host`), then in a real
/// headless Chromium driven over WebDriver (a journey by links and forms, the time slider, a
/// diff, hostile values that never run, dark mode, a phone-sized screen, no console errors).
@Suite(.serialized) struct WebUITests {
    /// Values an API may send that must reach a page as text: markup, handlers, a `javascript:`
    /// link, an SVG, control characters, a huge value.
    nonisolated(unsafe) static let hostile: [[String: Any]] = [
        [
            "id": "x1", "name": "<script>document.title='pwned'</script>", "note": "<img src=x onerror=\"document.title='pwned'\">",
            "url": "javascript:document.title='pwned'", "svg": "<svg onload=\"document.title='pwned'\"></svg>", "price": 10
        ],
        ["id": "x2\"'<b>&", "name": "quote \" and ' and &amp;", "escape": "\u{1B}[31mred\u{07}", "price": 12, "home": "https://example.com/a?b=<c>"],
        ["id": "x3", "name": "big", "blob": String(repeating: "<b>", count: 30_000), "price": 14]
    ]

    /// A store with cars fetched three times (details and images) and the hostile source
    /// imported twice; the server on it, with the seq of each cars pass.
    static func world(_ body: (String, Listening, [Int]) async throws -> Void) async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            let passes = try await ServeCLITests.carsFetchedThrice(fixture, store: store)
            let dir = TestScratch.directory("strata-web")
            let add = try await strata(["source", "add", "evil", "--url", "file://\(dir)/evil.json", "--title", "name", "--index", "price"], store: store)
            #expect(add.status == 0, "\(add.stderr)")
            for (i, price) in [0, 5].enumerated() {
                let items = hostile.map { item -> [String: Any] in
                    var i = item; i["price"] = (item["price"] as! Int) + price; return i
                }
                try JSONSerialization.data(withJSONObject: items).write(to: URL(fileURLWithPath: "\(dir)/evil-\(i).json"))
                let r = try await strata(["import", "evil", "\(dir)/evil-\(i).json"], store: store)
                #expect(r.status == 0, "\(r.stderr)")
            }
            // Recorded traffic: mitmproxy's HAR (a repeated GET, a binary body, a 404, a bearer token).
            let har = try await strata(["import", "shop", "--har", fixturesRoot + "/har/mitmproxy-11.har"], store: store)
            #expect(har.status == 0, "\(har.stderr)")
            // An alert whose webhook's address holds a token the pages must not show.
            let alert = try await strata(
                ["alert", "add", "cars", "drops", "--when", "price < old.price", "--webhook", "http://127.0.0.1:9/hook?token=SECRET-TOKEN"], store: store)
            #expect(alert.status == 0, "\(alert.stderr)")
            let served = try await ServeCLITests.serve(store)
            defer { Task { _ = try? await served.stop() } }
            try await body(store, served, passes)
        }
    }

    /// The seq of the newest exchange recorded in `shop`.
    static func firstExchange(_ base: String) async throws -> Int {
        let list = try await RawHTTP.request(base, "/_strata/ui/sources/shop/exchanges")
        return list.text.components(separatedBy: "/exchanges?seq=").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }.first ?? 0
    }

    @Test func everyPageAnswersEscapedWithItsHeadersAndItsPoint() async throws {
        try await Self.world { _, served, passes in
            let base = served.base
            let pages = [
                "/_strata/ui/", "/_strata/ui/sources/cars", "/_strata/ui/sources/cars?sort=-make", "/_strata/ui/sources/cars?facet=make",
                "/_strata/ui/sources/cars?where=make%20%3D%20%22Toyota%22",
                "/_strata/ui/sources/cars?search=a&as_of=\(passes[0])", "/_strata/ui/sources/cars/items/3", "/_strata/ui/sources/cars/items/3?chart=price",
                "/_strata/ui/sources/cars/changes", "/_strata/ui/sources/cars/changes?kind=changed&when=price%20%3C%20old.price",
                "/_strata/ui/log", "/_strata/ui/log?type=FetchCompleted", "/_strata/ui/log?seq=1", "/_strata/ui/sources/evil",
                "/_strata/ui/sources/evil/items/x1", "/_strata/ui/sources/evil/items/x2%22%27%3Cb%3E%26", "/_strata/ui/sources/evil/items/x3",
                "/_strata/ui/sources/evil/changes",
                "/_strata/ui/sources/cars/schema", "/_strata/ui/sources/evil/schema", "/_strata/ui/alerts", "/_strata/ui/alerts?source=cars&name=drops",
                "/_strata/ui/sources/shop/exchanges"
            ]
            for path in pages {
                let r = try await RawHTTP.request(base, path)
                #expect(r.status == 200, "\(path): \(r.status) \(r.text.prefix(300))")
                #expect(r.header("Content-Type") == "text/html; charset=utf-8", "\(path)")
                let csp = r.header("Content-Security-Policy") ?? ""
                #expect(csp.contains("default-src 'none'") && csp.contains("script-src 'self'") && !csp.contains("unsafe"), "\(path): \(csp)")
                #expect(r.header("X-Content-Type-Options") == "nosniff", "\(path)")
                // No markup from the data: no script but ours, no handler, no javascript: link.
                #expect(r.text.components(separatedBy: "<script").count == 2, "\(path) has a script besides strata.js")
                #expect(!r.text.contains("onerror=\"") && !r.text.contains("onload=\"") && !r.text.lowercased().contains("href=\"javascript:"), "\(path)")
                #expect(!r.text.contains("\u{1B}"), "\(path) passes a control character through")
                #expect(!r.text.contains("SECRET-TOKEN"), "\(path) shows a webhook's token")
            }
            let evil = try await RawHTTP.request(base, "/_strata/ui/sources/evil/items/x1")
            #expect(evil.text.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;") || evil.text.contains("&lt;script&gt;document.title="))
            // A link from the data only when it is http(s).
            let x2 = try await RawHTTP.request(base, "/_strata/ui/sources/evil/items/" + "x2%22%27%3Cb%3E%26")
            #expect(x2.status == 200 && x2.text.contains("href=\"https://example.com/a?b=&lt;c&gt;\""), "\(x2.status) \(x2.text.suffix(600))")
            // Control characters shown as their symbols.
            #expect(x2.text.contains("\u{241B}[31mred\u{2407}"))
            // The JSON API takes the same encoded id.
            #expect(try await RawHTTP.request(base, "/_strata/sources/evil/items/x2%22%27%3Cb%3E%26").json["id"] as? String == "x2\"'<b>&")
            // A facet counts an indexed field's values, each a filter.
            let facet = try await RawHTTP.request(base, "/_strata/ui/sources/cars?facet=make")
            #expect(facet.text.contains("<h3>make</h3>") && facet.text.contains("Toyota</a> <span class=\"count\">"), "\(facet.text.prefix(0))")
            // A past point says so, with the way back.
            let then = try await RawHTTP.request(base, "/_strata/ui/sources/cars?as_of=\(passes[0])")
            #expect(then.text.contains("You are seeing the store as of") && then.text.contains("Back to now"))
            #expect(!(try await RawHTTP.request(base, "/_strata/ui/sources/cars")).text.contains("You are seeing the store as of"))
            // A foreign Host is refused (DNS rebinding); localhost is ours.
            let foreign = try await RawHTTP.request(base, "/_strata/ui/", headers: [("Host", "attacker.example:\(base.split(separator: ":").last!)")])
            #expect(foreign.status == 421)
            // Images and downloads alike.
            for path in ["/_strata/ui/sources/cars/items/3/image", "/_strata/ui/sources/shop/exchanges.har", "/_strata/ui/assets/strata.js"] {
                let r = try await RawHTTP.request(base, path, headers: [("Host", "attacker.example")])
                #expect(r.status == 421, "\(path)")
            }
            #expect(try await RawHTTP.request(base, "/_strata/ui/", headers: [("Host", "localhost")]).status == 200)
            // Unknown things are a page with the status, bad input is said on the page.
            #expect(try await RawHTTP.request(base, "/_strata/ui/sources/nope").status == 404)
            #expect(try await RawHTTP.request(base, "/_strata/ui/sources/cars/items/nope").status == 404)
            let bad = try await RawHTTP.request(base, "/_strata/ui/sources/cars?where=price%20%3C")
            #expect(bad.status == 200 && bad.text.contains("class=\"error\""), "\(bad.text.prefix(200))")
            // The image, with its recorded type, never sniffed.
            let image = try await RawHTTP.request(base, "/_strata/ui/sources/cars/items/3/image")
            #expect(image.status == 200 && image.header("X-Content-Type-Options") == "nosniff" && !(image.header("Content-Type") ?? "").contains("html"))
            // Recorded exchanges: one with its headers (the token masked) and body, compared with
            // the previous answer to the same request; the archives to download.
            let list = try await RawHTTP.request(base, "/_strata/ui/sources/shop/exchanges")
            let seqs = list.text.components(separatedBy: "/exchanges?seq=").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
            #expect(seqs.count == 9, "\(seqs)")
            var compared = false
            for seq in seqs {
                let one = try await RawHTTP.request(base, "/_strata/ui/sources/shop/exchanges?seq=\(seq)")
                #expect(one.status == 200 && one.text.contains("<h3 id=\"res-h\">Response</h3>") && !one.text.contains("fixture-token"), "\(seq)")
                if let range = one.text.range(of: "exchanges?seq=\(seq)&amp;compare=") {
                    let other = one.text[range.upperBound...].prefix { $0.isNumber }
                    let cmp = try await RawHTTP.request(base, "/_strata/ui/sources/shop/exchanges?seq=\(seq)&compare=\(other)")
                    #expect(cmp.status == 200 && cmp.text.contains("Against seq \(other)") && cmp.text.contains("The same body."), "\(seq)")
                    compared = true
                }
            }
            #expect(compared, "the repeated GET links its previous answer")
            let harFile = try await RawHTTP.request(base, "/_strata/ui/sources/shop/exchanges.har")
            #expect(harFile.status == 200 && ((harFile.json["log"] as? [String: Any])?["entries"] as? [Any])?.count == 9)
            let warc = try await RawHTTP.request(base, "/_strata/ui/sources/shop/exchanges.warc")
            #expect(warc.status == 200 && warc.header("Content-Disposition")?.contains("attachment") == true && warc.body.count > 1000)
            // The assets.
            let js = try await RawHTTP.request(base, "/_strata/ui/assets/strata.js")
            #expect(js.status == 200 && js.header("Content-Type") == "text/javascript; charset=utf-8")
            // Each page links its JSON twin, which answers.
            let twin = try await RawHTTP.request(base, "/_strata/sources/cars/items/3/history")
            #expect(twin.status == 200 && !twin.jsonArray.isEmpty)
        }
    }

    @Test func aPersonFindsWhatChangedWhenAndWhatItLookedLikeInARealBrowser() async throws {
        try await Self.world { _, served, passes in
            let browser = try await WebDriver.start()
            defer { Task { await browser.quit() } }
            let shots = ProcessInfo.processInfo.environment["STRATA_SCREENSHOTS"]
            func noErrors(_ page: String) async throws {
                // The manners axe-core checks first: one main landmark, a label for every field
                // and a header for every table column, a language, a title.
                let unlabelled =
                    try await browser.run(
                        """
                        const bad = [];
                        if (document.querySelectorAll('main').length !== 1) bad.push('main');
                        if (!document.documentElement.lang || !document.title) bad.push('lang/title');
                        for (const f of document.querySelectorAll('input:not([type=hidden]), select, button'))
                          if (!(f.closest('label') || f.labels?.length || f.getAttribute('aria-label') || f.textContent.trim())) bad.push(f.outerHTML.slice(0, 80));
                        for (const t of document.querySelectorAll('table')) if (!t.querySelector('thead th')) bad.push('table');
                        for (const i of document.querySelectorAll('img')) if (!i.hasAttribute('alt')) bad.push('img');
                        return bad.join(' | ');
                        """) as? String ?? "?"
                #expect(unlabelled.isEmpty, "\(page): \(unlabelled)")
                // axe-core's colour-contrast rule, as WCAG 2 AA words it: every visible text at
                // least 4.5:1 against what is behind it (3:1 when large: 24 px, or 18.7 px bold).
                let lowContrast =
                    try await browser.run(
                        """
                        const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
                        const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
                          .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
                        const behind = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
                        const bad = [];
                        for (const el of document.querySelectorAll('body *')) {
                          if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
                          const st = getComputedStyle(el), box = el.getBoundingClientRect();
                          if (st.visibility !== 'visible' || st.display === 'none' || box.width === 0 || box.right < 0 || el.closest('[hidden], svg, option')) continue;
                          const [a, b] = [lum(rgb(st.color).slice(0, 3)), lum(behind(el))];
                          const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), size = parseFloat(st.fontSize);
                          const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
                          if (ratio < (large ? 3 : 4.5)) bad.push(el.tagName + '.' + el.className + ' ' + ratio.toFixed(2));
                        }
                        return [...new Set(bad)].slice(0, 8).join(' | ');
                        """) as? String ?? "?"
                #expect(lowContrast.isEmpty, "\(page): \(lowContrast)")
                // axe-core itself: no serious or critical violation of its rules.
                let axe = try await browser.seriousAccessibilityProblems()
                #expect(axe.isEmpty, "\(page): \(axe)")
                let errors = try await browser.run("return document.documentElement.dataset.errors || ''") as? String ?? ""
                #expect(errors.isEmpty, "\(page): \(errors)")
                let severe = try await browser.severeLogs().filter { !$0.contains("favicon.ico") }
                #expect(severe.isEmpty, "\(page): \(severe)")
            }
            // The front page, by links to a source.
            try await browser.go(served.base + "/_strata/ui/")
            #expect(try await browser.title() == "Sources · Strata")
            if let shots { try await browser.screenshot(to: shots + "/ui-sources.png") }
            try await browser.click("a[href='/_strata/ui/sources/cars']")
            #expect(try await browser.title() == "cars · Strata")
            try await noErrors("cars")
            // axe does look: an image without a text alternative is a critical violation.
            _ = try await browser.run("document.querySelector('main').append(document.createElement('img'))")
            let missingAlt = try await browser.seriousAccessibilityProblems()
            #expect(missingAlt.contains { $0.hasPrefix("image-alt: ") }, "\(missingAlt)")
            // Filter with an expression through the form.
            try await browser.type("input[name=where]", "make = \"Toyota\"")
            try await browser.click("form.filters button[type=submit]")
            let makes =
                try await browser.run("return Array.from(document.querySelectorAll('table.rows tbody tr td:last-child')).map(c => c.textContent)") as? [String]
                ?? []
            #expect(!makes.isEmpty && makes.allSatisfy { $0 == "Toyota" }, "\(makes)")
            #expect(try await browser.run("return document.querySelectorAll('.error').length") as? Int == 0)
            #expect(try await browser.run("return document.querySelector('input[name=where]').value") as? String == "make = \"Toyota\"")
            if let shots { try await browser.screenshot(to: shots + "/ui-source.png") }
            // The slider, without a script's help too: the form goes to the first pass.
            try await browser.go(served.base + "/_strata/ui/sources/cars")
            _ = try await browser.run(
                "const s = document.getElementById('slider'); s.value = 0; s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change'));")
            try await Task.sleep(for: .milliseconds(500))
            let url = try await browser.run("return location.search") as? String ?? ""
            // The first stop: the first pass's end (its details and images came after).
            #expect(url.contains("as_of=") && Int(url.components(separatedBy: "as_of=")[1].prefix { $0.isNumber }) ?? .max <= passes[0], "\(url)")
            #expect((try await browser.run("return document.querySelector('.banner[role=status]').textContent") as? String ?? "").contains("as of"))
            // An item's versions: its timeline, a change's <del>/<ins>, previous/next by key.
            try await browser.go(served.base + "/_strata/ui/sources/cars/changes?kind=changed")
            try await noErrors("changes")
            if let shots { try await browser.screenshot(to: shots + "/ui-changes.png") }
            try await browser.click("table.rows tbody tr th a")
            let dels = try await browser.run("return document.querySelectorAll('.timeline del, .timeline ins').length") as? Int ?? 0
            #expect(dels > 0, "a changed version shows its fields' before and after")
            if let shots { try await browser.screenshot(to: shots + "/ui-item.png") }
            try await noErrors("item")
            // The log and one event's envelope.
            try await browser.go(served.base + "/_strata/ui/log")
            try await browser.click("table.rows tbody tr th a")
            #expect((try await browser.run("return document.querySelector('#event-h').textContent") as? String ?? "").hasPrefix("Event"))
            try await noErrors("log")
            try await browser.go(served.base + "/_strata/ui/sources/cars/schema")
            try await noErrors("schema")
            try await browser.go(served.base + "/_strata/ui/alerts?source=cars&name=drops")
            try await noErrors("alerts")
            // Recorded traffic from the front page's link: an exchange, and its previous answer.
            try await browser.go(served.base + "/_strata/ui/")
            try await browser.click("a[href='/_strata/ui/sources/shop/exchanges']")
            try await browser.click("table.rows tbody tr th a")
            #expect((try await browser.run("return document.querySelector('#res-h').textContent") as? String) == "Response")
            try await noErrors("exchange")
            try await browser.go(served.base + "/_strata/ui/sources/shop/exchanges")
            _ = try await browser.run(
                "Array.from(document.querySelectorAll('table.rows a')).find(a => a.closest('tr').textContent.includes('/cars/offers/3')).click()")
            try await Task.sleep(for: .milliseconds(300))
            if (try await browser.run("return document.querySelector('a[href*=compare]') !== null") as? Bool) == true {
                try await browser.click("a[href*=compare]")
                #expect((try await browser.run("return document.querySelector('#cmp-h').textContent") as? String ?? "").hasPrefix("Against seq"))
            }
            if let shots { try await browser.screenshot(to: shots + "/ui-exchange.png") }
            try await noErrors("exchange compared")
            // Hostile values stay text: the title is ours, no script of theirs, no handler ran.
            for path in ["/_strata/ui/sources/evil", "/_strata/ui/sources/evil/items/x1", "/_strata/ui/sources/evil/changes"] {
                try await browser.go(served.base + path)
                try await Task.sleep(for: .milliseconds(200))
                let title = try await browser.title()
                #expect(title != "pwned" && title.hasSuffix("· Strata"), "\(path): \(title)")
                let scripts = try await browser.run("return Array.from(document.scripts).map(s => s.src).join(' ')") as? String ?? ""
                #expect(scripts.hasSuffix("/_strata/ui/assets/strata.js") && !scripts.contains(" "), "\(path): \(scripts)")
                let injected =
                    try await browser.run("return document.querySelectorAll('main svg:not(.chart), main img[src=x], a[href^=javascript]').length") as? Int
                #expect(injected == 0, "\(path)")
                try await noErrors(path)
            }
            // A link that puts a quote with a combining mark into the search box: the value stays
            // the box's text, and no attribute of the attacker's reaches the element.
            let lure = "x\"\u{301} autofocus onfocus=\"document.title='pwned'"
            try await browser.go(served.base + "/_strata/ui/sources/evil?search=" + lure.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await browser.run("return document.querySelector('#filter').value") as? String == lure)
            #expect(try await browser.run("return document.querySelector('#filter').hasAttribute('onfocus')") as? Bool == false)
            #expect(try await browser.title() != "pwned")
            // Dark, by the system's choice and by the toggle.
            try await browser.cdp("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "dark"]]])
            try await browser.go(served.base + "/_strata/ui/sources/cars")
            let dark = try await browser.run("return getComputedStyle(document.documentElement).backgroundColor") as? String ?? ""
            #expect(dark == "rgb(21, 22, 26)", "\(dark)")
            try await noErrors("cars, dark")
            try await browser.go(served.base + "/_strata/ui/sources/cars/items/3")
            try await noErrors("item, dark")
            try await browser.go(served.base + "/_strata/ui/sources/cars")
            if let shots { try await browser.screenshot(to: shots + "/ui-source-dark.png") }
            try await browser.click("#theme")
            let light = try await browser.run("return getComputedStyle(document.documentElement).backgroundColor") as? String ?? ""
            #expect(light == "rgb(255, 255, 255)", "\(light)")
            // A 390-px phone: no page wider than the screen (wide tables scroll in their box).
            try await browser.cdp("Emulation.setDeviceMetricsOverride", ["width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true])
            for path in ["/_strata/ui/", "/_strata/ui/sources/cars", "/_strata/ui/sources/cars/items/3", "/_strata/ui/sources/evil/items/x3", "/_strata/ui/log"]
            {
                try await browser.go(served.base + path)
                let overflow = try await browser.run("return document.documentElement.scrollWidth - window.innerWidth") as? Int ?? 1
                #expect(overflow <= 0, "\(path) is \(overflow) px wider than a 390-px screen")
            }
        }
    }
}
