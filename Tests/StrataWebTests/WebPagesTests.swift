import Foundation
import StrataDomain
import StrataJSON
import Testing

@testable import StrataWeb

/// The pages' rendering without a server: escaping, links from data, word diffs, the versions a
/// page holds.
@Suite struct WebPagesTests {
    let pages = try! WebPages()
    let chrome = WebPages.Chrome(title: "t", asOf: nil, nowLink: "/", json: "/j")

    func item(_ doc: JSONValue, title: String = "x") -> Item {
        Item(source: "s", id: "1", title: title, document: doc)
    }

    /// Every template is registered and renders its page.
    @Test func everyTemplateRenders() {
        for name in Templates.all.keys where name != "layout" && name != "changeList" {
            #expect(pages.render(name, chrome, [:]).contains("<main id=\"main\">"), "\(name)")
        }
        #expect(Set(Templates.all.keys).isSuperset(of: ["sources", "source", "item", "changes", "log", "schema", "alerts", "exchanges", "error"]))
    }

    /// No template skips the library's escaping: every value goes through `{{…}}`.
    @Test func noTemplateSkipsEscaping() {
        for (name, text) in Templates.all {
            #expect(!text.contains("{{{") && !text.contains("{{&") && !text.contains("{{ &"), "\(name)")
        }
    }

    @Test func valuesAreTextNeverMarkup() throws {
        let hostile = "<script>alert(1)</script>\"'&<img src=x onerror=alert(1)>"
        let html = pages.item(
            item: item(
                .object(["name": .string(hostile), "link": .string("javascript:alert(1)"), "home": .string("https://example.com/?a=<b>")]), title: hostile),
            versions: [], compare: nil, chart: nil, asOf: nil, chrome: chrome)
        #expect(!html.contains("<script>alert") && !html.contains("<img src=x"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!html.contains("href=\"javascript:"), "a javascript: value is never a link")
        #expect(html.contains("href=\"https://example.com/?a=&lt;b&gt;\""), "an https value is a link, escaped")
    }

    /// A quote or an angle bracket followed by a combining mark is one `Character` in Swift, so
    /// an escaper that compares characters lets it through raw (swift-mustache's own does): an
    /// attribute's value could end there and an event handler follow. The pages escape by bytes.
    @Test func aCombiningMarkDoesNotHideAQuoteOrABracket() {
        let hostile = "x\"\u{301} autofocus onfocus=alert(1) x=\"<\u{301}script>"
        let html = pages.item(
            item: item(.object(["home": .string("https://example.com/" + hostile)]), title: hostile), versions: [], compare: nil, chart: nil, asOf: nil,
            chrome: chrome)
        #expect(!html.contains("\"\u{301}") && !html.contains("<\u{301}"), "a quote or bracket with a combining mark went out raw")
        #expect(html.contains("&quot;\u{301} autofocus") && html.contains("&lt;\u{301}script&gt;"))
        #expect(WebEscaping().escapeText("a<b>&\"'c") == "a&lt;b&gt;&amp;&quot;&#39;c")
        #expect(WebEscaping().escapeText("plain ünïcödé") == "plain ünïcödé")
    }

    @Test func linksFromDataAreOnlyWeb() {
        for bad in [
            "javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "vbscript:x", "http://", "https://exa mple.com", "//evil.example",
            "http://a\u{0}b"
        ] {
            #expect(!Links.isWeb(bad), "\(bad)")
        }
        #expect(Links.isWeb("https://example.com/a?b=c") && Links.isWeb("HTTP://EXAMPLE.COM"))
    }

    @Test func timesAreUTCToTheSecond() {
        let f = ISO8601DateFormatter()
        for t in [0.0, 951_782_400, 1_767_225_599.9, 4_102_444_800, -86_401, 1_709_251_199] {
            let d = Date(timeIntervalSince1970: t)
            #expect(WebPages.iso(d) == f.string(from: Date(timeIntervalSince1970: t.rounded(.down))), "\(t)")
        }
        #expect(WebPages.time(Date(timeIntervalSince1970: 1_772_355_600)) == "2026-03-01 09:00:00 UTC")
    }

    @Test func controlCharactersBecomeSymbols() {
        #expect(WebPages.visible("a\u{1B}[31mb\u{07}\u{85}\nc") == "a\u{241B}[31mb\u{2407}\u{FFFD}\nc")
    }

    @Test func longTextsAreMarkedWordByWord() {
        let (old, new) = WordDiff.parts("the quick brown fox jumps over the lazy dog", "the quick red fox jumps over the dog")
        let gone = old.filter { $0["gone"] as? Bool == true }.compactMap { $0["text"] as? String }
        let added = new.filter { $0["added"] as? Bool == true }.compactMap { $0["text"] as? String }
        #expect(gone == ["brown ", "lazy "] && added == ["red "])
    }

    /// Against a plain table over the whole texts: each side's parts give its text back, and the
    /// words marked the same are as many as the longest common subsequence has (the shared start
    /// and end are compared away first, never the answer).
    @Test func wordDiffsKeepTheTextsAndFindALongestCommonSubsequence() {
        var random = SystemRandomNumberGenerator()
        let vocabulary = ["a ", "b ", "c ", "d ", "e\n", "f ", "g "]
        for _ in 0..<300 {
            let a = (0..<Int.random(in: 0...40, using: &random)).map { _ in vocabulary.randomElement(using: &random)! }
            var b = a
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                switch Int.random(in: 0...2, using: &random) {
                case 0 where !b.isEmpty: b.remove(at: Int.random(in: 0..<b.count, using: &random))
                case 1: b.insert(vocabulary.randomElement(using: &random)!, at: Int.random(in: 0...b.count, using: &random))
                default: if !b.isEmpty { b[Int.random(in: 0..<b.count, using: &random)] = vocabulary.randomElement(using: &random)! }
                }
            }
            let (old, new) = WordDiff.parts(a.joined(), b.joined())
            func text(_ parts: [[String: Any]]) -> String { parts.compactMap { $0["text"] as? String }.joined() }
            #expect(text(old) == a.joined() && text(new) == b.joined())
            let same = old.filter { $0["same"] as? Bool == true }.map { WordDiff.words($0["text"] as? String ?? "").count }.reduce(0, +)
            var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
            for i in stride(from: a.count - 1, through: 0, by: -1) {
                for j in stride(from: b.count - 1, through: 0, by: -1) {
                    table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
                }
            }
            #expect(same == table[0][0], "\(a) → \(b)")
        }
    }

    @Test func anItemShowsItsNewestVersionsAndLinksTheOlder() {
        let versions = (1...120).map { n in
            ItemVersion(
                version: n, seq: UInt64(n * 10), recordedAt: Date(timeIntervalSince1970: Double(n)), kind: n == 1 ? .added : .changed,
                changes: n == 1 ? [] : [Change(kind: .replaced, path: "/n", old: .int(n - 1), new: .int(n))], document: .object(["n": .int(n)]))
        }
        let html = pages.item(item: item(.object(["n": .int(120)])), versions: versions, compare: nil, chart: "n", asOf: nil, chrome: chrome)
        #expect(html.components(separatedBy: "<li id=\"v").count - 1 == 50)
        #expect(html.contains("id=\"v1200\"") && html.contains("id=\"v710\"") && !html.contains("id=\"v700\""))
        #expect(html.contains("href=\"/_strata/ui/sources/s/items/1?before=710\""))
        #expect(html.contains("<polyline points=\""), "the chart of n")
        let older = pages.item(item: item(.object(["n": .int(120)])), versions: versions, compare: nil, chart: nil, asOf: nil, before: 710, chrome: chrome)
        #expect(older.contains("id=\"v700\"") && older.contains("id=\"v210\"") && !older.contains("id=\"v710\""))
    }
}
